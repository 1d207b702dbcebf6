#!/usr/bin/env python3
"""Fit the answer's calibration: the confidence of a document given its evidence and its place.

The evidence model (c1/retrieval/evidence.py) gives each document a probability from its features, fitted
on multi-hop Wikipedia. It does not know what the first place means: on contracts, filings and mail
the document ranked first is the one asked for nearly always, at confidences of 0.2-0.5 (rank-1
expected calibration error 0.5-0.8 there). This fits, by logistic regression over the development
suite's rows of every kind, a three-number map from the answer's confidence ``c`` at place ``i``:

    calibrated = σ(SLOPE × logit(c) + BIAS + FIRST × [i = 0 and the question is supported])

(``c1/data/calibration.json``, which ``--write`` writes; "supported": the built-in policy's evidence, which
the suite's rows keep). The map is increasing in ``c`` and lifts only the first place, so the answer's
order and its non-increasing confidences stay as they were. Each kind weighs the same; questions that
nothing supports (``bench/suite.py --unsupported N``: gold empty, whatever they get is junk) are part of
their kind: where the policy sees that nothing supports them, their first place is not lifted; where it
does not, the fit pays for lifting it. Even questions of each kind fit, odd ones report; the fit reads
the confidences as the suite saved them, undone with the calibration they were saved under (each row says which; for rows saved before they
did, ``--saved``, default: the one c1 ships; ``none`` for rows saved before it existed).

    python bench/suite.py --systems builtin --limit 100 --unsupported 50 --rows /tmp/rows.jsonl
    python bench/calibration_fit.py /tmp/rows.jsonl            # the fit and its held-out figures
    python bench/calibration_fit.py /tmp/rows.jsonl --write    # ... written to c1/data/calibration.json
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
"""How near 0 or 1 a saved confidence is read (confidences are saved with 4 decimals)."""


def base_kind(kind: str) -> str:
    for suffix in ("-lc", "-none"):
        kind = kind.removesuffix(suffix)
    return kind


def examples(rows: list[dict], saved: tuple[float, float, float]) -> list[dict]:
    """One example per returned document: its features (logit of its uncalibrated confidence, first
    place), gold, the row's kind, its half (even/odd question of its kind) and its weight (each base kind
    weighs 1). ``saved``: the calibration the rows' confidences were saved under, where a row does not say."""
    from c1.retrieval.confidence import logit, uncalibrated

    per_kind = Counter(base_kind(r["kind"]) for r in rows)
    seen: Counter = Counter()
    out = []
    for r in rows:
        half = seen[r["kind"]] % 2
        seen[r["kind"]] += 1
        supported = r.get("supported", True)  # rows saved before the suite kept it: lifted as all were then
        for i, (score, gold) in enumerate(zip(r["scores"], r["gold_flags"])):
            if score is None:
                continue
            score = uncalibrated(score, i, tuple(r.get("calibration") or saved), supported)
            held = min(max(score, SAVED_EDGE), 1 - SAVED_EDGE)  # saved with 4 decimals: 1.0 is "above 0.99995"
            lifted = i == 0 and supported
            out.append({"x": (logit(held), 1.0 if lifted else 0.0, 1.0), "y": float(gold), "kind": r["kind"],
                        "half": half, "w": 1.0 / per_kind[base_kind(r["kind"])], "first": i == 0,
                        "supported": supported, "c": score})
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
    from c1.retrieval.confidence import CALIBRATION_FILE, calibrated, calibration

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", type=Path, nargs="+", help="bench/suite.py --rows files (built-in system, calibration off)")
    ap.add_argument("--saved", default="", help="the calibration the rows were saved under: SLOPE,BIAS,FIRST or none "
                    "(default: the one c1 ships)")
    ap.add_argument("--write", action="store_true", help=f"write the fit to {CALIBRATION_FILE.relative_to(REPO)}")
    ap.add_argument("--out", type=Path, default=CALIBRATION_FILE, help="with --write: this file instead")
    args = ap.parse_args(argv)
    saved = ((1.0, 0.0, 0.0) if args.saved == "none" else tuple(float(x) for x in args.saved.split(","))
             if args.saved else calibration())
    rows = [json.loads(line) for f in args.rows for line in f.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["system"] == "builtin"]
    data = examples(rows, saved)
    slope, bias, first = fit([d for d in data if d["half"] == 0])
    fitted_on = sum(1 for d in data if d["half"] == 0)
    print(f"calibration: slope {slope:.3f}, bias {bias:.3f}, first place {first:.3f}; fitted on {fitted_on} documents")
    junk = [r for r in rows if r["kind"].endswith("-none") and "supported" in r]
    if junk:  # whose first place the fit lifts although nothing supports them
        print(f"unsupported questions (--unsupported): {len(junk)}, seen as such by the policy: "
              f"{sum(1 for r in junk if not r['supported'])}")
    print()
    maps = {"none": (1.0, 0.0, 0.0), "shipped": calibration(), "fit": (slope, bias, first)}
    print("held-out half (odd questions of each kind): ECE of all returned documents, ECE of the first, mean first "
          "confidence, under " + " / ".join(maps))
    print("| kind | documents | ECE | ECE rank 1 | mean first confidence |")
    print("|---|---|---|---|---|")
    for kind in dict.fromkeys(r["kind"] for r in rows):
        mine = [d for d in data if d["kind"] == kind and d["half"] == 1]
        cells = [[], [], []]
        for params in maps.values():
            pairs = [(calibrated(d["c"], 0 if d["first"] else 1, params, d["supported"]), bool(d["y"])) for d in mine]
            top = [p for p, d in zip(pairs, mine) if d["first"]]
            cells[0].append(f"{ece(pairs) or 0:.3f}")
            cells[1].append(f"{ece(top) or 0:.3f}")
            cells[2].append(f"{sum(c for c, _ in top) / max(1, len(top)):.3f}")
        print(f"| {kind} | {len(mine)} | " + " | ".join(" / ".join(c) for c in cells) + " |")
    held = [d for d in data if d["half"] == 1]
    for name, params in maps.items():
        loss = sum(d["w"] * -math.log(max(1e-9, p if d["y"] else 1 - p))
                   for d in held for p in [calibrated(d["c"], 0 if d["first"] else 1, params, d["supported"])]) / sum(d["w"] for d in held)
        print(f"held-out log loss, {name}: {loss:.4f}")
    if args.write:
        args.out.write_text(json.dumps({
            "model": "logistic", "slope": round(slope, 4), "bias": round(bias, 4), "first": round(first, 4),
            "fitted": {"rows": "python bench/suite.py --systems builtin --limit 100 --unsupported 50 --rows ROWS",
                       "command": "python bench/calibration_fit.py ROWS --write", "documents": fitted_on,
                       "kinds": sorted({base_kind(r["kind"]) for r in rows})},
        }, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
