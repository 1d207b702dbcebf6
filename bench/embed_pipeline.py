#!/usr/bin/env python3
"""``--embed-url`` throughput: one request at a time against several in flight (OpenAIEmbedder.in_flight).

A local embeddings server (tests/model_servers.py) answers ``POST /v1/embeddings`` after an artificial
``--latency`` per request, as a GPU server's model time would be; the client embeds ``--texts`` real
chunk-sized texts in batches of 64 with ``in_flight`` = 1 (sequential) and with 2, 4 and 8, round-robin
over ``--rounds``, and prints texts/s per setting and the speed-up over sequential (side by side, same
run). Every run's rows are checked against the server's vectors (order preserved).

    python bench/embed_pipeline.py                       # 2048 texts, 50 ms a request
    python bench/embed_pipeline.py --latency 0.2 --texts 4096
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    import numpy as np

    from bench.textpool import chunk_texts
    from c1.store.embedders import OpenAIEmbedder, _normalise
    from tests.model_servers import ModelServer, text_vector

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texts", type=int, default=2048)
    ap.add_argument("--latency", type=float, default=0.05, help="server seconds per request")
    ap.add_argument("--in-flight", default="1,2,4,8")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    texts = chunk_texts(args.texts, chars=600)
    expected = _normalise(np.asarray([text_vector(t) for t in texts], dtype=np.float32))
    settings = [int(x) for x in args.in_flight.split(",")]
    times: dict[int, list[float]] = {n: [] for n in settings}
    with ModelServer(latency=args.latency) as server:
        for _ in range(args.rounds):
            for n in settings:
                emb = OpenAIEmbedder(server.url, "stub", in_flight=n)
                server.peak = 0
                t = time.perf_counter()
                got = emb.embed(texts)
                times[n].append(time.perf_counter() - t)
                assert np.allclose(got, expected, atol=1e-6), "rows out of order"
                assert server.peak <= n, f"{server.peak} requests in flight, bound {n}"
    base = statistics.median(times[settings[0]])
    print(f"{args.texts} texts, batches of 64, {args.latency * 1000:.0f} ms a request, median of {args.rounds}")
    print(f"{'in flight':>9}  {'texts/s':>8}  {'x sequential':>12}")
    for n in settings:
        med = statistics.median(times[n])
        print(f"{n:>9}  {args.texts / med:8.0f}  {base / med:12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
