"""The built-in policy: an algorithmic search agent that needs no model.

It drives the same four tools under the same context rules as a model would, in rounds:

1. search the whole question, alone: its results are the anchor ranking. The anchor is that
   search's whole document ranking (what one search returns, ``Corpus.hybrid``), not only the
   few chunks one call could show: while chunks it returns for its top documents are unshown,
   the question's search is called again (``first_pages`` times at most) to show them. A phrase
   the question quotes (or a short keyword query as a whole) is also looked for as written
   (``grep_corpus``), so that the one file that holds it is seen;
2. decompose the question — quoted titles and capitalised names (nationality adjectives such as
   "Canadian rock band" left out; "X and Y", "X or Y" split) — and search each part; at the same
   time follow the bridge entities of the best documents so far (pivots): names in a pivot's
   content that the question does not contain, the one in the sentence that matches the question
   best first (never a header field, a date, a bare first name or a name written all over the
   corpus: c1/retrieval/evidence.py);
3. follow the bridges of the documents that became pivots, and read multi-chunk documents that
   lead the answer;
4. stop when a round leaves the answer set unchanged, or after ``max_rounds``.

Every document held is scored against the question from what the run has seen
(:class:`c1.retrieval.evidence.Ranker`: similarity, the question's own search, names, rare terms and
phrases, document identity, links and bridges from pivots), and its score is a confidence in
[0, 1]. Documents the question names keep their place in the answer (all of them for a
comparison question). Only documents that the question's own search found, or that have evidence
beyond similarity (named, linked, bridged, identity, a rare term or phrase of the question), may
enter the answer (``gate``): the run does not end below its own first search because a
sub-search brought in something merely similar. Documents whose confidence is under the floor
are not returned, so a question with little support gets fewer than ``max_docs``. The answer's
documents are then ordered by the fitted document ranker (:mod:`c1.retrieval.ranker`, weights fitted on
questions generated from collections: ``bench/ranker_fit.py``, ``c1 train ranker``).

Past the soft limit it prunes the lowest-scored chunks until the context is back under 3/4 of
that limit — never a chunk of a document in its answer set or of a pivot — and only in a turn
that goes on searching. The answer is the ranked list, each document with its confidence and
justified by one sentence of one of its chunks, verbatim: the one that best supports the question.

``variant`` diversifies parallel runs (``--parallel``): odd variants search clauses of the
question before names and add the question's key terms to bridge queries; variants 2 and up
rotate the order of the parts and follow the second-best bridge entity first.
"""

from __future__ import annotations


import json
import re
from dataclasses import dataclass, field

from c1.retrieval import evidence as evd
from c1.retrieval import ranker as rk
from c1.agent.context import Message, ToolCall
from c1.retrieval.corpus import search_depth
from c1.retrieval.terms import content_terms
from c1.agent.output import Ranked, render_final
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


@dataclass
class _Doc:
    doc_id: str
    title: str
    first_role: str
    chunks: list[str] = field(default_factory=list)


@dataclass
class BuiltinPolicy:
    name: str = "builtin"
    model: str | None = None
    max_docs: int = 10
    variant: int = 0
    max_rounds: int = 4
    hops_per_pivot: int = 1
    max_parts: int = 4
    """Sub-queries of the decomposition (round 2)."""
    pivots_per_round: tuple = (2, 2)
    """Pivot documents whose bridges are followed in rounds 2 and 3."""
    first_pages: int = 4
    """Further calls of the question's own search, made while chunks that one search returns for
    its top ``max_docs`` documents are not shown yet (long documents: one call shows a few chunks)."""
    first_doc_pages: int = 8
    """As many calls in all while such chunks of the answer's first document are not shown yet: the
    page of a filing one search holds ("accounts payable" on the balance sheet) is among them."""
    common_mentions: int = 10
    common_share: float = 0.02
    """A title or name held by more chunks than both of these is too common to be a link."""
    gate: bool = True
    """Only documents the question's own search found, and documents with evidence beyond
    similarity, may enter the answer: what a sub-search or a bridge brings in on similarity alone
    ("Subject", "Table of Contents") cannot push out what one search of the whole question returns."""
    floor: float = evd.FLOOR
    """Documents with a lower confidence are not returned."""
    prune_below: float = 0.0
    """When set: every searching turn also prunes the chunks of documents with a lower confidence
    (not in the answer, not pivots), whatever the context holds (bench/multihop.py --option)."""
    weights: dict | None = None
    """Feature weights of the evidence model (default: ``evidence.WEIGHTS``): confidences and pivots."""
    order: str = "fitted"
    """How the answer's documents are ordered: ``fitted`` (the fitted ranker, c1/retrieval/ranker.py) or
    ``anchored`` (the question's own search, departing from it only on evidence: ``evidence.anchored_order``,
    which also chooses the answer's documents in both cases)."""
    ranker: object = None
    """The fitted ranker's weights (:class:`c1.retrieval.ranker.RankerWeights`; default: the shipped ones)."""
    _round: int = 0
    _n: int = 0
    _queries: dict[str, _Query] = field(default_factory=dict)
    _queried: set[str] = field(default_factory=set)
    _docs: dict[str, _Doc] = field(default_factory=dict)
    _anchor: dict[str, int] = field(default_factory=dict)
    _own: list[str] = field(default_factory=list)
    """The question's own search (``Corpus.hybrid``), in document order: what one search returns."""
    _pages: int = 0
    _own_chunks: list[str] = field(default_factory=list)
    _qsim: dict[str, float] = field(default_factory=dict)
    _expanded: set[str] = field(default_factory=set)
    _read: set[str] = field(default_factory=set)
    _entities_q: list[str] = field(default_factory=list)
    _absorbed: int = 0
    _last_answer: tuple = ()
    _qvec: object = None
    _ranker: evd.Ranker | None = None
    _ranking: evd.Ranking | None = None
    _comparison: bool = False
    _question: str = ""
    """The question with its names written as the corpus writes them (``text.truecase``)."""

    @classmethod
    def for_budget(cls, budget: int, **fields) -> "BuiltinPolicy":
        """The policy for a context budget: under a small one (``SMALL_BUDGET``) it also prunes what the
        evidence has ruled out (``PRUNE_BELOW``) before reading more. Measured with bench/multihop.py
        --budget: at 4,096 tokens full recall +0.005 (HotpotQA) and +0.020 (MuSiQue); at 8,192 +0.010
        and 0; at 32,768, where nothing needs the room, 0 and one MuSiQue question lost."""
        fields.setdefault("prune_below", PRUNE_BELOW if budget <= SMALL_BUDGET else 0.0)
        return cls(**fields)

    def system_prompt(self, budget: int) -> str:
        return f"(built-in policy: no model; context budget {budget} tokens)"

    # the decision -----------------------------------------------------------------------
    def next(self, state: AgentState) -> Reply:
        reply = self._next(state)
        return self._fitted(state, reply) if reply.tool_calls else reply

    def final(self, state: AgentState) -> list[Ranked]:
        """The answer from what the run holds, when the budget or the turns run out before it answered."""
        self._absorb(state)
        self._rank(state)
        return self._answer(state).ranked

    def _fitted(self, state: AgentState, reply: Reply) -> Reply:
        """``reply`` with its last calls dropped until it fits the room the budget leaves for a reply
        (``state.max_reply_tokens``): the budget is a ceiling for this policy as for a model. With no
        call that fits, the answer."""
        room = state.max_reply_tokens
        calls = list(reply.tool_calls)
        while calls and room is not None and state.context.message_tokens(Message("assistant", "", calls)) > room:
            dropped = calls.pop()
            q = self._queries.pop(dropped.id, None)
            if q is not None:  # asked for later, when there is room
                self._queried.discard(q.text.lower().strip())
        if not calls:
            return self._answer(state) if self._ranking else reply
        return Reply(tool_calls=calls)

    def _next(self, state: AgentState) -> Reply:
        names = state.tool_names
        ctx = state.context
        if self._round == 0:
            self._round = 1
            self._question = state.question
            self._own = self._own_search(state)  # also reads the question's names as the corpus writes them
            self._entities_q = tx.question_entities(self._q)
            self._comparison = is_comparison(self._q)
            self._ranker = evd.Ranker(self._q, state.searcher, self.common_mentions, self.common_share,
                                      weights=self.weights, typed=state.question)
            reply = self._searches(names, [_Query(self._q, "question")])
            for phrase in self._phrases(state.question):  # grepped as typed
                reply.tool_calls.append(self._call(names["grep_corpus"], {"pattern": phrase}))
            return reply
        self._absorb(state)
        self._rank(state)
        answer = tuple(self._answer_ids())
        stable = answer == self._last_answer
        self._last_answer = answer
        if state.turn >= state.max_turns - 1 or ctx.past_hard() or not self._docs:
            return self._answer(state)
        if self._round >= self.max_rounds or (stable and self._round > 2):
            if self._more_pages(state):  # what one search returns, in full
                self._pages += 1
                return Reply(tool_calls=[self._search_call(names, _Query(self._q, "question"))])
            return self._answer(state)
        self._round += 1
        calls = self._searches(names, self._plan(state)).tool_calls
        if self._more_pages(state):
            self._pages += 1  # read the question's own search further, before anything else
            calls.insert(0, self._search_call(names, _Query(self._q, "question")))
        for doc_id in self._worth_reading(state):
            calls.append(self._call(names["read_document"], {"doc_id": doc_id}))
            self._read.add(doc_id)
        if not calls:
            return self._answer(state)
        prune = self._prune_list(state) if ctx.past_soft() else []
        if self.prune_below:  # chunks of documents the evidence has ruled out, before reading more
            prune = list(dict.fromkeys(prune + self._ruled_out(state)))
        if prune:  # first: the loop runs prunes before the other calls
            calls.insert(0, self._call(names["prune_chunks"], {"chunk_ids": prune}))
        return Reply(tool_calls=calls)

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

    # what came back ---------------------------------------------------------------------
    def _absorb(self, state: AgentState) -> None:
        msgs = state.context.messages
        for msg in msgs[self._absorbed:]:
            if msg.role != "tool" or isinstance(msg.content, str):
                continue
            query = self._queries.get(msg.tool_call_id or "")
            rank = 0
            for block in msg.content:
                if block.chunk_id is None:
                    continue
                shown = state.context.shown.get(block.chunk_id)
                if shown is None:
                    continue
                rank += 1
                doc = self._docs.get(shown.doc_id)
                if doc is None:
                    doc = self._docs[shown.doc_id] = _Doc(shown.doc_id, shown.title or "", query.role if query else "read")
                if block.chunk_id not in doc.chunks:
                    doc.chunks.append(block.chunk_id)
                if query and query.role == "question":
                    self._anchor.setdefault(shown.doc_id, rank)
        self._absorbed = len(msgs)
        self._similarity(state)

    def _similarity(self, state: AgentState) -> None:
        """Similarity of each new visible chunk to the question (the corpus's own re-ranker)."""
        shown = state.context.shown
        new = [shown[c] for d in self._docs.values() for c in d.chunks if c not in self._qsim]
        if not new:
            return
        searcher = state.searcher
        if searcher is not None:
            if self._qvec is None:
                self._qvec = searcher.embed_query(self._q)
            self._qsim.update(evd.similarities(searcher, self._q, self._qvec,
                                               [(s.chunk_id, s.title, s.text) for s in new]))
        else:
            terms = content_terms(self._q)
            for s in new:
                self._qsim[s.chunk_id] = _coverage(terms, f"{s.title} {s.text}")

    # scoring ----------------------------------------------------------------------------
    def _views(self, state: AgentState) -> dict[str, evd.DocView]:
        return evd.views_of(state.context.visible(), {d: doc.title for d, doc in self._docs.items()})

    def _rank(self, state: AgentState) -> None:
        """Score every visible document against the question from what the run has seen."""
        own = self._own or sorted(self._anchor, key=lambda d: self._anchor[d])
        self._ranking = self._ranker.rank(self._views(state), own, self._qsim)

    @property
    def _q(self) -> str:
        return self._question

    @property
    def _scores(self) -> dict[str, float]:
        return self._ranking.scores if self._ranking else {}

    @property
    def _pivots(self) -> list[str]:
        return self._ranking.pivots if self._ranking else []

    @property
    def _explain(self) -> dict[str, dict]:
        return self._ranking.features if self._ranking else {}

    def _answer_ids(self) -> list[str]:
        """The answer: which documents, from the documents held in the order of the question's own search,
        departing from it only on evidence (:func:`evidence.anchored_order`); documents the question names
        keep their place; the floor drops documents under it, but one the own search ranked in its top
        ``max_docs`` only on evidence against it (``_against``): a low score alone does not. Then, with
        ``order="fitted"``, their order is the fitted ranker's (``_fitted_order``)."""
        if not self._ranking:
            return []
        held = list(self._scores)
        if self.gate and self._own:
            own = set(self._own)
            held = [d for d in held if d in own or self._evidenced(d)]
        ranked = evd.anchored_order(self._ranking, self._own, held)
        anchor_top = set(self._own[: self.max_docs])  # what one search returns: only evidence drops it
        ranked = [d for d in ranked if self._ranking.fitted(d) >= self.floor or (d in anchor_top and not self._against(d))]
        top = ranked[: self.max_docs]
        # Documents the question names keep their place: all compared entities' documents for a
        # comparison question, at most half the answer otherwise (room for the documents they lead to).
        must = [d for d in ranked if self._explain[d]["named"]]
        cap = self.max_docs if self._comparison else max(1, self.max_docs // 2)
        must = sorted(must, key=lambda d: -self._scores[d])[:cap]
        for d in must:
            if d not in top and top:
                removable = [x for x in reversed(top) if x not in must]
                if not removable:
                    break
                top.remove(removable[0])
                top.append(d)
        order = {d: i for i, d in enumerate(ranked)}
        top.sort(key=lambda d: order[d])
        if self.floor and not self._ranking.supported():
            top = top[: evd.UNSUPPORTED_MAX]
        return self._fitted_order(top) if self.order == "fitted" else top

    def _fitted_order(self, top: list[str]) -> list[str]:
        """The answer's documents in the fitted ranker's order (c1/retrieval/ranker.py), ties in the order
        above: which documents form the answer stays the evidence's (gate, floor, named documents), where
        they stand is fitted."""
        if self.ranker is None:
            self.ranker = rk.load()
        place = {d: i for i, d in enumerate(top)}
        fitted = {d: i for i, d in enumerate(rk.order(self.ranker, {d: self._explain[d] for d in top}, self._own,
                                                      self.max_docs))}
        return sorted(top, key=lambda d: (fitted[d], place[d]))

    def _against(self, doc_id: str) -> bool:
        """Evidence that the document is not what the question asks for: the question's phrase or all its
        keywords are in another document held, not in this one, and nothing else speaks for it; or
        another document's identity matches the names and period the question asks about, and nothing
        about this one does, nor links it to anything, nor does it lead to another document held (the
        "(no subject)" mails under a filing; a note whose name leads to the contacts sheet stays); or another
        document holds every rare term of the question and this one, all of it in view, none. (A document
        lacking one rare term of the question is not ruled out: the first hop of a multi-hop question lacks
        the second's words.)"""
        f = self._explain[doc_id]
        weak = self._ranking.evidence(doc_id) < evd.EVIDENCE_MARGIN  # nothing, or a stray bridge
        if self._ranking.written_found and not (f.get("phrase") or f.get("keywords")) and weak:
            return True
        if f.get("miss") and weak and any(g.get("rare", 0.0) >= 1.0 for g in self._explain.values()):
            return True  # another document holds every rare term of the question, this one (all in view) none
        best = max((g.get("identity", 0.0) for g in self._explain.values()), default=0.0)
        leads = any(doc_id in sources for sources in self._ranking.sources.values())
        return best >= 0.5 and not f.get("identity") and weak and not leads  # a hop that led elsewhere stays

    def _confidences(self, ids: list[str]) -> list[float]:
        """The answer's confidences: each document's probability, made non-increasing down the answer (a
        document ranked above another is not less likely to be needed) and calibrated by its place
        (``evidence.answer_confidences``)."""
        return evd.answer_confidences([self._ranking.confidence(d) for d in ids])

    def _evidenced(self, doc_id: str) -> bool:
        """Something beyond similarity says the document belongs: the question names it, a pivot
        links or bridges to it or it to a pivot, it holds a rare term or a phrase of the question,
        or its identity matches the question's names and period."""
        f = self._explain.get(doc_id, {})
        return bool(f.get("named") or f.get("link") or f.get("back") or f.get("bridge") or f.get("identity")
                    or f.get("phrase") or f.get("keywords") or f.get("rare", 0) >= 0.5)

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
        return parts[: self.max_parts]

    def _bridges(self, state: AgentState, pivot: str) -> list[_Query]:
        """Queries for the pivot's bridge entities (see ``Ranker.bridges``)."""
        picks = list(self._ranking.bridges.get(pivot, [])) if self._ranking else []
        if self.variant >= 2 and len(picks) > self.hops_per_pivot:
            picks = picks[1:] + picks[:1]
        keys = " ".join(content_terms(self._q)[:5])
        out = []
        for ent in picks[: self.hops_per_pivot]:
            q = f"{ent} {keys}" if self.variant % 2 == 1 else ent
            out.append(_Query(q, "hop", ent))
        return out

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
        hits = searcher.hybrid(state.question, searcher.CANDIDATES, vector=self._qvec)
        texts = [h.chunk.text for h in hits]
        docs = {h.doc.doc_id: h.doc for h in hits}
        names = [n for d in docs.values() for n in (d.title, file_name_words(d.path) if d.key == d.path else "")]
        # the names it writes are evidence for the ranking; the order stays that of the question as asked
        # (what one search returns), which the ranking departs from only on evidence
        self._question = tx.truecase(state.question, texts, names)
        out = evd.document_order(hits)
        top = set(out[: self.max_docs])
        self._own_chunks = [h.chunk.id for h in hits[: search_depth(self.max_docs)] if h.doc.doc_id in top]
        return out

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

    def _ruled_out(self, state: AgentState) -> list[str]:
        """Visible chunks of documents whose confidence is under ``prune_below``, neither in the
        answer nor pivots: they take room and lead nowhere."""
        keep = set(self._answer_ids()) | set(self._pivots)
        return [cid for cid, s in state.context.visible().items()
                if s.doc_id not in keep and self._ranking.fitted(s.doc_id) < self.prune_below]

    def _prune_list(self, state: AgentState) -> list[str]:
        """Lowest-scored chunks first, until the context is back under 3/4 of the soft limit;
        never a chunk of a document in the answer set or of a pivot."""
        ctx = state.context
        keep = set(self._answer_ids()) | set(self._pivots)
        candidates = [(cid, s) for cid, s in ctx.visible().items() if s.doc_id not in keep]
        candidates.sort(key=lambda cs: (self._scores.get(cs[1].doc_id, 0.0), self._qsim.get(cs[0], 0.0)))
        excess = ctx.used() - int(ctx.soft_limit * 0.75)
        out = []
        for cid, s in candidates:
            if excess <= 0:
                break
            out.append(cid)
            excess -= s.tokens
        return out

    # the answer -------------------------------------------------------------------------
    def _answer(self, state: AgentState) -> Reply:
        views = self._views(state)
        ranked = []
        ids = self._answer_ids()
        for doc_id, conf in zip(ids, self._confidences(ids)):
            why = self._ranker.justification(views[doc_id], self._qsim, self._ranking) if doc_id in views else ""
            ranked.append(Ranked(doc_id, why, round(conf, 4)))
        return Reply(text=render_final(ranked), ranked=ranked)

    def _call(self, name: str, args: dict) -> ToolCall:
        self._n += 1
        return ToolCall(f"b{self.variant}_{self._n}", name, json.dumps(args))


SMALL_BUDGET = 8192
PRUNE_BELOW = 0.02


def _coverage(terms: list[str], text: str) -> float:
    if not terms:
        return 0.0
    words = set(re.findall(r"[\w']+", text.lower()))
    return sum(1 for t in terms if t in words) / len(terms)


def is_comparison(question: str) -> bool:
    return bool(_COMPARE.search(question)) and len(tx.question_entities(question)) >= 2
