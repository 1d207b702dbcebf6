#!/usr/bin/env python3
"""`c1 search --batch` against the search API, on the same 500 questions, side by side.

    python bench/batch_speed.py                  # 500 questions, --jobs 2 and 2 concurrent API clients
    python bench/batch_speed.py --jobs 4 --repeats 2

The questions: the 200 HotpotQA and 99 MuSiQue questions of ../shared/data, then HotpotQA's again in
lower and upper case (distinct strings: nothing is answered from a cache), on the pooled HotpotQA collection
(bench/search_quality.py builds it once). The API (``c1 serve --api-only``, already running and
warmed up: its start-up is not counted) gets them from ``--jobs`` client threads; the batch is a whole
``c1 search --batch FILE --jobs N`` process, start-up included. Runs alternate (API, batch, batch,
API, ...) so that both see the same load. Goal: batch time <= 1.3 x API time.

Prints a table and one JSON line. Not a test.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import C1, c1_env, load, report  # noqa: E402
from bench.search_quality import OUT, ensure_corpus, questions  # noqa: E402
from bench.textpool import shared_data  # noqa: E402


def bench_questions(n: int) -> list[str]:
    hotpot = [q.question for q in questions()]
    musique = []
    path = shared_data() / "musique" / "musique_ans_dev_99.jsonl"
    if path.exists():
        musique = [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]
    pool = hotpot + musique + [q.lower() for q in hotpot] + [q.upper() for q in hotpot]
    return pool[:n]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the API exited: {proc.stderr.read()}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the API did not start")


def through_api(port: int, qs: list[str], clients: int, k: int) -> tuple[float, list[dict]]:
    results: list[dict | None] = [None] * len(qs)
    next_i = iter(range(len(qs)))
    lock = threading.Lock()

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        while True:
            with lock:
                i = next(next_i, None)
            if i is None:
                return
            body = json.dumps({"query": qs[i], "max_docs": k})
            conn.request("POST", "/v1/search", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            if resp.status != 200:
                raise SystemExit(f"API answered {resp.status}: {data[:200]!r}")
            results[i] = json.loads(data)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, results


def through_batch(env: dict, path: Path, jobs: int, k: int) -> tuple[float, list[dict]]:
    t0 = time.perf_counter()
    proc = subprocess.run([*C1, "search", "--batch", str(path), "--jobs", str(jobs),
                           "-k", str(k), "-q"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"c1 search --batch exited {proc.returncode}: {proc.stderr[-500:]}")
    return seconds, [json.loads(line) for line in proc.stdout.splitlines()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=500, help="questions")
    ap.add_argument("--jobs", type=int, default=2, help="batch --jobs, API clients and --max-concurrency")
    ap.add_argument("--repeats", type=int, default=1, help="pairs of runs (API, batch), alternating")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--hotpot-home", type=Path, default=OUT / "hotpot_home")
    args = ap.parse_args()

    home = ensure_corpus(args.hotpot_home)
    qs = bench_questions(args.n)
    work = Path(tempfile.mkdtemp(prefix="c1-batch-bench-"))
    qfile = work / "questions.txt"
    qfile.write_text("".join(q + "\n" for q in qs))
    env = c1_env(C1_HOME=str(home))
    port = free_port()
    api = subprocess.Popen([*C1, "serve", "--api-only", "--api-port", str(port),
                            "--max-concurrency", str(args.jobs), "--policy", "builtin"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    loads = [load()]
    try:
        wait_up(port, api)
        through_api(port, qs[:4], 1, args.k)  # warm: the model, the collection
        api_s, batch_s = [], []
        for r in range(args.repeats):
            order = ("api", "batch") if r % 2 == 0 else ("batch", "api")
            for what in order:
                if what == "api":
                    s, api_rows = through_api(port, qs, args.jobs, args.k)
                    api_s.append(s)
                else:
                    s, batch_rows = through_batch(env, qfile, args.jobs, args.k)
                    batch_s.append(s)
        loads.append(load())
    finally:
        api.terminate()
        api.wait(30)

    same = sum(1 for a, b in zip(api_rows, batch_rows) if [d["id"] for d in a["documents"]] == [d["id"] for d in b["documents"]])
    in_order = [row["query"] for row in batch_rows] == [q.strip() for q in qs]
    a, b = statistics.median(api_s), statistics.median(batch_s)
    result = {"bench": "batch_speed", "questions": len(qs), "jobs": args.jobs, "repeats": args.repeats,
              "api_seconds": [round(x, 2) for x in api_s], "batch_seconds": [round(x, 2) for x in batch_s],
              "ratio_batch_to_api": round(b / a, 3), "batch_questions_per_second": round(len(qs) / b, 2),
              "same_documents": f"{same}/{len(qs)}", "batch_in_input_order": in_order,
              "load_average_1m": loads, "cpus": os.cpu_count()}
    rows = [
        ("questions", f"{len(qs)} (HotpotQA, MuSiQue, HotpotQA lower- and upper-cased) on the pooled HotpotQA collection"),
        (f"search API, {args.jobs} clients (median)", f"{a:.1f} s ({len(qs) / a:.1f}/s)"),
        (f"c1 search --batch --jobs {args.jobs} (median, whole process)", f"{b:.1f} s ({len(qs) / b:.1f}/s)"),
        ("ratio batch / API", f"{b / a:.3f}  (aim <= 1.3)"),
        ("same documents, in input order", f"{same}/{len(qs)}, {in_order}"),
    ]
    report(rows, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
