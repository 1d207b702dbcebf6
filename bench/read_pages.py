#!/usr/bin/env python3
"""What a read of a long filing shows: does ``read_document`` reach the page that holds the figure?

For each FinanceBench question (18 filings, 3,841 pages, gold = filing + page), the gold filing is
read once as a run's first read would (``read_document``, 3,000 tokens, nothing shown before), in
two orders side by side in the same process:

  chunks   the document's chunks ranked against the question, regrouped by page (before issue 19)
  pages    the same, with the best table pages taking turns with the best chunks' pages
           (c1/retrieval/pages.reading_order: what read_document does now), the table pages ranked
           by their terms (BM25 among the pages)
  pages-ce the same, the table pages ranked by the cross-encoder (read_document before stop 45)

It prints, per order: the share of questions whose gold page is among the pages shown, whose first
chunk shown is on a gold page, the chunks shown, and the CPU seconds of a read (the ranking and
the table pages' scoring; the table pages of a filing are read once and cached); then how many
table pages the gold filings have, and the CPU seconds of finding them (a filing read the first time).

    python bench/read_pages.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.passages import OUT, index_of, pages_of, questions  # noqa: E402


def main() -> None:
    from c1.agent.context import Context
    from c1.agent.tools import ToolConfig
    from c1.config import load_settings
    from c1.retrieval.corpus import Corpus
    from c1.retrieval import pages as pages_module
    from c1.retrieval.pages import by_page, reading_order, table_pages
    from c1.retrieval.within import rank_in_document, within
    from c1.retrieval.scorers import make_scorer
    from c1.agent.tools import Tools

    home, collection = index_of("financebench")
    corpus = Corpus(load_settings().with_flags(home=str(home), collection=collection, daemon=False))
    qs = questions("financebench")
    ids = {cid.rsplit("_", 1)[0] for cid, _ in corpus.all_chunks}
    by_file = {corpus.doc(d).path.rsplit("/", 1)[-1]: d for d in ids}
    budget = ToolConfig().read_tokens

    def chunks_order(q, doc, chunks):
        return by_page(rank_in_document(corpus, q, chunks, rerank=True))

    def pages_order(q, doc, chunks, scorer=None):
        ranked = rank_in_document(corpus, q, chunks, rerank=True)
        scorer = scorer or make_scorer(corpus, "lexical")
        return reading_order(scorer, within(corpus, q, doc.doc_id), doc, chunks, ranked)

    orders = {"chunks": chunks_order, "pages": pages_order,
              "pages-ce": lambda q, doc, chunks: pages_order(q, doc, chunks, make_scorer(corpus))}
    rows = {name: [] for name in orders}
    corpus.score_passages("warm-up", ["the cross-encoder loads once"])  # not counted in the first read
    found: list[tuple[int, float]] = []  # (table pages, CPU s finding them) of each gold filing
    for q in qs:
        doc = corpus.doc(by_file[q["gold"]])
        chunks = corpus.doc_chunks(doc.doc_id)
        pages_module._TABLE_PAGES.clear()  # found afresh, as by a filing's first read
        cpu = time.process_time()
        found.append((len(table_pages(doc, chunks)), time.process_time() - cpu))
        pages_module._TABLE_PAGES.clear()
        for name, order in orders.items():
            tools = Tools(corpus, Context(32768), q["question"])
            cpu = time.process_time()
            items = order(q["question"], doc, chunks)
            obs = tools._render([(c, doc, s) for c, s in items], budget, "")
            cpu = time.process_time() - cpu
            shown = corpus.chunks([r.id for r in obs.refs])
            pages = [pages_of(doc.meta, c.start, c.end, c.page) for c in shown]
            rows[name].append({"q": q["id"], "hit": any(p & q["pages"] for p in pages),
                               "first": bool(pages and pages[0] & q["pages"]), "n": len(shown), "cpu": cpu})
    print(f"\nread_document of the gold filing, FinanceBench {len(qs)} questions, {budget} tokens a read")
    print(f"{'order':8} {'gold page shown':>16} {'on the first chunk':>19} {'chunks':>7} {'cpu s':>6}")
    summary = {}
    for name, got in rows.items():
        s = summary[name] = {"hit": statistics.mean(r["hit"] for r in got), "first": statistics.mean(r["first"] for r in got),
                             "n": statistics.mean(r["n"] for r in got), "cpu": statistics.mean(r["cpu"] for r in got)}
        print(f"{name:8} {sum(r['hit'] for r in got):>10}/{len(got)} {s['hit']:.2f} {sum(r['first'] for r in got):>13}/{len(got)}"
              f" {s['first']:.2f} {s['n']:>7.1f} {s['cpu']:>6.2f}")
    counts = [n for n, _ in found]
    summary["table_pages"] = {"min": min(counts), "max": max(counts), "cpu": statistics.mean(c for _, c in found)}
    print(f"table pages of a gold filing: {min(counts)}-{max(counts)}; finding them: "
          f"{summary['table_pages']['cpu']:.3f} CPU s a filing (mean)")
    OUT.mkdir(parents=True, exist_ok=True)
    with (OUT / "read_pages.jsonl").open("a") as f:
        f.write(json.dumps({"bench": "read_pages", "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "summary": summary}) + "\n")


if __name__ == "__main__":
    main()
