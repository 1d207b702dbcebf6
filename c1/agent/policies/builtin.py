"""The built-in policy: an algorithmic search agent that needs no model.

It drives the same four tools under the same context rules as a model would, in rounds:

1. search the whole question, alone: its results are the anchor ranking. The anchor is that
   search's whole document ranking (what one search returns, ``Corpus.hybrid``), not only the
   few chunks one call could show: while chunks it returns for its top documents are unshown,
   the question's search is called again (``first_pages`` times at most) to show them;
2. decompose the question — quoted titles and capitalised names (nationality adjectives such as
   "Canadian rock band" left out; "X and Y", "X or Y" split) — and search each part; at the same
   time follow the bridge entities of the best documents so far (pivots): names and titles in a
   pivot's text that the question does not contain, the one in the sentence that matches the
   question best first;
3. follow the bridges of the documents that became pivots, and read multi-chunk documents that
   lead the answer;
4. stop when a round leaves the answer set unchanged, or after ``max_rounds``.

Every document held is scored against the question from what the run has seen:
``sim`` (its best chunk against the question: the corpus's own chunk ranking, i.e. cosine of the
stored vector and term coverage) + ``w_anchor`` × its rank in the question's own search +
``w_named`` × [the question names it: its title is a question entity or a multi-word title the
question contains] + ``w_link`` × [a pivot's text mentions its title — the hop of a multi-hop
question — weighted by how well the mentioning sentence matches the question] + ``w_back`` ×
[it mentions a pivot's title] + ``w_identity`` × [the document's identity — title, file-name words,
first page — matches the names and period the question asks about: ``Corpus.doc_evidence``, long
documents only]. A title that several documents share ("Table of Contents", "UNITED STATES")
names none of them: it makes no named document and no link. Pivots are the top three by the first
terms plus every named document, then the documents that links lifted into the top three.
Documents the question names keep their place in the answer (all of them for a comparison
question). Only documents that the question's own search found, or that have evidence beyond
similarity (named, linked, identity), may enter the answer (``gate``): the run does not end
below its own first search because a sub-search brought in something merely similar.

Past the soft limit it prunes the lowest-scored chunks until the context is back under 3/4 of
that limit — never a chunk of a document in its answer set or of a pivot — and only in a turn
that goes on searching. The answer is the ranked list, each document justified by its sentence
that covers most question terms.

``variant`` diversifies parallel runs (``--parallel``): odd variants search clauses of the
question before names and add the question's key terms to bridge queries; variants 2 and up
rotate the order of the parts and follow the second-best bridge entity first.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from c1.agent.context import ToolCall
from c1.agent.corpus import STOPWORDS, content_terms, search_depth
from c1.agent.output import Ranked, render_final
from c1.agent.policy import AgentState, Reply

_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,80})[\"“”]")
_CAPS = re.compile(
    r"(?<![\w-])(?:[A-Z][\w'’.&-]*|\d{4})(?:\s+(?:(?:of|the|de|del|da|di|van|von|der|den|du|la|le|for|&|v\.|vs\.)\s+)*"
    r"(?:[A-Z][\w'’.&-]*|\d+\b))*"
)
_ADJECTIVE = re.compile(r"^[A-Z][a-z]+(?:ian|ean|can|ish|ese|ch)$")
"""A single capitalised word like "Canadian" or "English": a nationality adjective when a lower-case word follows."""
_CLAUSE = re.compile(r",|;|\b(?:and|who|which|that|whose|where|when|while|but)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")
_YEAR = re.compile(r"^\d{4}$")
_COMBINING = re.compile(r"[\u0300-\u036f]")
_LEADING = {"The", "A", "An", "In", "On", "At", "What", "Which", "Who", "When", "Where", "How", "Is", "Are",
            "Was", "Were", "Did", "Do", "Does", "This", "That", "These", "Those", "It", "He", "She", "They", "His",
            "Her", "Its", "Their", "As", "Of", "For", "By", "From", "With", "And", "But", "Or", "If", "After",
            "Before", "During", "Since", "Not", "No", "Yes", "Both", "Also", "Whose", "Whom", "Why", "Name",
            "Between", "Among", "Although", "While", "According", "Despite", "Until", "Then", "There",
            "Here", "Some", "Many", "Most", "One", "Two", "Three", "First", "Second", "Last", "New"}
_COMPARE = re.compile(
    r"\b(?:both|same|either|neither|older|younger|oldest|youngest|first|earlier|later|longer|shorter|larger|"
    r"smaller|bigger|higher|lower|more|less|fewer|greater|closer|farther|further)\b|\bor\b",
    re.IGNORECASE,
)
_MONTHS = {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"}


@dataclass
class _Query:
    text: str
    role: str
    """question | entity | clause | hop"""
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
    # scoring weights (measured in bench/search_quality.py on questions 1-100)
    w_named: float = 0.5
    w_link: float = 0.8
    w_anchor: float = 0.1
    w_back: float = 0.1
    w_identity: float = 0.5
    """Document-level evidence: the document's identity matches the question's names and period
    (``Corpus.doc_evidence``, long documents only)."""
    first_pages: int = 2
    """Further calls of the question's own search, made while chunks that one search returns for
    its top ``max_docs`` documents are not shown yet (long documents: one call shows a few chunks)."""
    common_mentions: int = 10
    common_share: float = 0.02
    """A title held by more chunks than both of these is too common to be a link (``_common``)."""
    gate: bool = True
    """Only documents the question's own search found, and documents with evidence beyond
    similarity (named, linked, identity), may enter the answer: what a sub-search or a bridge
    brings in on similarity alone ("Subject", "Table of Contents") cannot push out what one search
    of the whole question returns."""
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
    _scores: dict[str, float] = field(default_factory=dict)
    _pivots: list[str] = field(default_factory=list)
    _explain: dict[str, dict] = field(default_factory=dict)
    _norm_cache: dict[str, str] = field(default_factory=dict)
    _comparison: bool = False

    def system_prompt(self, budget: int) -> str:
        return f"(built-in policy: no model; context budget {budget} tokens)"

    # the decision -----------------------------------------------------------------------
    def next(self, state: AgentState) -> Reply:
        names = state.tool_names
        ctx = state.context
        if self._round == 0:
            self._round = 1
            self._entities_q = _question_entities(state.question)
            self._comparison = is_comparison(state.question)
            return self._searches(names, [_Query(state.question, "question")])
        self._absorb(state)
        if self._round == 1:
            self._own = self._own_search(state)
        self._rank(state)
        answer = tuple(self._answer_ids())
        stable = answer == self._last_answer
        self._last_answer = answer
        if (
            self._round >= self.max_rounds
            or (stable and self._round > 2)
            or state.turn >= state.max_turns - 1
            or ctx.past_hard()
            or not self._docs
        ):
            return self._answer(state)
        self._round += 1
        calls = self._searches(names, self._plan(state)).tool_calls
        if self._pages < self.first_pages and self._unshown_own(state):
            self._pages += 1  # read the question's own search further, before anything else
            calls.insert(0, self._search_call(names, _Query(state.question, "question")))
        for doc_id in self._worth_reading(state):
            calls.append(self._call(names["read_document"], {"doc_id": doc_id}))
            self._read.add(doc_id)
        if not calls:
            return self._answer(state)
        if ctx.past_soft():  # prune first (the loop runs prunes before the other calls)
            prune = self._prune_list(state)
            if prune:
                calls.insert(0, self._call(names["prune_chunks"], {"chunk_ids": prune}))
        return Reply(tool_calls=calls)

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
        corpus = state.corpus
        if corpus is not None and hasattr(corpus, "rank_chunks"):
            if self._qvec is None:
                self._qvec = corpus.embed_query(state.question)
            for item, score in corpus.rank_chunks([_Text(s.chunk_id, f"{s.title}. {s.text}") for s in new],
                                                  state.question, self._qvec):
                self._qsim[item.id] = score
        else:
            terms = content_terms(state.question)
            for s in new:
                self._qsim[s.chunk_id] = _coverage(terms, f"{s.title} {s.text}")

    # scoring ----------------------------------------------------------------------------
    def _visible_docs(self, state: AgentState) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for cid, s in state.context.visible().items():
            out.setdefault(s.doc_id, []).append(cid)
        return out

    def _rank(self, state: AgentState) -> None:
        """Score every visible document against the question from what the run has seen."""
        visible = self._visible_docs(state)
        shown = state.context.shown
        q_norm = " " + _norm(state.question) + " "
        q_terms = set(content_terms(state.question))
        titles = {d: _clean_title(self._docs[d].title if d in self._docs else shown[cids[0]].title)
                  for d, cids in visible.items()}
        texts = {d: " ".join(shown[c].text for c in cids) for d, cids in visible.items()}
        norms = {d: " " + self._normed(texts[d]) + " " for d in visible}
        entities = {_strip_article(_norm(e)) for e in self._entities_q}
        feats: dict[str, dict] = {}
        first_rank = {d: i for i, d in enumerate(self._own, start=1)}
        raw = {d: (self._docs[d].title if d in self._docs else shown[cids[0]].title) for d, cids in visible.items()}
        shared = {_clean_title(t) for t, n in Counter(raw.values()).items() if n > 1}  # a title several share names none
        identity = state.corpus.doc_evidence(state.question, list(visible)) if hasattr(state.corpus, "doc_evidence") else {}
        for d, cids in visible.items():
            rank = first_rank.get(d) if self._own else self._anchor.get(d)
            title = titles[d] if titles[d] not in shared else ""
            titles[d] = title
            named = bool(title) and (_strip_article(title) in entities or (" " in title and f" {title} " in q_norm))
            feats[d] = {"sim": max(self._qsim.get(c, 0.0) for c in cids),
                        "anchor": 1.0 / math.sqrt(rank) if rank else 0.0, "named": float(named),
                        "identity": identity.get(d, 0.0)}
        first = {d: self._first(f) for d, f in feats.items()}
        order = sorted(visible, key=lambda d: -first[d])
        linkable = {d: t for d, t in titles.items() if _mentions_ok(t) and not self._common(state.corpus, t)}
        pivots = order[:3] + [d for d in order[3:] if feats[d]["named"]]
        sents = {}
        for _ in range(2):  # links from the first pivots, then from the documents those links lifted
            for d in visible:
                feats[d]["link"] = feats[d]["back"] = 0.0
            for i, p in enumerate(pivots):
                strength = 1.0 if feats[p]["named"] or i == 0 else 0.6
                if p not in sents:
                    ss = [self._normed(sent) for sent in _SENTENCE.split(texts[p])]
                    rels = [len(q_terms & set(n.split())) for n in ss]
                    sents[p] = (ss, rels, max(rels, default=0) or 1)
                ss, rels, top_rel = sents[p]
                for d in visible:
                    if d == p:
                        continue
                    t = linkable.get(d)
                    fwd = 0.0
                    if t and f" {t} " in norms[p]:
                        for n, rel in zip(ss, rels):
                            if f" {t} " in f" {n} ":
                                fwd = max(fwd, 0.5 + 0.5 * rel / top_rel)
                    back = 1.0 if p in linkable and f" {linkable[p]} " in norms[d] else 0.0
                    feats[d]["link"] = max(feats[d]["link"], strength * fwd)
                    feats[d]["back"] = max(feats[d]["back"], strength * back)
            scores = {d: first[d] + self.w_link * feats[d]["link"] + self.w_back * feats[d]["back"] for d in visible}
            lifted = [d for d in sorted(visible, key=lambda d: -scores[d])[:3] if d not in pivots]
            if not lifted:
                break
            pivots += lifted
        self._pivots = pivots
        self._scores = scores
        self._explain = feats

    def _common(self, corpus, title: str) -> bool:
        """A title written all over the corpus ("United", "Table of Contents" as a page header):
        its mention in a text links that text to nothing in particular."""
        if corpus is None or not hasattr(corpus, "mentions"):
            return False
        return corpus.mentions(title) > max(self.common_mentions, self.common_share * corpus.size)

    def _normed(self, text: str) -> str:
        got = self._norm_cache.get(text)
        if got is None:
            got = self._norm_cache[text] = _norm(text)
        return got

    def _first(self, f: dict) -> float:
        return f["sim"] + self.w_anchor * f["anchor"] + self.w_named * f["named"] + self.w_identity * f["identity"]

    def _answer_ids(self) -> list[str]:
        ranked = sorted(self._scores, key=lambda d: -self._scores[d])
        if self.gate and self._own:
            own = set(self._own)
            ranked = [d for d in ranked if d in own or self._evidenced(d)]
        top = ranked[: self.max_docs]
        # Documents the question names keep their place: all compared entities' documents for a
        # comparison question, at most half the answer otherwise (room for the documents they lead to).
        must = [d for d in self._scores if self._explain[d]["named"]]
        cap = self.max_docs if self._comparison else max(1, self.max_docs // 2)
        must = sorted(must, key=lambda d: -self._scores[d])[:cap]
        for d in must:
            if d not in top and top:
                removable = [x for x in reversed(top) if x not in must]
                if not removable:
                    break
                top.remove(removable[0])
                top.append(d)
        return sorted(top, key=lambda d: -self._scores[d])

    def _evidenced(self, doc_id: str) -> bool:
        """Something beyond similarity says the document belongs: the question names it, a pivot
        links to it or it to a pivot, or its identity matches the question's names and period."""
        f = self._explain.get(doc_id, {})
        return bool(f.get("named") or f.get("link") or f.get("back") or f.get("identity"))

    # queries ----------------------------------------------------------------------------
    def _plan(self, state: AgentState) -> list[_Query]:
        plan: list[_Query] = []
        if self._round == 2:
            plan += self._decompose(state.question)
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
        """Names in the pivot's visible text that the question lacks, best sentence first."""
        doc = self._docs.get(pivot)
        if doc is None:
            return []
        visible = state.context.visible()
        text = " ".join(visible[c].text for c in doc.chunks if c in visible)
        q_lower = state.question.lower()
        title = _clean_title(doc.title)
        terms = set(content_terms(state.question))
        scored: dict[str, float] = {}
        for pos, sent in enumerate(_SENTENCE.split(text)):
            words = set(re.findall(r"[\w']+", sent.lower()))
            rel = sum(1 for t in terms if t in words)
            for ent in _entities(sent):
                low = ent.lower()
                if low in q_lower or _norm(ent) == title or low in title or ent.split()[0] in _MONTHS or len(ent) < 3:
                    continue
                if _YEAR.match(ent):
                    continue
                score = rel - 0.1 * pos
                if score > scored.get(ent, -1e9):
                    scored[ent] = score
        picks = sorted(scored, key=lambda e: -scored[e])
        if self.variant >= 2 and len(picks) > self.hops_per_pivot:
            picks = picks[1:] + picks[:1]
        keys = " ".join(content_terms(state.question)[:5])
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
        corpus = state.corpus
        if corpus is None or not hasattr(corpus, "hybrid"):
            return []
        if self._qvec is None:
            self._qvec = corpus.embed_query(state.question)
        hits = corpus.hybrid(state.question, corpus.CANDIDATES, vector=self._qvec)
        out: list[str] = []
        for hit in hits:
            if hit.doc.doc_id not in out:
                out.append(hit.doc.doc_id)
        top = set(out[: self.max_docs])
        self._own_chunks = [h.chunk.id for h in hits[: search_depth(self.max_docs)] if h.doc.doc_id in top]
        return out

    def _unshown_own(self, state: AgentState) -> list[str]:
        """Chunks one search would return for its top documents that the run has not shown yet."""
        return [c for c in self._own_chunks if c not in state.context.shown]

    def _worth_reading(self, state: AgentState) -> list[str]:
        out = []
        for doc_id in self._answer_ids()[:2]:
            doc = state.corpus.doc(doc_id) if state.corpus is not None else None
            if doc_id in self._read or doc is None:
                continue
            shown = sum(1 for s in state.context.shown.values() if s.doc_id == doc_id)
            if doc.n_chunks > shown:
                out.append(doc_id)
        return out[:1]

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
        terms = content_terms(state.question)
        visible = state.context.visible()
        ranked = []
        for doc_id in self._answer_ids():
            texts = [s.text for s in visible.values() if s.doc_id == doc_id]
            ranked.append(Ranked(doc_id, best_sentence(" ".join(texts), terms)))
        return Reply(text=render_final(ranked))

    def _call(self, name: str, args: dict) -> ToolCall:
        self._n += 1
        return ToolCall(f"b{self.variant}_{self._n}", name, json.dumps(args))


@dataclass
class _Text:
    """What ``Corpus.rank_chunks`` needs of a chunk."""

    id: str
    text: str


def _norm(text: str) -> str:
    """Lower case, accents and possessives removed, words joined by single spaces."""
    text = text.lower()
    if not text.isascii():
        text = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
    return " ".join(re.findall(r"\w+", re.sub(r"['’]s\b", "", text)))


def _clean_title(title: str) -> str:
    """A title without its disambiguation suffix ("Tom Smith (actor)" → "tom smith"), normalised."""
    return _norm(_PAREN.sub("", title or ""))


def _strip_article(text_norm: str) -> str:
    for article in ("the ", "a ", "an "):
        if text_norm.startswith(article):
            return text_norm[len(article):]
    return text_norm


def _mentions_ok(title_norm: str) -> bool:
    """A title specific enough that its mention in a text is a link."""
    return bool(title_norm) and len(title_norm) >= 4 and title_norm not in STOPWORDS


def _coverage(terms: list[str], text: str) -> float:
    if not terms:
        return 0.0
    words = set(re.findall(r"[\w']+", text.lower()))
    return sum(1 for t in terms if t in words) / len(terms)


def _question_entities(question: str) -> list[str]:
    """Quoted titles, then capitalised names of several words, then single names; no nationality
    adjectives ("Canadian rock band"), no years."""
    quoted = [q.strip(" ?!.,") for q in _QUOTED.findall(question)]
    multi, single = [], []
    for e, after in _entities_with_next(question):
        if len(e) <= 2 or _YEAR.match(e) or any(e.lower() in o.lower() for o in quoted):
            continue
        if _ADJECTIVE.match(e.split()[-1]) and after[:1].islower():
            continue
        (multi if " " in e else single).append(e)
    return list(dict.fromkeys(q for q in quoted + multi + single if q))[:4]


def is_comparison(question: str) -> bool:
    return bool(_COMPARE.search(question)) and len(_question_entities(question)) >= 2


def _entities(text: str) -> list[str]:
    """Capitalised phrases and years, without a leading function word."""
    return list(dict.fromkeys(e for e, _ in _entities_with_next(text)))


def _entities_with_next(text: str) -> list[tuple[str, str]]:
    """(entity, the text right after it) for each capitalised phrase or year."""
    out = []
    for m in _CAPS.finditer(text):
        words = m.group(0).split()
        while words and words[0] in _LEADING:
            words = words[1:]
        while words and words[-1].lower() in STOPWORDS:
            words = words[:-1]
        if words:
            phrase = " ".join(words).strip(".,'’")
            if phrase and (not phrase.isdigit() or len(phrase) == 4):
                out.append((phrase, text[m.end():].lstrip(" ,;:")))
    return out


def best_sentence(text: str, terms: list[str]) -> str:
    """The sentence of ``text`` that covers most query terms (ties: the earlier one)."""
    best, best_score = "", -1.0
    for sent in _SENTENCE.split(text):
        words = set(re.findall(r"[\w']+", sent.lower()))
        score = sum(1 for t in terms if t in words) + min(len(sent), 200) / 1000
        if score > best_score:
            best, best_score = sent.strip(), score
    return " ".join(best.split())[:300]
