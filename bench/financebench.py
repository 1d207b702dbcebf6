#!/usr/bin/env python3
"""Long real PDFs: does c1 find the right filing and the right page?

The 18 shared FinanceBench questions (analyst questions naming a company and a period: "What is
the FY2018 capital expenditure amount for 3M?") over their 18 filings pooled with the three
filings of ../shared/data/sec (21 PDFs, same-company and same-year distractors). Gold: the
question's filing (``doc_name``.pdf) and its evidence pages. Systems, at the same k:

  hybrid      one search_corpus ranking (Corpus.hybrid), chunks grouped into documents
  builtin     the built-in policy, one run (what `c1 search --policy builtin -k K` returns)
  bm25, dense the single retrievers, for reference

Measures, per system: right filing ranked first (``doc@1``), right filing in the top k
(``doc@k``), a gold page among the returned chunks (``page``, = `c1 eval financebench`'s answer
found: the scoring is c1/eval's), the chunks returned (all documents together: the page measure
rewards returning more of them) and latency. Scoring and retrieval go through c1.eval's
``run_one``, so the figures are what `c1 eval` would print for this pool.

    python bench/financebench.py                       # builds bench/out/fb_home on first use
    python bench/financebench.py --home bench/out/fb_before --systems hybrid,builtin --rows rows.jsonl

The collection is built once per home (indexing 21 filings takes a while on 2 cores) and reused;
a home built by other code (another chunk header) is a different "before/after" run: keep one
home per code version you compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.textpool import shared_data  # noqa: E402

OUT = REPO / "bench" / "out"
COLLECTION = "fb"


def pdf_folders() -> list[Path]:
    data = shared_data()
    return [data / "financebench" / "pdfs", data / "sec"]


def build(home: Path, embedder=None) -> dict:
    """Index the 21 filings into ``home`` unless done (with ``embedder``, default MiniLM); what it cost."""
    from c1.config import load_settings
    from c1.store.embedders import MiniLMEmbedder
    from c1.index.indexer import Indexer

    settings = load_settings().with_flags(home=str(home), collection=COLLECTION)
    if (settings.collection_dir / "built.json").is_file():
        return json.loads((settings.collection_dir / "built.json").read_text())
    print(f"indexing the 21 filings into {home} (once; long on 2 cores)", file=sys.stderr)
    report = Indexer(settings, embedder or MiniLMEmbedder()).run([str(p) for p in pdf_folders()])
    built = {"seconds": round(report.seconds, 1), "embed_seconds": round(report.embed_seconds, 1),
             "chunks": report.total_chunks, "documents": report.documents, "bytes": dir_bytes(settings.collection_dir)}
    (settings.collection_dir / "built.json").write_text(json.dumps(built))
    return built


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(home: Path, systems: list[str], k: int, limit: int | None) -> tuple[dict, list[dict]]:
    from c1.retrieval.corpus import Corpus
    from c1.agent.policies import choose_policy
    from c1.config import load_settings
    from c1.eval.datasets import load_financebench
    from c1.eval.scoring import run_one
    from c1.eval.systems import System

    data = shared_data() / "financebench"
    ds = load_financebench(data / "financebench_dev_18.jsonl", data / "pdfs")
    questions = ds.questions[:limit] if limit else ds.questions
    settings = load_settings().with_flags(home=str(home), collection=COLLECTION, max_docs=k)
    corpus = Corpus(settings)
    rows = []
    try:
        for name in systems:
            if name in ("bm25", "dense", "hybrid"):
                system, choice = System(name, name), None
            else:
                system = System(name, "agent", "builtin", 1)
                choice = choose_policy(settings.with_flags(policy="builtin"))
            run_one(corpus, settings, questions[0], system, choice, ds.gold_kind)  # warm up
            for q in questions:
                corpus.clear_query_cache()
                row = run_one(corpus, settings, q, system, choice, ds.gold_kind)
                files = [os.path.basename(corpus.doc(d["id"]).path) for d in row["documents"]]
                gold_file = q.meta["doc_name"] + ".pdf"
                rows.append({
                    "system": name, "qid": q.id, "question": q.question[:160], "gold_file": gold_file,
                    "files": files, "doc1": files[:1] == [gold_file], "dock": gold_file in files[:k],
                    "page": row["metrics"]["answer_found"], "seconds": row["cost"]["seconds"],
                    "chunks": sum(d.get("chunks", 0) for d in row["documents"]),
                    "returned": row["returned"],
                })
            print(f"  {name}: done", file=sys.stderr)
    finally:
        corpus.close()
    return summarise(rows, systems), rows


def summarise(rows: list[dict], systems: list[str]) -> dict:
    out = {}
    for name in systems:
        mine = [r for r in rows if r["system"] == name]
        secs = sorted(r["seconds"] for r in mine)
        out[name] = {
            "n": len(mine),
            "doc@1": statistics.fmean(r["doc1"] for r in mine),
            "doc@k": statistics.fmean(r["dock"] for r in mine),
            "page": statistics.fmean(r["page"] for r in mine),
            "chunks": statistics.fmean(r["chunks"] for r in mine),
            "s_median": statistics.median(secs),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", type=Path, default=OUT / "fb_home", help="C1_HOME holding the collection (built if missing)")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--systems", default="hybrid,builtin", help="from bm25, dense, hybrid, builtin")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--rows", type=Path, help="per-question rows (JSONL) here")
    ap.add_argument("--json-out", type=Path, default=OUT / "financebench.jsonl")
    args = ap.parse_args(argv)

    built = build(args.home)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    summary, rows = run(args.home, systems, args.k, args.limit or None)
    print(f"\nFinanceBench, {summary[systems[0]]['n']} questions over 21 pooled filings "
          f"({built.get('chunks', '?')} chunks); k = {args.k}")
    print(f"{'system':<10}{'doc@1':>8}{'doc@k':>8}{'page':>8}{'chunks':>8}{'s p50':>8}")
    for name, s in summary.items():
        print(f"{name:<10}{s['doc@1']:>8.3f}{s['doc@k']:>8.3f}{s['page']:>8.3f}{s['chunks']:>8.1f}{s['s_median']:>8.2f}")
    if "hybrid" in summary:
        base = summary["hybrid"]
        for name, s in summary.items():
            if name != "hybrid":
                print(f"{name} − hybrid: doc@1 {s['doc@1'] - base['doc@1']:+.3f}, doc@k {s['doc@k'] - base['doc@k']:+.3f}, "
                      f"page {s['page'] - base['page']:+.3f}")
    report = {"bench": "financebench", "home": str(args.home), "k": args.k, "built": built, "systems": summary,
              "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    from bench.report import save

    save(report, args.json_out, rows, args.rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
