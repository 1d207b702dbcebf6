#!/usr/bin/env python3
"""Watch latency: from a file write to the first search that finds it, with `c1 index --watch`,
against the way without it (`c1 index` run after the write), side by side.

    python bench/watch_latency.py                     # 20 trials each, --debounce 0.5 (the default)
    python bench/watch_latency.py --trials 40 --debounce 0.2

In a fresh home, two folders of the same real text (HotpotQA paragraphs, one ``.txt`` file each,
``--base`` of them) are indexed into two collections; ``c1 index watched/ --watch`` keeps the
first fresh and ``c1 serve --api-only`` (built-in policy) serves both, all as whole processes.
Each trial writes one paragraph not yet indexed as a new file, then asks the search API for its
title and first words until the new file is among the documents returned: in the watched
collection at once (the watcher does the rest), in the other after ``c1 index manual/`` (a whole
process, as a user or a script would run it). Trials alternate between the two.

Latency = the write → the end of the first search that returns the file. For the watcher it is
also split into the write → the batch committed (its JSON line) and what follows (the reader
noticing the new generation, the search itself). Prints a table and appends one JSON line to
``bench/out/watch_latency.jsonl``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from report import C1, OUT, c1_env, load, save  # noqa: E402
from textpool import hotpot_records, shared_data_or_exit  # noqa: E402


def paragraphs() -> list[tuple[str, str]]:
    """Every distinct HotpotQA paragraph: (title, text)."""
    seen: dict[str, str] = {}
    for record in hotpot_records():
        for title, sentences in record["context"]:
            text = "".join(sentences).strip()
            if title not in seen and len(text) > 200:
                seen[title] = text
    return list(seen.items())


def write_paragraph(folder: Path, n: int, title: str, text: str) -> Path:
    path = folder / f"p{n:04d}.txt"
    path.write_text(f"{title}\n\n{text}\n")
    return path


def query_for(title: str, text: str) -> str:
    return f"{title}: {' '.join(text.split()[:12])}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Lines:
    """The JSON lines a process writes to a file, read as they come."""

    def __init__(self, path: Path):
        self.path = path
        self.done = 0

    def wait(self, pred, timeout: float = 600) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            lines = [json.loads(x) for x in self.path.read_text().splitlines() if x.strip()]
            for i in range(self.done, len(lines)):
                if pred(lines[i]):
                    self.done = i + 1
                    return lines[i]
            time.sleep(0.01)
        raise SystemExit(f"timed out waiting in {self.path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20, help="Trials for each way [20].")
    ap.add_argument("--base", type=int, default=300, help="Paragraphs indexed before the trials [300].")
    ap.add_argument("--debounce", type=float, default=0.5, help="The watcher's --debounce [0.5].")
    args = ap.parse_args()
    shared_data_or_exit("hotpotqa")
    pool = paragraphs()
    if len(pool) < args.base + 2 * args.trials:
        raise SystemExit(f"only {len(pool)} paragraphs: lower --base or --trials")
    base, fresh = pool[: args.base], pool[args.base : args.base + 2 * args.trials]

    tmp = Path(tempfile.mkdtemp(prefix="c1-watch-bench-"))
    env = c1_env(C1_HOME=str(tmp / "home"), C1_DAEMON="0")  # searches go through the API here: no resident process warmed by the watch
    c1 = C1
    folders = {"watched": tmp / "watched", "manual": tmp / "manual"}
    for folder in folders.values():
        folder.mkdir()
        for i, (title, text) in enumerate(base):
            write_paragraph(folder, i, title, text)
    procs: list[subprocess.Popen] = []
    try:
        t = time.perf_counter()
        subprocess.run([*c1, "index", folders["manual"], "-c", "manual", "--quiet"], env=env, check=True)
        print(f"indexed {args.base} paragraphs in {time.perf_counter() - t:.1f}s; starting the watcher and the API",
              file=sys.stderr)
        out = tmp / "watch.jsonl"
        watcher = subprocess.Popen([*c1, "index", folders["watched"], "-c", "watched", "--watch", "--json", "--quiet",
                                    "--debounce", str(args.debounce)], env=env, stdout=open(out, "w"))
        procs.append(watcher)
        lines = Lines(out)
        lines.wait(lambda e: e["event"] == "index")
        port = free_port()
        api = subprocess.Popen([*c1, "serve", "--api-only", "--api-port", str(port), "--policy", "builtin"], env=env,
                               stderr=subprocess.PIPE, text=True)
        procs.append(api)
        while "search API on" not in api.stderr.readline():
            pass
        url = f"http://127.0.0.1:{port}/v1/search"

        def search(collection: str, query: str) -> tuple[list[str], float]:
            t0 = time.perf_counter()
            r = httpx.post(url, json={"query": query, "max_docs": 5, "collection": collection}, timeout=120)
            if r.status_code != 200:
                raise SystemExit(f"search API: {r.status_code} {r.text}")
            return [d["path"] for d in r.json()["documents"]], time.perf_counter() - t0

        for name in folders:  # warm both collections up (the API opens each on first use)
            search(name, query_for(*base[0]))

        def until_found(collection: str, path: Path, query: str) -> tuple[float, int, float]:
            """(when found, searches made, the last search's time)."""
            n = 0
            while True:
                found, took = search(collection, query)
                n += 1
                if str(path) in found:
                    return time.time(), n, took
                if n > 2000:
                    raise SystemExit(f"{path} never found in {collection}")

        rows = {"watched": [], "manual": []}
        for trial in range(args.trials):
            for way in ("watched", "manual") if trial % 2 == 0 else ("manual", "watched"):
                title, text = fresh[2 * trial + (way == "manual")]
                n = args.base + trial
                start = time.time()
                path = write_paragraph(folders[way], n, title, text)
                if way == "manual":
                    subprocess.run([*c1, "index", folders[way], "-c", "manual", "--quiet"], env=env, check=True)
                    indexed = time.time()
                found_at, searches, took = until_found(way, path, query_for(title, text))
                if way == "watched":
                    batch = lines.wait(lambda e: e["event"] == "batch" and any(c["path"] == str(path) for c in e["changes"]))
                    indexed = datetime.fromisoformat(batch["time"]).timestamp()
                rows[way].append({"latency": found_at - start, "indexed": indexed - start, "searches": searches,
                                  "search": took})
            print(f"trial {trial + 1}/{args.trials}: watch {rows['watched'][-1]['latency']:.2f}s, "
                  f"manual {rows['manual'][-1]['latency']:.2f}s", file=sys.stderr)
        watcher.send_signal(signal.SIGINT)
        watch_rc = watcher.wait(120)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(60)
                except subprocess.TimeoutExpired:
                    p.kill()
        shutil.rmtree(tmp, ignore_errors=True)

    def stats(way: str, key: str) -> dict:
        values = [r[key] for r in rows[way]]
        return {"median": round(statistics.median(values), 3), "p95": round(percentile(values, 0.95), 3)}

    result = {
        "bench": "watch_latency", "trials": args.trials, "base_paragraphs": args.base, "debounce": args.debounce,
        "watch": {"latency": stats("watched", "latency"), "write_to_batch": stats("watched", "indexed"),
                  "search": stats("watched", "search")},
        "manual": {"latency": stats("manual", "latency"), "write_to_indexed": stats("manual", "indexed"),
                   "search": stats("manual", "search")},
        "watcher_exit": watch_rc, "cpus": os.cpu_count(), "load": load(),
    }
    result["ratio_median"] = round(result["watch"]["latency"]["median"] / result["manual"]["latency"]["median"], 3)
    result["ratio_p95"] = round(result["watch"]["latency"]["p95"] / result["manual"]["latency"]["p95"], 3)
    w, m = result["watch"], result["manual"]
    print(f"\nwrite → first search that finds the file ({args.trials} trials each, {args.base} paragraphs indexed, "
          f"load {result['load']} on {result['cpus']} CPUs)")
    print(f"{'':28}{'median':>10}{'p95':>10}")
    print(f"{'c1 index --watch':28}{w['latency']['median']:>9.2f}s{w['latency']['p95']:>9.2f}s")
    print(f"{'  write → batch committed':28}{w['write_to_batch']['median']:>9.2f}s{w['write_to_batch']['p95']:>9.2f}s")
    print(f"{'  one search':28}{w['search']['median']:>9.2f}s{w['search']['p95']:>9.2f}s")
    print(f"{'c1 index after the write':28}{m['latency']['median']:>9.2f}s{m['latency']['p95']:>9.2f}s")
    print(f"{'  write → c1 index done':28}{m['write_to_indexed']['median']:>9.2f}s{m['write_to_indexed']['p95']:>9.2f}s")
    print(f"ratio watch / manual: {result['ratio_median']} (median), {result['ratio_p95']} (p95); "
          f"--debounce {args.debounce}; the watcher exited {watch_rc} on Ctrl-C")
    save(result, OUT / "watch_latency.jsonl")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
