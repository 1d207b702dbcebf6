"""The built-in policy: an algorithmic search agent that needs no model.

It drives the same tools under the same context rules as a model would:
1. decompose the question into sub-queries (quoted titles, named entities, clauses) and search
   them together with the whole question;
2. find *bridge entities* in the best chunks it holds — names, titles, dates that the question
   does not contain — and follow them with new searches;
3. read the most promising multi-chunk documents;
4. prune chunks that stopped earning their place when the context passes the soft limit;
5. stop when a round of searches no longer changes the top documents;
6. answer with a ranked document list, each justified by its best-matching sentence.

``variant`` diversifies parallel runs: it rotates the sub-query order and which bridge entities
are followed first.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from c1.agent.context import ToolCall
from c1.agent.corpus import content_terms
from c1.agent.output import Ranked, render_final
from c1.agent.policy import AgentState, Reply

_QUOTED = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
_CAPS = re.compile(r"\b(?:[A-Z][\w'’.-]*|\d{4})(?:\s+(?:(?:of|the|de|van|von|and|for|in|&)\s+)*(?:[A-Z][\w'’.-]*|\d+))*")
_CLAUSE = re.compile(r",|;|\b(?:and|who|which|that|whose|where|when|while|but)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LEADING = {"The", "A", "An", "In", "On", "At", "What", "Which", "Who", "When", "Where", "How", "Is", "Are",
            "Was", "Were", "Did", "Do", "Does", "This", "That", "These", "Those", "It", "He", "She", "They", "His",
            "Her", "Its", "Their", "As", "Of", "For", "By", "From", "With", "And", "But", "Or", "If", "After",
            "Before", "During", "Since", "Not", "No", "Yes", "Both", "Also"}


@dataclass
class _Seen:
    query: str
    hop: int


@dataclass
class BuiltinPolicy:
    name: str = "builtin"
    model: str | None = None
    max_docs: int = 10
    variant: int = 0
    max_rounds: int = 4
    _queried: set[str] = field(default_factory=set)
    _calls: dict[str, _Seen] = field(default_factory=dict)
    _doc_score: dict[str, float] = field(default_factory=dict)
    _read: set[str] = field(default_factory=set)
    _round: int = 0
    _last_top: tuple = ()
    _n: int = 0

    def system_prompt(self, budget: int) -> str:
        return f"(built-in policy: no model; context budget {budget} tokens)"

    # the decision -----------------------------------------------------------------------
    def next(self, state: AgentState) -> Reply:
        self._absorb(state)
        names = state.tool_names
        ctx = state.context
        if self._round == 0:
            self._round = 1
            return self._searches(names, self._decompose(state.question), hop=0)
        if ctx.past_soft():
            prune = self._prune_list(state)
            if prune:
                return Reply(tool_calls=[self._call(names["prune_chunks"], {"chunk_ids": prune})])
        top = self._top_docs(state)
        stable = tuple(top[: self.max_docs]) == self._last_top
        self._last_top = tuple(top[: self.max_docs])
        if self._round >= self.max_rounds or (stable and self._round > 1) or state.turn >= state.max_turns - 1:
            return self._answer(state)
        self._round += 1
        queries = self._bridge_queries(state, top)
        calls = self._searches(names, queries, hop=self._round - 1).tool_calls
        to_read = self._worth_reading(state, top)
        calls += [self._call(names["read_document"], {"doc_id": d}) for d in to_read]
        self._read.update(to_read)
        if not calls:
            return self._answer(state)
        return Reply(tool_calls=calls)

    # what came back ---------------------------------------------------------------------
    def _absorb(self, state: AgentState) -> None:
        """Score documents by their best chunk; bridge hops count slightly less than the question."""
        for cid, shown in state.context.shown.items():
            if shown.score is None:
                continue
            weight = 1.0
            for msg in state.context.messages:
                if msg.role == "tool" and msg.tool_call_id in self._calls and not isinstance(msg.content, str):
                    if any(b.chunk_id == cid for b in msg.content):
                        weight = 1.0 if self._calls[msg.tool_call_id].hop == 0 else 0.92
                        break
            score = shown.score * weight
            if score > self._doc_score.get(shown.doc_id, -1.0):
                self._doc_score[shown.doc_id] = score

    def _top_docs(self, state: AgentState) -> list[str]:
        visible_docs = {s.doc_id for s in state.context.visible().values()}
        ranked = sorted((d for d in self._doc_score if d in visible_docs), key=lambda d: -self._doc_score[d])
        return ranked

    # queries ----------------------------------------------------------------------------
    def _decompose(self, question: str) -> list[str]:
        subs = [question]
        subs += [q for q in _QUOTED.findall(question)]
        entities = [e for e in _entities(question) if len(e) > 2]
        subs += entities[:3]
        clauses = [c.strip() for c in _CLAUSE.split(question) if c and len(content_terms(c)) >= 2]
        if len(clauses) > 1:
            subs += clauses[:3]
        unique = list(dict.fromkeys(s for s in subs if s.strip()))
        head, rest = unique[:1], unique[1:]
        if rest and self.variant:
            k = self.variant % len(rest)
            rest = rest[k:] + rest[:k]
        return head + rest[:3]

    def _bridge_queries(self, state: AgentState, top: list[str]) -> list[str]:
        q_lower = state.question.lower()
        q_terms = content_terms(state.question)
        counts: Counter = Counter()
        visible = state.context.visible()
        for rank, doc_id in enumerate(top[:4]):
            weight = 1.0 / (1 + rank)
            texts = [s for s in visible.values() if s.doc_id == doc_id]
            for s in texts:
                for ent in _entities(s.text):
                    if ent.lower() in q_lower or len(ent) < 3 or ent.lower() == s.title.lower():
                        continue
                    counts[ent] += weight
                if s.title and s.title.lower() not in q_lower:
                    counts[s.title] += 0.25 * weight
        picks = [e for e, _ in counts.most_common(12) if e.lower() not in self._queried]
        if self.variant and len(picks) > 2:
            k = self.variant % 3
            picks = picks[k:] + picks[:k]
        keywords = " ".join(q_terms[:6])
        return [f"{e} {keywords}" for e in picks[:2]] + picks[:1]

    def _searches(self, names: dict, queries: list[str], hop: int) -> Reply:
        calls = []
        for q in queries:
            key = q.lower().strip()
            if key in self._queried:
                continue
            self._queried.add(key)
            call = self._call(names["search_corpus"], {"query": q})
            self._calls[call.id] = _Seen(q, hop)
            calls.append(call)
        return Reply(tool_calls=calls)

    def _worth_reading(self, state: AgentState, top: list[str]) -> list[str]:
        out = []
        for doc_id in top[:2]:
            doc = state_doc(state, doc_id)
            if doc_id in self._read or doc is None:
                continue
            shown = sum(1 for s in state.context.shown.values() if s.doc_id == doc_id)
            if doc.n_chunks > shown:
                out.append(doc_id)
        return out[:1]

    def _prune_list(self, state: AgentState) -> list[str]:
        keep = set(self._top_docs(state)[: self.max_docs])
        return [cid for cid, s in state.context.visible().items() if s.doc_id not in keep]

    # the answer -------------------------------------------------------------------------
    def _answer(self, state: AgentState) -> Reply:
        terms = content_terms(state.question)
        ranked = []
        for doc_id in self._top_docs(state)[: self.max_docs]:
            texts = [s.text for s in state.context.visible().values() if s.doc_id == doc_id]
            ranked.append(Ranked(doc_id, best_sentence(" ".join(texts), terms)))
        return Reply(text=render_final(ranked))

    def _call(self, name: str, args: dict) -> ToolCall:
        self._n += 1
        return ToolCall(f"b{self.variant}_{self._n}", name, json.dumps(args))


def state_doc(state: AgentState, doc_id: str):
    return state.corpus.doc(doc_id) if state.corpus is not None else None


def _entities(text: str) -> list[str]:
    """Capitalised phrases and years, without a leading function word."""
    out = []
    for m in _CAPS.finditer(text):
        words = m.group(0).split()
        while words and words[0] in _LEADING:
            words = words[1:]
        if words:
            phrase = " ".join(words).strip(".,'’")
            if phrase and not phrase.isdigit() or (phrase.isdigit() and len(phrase) == 4):
                out.append(phrase)
    return list(dict.fromkeys(out))


def best_sentence(text: str, terms: list[str]) -> str:
    """The sentence of ``text`` that covers most query terms (ties: the earlier one)."""
    best, best_score = "", -1.0
    for sent in _SENTENCE.split(text):
        words = set(re.findall(r"[\w']+", sent.lower()))
        score = sum(1 for t in terms if t in words) + min(len(sent), 200) / 1000
        if score > best_score:
            best, best_score = sent.strip(), score
    return " ".join(best.split())[:300]
