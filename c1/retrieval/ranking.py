"""A question's documents as the evidence model scored them (:class:`Ranking`), and the order that departs
from the question's own search only on evidence (:func:`anchored_order`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from c1.retrieval.confidence import logistic


@dataclass
class Ranking:
    scores: dict[str, float]
    """Logits (see the module docstring); higher is better."""
    features: dict[str, dict[str, float]]
    pivots: list[str]
    bridges: dict[str, list[str]]
    """Each pivot's bridge entities, best first (what the policy follows next)."""
    evidence_of: dict[str, float] = field(default_factory=dict)
    """What the ``EVIDENCE`` features add to each document's logit."""
    relational: dict[str, float] = field(default_factory=dict)
    """The part of it that links, back-links and bridges from pivots give."""
    sources: dict[str, set] = field(default_factory=dict)
    """The pivots each document's links, back-links and bridges came from."""

    offset: float = 0.0
    """Added to every logit for the confidences (see ``Ranker.rank``): a question that something held
    supports needs at least one document."""

    def confidence(self, doc_id: str) -> float:
        return logistic(self.scores[doc_id] + self.offset)

    def fitted(self, doc_id: str) -> float:
        """The evidence model's own probability, unshifted: what ``FLOOR`` and pruning compare."""
        return logistic(self.scores[doc_id])

    quoted_missing: bool = False
    """The question quotes a phrase that no document held holds."""
    support_sim: float | None = None
    """The similarity that supports a question, for the embedder that made the similarities; None for one
    that declares none (an ``--embed-url`` server): its similarities' scale is unknown, so similarity alone
    rules no question unsupported (a bound measured for another model would mean nothing for it)."""
    unseen: int = 0
    """The question's content words that no chunk holds (:attr:`c1.retrieval.question_terms.QuestionTerms.unseen`)."""
    rare_weight: float = 0.0
    """What holding all the question's rare terms is worth to the search's first document: the weight of a
    name. The search's first keeps the first place against a document with more evidence unless that
    one's lead also beats ``rare_weight`` for each share of the question's rare terms the first holds
    ("Bansaan", "WDXQ": words few chunks hold). The logistic fit gave ``rare`` no weight in the logit
    (over every document held, the similarity and the search's rank carry it), and as evidence for
    *every* place it would lift the distractors that a multi-hop question's words retrieve above the
    second hop that a link found (it cost HotpotQA full recall). For the first place it is what tells the
    first hop from a document whose title the question merely mentions ("Nobel Prize in Physics", "FA
    Cup") (``bench/suite.py``; the figures: docs/relevance.md)."""
    written_found: bool = False
    """Some document held holds the question's phrase, or all its keywords, as asked: one that lacks
    them (``miss``) is not what the question asks for."""

    def supported(self) -> bool:
        """Whether anything held supports the question (see ``support_sim``): a document the question
        names, or one that holds its phrase, all its keywords or all its rare terms, or that is close to it
        — unless the question quotes a phrase that nothing held holds (the words as written are what it asks)."""
        if any(f["named"] >= 1.0 or f["phrase"] for f in self.features.values()):
            return True
        if self.quoted_missing:
            return False
        if self.support_sim is None:  # an embedder of unknown scale: any document held is close enough
            return bool(self.features)
        rare_ok = not self.unseen  # all its rare terms, of a question whose every word the corpus holds
        return any(f["sim"] >= self.support_sim or f["keywords"] or (rare_ok and f["rare"] >= 1.0)
                   for f in self.features.values())

    def order(self) -> list[str]:
        return sorted(self.scores, key=lambda d: -self.scores[d])

    def evidence(self, doc_id: str) -> float:
        """The part of the document's logit that ``EVIDENCE`` features give (see ``Ranker.evidence``)."""
        return self.evidence_of.get(doc_id, 0.0)


def anchored_order(ranking: Ranking, anchor: list[str], docs: list[str]) -> list[str]:
    """``docs`` in the order of the question's own search (``anchor``; documents it did not return
    after it, by score), departing from it only on evidence: a document moves above one ranked
    higher only when its score is higher *and* its evidence (``EVIDENCE``: named, linked, bridged,
    identity, a rare term, a phrase, all the keywords — or the other's miss) is higher. Similarity
    alone never reorders what one search returned, so the run cannot end below that search because
    a sub-search brought in something merely similar; the reason for every departure is a feature
    a test can name."""
    pos = {d: i for i, d in enumerate(anchor)}
    scores = ranking.scores
    start = sorted(docs, key=lambda d: (pos.get(d, len(pos)), -scores.get(d, 0.0)))
    first = anchor[0] if anchor else None
    guard = (ranking.rare_weight * ranking.features.get(first, {}).get("rare", 0.0)) if first else 0.0
    out: list[str] = []
    for d in start:
        i = len(out)
        while i > 0 and _beats(ranking, d, out[i - 1], guard if out[i - 1] == first else 0.0):
            i -= 1
        out.insert(i, d)
    return out


def _beats(ranking: Ranking, d: str, other: str, guard: float = 0.0) -> bool:
    """``d`` goes above ``other``: a higher score and more evidence. What ``d`` owes to ``other`` (a link
    or a bridge from it: it is needed *beside* ``other``) does not count against ``other``, nor what
    ``other`` owes to ``d`` against ``d``."""
    if ranking.scores.get(d, -1e9) <= ranking.scores.get(other, -1e9):
        return False
    mine, theirs = ranking.evidence(d), ranking.evidence(other)
    if other in ranking.sources.get(d, ()):
        mine -= ranking.relational.get(d, 0.0)
    if d in ranking.sources.get(other, ()):  # and the other way round: two filings of one company bridge to each other
        theirs -= ranking.relational.get(other, 0.0)
    return mine > theirs + guard
