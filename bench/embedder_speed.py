#!/usr/bin/env python3
"""The built-in embedder's own speed: ONNX thread settings and batch size, at 128 and 256 word pieces.

    python bench/embedder_speed.py                    # the grid below, 5 interleaved rounds
    python bench/embedder_speed.py --texts 48 --rounds 1

Texts: real text (bench/textpool.py: HotpotQA and Enron sentences recombined into ~1,200-character
chunks, about 280 word pieces, so that both cut lengths are full). Each setting embeds the same
texts with a fresh MiniLMEmbedder in this process; the settings are run round-robin, ``--rounds``
times, and the median chunks/s is reported (the machine is shared: rounds spread the noise over
every setting alike). By default: the settings before (16 rows per run, spinning threads) against
the defaults now (runs of up to 256 word pieces, no spinning) at 256, 128 and 48 word pieces. With
``--grid``: also intra-op threads (1, 2) and fixed batch sizes (1 … 64). Batch "auto" = the default. Prints a table
and one JSON line, also appended to ``bench/out/embedder_speed.jsonl``. Not a test.
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

from bench.report import OUT, load, save  # noqa: E402
from bench.textpool import chunk_texts  # noqa: E402


def rate(texts: list[str], max_tokens: int, batch: int, threads: int, spin: bool) -> tuple[float, float]:
    """(chunks per wall second, chunks per CPU second of this process). ``batch``: rows per run, or 0 for
    the default (runs of up to ``batch_tokens`` word pieces)."""
    from c1.store.embedders import MiniLMEmbedder

    sizing = {"batch_tokens": 1 << 30, "batch_size": batch} if batch else {}
    emb = MiniLMEmbedder(max_tokens=max_tokens, threads=threads, spin=spin, **sizing)
    emb.embed(texts[:2])  # the session is built outside the clock
    t0, c0 = time.perf_counter(), time.process_time()
    emb.embed(texts)
    return len(texts) / (time.perf_counter() - t0), len(texts) / (time.process_time() - c0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--grid", action="store_true", help="also every batch size and thread count measured")
    args = ap.parse_args()
    texts = chunk_texts(args.texts, seed=1)
    threads = os.cpu_count() or 1
    grid = []
    for tokens in (256, 128, 48):
        grid += [(tokens, 16, threads, True), (tokens, 0, threads, False)]  # before: 16 rows, spinning; now
    if args.grid:
        grid += [(256, b, t, False) for b in (1, 2, 4, 8, 32) for t in (1, 2)]
        grid += [(128, b, 2, False) for b in (1, 2, 4, 8)] + [(48, b, 2, False) for b in (1, 4, 16, 64)]
    got: dict[tuple, list[tuple[float, float]]] = {g: [] for g in grid}
    loads = [load()]
    for _ in range(args.rounds):
        for g in grid:
            got[g].append(rate(texts, *g))
    loads.append(load())
    rows = []
    for (tokens, batch, threads, spin), rates in got.items():
        rows.append({"max_tokens": tokens, "batch": batch, "threads": threads, "spinning": spin,
                     "chunks_per_second": round(statistics.median(r for r, _ in rates), 2),
                     "chunks_per_cpu_second": round(statistics.median(c for _, c in rates), 2),
                     "rounds": [round(r, 2) for r, _ in rates]})
    print(f"{'word pieces':>11} {'batch':>5} {'threads':>7} {'spinning':>8} {'chunks/s':>9} {'chunks/CPU-s':>12}  (medians)")
    for r in rows:
        print(f"{r['max_tokens']:>11} {r['batch'] or 'auto':>5} {r['threads']:>7} {str(r['spinning']):>8} "
              f"{r['chunks_per_second']:>9.2f} {r['chunks_per_cpu_second']:>12.2f}")
    print(f"load average (1 min) before / after: {loads} on {os.cpu_count()} CPUs; {len(texts)} texts per setting")
    result = {"bench": "embedder_speed", "texts": len(texts), "rounds": args.rounds, "rows": rows,
              "load_average_1m": loads, "cpus": os.cpu_count()}
    print(json.dumps(result))
    save({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **result}, OUT / "embedder_speed.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
