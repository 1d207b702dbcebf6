"""The built-in policy's answer (:class:`Answering`, a part of :class:`~c1.agent.policies.builtin.driver.BuiltinPolicy`):
which documents, in which order, with which confidences and justifications, and which chunks the
evidence has ruled out (pruned when the context needs room)."""

from __future__ import annotations

from c1.retrieval import evidence as evd
from c1.retrieval import ranking as rkg
from c1.retrieval.confidence import answer_confidences
from c1.retrieval import ranker as rk
from c1.agent.output import Ranked, render_final
from c1.agent.policy import AgentState, Reply

WEAK_EVIDENCE = 0.25
"""Evidence under this (in logit units: half a bridge, a sixth of a full identity match) is none, or a stray
bridge: it does not speak for a document that other evidence speaks against (:meth:`Answering._against`). It is no
margin in the order: any more evidence takes a document above one its question's own search ranked higher
(a margin of this size lost MuSiQue questions, docs/relevance.md, fifth pass)."""


class Answering:
    """The answer from what the run holds."""

    def _answer_ids(self) -> list[str]:
        """The answer: which documents, from the documents held in the order of the question's own search,
        departing from it only on evidence (:func:`c1.retrieval.ranking.anchored_order`); documents the question names
        keep their place, and so does what one search returns first; the floor drops documents under it, but
        one the own search ranked in its top ``max_docs`` only on evidence against it (``_against``): a low
        score alone does not. Then, with ``order="fitted"``, their order is the fitted ranker's
        (``_fitted_order``)."""
        if not self._ranking:
            return []
        held = list(self._scores)
        if self.gate and self._own:
            own = set(self._own)
            held = [d for d in held if d in own or self._evidenced(d)]
        ranked = rkg.anchored_order(self._ranking, self._own, held)
        anchor_top = set(self._own[: self.max_docs])  # what one search returns: only evidence drops it
        ranked = [d for d in ranked if self._ranking.fitted(d) >= self.floor or (d in anchor_top and not self._against(d))]
        top = ranked[: self.max_docs]
        # Documents the question names keep their place: all compared entities' documents for a
        # comparison question, at most half the answer otherwise (room for the documents they lead to).
        must = [d for d in ranked if self._explain[d]["named"]]
        cap = self.max_docs if self._comparison else max(1, self.max_docs // 2)
        must = sorted(must, key=lambda d: -self._scores[d])[:cap]
        # So does what one search returns first, unless evidence rules it out.
        first = self._own[0] if self._own else None
        if first in ranked and first not in must and not self._against(first):
            must.append(first)
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
        keywords are in another document held, not in this one, and nothing else speaks for it; or another
        document at least as close to the question has an identity that matches the names and period the
        question asks about, and nothing about this one does, nor links it to anything, nor does it lead to
        another document held (the "(no subject)" mails under a filing; a note whose name leads to the
        contacts sheet stays); or another document at least as close to the question holds every rare term
        of it and this one, all of it in view, none. (A document lacking one rare term of the question is
        not ruled out: the first hop of a multi-hop question lacks the second's words. Nor is one closer to
        the question than every document with that evidence: an abstract that words a claim its own way is
        what the claim is about.)"""
        f = self._explain[doc_id]
        weak = self._ranking.evidence(doc_id) < WEAK_EVIDENCE  # nothing, or a stray bridge
        if self._ranking.written_found and not (f.get("phrase") or f.get("keywords")) and weak:
            return True
        sim = f.get("sim", 0.0)
        if f.get("miss") and weak and any(g.get("rare", 0.0) >= 1.0 and g.get("sim", 0.0) >= sim
                                          for g in self._explain.values()):
            return True  # a document as close to the question holds every rare term of it, this one (all in view) none
        best = max((g.get("identity", 0.0) for g in self._explain.values() if g.get("sim", 0.0) >= sim), default=0.0)
        leads = any(doc_id in sources for sources in self._ranking.sources.values())
        return best >= 0.5 and not f.get("identity") and weak and not leads  # a hop that led elsewhere stays

    def _confidences(self, ids: list[str]) -> list[float]:
        """The answer's confidences: each document's probability, made non-increasing down the answer (a
        document ranked above another is not less likely to be needed) and calibrated by its place
        (``confidence.answer_confidences``; the first place is lifted only where something supports the question)."""
        return answer_confidences([self._ranking.confidence(d) for d in ids], supported=self._ranking.supported())

    def _evidenced(self, doc_id: str) -> bool:
        """Something beyond similarity says the document belongs: the question names it, a pivot
        links or bridges to it or it to a pivot, it holds a rare term or a phrase of the question,
        or its identity matches the question's names and period."""
        f = self._explain.get(doc_id, {})
        return bool(f.get("named") or f.get("link") or f.get("back") or f.get("bridge") or f.get("identity")
                    or f.get("phrase") or f.get("keywords") or f.get("rare", 0) >= 0.5)

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
            why = self._justification(state, views[doc_id]) if doc_id in views else ""
            ranked.append(Ranked(doc_id, why, round(conf, 4)))
        return Reply(text=render_final(ranked), ranked=ranked)

    def _justification(self, state: AgentState, view) -> str:
        """The document's justification from its view, as another run found it that held the same chunks of it
        and weighed the same bridges (``justification.bridge_names``; a chunk's similarity to the question is
        every run's)."""
        from c1.retrieval.justification import bridge_names

        key = ("why", view.doc_id, tuple(c for c, _ in view.chunks), bridge_names(view.doc_id, self._ranking))
        return self._alike(state, key, lambda: self._ranker.justification(view, self._qsim, self._ranking))
