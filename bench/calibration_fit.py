#!/usr/bin/env python3
"""Fit the answer's calibration: the confidence of a document given its evidence and its place.

The evidence model (c1/agent/evidence.py) gives each document a probability from its features, fitted
on multi-hop Wikipedia. It does not know what the first place means: on contracts, filings and mail
the document ranked first is the one asked for nearly always, at confidences of 0.2-0.5 (rank-1
expected calibration error 0.5-0.8 there). This fits, by logistic regression over the development
suite's rows of every kind, a three-number map from the answer's confidence ``c`` at place ``i``:

    calibrated = σ(SLOPE × logit(c) + BIAS + FIRST × [i = 0])

(``confidence.CALIBRATION``). The map is increasing in ``c`` and lifts only the first place, so the
answer's order and its non-increasing confidences stay as they were. Each kind weighs the same;
questions that nothing supports (``bench/suite.py --unsupported N``: gold empty, whatever they get is
junk) are part of their kind, so the first place of a junk answer is not lifted for free. Even
questions of each kind fit, odd ones report; the fit reads the confidences as the suite saved them,
undone with the calibration they were saved under (``--saved``, default: the one in
c1/agent/evidence.py; ``none`` for rows saved before it existed).

    python bench/suite.py --systems builtin --limit 100 --unsupported 50 --rows /tmp/rows.jsonl
    python bench/calibration_fit.py /tmp/rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


SAVED_EDGE = 1e-6
"""How near 0 or 1 a saved confidence is read (the fit of confidence.CALIBRATION read them so)."""


def base_kind(kind: str) -> str:
    for suffix in ("-lc", "-none"):
        kind = kind.removesuffix(suffix)
    return kind


def examples(rows: list[dict], saved: tuple[float, float, float]) -> list[dict]:
    """One example per returned document: its features (logit of its uncalibrated confidence, first
    place), gold, the row's kind, its half (even/odd question of its kind) and its weight (each base kind
    weighs 1). ``saved``: the calibration the rows' confidences were saved under."""
    from c1.retrieval.confidence import logit, uncalibrated

    per_kind = Counter(base_kind(r["kind"]) for r in rows)
    seen: Counter = Counter()
    out = []
    for r in rows:
        half = seen[r["kind"]] % 2
        seen[r["kind"]] += 1
        for i, (score, gold) in enumerate(zip(r["scores"], r["gold_flags"])):
            if score is None:
                continue
            score = uncalibrated(score, i, saved)
            held = min(max(score, SAVED_EDGE), 1 - SAVED_EDGE)  # saved with 4 decimals: 1.0 is "above 0.99995"
            out.append({"x": (logit(held), 1.0 if i == 0 else 0.0, 1.0), "y": float(gold), "kind": r["kind"],
                        "half": half, "w": 1.0 / per_kind[base_kind(r["kind"])], "first": i == 0, "c": score})
    return out


def fit(data: list[dict], iterations: int = 100, ridge: float = 1e-3) -> tuple[float, float, float]:
    """Weighted logistic regression (Newton's method, a small ridge) of gold on (logit c, first, 1)."""
    import numpy as np

    x = np.array([d["x"] for d in data])
    y = np.array([d["y"] for d in data])
    w = np.array([d["w"] for d in data])
    beta = np.array([1.0, 0.0, 0.0])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-x @ beta))
        grad = x.T @ (w * (p - y)) + ridge * beta
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + ridge * np.eye(3)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if abs(step).max() < 1e-9:
            break
    slope, first, bias = float(beta[0]), float(beta[1]), float(beta[2])
    return slope, bias, first


def main(argv: list[str] | None = None) -> int:
    from bench.suite import ece
    from c1.retrieval.confidence import CALIBRATION, calibrated

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", type=Path, nargs="+", help="bench/suite.py --rows files (built-in system, calibration off)")
    ap.add_argument("--saved", default="", help="the calibration the rows were saved under: SLOPE,BIAS,FIRST or none "
                    "(default: c1's CALIBRATION)")
    args = ap.parse_args(argv)
    saved = ((1.0, 0.0, 0.0) if args.saved == "none" else tuple(float(x) for x in args.saved.split(","))
             if args.saved else CALIBRATION)
    rows = [json.loads(line) for f in args.rows for line in f.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["system"] == "builtin"]
    data = examples(rows, saved)
    slope, bias, first = fit([d for d in data if d["half"] == 0])
    print(f"CALIBRATION = ({slope:.3f}, {bias:.3f}, {first:.3f})  # slope, bias, first place; "
          f"fitted on {sum(1 for d in data if d['half'] == 0)} documents\n")
    print("held-out half: ECE of all returned documents, of the first; before → after")
    print("| kind | documents | ECE | ECE rank 1 | mean first confidence |")
    print("|---|---|---|---|---|")
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [d for d in data if d["kind"] == kind and d["half"] == 1]
        after = [calibrated(d["c"], 0 if d["first"] else 1, (slope, bias, first)) for d in mine]
        pairs0 = [(d["c"], bool(d["y"])) for d in mine]
        pairs1 = [(a, bool(d["y"])) for a, d in zip(after, mine)]
        top0 = [p for p, d in zip(pairs0, mine) if d["first"]]
        top1 = [p for p, d in zip(pairs1, mine) if d["first"]]
        mean0 = sum(s for s, _ in top0) / max(1, len(top0))
        mean1 = sum(s for s, _ in top1) / max(1, len(top1))
        print(f"| {kind} | {len(mine)} | {ece(pairs0) or 0:.3f} → {ece(pairs1) or 0:.3f} | "
              f"{ece(top0) or 0:.3f} → {ece(top1) or 0:.3f} | {mean0:.3f} → {mean1:.3f} |")
    held = [d for d in data if d["half"] == 1]
    for name, params in (("before", (1.0, 0.0, 0.0)), ("after", (slope, bias, first))):
        loss = sum(d["w"] * -math.log(max(1e-9, p if d["y"] else 1 - p))
                   for d in held for p in [calibrated(d["c"], 0 if d["first"] else 1, params)]) / sum(d["w"] for d in held)
        print(f"held-out log loss {name}: {loss:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
