#!/usr/bin/env python3
"""Repeated `c1 search` and `c1 status` from the shell: whole processes, start-up included.

    python bench/cli_latency.py                 # 20 searches each way, 10 statuses each way
    python bench/cli_latency.py --runs 10

On the pooled HotpotQA collection (bench/search_quality.py builds it once under bench/out/), side by
side in one run, interleaved so that both see the same load:

- ``c1 search QUESTION --json`` through the resident process (the default) and with ``--no-daemon``
  (everything loaded in the process, as before the daemon): wall time of each whole process; the
  first daemon run includes starting the resident process, the median is taken after it (goal: <= 0.4 s);
- the same searches in-process (``run_search`` on an open corpus): what the work itself costs;
- ``c1 status`` both ways (goal: <= 0.5 s);
- where a cold start goes, measured in one fresh process: Python, importing chromadb, onnxruntime and
  the rest, the ONNX session, opening the collection, one search;
- peak RSS of each kind of process (the command, and the resident process itself).

Prints a table and one JSON line. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import C1, c1_env, load, report, timed  # noqa: E402
from bench.search_quality import OUT, ensure_corpus, questions  # noqa: E402

COLD_START = r"""
import json, time
t0 = time.perf_counter()
import chromadb
t1 = time.perf_counter()
import numpy, onnxruntime, tokenizers, tantivy
from c1.retrieval.corpus import Corpus
from c1.service.search_service import search_here
t2 = time.perf_counter()
from c1.config import load_settings
from c1.store.embedders import make_embedder
settings = load_settings()
embedder = make_embedder()
embedder.embed(["warm up"])
t3 = time.perf_counter()
corpus = Corpus(settings, embedder)
t4 = time.perf_counter()
search_here(settings, QUESTION, lambda *said: None, corpus=corpus)
t5 = time.perf_counter()
print(json.dumps({"import_chromadb": t1 - t0, "import_the_rest": t2 - t1, "onnx_session_and_tokenizer": t3 - t2,
                  "open_collection": t4 - t3, "search": t5 - t4}))
"""


def resident(home: Path, op: str) -> dict | None:
    """``ping`` or ``stop`` the home's resident process (this process's $XDG_RUNTIME_DIR: the bench's own)."""
    from c1.config import Settings
    from c1.daemon.client import control

    return control(Settings(home=home), op)


def peak_mb(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return None


def in_process(home: Path, qs: list[str]) -> list[float]:
    from c1.retrieval.corpus import Corpus
    from c1.service.search_service import search_here
    from c1.config import load_settings

    settings = load_settings().with_flags(home=str(home))
    corpus = Corpus(settings)
    try:
        search_here(settings, "warm up", lambda *said: None, corpus=corpus)
        out = []
        for q in qs:
            corpus.clear_query_cache()
            t0 = time.perf_counter()
            search_here(settings, q, lambda *said: None, corpus=corpus)
            out.append(time.perf_counter() - t0)
        return out
    finally:
        corpus.close()


def med(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="search processes each way")
    ap.add_argument("--status-runs", type=int, default=10)
    ap.add_argument("--hotpot-home", type=Path, default=OUT / "hotpot_home")
    args = ap.parse_args()

    home = ensure_corpus(args.hotpot_home)
    runtime = Path(tempfile.mkdtemp(prefix="c1-bench-rt-"))
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)  # a resident process of the bench's own, stopped at the end
    env = c1_env(C1_HOME=str(home), C1_DAEMON="1")
    c1 = C1
    qs = [q.question for q in questions()][: args.runs]
    load_before = load()
    try:
        daemon, cold, rss_daemon_client, rss_cold = [], [], [], []
        same = 0
        for q in qs:
            wall, rss, out = timed([*c1, "search", q, "--json", "-q"], env)
            daemon.append(wall)
            rss_daemon_client.append(rss)
            wall2, rss2, out2 = timed([*c1, "search", q, "--json", "-q", "--no-daemon"], env)
            cold.append(wall2)
            rss_cold.append(rss2)
            a, b = json.loads(out), json.loads(out2)
            a["stats"].pop("seconds"), b["stats"].pop("seconds")
            same += a == b
        resident_mb = peak_mb(resident(home, "ping")["pid"])
        status_d, status_c = [], []
        for _ in range(args.status_runs):
            status_d.append(timed([*c1, "status", "--json"], env)[0])
            status_c.append(timed([*c1, "status", "--json", "--no-daemon"], env)[0])
        work = in_process(home, qs)
        parts = json.loads(subprocess.run([sys.executable, "-c", COLD_START.replace("QUESTION", repr(qs[0]))], env=env,
                                          capture_output=True, text=True, check=True).stdout)
        python = med([timed([sys.executable, "-c", "pass"], env)[0] for _ in range(5)])
        helps = med([timed([*c1, "--help"], env)[0] for _ in range(5)])
    finally:
        resident(home, "stop")
        shutil.rmtree(runtime, ignore_errors=True)

    warm = daemon[1:]
    result = {
        "bench": "cli_latency", "collection": str(home), "runs": len(qs),
        "search_daemon_first_s": round(daemon[0], 3), "search_daemon_median_after_first_s": med(warm),
        "search_daemon_p90_after_first_s": round(sorted(warm)[int(0.9 * (len(warm) - 1))], 3) if warm else None,
        "search_no_daemon_median_s": med(cold), "ratio_daemon_to_no_daemon": round(med(warm) / med(cold), 3),
        "search_in_process_median_s": med(work), "identical_results": f"{same}/{len(qs)}",
        "status_daemon_median_s": med(status_d[1:] or status_d), "status_no_daemon_median_s": med(status_c),
        "python_startup_s": python, "c1_help_s": helps,
        "cold_start_parts_s": {k: round(v, 3) for k, v in parts.items()},
        "peak_rss_mb": {"c1_search_via_daemon": max(rss_daemon_client), "c1_search_no_daemon": max(rss_cold),
                        "resident_process": resident_mb},
        "load_average_1m": [load_before, load()], "cpus": os.cpu_count(),
    }
    rows = [
        ("c1 search --json, through the resident process",
         f"median {med(warm):.3f} s after the first (first: {daemon[0]:.2f} s, starts it)"),
        ("c1 search --json --no-daemon", f"median {med(cold):.3f} s"),
        ("ratio", f"{result['ratio_daemon_to_no_daemon']:.3f}; identical results {same}/{len(qs)}"),
        ("the search itself, in-process", f"median {med(work):.3f} s"),
        ("c1 status --json: daemon / --no-daemon", f"{result['status_daemon_median_s']:.3f} s / {med(status_c):.3f} s"),
        ("python -c pass / c1 --help", f"{python:.3f} s / {helps:.3f} s"),
        ("cold start, parts", ", ".join(f"{k} {v:.2f} s" for k, v in parts.items())),
        ("peak RSS: command via daemon / --no-daemon / resident",
         f"{max(rss_daemon_client)} / {max(rss_cold)} / {resident_mb} MB"),
    ]
    report(rows, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
