#!/usr/bin/env python3
"""Fit the passage order (c1/retrieval/passage_order.py) on generated questions, and judge it kind by kind.

For each kind of the development suite (bench/suite.py's collections), questions are generated from the
collection itself (c1/train/extractive.py: a sentence is the answer, its document the gold; no benchmark
question is used), the built-in policy answers each, and the passages' reading of its documents
(``passages.read``: every candidate sentence, scored) gives one row per candidate: its features, whether
it overlaps the answer's sentence, and its place in the hand order (``order="rules"``). Rows are cached
in bench/out/passage_fit/<kind>.jsonl (``--refresh`` collects again).

Then, leave one kind out: for each kind, the order fitted on the other kinds' questions against the hand
order, on this kind's questions whose first document is the gold one: the answer's sentence among the
first document's first five candidates (``hit@5``; what the first document's five passages start from)
and first (``hit@1``), with paired bootstrap 95 % intervals. ``--write`` fits on every kind and writes
c1/data/passages.json (the shipped weights). What the user gets (passages grown, the budget, the real
questions' gold spans and pages) is judged by bench/passages.py (``--choose order=rules`` against it).

    python bench/passage_fit.py --kinds legal,mail --synthetic 60
    python bench/passage_fit.py --write
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

OUT = REPO / "bench" / "out" / "passage_fit"
KINDS = ("hotpotqa", "musique", "financebench", "mail", "legal", "sheets", "scifact")


def sentence_span(corpus, doc_id: str, sentence: str) -> tuple[int, int] | None:
    """Where the generated question's sentence lies in its document (document offsets)."""
    probe = sentence[:120]
    for c in corpus.doc_chunks(doc_id):
        i = c.text.find(probe)
        if i >= 0:
            return c.start + i, c.start + i + len(sentence)
    return None


def question_rows(corpus, settings, scorer, made) -> list[dict]:
    """One row per candidate sentence of the passages' reading of the built-in answer's documents."""
    from c1.retrieval import passage_order as po
    from c1.retrieval import passages as P
    from c1.service.search_service import search_here

    result = search_here(settings.with_flags(evidence_tokens=0), made.question, lambda *a: None, corpus=corpus)
    docs = result.documents
    if not docs:
        return []
    ids = [d["id"] for d in docs]
    gold = {d: span for d in made.gold if d in ids and (span := sentence_span(corpus, d, made.sentence))}
    if not gold:
        return []  # no gold document returned: no order of passages can help
    reading = P.read(corpus, made.question, ids, scorer, weights={d["id"]: d.get("score") or 0.0 for d in docs},
                     seen={d["id"]: [c["id"] for c in d.get("chunks") or [] if c.get("id")] for d in docs})
    if reading is None:
        return []
    rules = {id(c): i for i, c in enumerate(reading._hand_order()[0])}
    out = []
    for c, x in zip(reading.cands, po.features(reading)):
        span = gold.get(c.doc_id)
        out.append({"x": {f: round(v, 5) for f, v in x.items()}, "doc_rank": c.doc_rank,
                    "gold_doc": c.doc_id in gold, "gold": bool(span and c.start < span[1] and span[0] < c.end),
                    "rules": rules[id(c)]})
    return out


def collect(kind: str, case, embedder, n: int, refresh: bool) -> list[dict]:
    from c1.config import load_settings
    from c1.retrieval.corpus import Corpus
    from c1.retrieval.scorers import make_scorer
    from c1.train.extractive import make

    path = OUT / f"{kind}.jsonl"
    if path.is_file() and not refresh:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    settings = load_settings().with_flags(home=str(case.home), collection=case.collection, daemon=False)
    corpus = Corpus(settings, embedder)
    rows: list[dict] = []
    t0 = time.perf_counter()
    try:
        scorer = make_scorer(corpus)
        made = make(corpus, n, seed=sum(map(ord, kind)) + 1)  # not the ranker's questions (bench/ranker_fit.py)
        for i, m in enumerate(made):
            rows += [dict(r, kind=kind, qid=f"s{i}") for r in question_rows(corpus, settings, scorer, m)]
            if (i + 1) % 10 == 0:
                print(f"  {kind}: {i + 1}/{len(made)} questions, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    finally:
        corpus.close()
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def benchmark_rows(name: str) -> list[dict]:
    """The same rows for a corpus of bench/passages.py whose questions have passage gold (``legal``: spans,
    ``financebench``: pages), from that bench's cached runs (run it first): only ever judged on here, and
    fitted on only with ``--with-benchmark`` (then judged leave one kind out)."""
    from bench import passages as bp
    from c1.config import load_settings
    from c1.retrieval import passage_order as po
    from c1.retrieval import passages as P
    from c1.retrieval.corpus import Corpus
    from c1.retrieval.pages import page_of
    from c1.retrieval.scorers import make_scorer

    path = OUT / f"bench-{name}.jsonl"
    if path.is_file():
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    home, collection = bp.index_of(name)
    settings = load_settings().with_flags(home=str(home), collection=collection, daemon=False)
    corpus = Corpus(settings)
    rows: list[dict] = []
    try:
        qs = bp.questions(name)
        got = bp.runs(name, settings, corpus, qs, False)
        scorer = make_scorer(corpus)
        for q in qs:
            docs = got[q["id"]]["documents"]
            ids = [d["id"] for d in docs]
            reading = P.read(corpus, q["question"], ids, scorer, weights={d["id"]: d.get("score") or 0.0 for d in docs},
                             seen={d["id"]: [c["id"] for c in d["chunks"]] for d in docs}) if ids else None
            if reading is None:
                continue
            gold_docs = {d["id"] for d in docs if bp.is_gold(d["path"], q["gold"])}
            rules = {id(c): i for i, c in enumerate(reading._hand_order()[0])}
            for c, x in zip(reading.cands, po.features(reading)):
                mine = c.doc_id in gold_docs
                hit = mine and (any(c.start < e and a < c.end for a, e in q["spans"]) if q["spans"] else
                                page_of(reading.records[c.doc_id], reading.chunk_of[c.chunk_id], c.start) in q["pages"])
                rows.append({"x": {f: round(v, 5) for f, v in x.items()}, "doc_rank": c.doc_rank, "gold_doc": mine,
                             "gold": bool(hit), "rules": rules[id(c)], "kind": f"{name}-benchmark", "qid": q["id"]})
    finally:
        corpus.close()
    OUT.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["kind"], r["qid"]), []).append(r)
    return out


def fit_on(rows: list[dict], l2: float):
    from c1.retrieval import passage_order as po
    from c1.retrieval import ranker as rk

    gs = groups(rows)
    per_kind: dict[str, int] = {}
    for kind, _ in gs:
        per_kind[kind] = per_kind.get(kind, 0) + 1
    fitted = [rk.Group([r["x"] for r in g], [r["gold"] for r in g], len(gs) / (len(per_kind) * per_kind[kind]))
              for (kind, _), g in gs.items()]
    return rk.RankerWeights(rk.fit(fitted, l2, features=po.FEATURES), "fitted", {"kinds": per_kind, "l2": l2})


def judged(rows: list[dict], weights) -> dict[tuple, dict[str, tuple[float, float]]]:
    """Per question whose first document is gold: (hit@1, hit@5) of the first document's candidates, in the
    hand order and in the fitted one."""
    out = {}
    for key, g in groups(rows).items():
        first = [r for r in g if r["doc_rank"] == 0]
        if not first or not first[0]["gold_doc"] or not any(r["gold"] for r in first):
            continue
        orders = {"rules": sorted(first, key=lambda r: r["rules"]),
                  "fitted": sorted(first, key=lambda r: -weights.score(r["x"]))}
        out[key] = {name: (float(o[0]["gold"]), float(any(r["gold"] for r in o[:5]))) for name, o in orders.items()}
    return out


def report(name: str, per_q: dict, seed: int = 0) -> str:
    from c1.eval.stats import paired_interval

    keys = sorted(per_q)
    if not keys:
        return f"| {name} | 0 | | | |"
    cells = []
    for system in ("rules", "fitted"):
        cells.append(" / ".join(f"{sum(per_q[q][system][m] for q in keys) / len(keys):.3f}" for m in (0, 1)))
    diffs = []
    for m in (0, 1):
        d, low, high = paired_interval([per_q[q]["fitted"][m] for q in keys], [per_q[q]["rules"][m] for q in keys],
                                       seed=seed)
        diffs.append(f"{d:+.3f} ({low:+.2f}, {high:+.2f}){' *' if low > 0 or high < 0 else ''}")
    return f"| {name} | {len(keys)} | " + " | ".join(cells) + " | " + " / ".join(diffs) + " |"


def main(argv: list[str] | None = None) -> int:
    from c1.retrieval import passage_order as po
    from c1.retrieval import ranker as rk

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--synthetic", type=int, default=80, help="generated questions per kind")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--refresh", action="store_true", help="collect the rows again")
    ap.add_argument("--with-benchmark", action="store_true",
                    help="also fit on the legal and FinanceBench benchmark questions' gold spans and pages")
    ap.add_argument("--write", action="store_true", help="write the weights fitted on every kind to c1/data/passages.json")
    args = ap.parse_args(argv)
    embedder = suite._embedder()
    rows: dict[str, list[dict]] = {}
    for kind in [x for x in args.kinds.split(",") if x]:
        build = suite.CASES.get(kind)
        if build is None:
            print(f"  {kind}: no such kind in bench/suite.py, skipped", file=sys.stderr)
            continue
        rows[kind] = collect(kind, build(embedder, "dev"), embedder, args.synthetic, args.refresh)
    judged_only = {f"{name}-benchmark": benchmark_rows(name) for name in ("legal", "financebench")}
    if args.with_benchmark:
        rows |= judged_only
        judged_only = {}
    everything = fit_on([r for rs in rows.values() for r in rs], args.l2)
    print("weights fitted on every kind's generated questions:")
    print("  " + ", ".join(f"{f} {w:+.2f}" for f, w in everything.weights.items()))
    print("\nleave one kind out: fitted on the other kinds, judged on this kind's questions whose first document is"
          " gold\n")
    print("| kind | n | hand order hit@1 / hit@5 | fitted hit@1 / hit@5 | fitted − hand (95 %) |\n|---|---|---|---|---|")
    for kind, rs in rows.items():
        others = [r for other, s in rows.items() if other != kind for r in s]
        print(report(kind, judged(rs, fit_on(others, args.l2) if others else everything)))
    for kind, rs in judged_only.items():
        print(report(f"{kind} (never fitted on)", judged(rs, everything)))
    if args.write:
        fitted = dict(everything.fitted, command="python bench/passage_fit.py --write", synthetic_per_kind=args.synthetic)
        rk.save(rk.RankerWeights(everything.weights, "shipped", fitted), po.SHIPPED)
        print(f"\nwrote {po.SHIPPED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
