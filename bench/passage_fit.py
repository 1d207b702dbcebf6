#!/usr/bin/env python3
"""Fit the passage order (c1/retrieval/passage_order.py) on generated questions, and judge it kind by kind.

For each kind of the development suite (bench/suite.py's collections), questions are generated from the
collection itself, no benchmark question used, in three shapes (``--shapes``):
- ``sentences``: c1/train/extractive.py, a sentence's own words;
- ``rows``: a table row's label and a column's year ("amcor net sales 2022"), the row the gold;
- ``titles``: a clause by its section's name ("governing law clause"), its first sentence the gold.
The built-in policy answers each, and the passages' reading of its documents (``passages.read``: every
candidate sentence, scored) gives one row per candidate: its features, whether it overlaps the answer's
sentence, and its place in the hand order (``order="rules"``). Rows are cached in
bench/out/passage_fit/<kind>[-<shape>].jsonl (``--refresh`` collects again).

Then, leave one kind out: for each kind, the order fitted on the other kinds' questions against the hand
order, on this kind's questions whose first document is the gold one: the answer's sentence among the
first document's first five candidates (``hit@5``; what the first document's five passages start from)
and first (``hit@1``), with paired bootstrap 95 % intervals. ``--write`` fits on every kind and writes
c1/data/passages.json (the shipped weights). What the user gets (passages grown, the budget, the real
questions' gold spans and pages) is judged by bench/passages.py (``--choose order=fitted`` against a dump of
the hand order).

    python bench/passage_fit.py --kinds legal,mail --synthetic 60 --shapes sentences,rows,titles
    python bench/passage_fit.py --shapes rows,titles --write      # c1/data/passages.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import suite  # noqa: E402
from bench.passages import original_span  # noqa: E402
from bench.ranker_fit import fit_on as _fit_on, groups  # noqa: E402

OUT = REPO / "bench" / "out" / "passage_fit"
KINDS = ("hotpotqa", "musique", "financebench", "mail", "legal", "sheets", "scifact")


_FIGURE = re.compile(r"\s(?:[$€£—–-]|\(?\d[\d,.]*\)?%?(?=\s|$|\|))")
_YEARS = re.compile(r"\b(?:19|20)\d{2}\b")
_TITLE_NUMBER = re.compile(r"^\s*(?:(?:section|article|item|part|§)\s+)?[\dIVXLC().]+[.):]?\s+", re.IGNORECASE)


def _drawn(corpus, n: int, rng: random.Random, out: list):
    """(document, one of its chunks) drawn at random, documents alike, until ``out`` holds ``n`` questions
    (at most 20 draws a question wanted)."""
    docs = [d for d in corpus.store.manifest.all_docs() if d.n_chunks]
    for doc in itertools.islice(itertools.cycle(rng.sample(docs, len(docs))), 20 * n):
        if len(out) >= n:
            return
        yield doc, rng.choice(corpus.doc_chunks(doc.doc_id))


def row_questions(corpus, n: int, seed: int) -> list:
    """Questions about a table's figure, as people ask for one: a row's label and a column's year
    ("net sales 2022"), sometimes with a word of the document's title; the row is the gold."""
    from c1.retrieval import sentences as sx
    from c1.retrieval.pages import is_header_row
    from c1.retrieval.terms import content_terms
    from c1.train.extractive import Made

    rng = random.Random(seed)
    out = []
    for doc, chunk in _drawn(corpus, n, rng, out):
        years, rows, previous = [], [], ""
        for u in sx.split(chunk.text):
            text = u.text(chunk.text)
            if u.kind == "row" and is_header_row(text, previous != "row"):
                years = _YEARS.findall(text)
            elif u.kind == "row" and years and _FIGURE.search(" " + text):
                label = _FIGURE.split(" " + text, 1)[0].strip(" |.:$")
                if 2 <= len(content_terms(label)) <= 8:
                    rows.append((text, label, list(years)))
            previous = u.kind
        if not rows:
            continue
        row, label, years = rng.choice(rows)
        words = content_terms(doc.title or "")[:1] if rng.random() < 0.5 else []
        question = " ".join(words + [label.lower(), rng.choice(years)])
        out.append(Made(question, (doc.doc_id,), row, ""))
    return out


def title_questions(corpus, n: int, seed: int) -> list:
    """Questions about a clause by its section's name, not its words ("what does it say about
    termination"): the first sentence under a numbered section title is the gold."""
    from c1.retrieval import sentences as sx
    from c1.retrieval.sections import is_title
    from c1.retrieval.terms import content_terms
    from c1.train.extractive import Made

    rng = random.Random(seed)
    forms = ("what does it say about {}", "{} clause", "what about {}?", "{}")
    out = []
    for doc, chunk in _drawn(corpus, n, rng, out):
        units = sx.split(chunk.text)
        pairs = []
        for u, v in zip(units, units[1:]):
            title, body = u.text(chunk.text), v.text(chunk.text)
            if is_title(title) and v.kind in sx.READABLE and not is_title(body) and len(content_terms(body)) >= 5:
                name = _TITLE_NUMBER.sub("", title).strip(" .:;").lower()
                if 1 <= len(content_terms(name)) <= 5:
                    pairs.append((name, body))
        if not pairs:
            continue
        name, body = rng.choice(pairs)
        out.append(Made(rng.choice(forms).format(name), (doc.doc_id,), body, ""))
    return out


MAKERS = {"sentences": None, "rows": row_questions, "titles": title_questions}
"""The shapes of generated question: ``sentences`` (c1/train/extractive.py: a sentence's own words), and two
that are not written from their answer's words, as people ask for a figure and for a clause."""


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
    gold = {d: span for d in made.gold if d in ids and (span := original_span(corpus, d, made.sentence))}
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


def collect(kind: str, case, embedder, n: int, refresh: bool, shape: str = "sentences") -> list[dict]:
    from c1.config import load_settings
    from c1.retrieval.corpus import Corpus
    from c1.retrieval.scorers import make_scorer
    from c1.train.extractive import make

    path = OUT / (f"{kind}.jsonl" if shape == "sentences" else f"{kind}-{shape}.jsonl")
    if path.is_file() and not refresh:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    settings = load_settings().with_flags(home=str(case.home), collection=case.collection, daemon=False)
    corpus = Corpus(settings, embedder)
    rows: list[dict] = []
    t0 = time.perf_counter()
    try:
        scorer = make_scorer(corpus)
        seed = sum(map(ord, kind)) + 1  # not the ranker's questions (bench/ranker_fit.py)
        made = make(corpus, n, seed=seed) if shape == "sentences" else MAKERS[shape](corpus, n, seed)
        for i, m in enumerate(made):
            rows += [dict(r, kind=kind, qid=f"{shape[0]}{i}") for r in question_rows(corpus, settings, scorer, m)]
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


def fit_on(rows: list[dict], l2: float):
    from c1.retrieval import passage_order as po

    return _fit_on(rows, l2, features=po.FEATURES)


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
    ap.add_argument("--synthetic", type=int, default=100, help="generated questions per kind and shape")
    ap.add_argument("--l2", type=float, default=1.0)
    ap.add_argument("--refresh", action="store_true", help="collect the rows again")
    ap.add_argument("--shapes", default="sentences", help="generated questions' shapes: sentences, rows, titles")
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
        case = build(embedder, "dev")
        rows[kind] = [r for shape in args.shapes.split(",")
                      for r in collect(kind, case, embedder, args.synthetic, args.refresh, shape)]
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
        fitted = dict(everything.fitted, command=f"python bench/passage_fit.py --shapes {args.shapes} --write",
                      synthetic_per_kind=args.synthetic)
        rk.save(rk.RankerWeights(everything.weights, "shipped", fitted), po.SHIPPED)
        print(f"\nwrote {po.SHIPPED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
