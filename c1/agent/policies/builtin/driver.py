"""The built-in policy's driver: its settings and state, the turn by turn decision (:meth:`BuiltinPolicy.next`),
what came back from the tools, and the ranking of what the run holds. Its searches are
:mod:`.queries`, its answer :mod:`.answer`."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from c1.retrieval import evidence as evd
from c1.retrieval import ranking as rkg
from c1.agent.context import Message, ToolCall
from c1.retrieval.terms import content_terms
from c1.agent.output import Ranked
from c1.retrieval import text as tx
from c1.agent.policy import AgentState, Reply
from c1.config import Settings

from c1.agent.policies.builtin.answer import Answering
from c1.agent.policies.builtin.queries import Planning, _Query, is_comparison


@dataclass
class _Doc:
    doc_id: str
    title: str
    first_role: str
    chunks: list[str] = field(default_factory=list)


@dataclass
class BuiltinPolicy(Planning, Answering):
    name: str = "builtin"
    model: str | None = None
    max_docs: int = Settings.max_docs
    variant: int = 0
    pivots_per_round: tuple = (2, 2)
    """Pivot documents whose bridges are followed in round 2, and in each round after it."""
    first_pages: int = 4
    """Further calls of the question's own search, made while chunks that one search returns for
    its top ``max_docs`` documents are not shown yet (long documents: one call shows a few chunks)."""
    first_doc_pages: int = 8
    """As many calls in all while such chunks of the answer's first document are not shown yet: the
    page of a filing one search holds ("accounts payable" on the balance sheet) is among them."""
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
    ``anchored`` (the question's own search, departing from it only on evidence: ``ranking.anchored_order``,
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
    _ranking: rkg.Ranking | None = None
    _comparison: bool = False
    _question: str = ""
    """The question with its names written as the corpus writes them (``text.truecase``)."""

    @classmethod
    def for_budget(cls, budget: int, **fields) -> "BuiltinPolicy":
        """The policy for a context budget: under a small one (``SMALL_BUDGET``) it also prunes what the
        evidence has ruled out (documents under the ``floor``, which the answer would not return) before
        reading more: it helps where the budget is tight, and costs where nothing needs the room
        (``bench/multihop.py --budget``; docs/relevance.md)."""
        fields.setdefault("prune_below", fields.get("floor", evd.FLOOR) if budget <= SMALL_BUDGET else 0.0)
        return cls(**fields)

    def system_prompt(self, budget: int) -> str:
        return f"(built-in policy: no model; context budget {budget} tokens)"

    # the decision -----------------------------------------------------------------------
    def next(self, state: AgentState) -> Reply:
        reply = self._next(state)
        return self._fitted(state, reply) if reply.tool_calls else reply

    def supported(self) -> bool:
        """Whether anything the run held supports the question (``Ranking.supported``: a document it names,
        holds its phrase, its keywords or its rare terms, or is close to it)."""
        return bool(self._ranking and self._ranking.supported())

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
            # one Ranker for the runs of one search: what it remembers of the chunks (normal forms, stems,
            # sentences, a pivot's bridges) depends on the question and the text alone
            self._ranker = self._alike(state, ("ranker",),
                                       lambda: evd.Ranker(self._q, state.searcher, weights=self.weights, typed=state.question))
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
        if stable and self._round > 2:
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
        """Score every visible document against the question from what the run has seen (as another run
        of the same search scored the same view: :meth:`_alike`)."""
        own = self._own or sorted(self._anchor, key=lambda d: self._anchor[d])
        views = self._views(state)
        key = ("rank", tuple(own), tuple((d, v.title, tuple(c for c, _ in v.chunks)) for d, v in views.items()))
        self._ranking = self._alike(state, key, lambda: self._ranker.rank(views, own, self._qsim))

    def _alike(self, state: AgentState, key: tuple, work):
        """``work()``, or what another run of the same search got for it: ``key`` holds everything it depends on
        beside the question and this policy's settings, which the runs of one search share."""
        if state.shared is None:
            return work()
        return state.shared.get(("builtin", self._q, state.question, repr(self.weights), *key), work)

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


    def _call(self, name: str, args: dict) -> ToolCall:
        self._n += 1
        return ToolCall(f"b{self.variant}_{self._n}", name, json.dumps(args))


SMALL_BUDGET = 8192


def _coverage(terms: list[str], text: str) -> float:
    if not terms:
        return 0.0
    words = set(re.findall(r"[\w']+", text.lower()))
    return sum(1 for t in terms if t in words) / len(terms)
