#!/usr/bin/env python3
"""Fit the built-in policy's document ranker (c1/retrieval/ranker.py) and judge it, kind by kind.

For each kind of the development suite (bench/suite.py's collections), questions are generated from
the collection itself (c1/train/extractive.py: a sentence is the answer, its document the gold; no
benchmark question is ever used to fit), the built-in policy runs on each, and every document it held
at the end becomes a row: its ranker features and whether it is gold. The same is done for the
benchmark's questions and the natural ones (bench/natural/<kind>.jsonl) — those rows are only measured
on, never fitted on.

Then:
- ``--write``: fit on the synthetic rows of every kind and write c1/data/ranker.json (the shipped weights);
- leave one kind out: for each kind, fit on the others' synthetic rows and re-rank that kind's benchmark
  and natural rows; also fit on the kind's own synthetic rows (what ``c1 train ranker`` does for a user);
- every figure is the share of questions whose first document is gold (rank 1) and whose gold documents
  are all in the first k (full), with a paired bootstrap 95 % interval of the difference against the
  order the run returned (the policy as it was when the rows were collected).

    python bench/ranker_fit.py --kinds hotpotqa,legal --synthetic 150      # collect (cached) and judge
    python bench/ranker_fit.py --write                                      # and write the shipped weights
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import suite  # noqa: E402

OUT = REPO / "bench" / "out" / "ranker"
KINDS = ("hotpotqa", "musique", "financebench", "mail", "legal", "sheets", "scifact")


def _cases(kinds, embedder):
    for kind in kinds:
        build = suite.CASES.get(kind)
        if build is None:
            print(f"  {kind}: no such kind in bench/suite.py, skipped", file=sys.stderr)
            continue
        yield kind, build(embedder, "dev")


def _natural(kind: str) -> list:
    path = REPO / "bench" / "natural" / f"{kind}.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            out.append(suite.Item(r["id"], r["question"], tuple(r["gold"]), tuple(r.get("answers", ())),
                                  tuple(r.get("pages", ()))))
    return out


def collect(kind: str, case, embedder, n_synthetic: int, k: int, refresh: set[str] = frozenset(),
            limit: int | None = None) -> list[dict]:
    """Rows of one kind: one per (question, document held); each split cached in
    bench/out/ranker/<kind>-<split>.jsonl (``refresh``: the splits to collect again)."""
    from c1.config import load_settings
    from c1.retrieval.corpus import Corpus
    from c1.train.extractive import make

    settings = load_settings().with_flags(home=str(case.home), collection=case.collection, max_docs=k)
    corpus = Corpus(settings, embedder)
    rows: list[dict] = []
    try:
        for split in ("synthetic", "benchmark", "natural"):
            path = OUT / f"{kind}-{split}.jsonl"
            if path.is_file() and split not in refresh:
                rows += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
                continue
            t0 = time.perf_counter()
            if split == "synthetic":
                made = make(corpus, n_synthetic, seed=sum(map(ord, kind)))
                items, key = [suite.Item(f"s{i}", m.question, m.gold) for i, m in enumerate(made)], "id"
            else:
                items, key = (case.items[:limit] if split == "benchmark" else _natural(kind)), case.key
            got = [r for it in items for r in _rows(corpus, settings, case, kind, split, it, key, k)]
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in got))
            rows += got
            print(f"  {kind} {split}: {len(items)} questions, {len(got)} rows in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
    finally:
        corpus.close()
    return rows


def _rows(corpus, settings, case, kind, split, it, key, k) -> list[dict]:
    from c1.train.ranking import held_rows

    gold = set(it.gold)

    def is_gold(d: str) -> bool:
        if key == "id":
            return d in gold
        doc = corpus.doc(d)
        return doc is not None and suite._key(case, {"id": d, "source_id": doc.source_id, "path": doc.path}) in gold

    rows = held_rows(corpus, settings, it.question, is_gold, k)
    return [dict(r, kind=kind, split=split, qid=it.qid, n_gold=len(gold)) for r in rows]


# --- judging ---------------------------------------------------------------------------------

def groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["kind"], r["split"], r["qid"]), []).append(r)
    return out


def fit_on(rows: list[dict], l2: float):
    from c1.retrieval import ranker as rk

    gs = groups(rows)
    per_kind: dict[str, int] = {}
    for (kind, _, _) in gs:
        per_kind[kind] = per_kind.get(kind, 0) + 1
    fitted = [rk.Group([r["x"] for r in g], [r["gold"] for r in g], len(gs) / (len(per_kind) * per_kind[kind]))
              for (kind, _, _), g in gs.items()]
    return rk.RankerWeights(rk.fit(fitted, l2), "fitted", {"kinds": per_kind, "l2": l2})


def measures(g: list[dict], order: list[dict], k: int) -> tuple[float, float]:
    n = g[0]["n_gold"]
    top = order[:k]
    got = sum(r["gold"] for r in top)
    return float(bool(top) and top[0]["gold"]), float(n > 0 and got >= n)


def judged(rows: list[dict], weights, k: int, floor: float = 0.0) -> dict[tuple, dict]:
    """Per question: rank 1 and full of the run's own answer and of the fitted order."""
    out = {}
    for key, g in groups(rows).items():
        if not g[0]["n_gold"]:
            continue
        ran = sorted([r for r in g if r["answer_place"] is not None], key=lambda r: r["answer_place"])
        fitted = sorted(g, key=lambda r: -weights.score(r["x"]))
        if floor:
            fitted = [r for r in fitted if r["fitted"] >= floor or r["x"]["top"]]
        out[key] = {"ran": measures(g, ran, k), "fitted": measures(g, fitted, k)}
    return out


def report(name: str, per_q: dict, seed: int = 0) -> str:
    from c1.eval.stats import paired_interval

    if not per_q:
        return f"| {name} | 0 | | | | |"
    keys = sorted(per_q)
    cells = []
    for m, label in ((0, "rank 1"), (1, "full")):
        a = [per_q[q]["ran"][m] for q in keys]
        b = [per_q[q]["fitted"][m] for q in keys]
        _, low, high = paired_interval(b, a, seed=seed)
        cells.append(f"{sum(a) / len(a):.3f} → {sum(b) / len(b):.3f} ({low:+.3f}, {high:+.3f})")
    return f"| {name} | {len(keys)} | " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    from c1.retrieval import ranker as rk

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--synthetic", type=int, default=150, help="generated questions per kind")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=100, help="the first N benchmark questions of each kind")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--floor", type=float, default=0.0, help="judge with the evidence model's floor too")
    ap.add_argument("--refresh", default="", help="splits to collect again: synthetic,benchmark,natural")
    ap.add_argument("--write", action="store_true", help="write the weights fitted on every kind to c1/data/ranker.json")
    args = ap.parse_args(argv)
    embedder = suite._embedder()
    rows: dict[str, list[dict]] = {}
    for kind, case in _cases([x for x in args.kinds.split(",") if x], embedder):
        rows[kind] = collect(kind, case, embedder, args.synthetic, args.k, set(args.refresh.split(",")), args.limit)
    synth = {kind: [r for r in rs if r["split"] == "synthetic"] for kind, rs in rows.items()}
    everything = fit_on([r for rs in synth.values() for r in rs], args.l2)
    print("weights fitted on every kind's synthetic questions:")
    print("  " + ", ".join(f"{f} {w:+.2f}" for f, w in everything.weights.items()))
    print(f"\n| kind / questions | n | rank 1: run → fitted (95 % interval of the difference) | full |")
    print("|---|---|---|---|")
    for kind, rs in rows.items():
        others = fit_on([r for other, s in synth.items() if other != kind for r in s], args.l2) if len(synth) > 1 else everything
        own = fit_on(synth[kind], args.l2)
        for split in ("benchmark", "natural"):
            part = [r for r in rs if r["split"] == split]
            if not part:
                continue
            print(report(f"{kind} {split}, fitted without {kind}", judged(part, others, args.k, args.floor)))
            print(report(f"{kind} {split}, fitted on {kind}'s own", judged(part, own, args.k, args.floor)))
            print(report(f"{kind} {split}, fitted on all", judged(part, everything, args.k, args.floor)))
    if args.write:
        fitted = dict(everything.fitted, command="python bench/ranker_fit.py --write",
                      synthetic_per_kind=args.synthetic, k=args.k)
        rk.save(rk.RankerWeights(everything.weights, "shipped", fitted), rk.SHIPPED)
        print(f"\nwrote {rk.SHIPPED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
