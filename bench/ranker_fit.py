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
                judge = case
            else:
                judge = case if split == "benchmark" else suite.natural_case(case, kind)
                items, key = ((judge.items[:limit] if split == "benchmark" else judge.items) if judge else []), "case"
            got = [r for it in items for r in _rows(corpus, settings, judge, kind, split, it, key, k)]
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r) + "\n" for r in got))
            rows += got
            print(f"  {kind} {split}: {len(items)} questions, {len(got)} rows in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
    finally:
        corpus.close()
    return rows


def _rows(corpus, settings, case, kind, split, it, key, k) -> list[dict]:
    """``key``: "id" (a generated question's gold are document ids) or "case" (the case's keys, copies
    of a gold document counting as it)."""
    from c1.train.ranking import held_rows

    gold = set(it.gold)

    def is_gold(d: str) -> bool:
        if key == "id":
            return d in gold
        doc = corpus.doc(d)
        return doc is not None and bool(gold & set(suite.keys_of(case, it, [{"id": d, "source_id": doc.source_id,
                                                                           "path": doc.path}])))

    rows = held_rows(corpus, settings, it.question, is_gold, k)
    return [dict(r, kind=kind, split=split, qid=it.qid, n_gold=len(gold)) for r in rows]


# --- judging ---------------------------------------------------------------------------------

def groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["kind"], r.get("split", ""), r["qid"]), []).append(r)
    return out


def fit_on(rows: list[dict], l2: float, prior=None, features: tuple[str, ...] | None = None):
    """Weights fitted on ``rows`` (each kind weighing alike, whatever its question count); ``features``:
    the row keys fitted (default: the document ranker's); bench/passage_fit.py fits the passage order so."""
    from c1.retrieval import ranker as rk

    gs = groups(rows)
    per_kind: dict[str, int] = {}
    for (kind, _, _) in gs:
        per_kind[kind] = per_kind.get(kind, 0) + 1
    fitted = [rk.Group([r["x"] for r in g], [r["gold"] for r in g], len(gs) / (len(per_kind) * per_kind[kind]))
              for (kind, _, _), g in gs.items()]
    return rk.RankerWeights(rk.fit(fitted, l2, prior=prior.weights if prior else None,
                                   features=features or rk.FEATURES), "fitted", {"kinds": per_kind, "l2": l2})


def measures(g: list[dict], order: list[dict], k: int) -> tuple[float, float]:
    n = g[0]["n_gold"]
    top = order[:k]
    got = sum(r["gold"] for r in top)
    return float(bool(top) and top[0]["gold"]), float(n > 0 and got >= n)


def orders(g: list[dict], weights, k: int) -> dict[str, list[dict]]:
    """One question's documents in each order judged: ``one`` (the question's own search: one hybrid
    search), ``run`` (the answer of the run that collected the rows: the evidence's composition and
    order), ``fitted`` (the run's answer re-ordered by the ranker: what the policy does now) and
    ``whole`` (every document held, by the ranker alone: the composition fitted too)."""
    one = sorted([r for r in g if r["x"]["own"]], key=lambda r: -r["x"]["anchor"])
    run = sorted([r for r in g if r["answer_place"] is not None], key=lambda r: r["answer_place"])[:k]
    return {"one": one, "run": run, "fitted": sorted(run, key=lambda r: -weights.score(r["x"])),
            "whole": sorted(g, key=lambda r: -weights.score(r["x"]))}


SYSTEMS = ("one", "run", "fitted", "whole")


def judged(rows: list[dict], weights, k: int) -> dict[tuple, dict]:
    """Per question with gold: (rank 1, full) in every order of :func:`orders`."""
    return {key: {name: measures(g, o, k) for name, o in orders(g, weights, k).items()}
            for key, g in groups(rows).items() if g[0]["n_gold"]}


def report(name: str, per_q: dict, seed: int = 0) -> str:
    """A table row: each system's rank 1 and full, then fitted − run and fitted − one (paired 95 %)."""
    from c1.eval.stats import paired_interval

    keys = sorted(per_q)
    if not keys:
        return f"| {name} | 0 |" + " |" * 6
    mean = lambda sys, m: sum(per_q[q][sys][m] for q in keys) / len(keys)  # noqa: E731
    cells = [" / ".join(f"{mean(sys, m):.3f}" for m in (0, 1)) for sys in SYSTEMS]
    for base in ("run", "one"):
        diffs = []
        for m in (0, 1):
            d, low, high = paired_interval([per_q[q]["fitted"][m] for q in keys], [per_q[q][base][m] for q in keys],
                                           seed=seed)
            diffs.append(f"{d:+.3f} ({low:+.2f}, {high:+.2f}){' *' if low > 0 or high < 0 else ''}")
        cells.append(" / ".join(diffs))
    return f"| {name} | {len(keys)} | " + " | ".join(cells) + " |"


HEADER = ("| kind | n | one search r1 / full | run r1 / full | fitted r1 / full | whole r1 / full "
          "| fitted − run r1 / full (95 %) | fitted − one search r1 / full (95 %) |\n|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    from c1.retrieval import ranker as rk

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--synthetic", type=int, default=150, help="generated questions per kind")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=100, help="the first N benchmark questions of each kind")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--refresh", default="", help="splits to collect again: synthetic,benchmark,natural")
    ap.add_argument("--own", action="store_true", help="also judge weights fitted on the kind's own synthetic questions")
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
    print("\nleave one kind out: fitted on the other kinds' synthetic questions, judged on this kind's questions\n")
    print(HEADER)
    for kind, rs in rows.items():
        others = [r for other, s in synth.items() if other != kind for r in s]
        weights = fit_on(others, args.l2) if others else everything
        for split in ("benchmark", "natural"):
            part = [r for r in rs if r["split"] == split]
            if part:
                print(report(f"{kind} {split}", judged(part, weights, args.k)))
                if args.own:
                    own = fit_on(synth[kind], args.l2, prior=weights)  # as c1 train ranker: from the shipped ones
                    print(report(f"{kind} {split} (refitted on {kind}'s own)", judged(part, own, args.k)))
    if args.write:
        fitted = dict(everything.fitted, command="python bench/ranker_fit.py --write",
                      synthetic_per_kind=args.synthetic, k=args.k)
        rk.save(rk.RankerWeights(everything.weights, "shipped", fitted), rk.SHIPPED)
        print(f"\nwrote {rk.SHIPPED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
