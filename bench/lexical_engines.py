"""BM25 top-50 with tantivy against SQLite FTS5, on the same real-text chunks, in one run.

    python bench/lexical_engines.py [N_CHUNKS]      # default 100000

Why the lexical index is tantivy: both are persistent and incremental; the question is speed.
Queries are the 200 HotpotQA questions, reduced to their words (as c1 does). Prints a table and
appends one JSON line to ``bench/out/lexical_engines.jsonl``.
"""

from __future__ import annotations

import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.textpool import chunk_texts, hotpot_records  # noqa: E402


def words(q: str) -> list[str]:
    return [w for w in re.findall(r"\w+", q.lower()) if len(w) > 2]


def p50_p95(lat: list[float]) -> tuple[float, float]:
    return statistics.median(lat), sorted(lat)[int(0.95 * len(lat))]


def main() -> None:
    import tantivy

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    texts = chunk_texts(n)
    queries = [r["question"] for r in hotpot_records()]
    tmp = Path(tempfile.mkdtemp())

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    (tmp / "t").mkdir()
    index = tantivy.Index(builder.build(), path=str(tmp / "t"))
    t0 = time.perf_counter()
    writer = index.writer(heap_size=128_000_000)
    for i, text in enumerate(texts):
        writer.add_document(tantivy.Document(id=str(i), text=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    t_build = time.perf_counter() - t0
    searcher = index.searcher()
    t_lat = []
    for q in queries:
        t0 = time.perf_counter()
        searcher.search(index.parse_query(" ".join(words(q)), ["text"]), 50)
        t_lat.append((time.perf_counter() - t0) * 1000)

    con = sqlite3.connect(tmp / "f.db")
    con.execute("CREATE VIRTUAL TABLE c USING fts5(text, tokenize='porter unicode61')")
    t0 = time.perf_counter()
    con.executemany("INSERT INTO c(rowid, text) VALUES (?, ?)", enumerate(texts))
    con.commit()
    f_build = time.perf_counter() - t0
    f_lat = []
    for q in queries:
        t0 = time.perf_counter()
        match = " OR ".join(f'"{w}"' for w in words(q))
        con.execute("SELECT rowid FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT 50", (match,)).fetchall()
        f_lat.append((time.perf_counter() - t0) * 1000)

    tp, t95 = p50_p95(t_lat)
    fp, f95 = p50_p95(f_lat)
    print(f"{n:,} chunks, {len(queries)} queries, BM25 top-50")
    print(f"{'engine':<10} {'build s':>8} {'p50 ms':>8} {'p95 ms':>8}")
    print(f"{'tantivy':<10} {t_build:>8.1f} {tp:>8.2f} {t95:>8.2f}")
    print(f"{'fts5':<10} {f_build:>8.1f} {fp:>8.2f} {f95:>8.2f}")
    print(f"fts5/tantivy p50 ratio: {fp / tp:.0f}x")
    from bench.report import OUT, save

    save({"bench": "lexical_engines", "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "chunks": n, "queries": len(queries),
          "tantivy": {"build_s": round(t_build, 2), "p50_ms": round(tp, 3), "p95_ms": round(t95, 3)},
          "fts5": {"build_s": round(f_build, 2), "p50_ms": round(fp, 3), "p95_ms": round(f95, 3)}},
         OUT / "lexical_engines.jsonl")


if __name__ == "__main__":
    main()
