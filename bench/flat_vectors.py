#!/usr/bin/env python3
"""The vector snapshot (c1/store/flat.py) against Chroma, on a real collection, side by side in one run.

    python bench/flat_vectors.py                       # bench/out/suite's FinanceBench collection (copied)
    python bench/flat_vectors.py --home H --collection C

The collection is copied into a temporary home (the bench writes a snapshot; the original is left as it
was). Printed:

- the snapshot: its size and the seconds to write it (read back from Chroma);
- CPU ms a dense query (``Corpus.dense``, k=50, the same questions) from Chroma and from the snapshot,
  each in a fresh process, with numpy's BLAS on one thread (``c1.one_blas_thread``) and on the machine's
  default (``OPENBLAS_NUM_THREADS`` = the cores): the setting is read once, as numpy loads;
- how many of Chroma's top 50 the exact scan shares, averaged over the questions;
- the scan alone on random unit vectors of 12k, 25k (``FLAT_MAX``), 50k and 100k rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import load, report  # noqa: E402

QUESTIONS = ["total revenue in 2022", "accounts payable at the end of the year", "capital expenditure",
             "net income attributable to shareholders", "cash flow from operating activities",
             "number of employees", "dividends paid to common shareholders", "inventory turnover"]

PROBE = r"""
import json, sys, time
from pathlib import Path
from c1.config import Settings
from c1.retrieval.corpus import Corpus
from c1.store import flat
home, collection, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
corpus = Corpus(Settings(home=home, collection=collection))
vectors = [corpus.embed_query(q) for q in json.loads(sys.argv[4])]
for v in vectors:
    corpus.dense(v, 50)
t = time.process_time()
for _ in range(rounds):
    for v in vectors:
        corpus.dense(v, 50)
ms = (time.process_time() - t) / (rounds * len(vectors)) * 1000
print(json.dumps({"flat": isinstance(corpus.store.vectors, flat.FlatVectors), "ms": ms,
                  "top": [[i for i, _ in corpus.dense(v, 50)] for v in vectors]}))
"""

SCAN = r"""
import json, sys, time
import numpy as np
from c1.store.flat import FlatVectors
out = {}
for n in map(int, sys.argv[1:]):
    m = np.random.default_rng(0).standard_normal((n, 384)).astype(np.float32)
    f = FlatVectors([str(i) for i in range(n)], m, "c", "w", "e")
    q = np.random.default_rng(1).standard_normal(384).astype(np.float32)
    f.query(q, 50)
    t = time.process_time()
    for _ in range(30):
        f.query(q, 50)
    out[n] = (time.process_time() - t) / 30 * 1000
print(json.dumps(out))
"""


def probe(home: Path, collection: str, threads: str | None, rounds: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("OPENBLAS_NUM_THREADS", None)
    if threads:
        env["OPENBLAS_NUM_THREADS"] = threads
    out = subprocess.run([sys.executable, "-c", PROBE, str(home), collection, str(rounds), json.dumps(QUESTIONS)],
                         env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--home", type=Path, default=REPO / "bench" / "out" / "suite" / "financebench-bge-small-en-v1.5-int8")
    ap.add_argument("--collection", default="fb")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    if not (args.home / "collections" / args.collection).is_dir():
        sys.exit(f"no collection {args.collection!r} under {args.home}: build it with bench/suite.py, or give --home")
    cores = str(os.cpu_count() or 1)
    before = load()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        shutil.copytree(args.home, home)
        (home / "collections" / args.collection / "vectors.npz").unlink(missing_ok=True)
        chroma = {t: probe(home, args.collection, t, args.rounds) for t in ("1", cores)}
        code = ("import sys, time; from pathlib import Path; from c1.config import Settings; "
                "from c1.retrieval.corpus import Corpus; c = Corpus(Settings(home=Path(sys.argv[1]), collection=sys.argv[2])); "
                "t = time.perf_counter(); ok = c.snapshot_vectors(); print(ok, time.perf_counter() - t)")
        wrote = subprocess.run([sys.executable, "-c", code, str(home), args.collection], env={**os.environ, "PYTHONPATH": str(REPO)},
                               capture_output=True, text=True, check=True).stdout.split()
        size_mb = (home / "collections" / args.collection / "vectors.npz").stat().st_size / 1e6
        snap = {t: probe(home, args.collection, t, args.rounds) for t in ("1", cores)}
    assert not any(r["flat"] for r in chroma.values()) and all(r["flat"] for r in snap.values()), "the wrong store was read"
    shared = [len(set(a) & set(b)) for a, b in zip(chroma["1"]["top"], snap["1"]["top"])]
    scan = json.loads(subprocess.run([sys.executable, "-c", SCAN, "12000", "25000", "50000", "100000"],
                                     env={**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"},
                                     capture_output=True, text=True, check=True).stdout)
    figures = {
        "bench": "flat_vectors", "load_average_1m": [before, load()],
        "collection": f"{args.home.name}/{args.collection}",
        "snapshot_written": wrote[0] == "True", "write_s": round(float(wrote[1]), 2), "size_mb": round(size_mb, 1),
        "query_cpu_ms": {"chroma_1_thread": round(chroma["1"]["ms"], 2), f"chroma_{cores}_threads": round(chroma[cores]["ms"], 2),
                         "snapshot_1_thread": round(snap["1"]["ms"], 2), f"snapshot_{cores}_threads": round(snap[cores]["ms"], 2)},
        "top50_shared_with_chroma": round(sum(shared) / len(shared), 1),
        "scan_cpu_ms_random": {k: round(v, 2) for k, v in scan.items()},
    }
    report([
        ("snapshot", f"written {figures['snapshot_written']}, {figures['write_s']} s, {figures['size_mb']} MB"),
        ("dense query CPU ms, Chroma (1 / default BLAS threads)", f"{chroma['1']['ms']:.2f} / {chroma[cores]['ms']:.2f}"),
        ("dense query CPU ms, snapshot (1 / default BLAS threads)", f"{snap['1']['ms']:.2f} / {snap[cores]['ms']:.2f}"),
        ("of Chroma's top 50, the scan shares", f"{figures['top50_shared_with_chroma']} (mean of {len(shared)})"),
        ("scan alone, random 384-d, CPU ms", ", ".join(f"{int(k) // 1000}k: {v:.2f}" for k, v in scan.items())),
    ], figures)


if __name__ == "__main__":
    main()
