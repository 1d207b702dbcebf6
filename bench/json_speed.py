#!/usr/bin/env python3
"""orjson against the standard library's json where c1 reads and writes JSON, side by side.

    python bench/json_speed.py

1. Reading a JSONL corpus: the pooled HotpotQA paragraphs (bench/search_quality.py writes them),
   repeated to 50,000 lines, parsed line by line as c1's .jsonl loader does; and the loader itself
   (``load_jsonl``: parsing, checks, documents) with either parser.
2. Writing results: a real ``c1 search --json`` document (a built-in search on the pooled HotpotQA
   collection, its chunks' text included) serialised as ``--json``, ``--jsonl``, ``--batch`` and the
   search API write it — per result, and as a share of a whole search through the resident process.

Each timing is the median of 7 runs, both libraries alternating. Prints a table and one JSON line.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import report  # noqa: E402
from bench.search_quality import OUT, ensure_corpus  # noqa: E402


def seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def side_by_side(a, b, runs: int = 7) -> tuple[float, float]:
    """Median seconds of ``a`` and of ``b``, run alternately ``runs`` times each."""
    ta, tb = [], []
    for _ in range(runs):
        ta.append(seconds(a))
        tb.append(seconds(b))
    return statistics.median(ta), statistics.median(tb)


def main() -> int:
    import orjson

    from c1.index.loaders import jsonl as loader

    home = ensure_corpus(OUT / "hotpot_home")
    lines = (home / "hotpot_pool.jsonl").read_text(encoding="utf-8").splitlines()
    lines = (lines * (50_000 // len(lines) + 1))[:50_000]
    corpus = Path(tempfile.mkdtemp(prefix="c1-json-")) / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({**json.loads(line), "id": f"p{i}"}) for i, line in enumerate(lines)) + "\n")
    text_lines = corpus.read_text().splitlines()
    parse_json, parse_orjson = side_by_side(lambda: [json.loads(x) for x in text_lines],
                                            lambda: [orjson.loads(x) for x in text_lines])

    def load_with(parse):
        def run():
            loader._parse = parse
            loader.load_jsonl(str(corpus))
        return run

    chosen = loader._parse
    try:
        load_json, load_orjson = side_by_side(load_with(json.loads), load_with(chosen))
    finally:
        loader._parse = chosen

    from c1.retrieval.corpus import Corpus
    from c1.service.search_service import search_here
    from c1.config import load_settings

    settings = load_settings().with_flags(home=str(home), max_docs=10)
    c = Corpus(settings)
    try:
        search_here(settings, "warm up", lambda *said: None, corpus=c)
        t0 = time.perf_counter()
        result = search_here(settings, "Which drummer of a Canadian band is in the Modern Drummer Hall of Fame?",
                             lambda *said: None, corpus=c).to_json()
        search_s = time.perf_counter() - t0
    finally:
        c.close()
    size = len(json.dumps(result, ensure_ascii=False).encode())
    out_json, out_orjson = side_by_side(lambda: [json.dumps(result, ensure_ascii=False) for _ in range(100)],
                                        lambda: [orjson.dumps(result) for _ in range(100)])
    out_json, out_orjson = out_json / 100, out_orjson / 100

    result = {
        "bench": "json_speed", "corpus_lines": len(text_lines),
        "parse_lines_s": {"json": round(parse_json, 3), "orjson": round(parse_orjson, 3),
                          "ratio_orjson": round(parse_orjson / parse_json, 3)},
        "load_jsonl_s": {"json": round(load_json, 3), "orjson": round(load_orjson, 3),
                         "ratio_orjson": round(load_orjson / load_json, 3)},
        "result_bytes": size,
        "dump_result_ms": {"json": round(out_json * 1000, 3), "orjson": round(out_orjson * 1000, 3),
                           "ratio_orjson": round(out_orjson / out_json, 3)},
        "search_in_process_ms": round(search_s * 1000, 1),
        "dump_share_of_search_json": round(out_json / search_s, 4),
    }
    rows = [
        (f"parse {len(text_lines):,} JSONL lines", f"json {parse_json:.3f} s, orjson {parse_orjson:.3f} s "
                                                   f"(x{result['parse_lines_s']['ratio_orjson']})"),
        ("load_jsonl (parse, checks, documents)", f"json {load_json:.3f} s, orjson {load_orjson:.3f} s "
                                                  f"(x{result['load_jsonl_s']['ratio_orjson']})"),
        (f"dump one --json result ({size:,} bytes)", f"json {out_json * 1000:.3f} ms, orjson {out_orjson * 1000:.3f} ms "
                                                     f"(x{result['dump_result_ms']['ratio_orjson']})"),
        ("json's dump as a share of the search itself", f"{result['dump_share_of_search_json'] * 100:.2f} % "
                                                        f"of {search_s * 1000:.0f} ms"),
    ]
    report(rows, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
