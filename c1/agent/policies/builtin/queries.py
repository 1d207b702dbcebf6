"""The built-in policy's searches (:class:`Planning`, a part of :class:`~c1.agent.policies.builtin.driver.BuiltinPolicy`):
the question's own search and its further pages, the parts of the question, the bridges of its pivots,
the phrases it wants found as written, and which documents are worth reading whole."""

from __future__ import annotations

import re
from dataclasses import dataclass

from c1.retrieval import evidence as evd
from c1.agent.context import ToolCall
from c1.retrieval.corpus import search_depth
from c1.retrieval.terms import content_terms
from c1.retrieval import text as tx
from c1.agent.policy import AgentState, Reply
from c1.store.ids import doc_of
from c1.store.names import file_name_words

_CLAUSE = re.compile(r",|;|\b(?:and|who|which|that|whose|where|when|while|but)\b", re.IGNORECASE)
_COMPARE = re.compile(
    r"\b(?:both|same|either|neither|older|younger|oldest|youngest|first|earlier|later|longer|shorter|larger|"
    r"smaller|bigger|higher|lower|more|less|fewer|greater|closer|farther|further)\b|\bor\b",
    re.IGNORECASE,
)


@dataclass
class _Query:
    text: str
    role: str
    """question | entity | clause | hop | phrase"""
    origin: str | None = None
    """The entity or pivot document it came from."""


def is_comparison(question: str) -> bool:
    return bool(_COMPARE.search(question)) and len(tx.question_entities(question)) >= 2


class Planning:
    """What the policy searches and reads next."""

    def _phrases(self, question: str) -> list[str]:
        """Regular expressions for what the question wants found as written (``grep_corpus``): each
        phrase it quotes or a short keyword query as a whole (words in order, any spacing or hyphen
        between them); else the terms of a keyword query, all of them, in any order."""
        asked = self._ranker.asked if self._ranker else None
        if asked is None:
            return []
        out = []
        written = {tx.norm(q): q for q in tx.quoted(question) if any(ch.isupper() for ch in q)}
        for phrase in asked.phrases:
            words = written.get(phrase, phrase).split()  # a quoted phrase with capitals is grepped as written
            if words:
                out.append(r"\b" + r"[\s\-_]+".join(re.escape(w) for w in words) + r"\b")
        if not out and asked.keywords:
            out.append(r"(?s)\A" + "".join(rf"(?=.*\b{re.escape(t)})" for t in asked.keywords))
        return out[:2]

    # queries ----------------------------------------------------------------------------
    def _plan(self, state: AgentState) -> list[_Query]:
        plan: list[_Query] = []
        if self._round == 2:
            plan += self._decompose(self._q)
        for p in self._pivots[: self.pivots_per_round[0] if self._round == 2 else self.pivots_per_round[1]]:
            if p in self._expanded:
                continue
            self._expanded.add(p)
            plan += self._bridges(state, p)
        return plan

    def _decompose(self, question: str) -> list[_Query]:
        ents = [_Query(e, "entity", e) for e in self._entities_q]
        clauses = [c.strip(" ?") for c in _CLAUSE.split(question) if c and len(content_terms(c)) >= 2]
        clause_q = [_Query(c, "clause") for c in clauses[:3]] if len(clauses) > 1 else []
        if self.variant % 2 == 1:
            parts = clause_q[:2] + ents
        else:
            parts = ents + clause_q[:1] if len(ents) < 2 else ents
        if self.variant >= 2 and len(parts) > 1:
            k = self.variant % len(parts)
            parts = parts[k:] + parts[:k]
        return parts

    def _bridges(self, state: AgentState, pivot: str) -> list[_Query]:
        """The query for the pivot's best bridge entity (see ``Ranker.bridges``): one a pivot."""
        picks = list(self._ranking.bridges.get(pivot, [])) if self._ranking else []
        if not picks:
            return []
        ent = picks[1] if self.variant >= 2 and len(picks) > 1 else picks[0]  # the best; runs 2 and 3 the next
        keys = " ".join(content_terms(self._q)[:5])
        return [_Query(f"{ent} {keys}" if self.variant % 2 == 1 else ent, "hop", ent)]

    def _searches(self, names: dict, queries: list[_Query]) -> Reply:
        calls = []
        for q in queries:
            key = q.text.lower().strip()
            if not key or key in self._queried:
                continue
            self._queried.add(key)
            calls.append(self._search_call(names, q))
        return Reply(tool_calls=calls)

    def _search_call(self, names: dict, q: _Query) -> ToolCall:
        call = self._call(names["search_corpus"], {"query": q.text})
        self._queries[call.id] = q
        return call

    def _own_search(self, state: AgentState) -> list[str]:
        """The documents of the question's own search, in its order (the corpus's ranking, read
        past what the first call could show); also notes the chunks one search would return for
        its top documents (``_own_chunks``: those among its first ``search_depth(k)`` chunks)."""
        searcher = state.searcher
        if searcher is None:
            return []
        if self._qvec is None:
            self._qvec = searcher.embed_query(self._q)
        self._question, out, chunks = self._alike(state, ("own", self.max_docs), lambda: self._own_of(state))
        self._own_chunks = list(chunks)
        return list(out)

    def _own_of(self, state: AgentState) -> tuple[str, list[str], list[str]]:
        """The question with its names as the corpus writes them, its own search's documents and the chunks one
        search returns of its top documents (:meth:`_own_search`)."""
        searcher = state.searcher
        hits = searcher.hybrid(state.question, searcher.CANDIDATES, vector=self._qvec)
        texts = [h.chunk.text for h in hits]
        docs = {h.doc.doc_id: h.doc for h in hits}
        own = {d: "\n".join(h.chunk.text for h in hits if h.doc.doc_id == d) for d in docs}  # what each one writes
        names = [(d.title, own[i]) for i, d in docs.items()]
        names += [file_name_words(d.path) for d in docs.values() if d.key == d.path]
        # the names it writes are evidence for the ranking; the order stays that of the question as asked
        # (what one search returns), which the ranking departs from only on evidence
        out = evd.document_order(hits)
        top = set(out[: self.max_docs])
        return (tx.truecase(state.question, texts, names), out,
                [h.chunk.id for h in hits[: search_depth(self.max_docs)] if h.doc.doc_id in top])

    def _unshown_own(self, state: AgentState) -> list[str]:
        """Chunks one search would return for its top documents that the run has not shown yet."""
        return [c for c in self._own_chunks if c not in state.context.shown]

    def _more_pages(self, state: AgentState) -> bool:
        """Whether to call the question's own search again: ``first_pages`` times while it holds unshown
        chunks of its top documents, up to ``first_doc_pages`` while those include the answer's first's."""
        unshown = self._unshown_own(state)
        if not unshown or self._pages >= self.first_doc_pages:
            return False
        if self._pages < self.first_pages:
            return True
        first = self._answer_ids()[:1]
        return bool(first) and any(doc_of(c) == first[0] for c in unshown)

    def _worth_reading(self, state: AgentState) -> list[str]:
        out = []
        for doc_id in self._answer_ids()[:2]:
            doc = state.searcher.doc(doc_id) if state.searcher is not None else None
            if doc_id in self._read or doc is None:
                continue
            shown = sum(1 for s in state.context.shown.values() if s.doc_id == doc_id)
            if doc.n_chunks > shown:
                out.append(doc_id)
        return out[:1]
