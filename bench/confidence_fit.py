#!/usr/bin/env python3
"""Fit the built-in policy's evidence weights: logistic regression on the tuning halves.

The built-in policy scores each document it holds with a logit ``BIAS + Σ w_f × f`` over the
features of c1/retrieval/evidence.py, and reports its logistic as a confidence. This script runs the
policy (with the weights in use) on three kinds of questions — the shared HotpotQA and MuSiQue
sets pooled (bench/multihop.py's halves), and the known-item questions on mail and filings
(bench/known_item.py, even positions tune) — plus, for each set, 50 unsupported questions made of
random words of its questions (``nonsense``), and takes every document each run held at its end,
gold or not, with its features. Then, by default (``--calibrate``), it keeps the ranking weights
and fits their common scale, the weight of ``support`` and the bias by logistic regression
(questions of each set together weigh the same); ``--search`` first searches the ranking weights
for top-k quality (coordinate ascent), ``--pointwise`` fits every weight by logistic regression.
It prints the weights to put in ``evidence.WEIGHTS``/``BIAS`` and the log loss on both halves.
Held-out questions are never used for fitting.

    python bench/confidence_fit.py                     # fit on the tuning halves, report both halves
    python bench/confidence_fit.py --rounds 2          # refit with the weights of the first fit (the runs change with them)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.multihop import OUT, open_pool, tuning_half  # noqa: E402


def nonsense(questions: list[str], n: int, seed: int = 0) -> list[str]:
    """``n`` questions that no document supports: three to five content words of the set's questions
    drawn at random (seeded), as in "quantum sourdough starters Mars" — every word is in the corpus,
    the combination in no document."""
    import random

    from c1.retrieval.terms import content_terms

    vocab = sorted({t for q in questions for t in content_terms(q) if t.isalpha() and len(t) > 3})
    rng = random.Random(seed)
    return [" ".join(rng.sample(vocab, rng.randint(3, 5))) for _ in range(n)]


def collect(dataset: str, home: Path, weights: dict | None, bias: float | None, k: int,
            n_nonsense: int = 0) -> list[dict]:
    """One row per (question, document held at the end of the run): features, gold, half. Nonsense
    questions (``nonsense``) come after the set's own, every document they get non-gold.

    ``dataset``: ``hotpotqa`` or ``musique`` (pooled, in ``home``), or ``known``: bench/known_item.py's
    questions on its mixed folder (gold: the target message and its copies, or the filing of a page)."""
    import os

    from c1.eval.datasets import Question

    if dataset == "known":
        from bench import known_item
        from c1.retrieval.corpus import Corpus
        from c1.config import load_settings

        known_item.build(known_item.OUT / "mixed_home")
        settings = load_settings().with_flags(home=str(known_item.OUT / "mixed_home"),
                                              collection=known_item.COLLECTION, max_docs=k)
        corpus = Corpus(settings)
        its = known_item.items(corpus, known_item.KINDS, 60, known_item.OUT / "known_items.json")
        questions = [Question(str(i), it.question, (), tuple(g.split("#p")[0] for g in it.gold)) for i, it in enumerate(its)]
        halves = [i % 2 == 0 for i in range(len(questions))]

        def is_gold(doc, q) -> bool:
            return doc.doc_id in q.gold or os.path.basename(doc.path) in q.gold
    else:
        ds, settings, corpus = open_pool(dataset, home, max_docs=k)
        questions = ds.questions
        halves = [tuning_half(dataset, i) for i in range(len(questions))]

        def is_gold(doc, q) -> bool:
            return doc.source_id in q.gold
    extra = [Question(f"nonsense-{j}", text, (), ()) for j, text in
             enumerate(nonsense([q.question for q in questions], n_nonsense))]
    try:
        return _rows(dataset, corpus, settings, questions + extra, halves + [j % 2 == 0 for j in range(len(extra))],
                     len(questions), is_gold, weights, bias, k)
    finally:
        corpus.close()


def _rows(dataset, corpus, settings, questions, halves, n_real, is_gold, weights, bias, k) -> list[dict]:
    from c1.retrieval import evidence
    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    rows = []
    old_bias = evidence.BIAS
    if bias is not None:
        evidence.BIAS = bias
    try:
        for i, q in enumerate(questions):
            held: list = []

            def make(v):
                p = BuiltinPolicy(max_docs=k, variant=v, weights=weights, floor=0.0)
                held.append(p)
                return p

            run_search(corpus, settings, q.question, make)
            ranking = held[0]._ranking
            if ranking is None:
                continue
            order = ranking.order()
            for d, f in ranking.features.items():
                doc = corpus.doc(d)
                rows.append({"dataset": dataset, "q": i, "tune": halves[i], "rank": order.index(d) + 1,
                             "nonsense": i >= n_real, "gold": bool(doc) and is_gold(doc, q), "n_gold": len(q.gold),
                             "title": (doc.source_id or doc.title) if doc else d, **f})
    finally:
        evidence.BIAS = old_bias
    return rows


def fit(rows: list[dict], features: tuple[str, ...], l2: float = 1.0, iters: int = 50) -> tuple[float, dict]:
    """Logistic regression (bias + one weight per feature) by Newton's method; rows weighted so
    that each dataset counts the same in total."""
    import numpy as np

    x = np.array([[1.0] + [r[f] for f in features] for r in rows])
    y = np.array([1.0 if r["gold"] else 0.0 for r in rows])
    per = {}
    for r in rows:
        per[r["dataset"]] = per.get(r["dataset"], 0) + 1
    w_row = np.array([len(rows) / (len(per) * per[r["dataset"]]) for r in rows])
    beta = np.zeros(x.shape[1])
    reg = np.full(x.shape[1], l2)
    reg[0] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(x @ beta)))
        grad = x.T @ (w_row * (p - y)) + reg * beta
        hess = (x * (w_row * p * (1 - p))[:, None]).T @ x + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(beta[0]), {f: float(b) for f, b in zip(features, beta[1:])}


def fit_ranking(rows: list[dict], features: tuple[str, ...], l2: float = 1.0, iters: int = 50) -> dict:
    """Weights that rank each question's gold documents above its others: the conditional logit of
    c1/retrieval/ranker.py (``fit``) over ``features``; each dataset counts the same in total."""
    from c1.retrieval.ranker import Group, fit

    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["q"]), []).append(r)
    per: dict[str, int] = {}
    for (ds, _), g in groups.items():
        per[ds] = per.get(ds, 0) + 1
    return fit([Group(g, [r["gold"] for r in g], len(groups) / (len(per) * per[ds])) for (ds, _), g in groups.items()],
               l2, iters, features=features)


def top_k_quality(rows: list[dict], weights: dict, k: int) -> float:
    """Re-ranked offline by ``weights``: the mean over datasets of full recall at k plus half the
    recall at k (known items: the target first, plus half for the target in the top k) — what the
    policy is tuned for; gate, kept names and pivots are left out."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["q"]), []).append(r)
    per: dict[str, list[float]] = {}
    for (ds, _), g in groups.items():
        top = sorted(g, key=lambda r: -sum(weights[f] * r[f] for f in weights))[:k]
        got = sum(r["gold"] for r in top)
        n = g[0]["n_gold"]
        if not n:  # a nonsense question: nothing to rank
            continue
        if ds == "known":  # one target (in several copies): first, else in the top k
            per.setdefault(ds, []).append(float(top[0]["gold"]) + 0.5 * float(got > 0))
        else:
            per.setdefault(ds, []).append(float(got == n) + 0.5 * got / n)
    return sum(sum(v) / len(v) for v in per.values()) / len(per)


def search_weights(rows: list[dict], start: dict, features: tuple[str, ...], k: int) -> dict:
    """Coordinate ascent on ``top_k_quality``: each fitted feature's weight multiplied by factors
    in turn (0 and a small value tried too), kept when the measure rises, until no change helps."""
    best = dict(start)
    value = top_k_quality(rows, best, k)
    for _ in range(6):
        moved = False
        for f in features:
            for factor in (0.0, 0.5, 0.7, 1.4, 2.0):
                trial = dict(best)
                trial[f] = best[f] * factor if best[f] else (0.5 if factor else 0.0)
                v = top_k_quality(rows, trial, k)
                if v > value + 1e-9:
                    best, value, moved = trial, v, True
        if not moved:
            break
    return best


def platt(rows: list[dict], weights: dict) -> tuple[float, float, float]:
    """Scale, bias and the weight of ``support`` (how well the best document held covers the question:
    the same for all documents of a question, so it moves the confidence of all of them and none of
    their order) mapping the ranking score to a calibrated probability (logistic regression on two
    inputs)."""
    rows2 = [{"dataset": r["dataset"], "gold": r["gold"], "support": r["support"],
              "score": sum(weights[f] * r[f] for f in weights if f != "support")} for r in rows]
    bias, w = fit(rows2, ("score", "support"), l2=0.0)
    return w["score"], bias, w["support"]


def log_loss(rows: list[dict], bias: float, weights: dict) -> float:
    total = 0.0
    for r in rows:
        z = bias + sum(weights[f] * r[f] for f in weights)
        p = min(1 - 1e-9, max(1e-9, 1 / (1 + math.exp(-z))))
        total -= math.log(p if r["gold"] else 1 - p)
    return total / max(1, len(rows))


def main(argv: list[str] | None = None) -> int:
    from c1.retrieval import evidence

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=OUT / "eval_home")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1, help="collect and fit this many times, each with the last fit")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--rows", type=Path, default=OUT / "confidence_rows.jsonl")
    ap.add_argument("--pointwise", action="store_true", help="one logistic regression over all rows (calibration only)")
    ap.add_argument("--datasets", default="hotpotqa,musique,known",
                    help="tuning sets: hotpotqa, musique (pooled), known (bench/known_item.py's questions)")
    ap.add_argument("--nonsense", type=int, default=50, help="unsupported questions added to each set (see nonsense())")
    ap.add_argument("--calibrate", action="store_true",
                    help="keep the ranking weights, fit only their scale and the bias (a 1-D logistic regression)")
    ap.add_argument("--search", action="store_true",
                    help="search the ranking weights for top-k quality (coordinate ascent), then calibrate their scale")
    ap.add_argument("--features", default="sim,anchor,named,rare,link,back,bridge",
                    help="features fitted for ranking; the others (never seen in these sets) take the weight of named")
    args = ap.parse_args(argv)
    args.features = tuple(f.strip() for f in args.features.split(",") if f.strip())
    args.datasets = tuple(d.strip() for d in args.datasets.split(",") if d.strip())

    weights, bias = dict(evidence.WEIGHTS), evidence.BIAS
    for n in range(args.rounds):
        rows = [r for ds in args.datasets for r in collect(ds, args.home, weights, bias, args.k, args.nonsense)]
        tune = [r for r in rows if r["tune"]]
        held = [r for r in rows if not r["tune"]]
        if args.calibrate:
            scale, new_bias, w_support = platt(tune, weights)
            new_weights = {f: scale * weights[f] for f in evidence.FEATURES}
            new_weights["support"] = w_support
        elif args.search:
            print(f"  top-{args.k} measure with the weights in use: tune {top_k_quality(tune, weights, args.k):.4f}, "
                  f"held-out {top_k_quality(held, weights, args.k):.4f}")
            ranking = search_weights(tune, weights, args.features, args.k)
            print(f"  top-{args.k} measure with the searched weights: tune {top_k_quality(tune, ranking, args.k):.4f}, "
                  f"held-out {top_k_quality(held, ranking, args.k):.4f}")
            scale, new_bias, w_support = platt(tune, ranking)
            new_weights = {f: scale * ranking[f] for f in evidence.FEATURES}
            new_weights["support"] = w_support
        elif args.pointwise:
            new_bias, new_weights = fit(tune, evidence.FEATURES, args.l2)
        else:
            ranking = fit_ranking(tune, args.features, args.l2)
            scale, new_bias, w_support = platt(tune, ranking)
            new_weights = {f: scale * ranking.get(f, 0.0) for f in evidence.FEATURES}
            new_weights["support"] = w_support
            for f in evidence.FEATURES:  # features the tuning sets never show take the weight of a name
                if f not in args.features:
                    new_weights[f] = new_weights["named"]
        print(f"round {n + 1}: {len(tune)} tuning rows, {len(held)} held-out rows")
        print(f"  log loss with the weights in use: tune {log_loss(tune, bias, weights):.4f}, "
              f"held-out {log_loss(held, bias, weights):.4f}")
        print(f"  log loss with the fitted weights: tune {log_loss(tune, new_bias, new_weights):.4f}, "
              f"held-out {log_loss(held, new_bias, new_weights):.4f}")
        print(f"  BIAS = {new_bias:.2f}")
        print("  WEIGHTS = {" + ", ".join(f'"{f}": {w:.2f}' for f, w in new_weights.items()) + "}")
        weights, bias = {f: round(w, 2) for f, w in new_weights.items()}, round(new_bias, 2)
    with open(args.rows, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
