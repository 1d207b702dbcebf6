"""Fitting the document ranker on a collection: generated questions, the built-in runs, a conditional logit.

``held_rows`` runs the built-in policy on one question and returns a row per document it held at the
end (the ranker's features, gold or not): what both ``c1 train ranker`` and bench/ranker_fit.py fit on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from c1.retrieval import ranker as rk


def held_rows(corpus, settings, question: str, is_gold: Callable[[str], bool], k: int) -> list[dict]:
    """One row per document the built-in run held at its end: ``x`` (features), ``gold``, ``answer_place``
    (its place in the run's answer, or None), ``fitted`` (the evidence model's probability)."""
    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    held = []

    def policy(v):
        p = BuiltinPolicy(max_docs=k, variant=v, order="anchored")
        held.append(p)
        return p

    corpus.clear_query_cache()
    result = run_search(corpus, settings.with_flags(parallel=1, max_docs=k), question, policy)
    p = held[0]
    if p._ranking is None:
        return []
    answer = [d["id"] for d in result.documents]
    place = {d: i for i, d in enumerate(p._own, start=1)}
    return [{"doc": d, "gold": is_gold(d), "answer_place": answer.index(d) if d in answer else None,
             "fitted": p._ranking.fitted(d), "x": rk.features(f, place.get(d), k)}
            for d, f in p._ranking.features.items()]


@dataclass
class Fitted:
    weights: rk.RankerWeights
    questions: int
    informative: int
    """Questions whose run held a gold document beside others (the only ones a conditional logit learns from)."""
    held_gold: float
    """Share of the questions whose run held a gold document at all."""


def fit_collection(corpus, settings, n: int, k: int = 5, l2: float = 1.0, seed: int = 0,
                   progress: Callable[[int, int], None] = lambda i, n: None) -> Fitted:
    """Questions made from the collection (c1/train/extractive.py), the built-in policy's runs on them,
    and the ranker's weights fitted on what the runs held."""
    from c1.train.extractive import make

    made = make(corpus, n, seed=seed)
    groups = []
    held_gold = 0
    for i, m in enumerate(made):
        gold = set(m.gold)
        rows = held_rows(corpus, settings, m.question, gold.__contains__, k)
        held_gold += any(r["gold"] for r in rows)
        if rows:
            groups.append(rk.Group([r["x"] for r in rows], [r["gold"] for r in rows]))
        progress(i + 1, len(made))
    informative = sum(1 for g in groups if any(g.gold) and not all(g.gold))
    weights = rk.fit(groups, l2, prior=rk.load().weights)  # from the shipped weights, as far as the questions show
    meta = {"command": f"c1 train ranker -c {settings.collection}", "questions": len(made),
            "informative": informative, "l2": l2, "k": k, "seed": seed}
    return Fitted(rk.RankerWeights(weights, "collection", meta), len(made), informative,
                  held_gold / len(made) if made else 0.0)
