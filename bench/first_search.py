#!/usr/bin/env python3
"""The first `c1 search` after a start (issue #23), whole processes, side by side in one run.

    python bench/first_search.py                          # this checkout, 5 rounds
    python bench/first_search.py --against 8e78086        # and another revision, alternated
    python bench/first_search.py --files 30 --rounds 7

A small real collection (``--files`` Enron messages of the shared data, indexed once into a temporary
home) and, in each round, for each tree in turn (its own runtime folder, so each has its own resident
process):

- ``c1 --help``: the yardstick of a Python process that loads the CLI;
- cold: the home's resident process is stopped (and waited for), then ``c1 search Q --json``: it starts
  a fresh one and waits for it (wall of the command; CPU of the command, and of the resident process up
  to its answer, read from /proc);
- warm: ``c1 search Q2 --json`` right after, through that process;
- ``--no-daemon``: ``c1 search Q --json --no-daemon``, everything in the one process;
- after an index: the resident process is stopped, ``c1 index DIR`` runs (nothing changed: it only checks
  the files), then at once ``c1 search Q --json``: the first search a user makes after indexing; and
  again, the search sent once the resident process the index started has logged its warm-up search
  (how long after the index ended is printed).

The results of the cold, warm and in-process searches of one question must be identical (the seconds
aside): counted. Medians over the rounds; the load average is printed, since on a shared machine wall
times move with it — compare the trees' figures of the same run, and the CPU seconds. Not a test.
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

from bench.report import c1_env, load, report  # noqa: E402

QUESTION = "gas prices in California"
QUESTION_2 = "meeting schedule next week"


def shared_data() -> Path:
    return Path(os.environ.get("C1_SHARED_DATA", REPO / "shared" / "data"))


def export(rev: str, dest: Path) -> Path:
    """The ``c1`` package of ``rev`` written under ``dest``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "c1"], check=True, capture_output=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and the children it waited for, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{' '.join(argv)} exited {code}")
    return wall, usage.ru_utime + usage.ru_stime, out.decode()


def resident(tree: Path, env: dict[str, str], op: str) -> dict | None:
    """``ping`` or ``stop`` the resident process of the bench's home, as seen by ``tree``'s client."""
    code = ("import json, sys; from pathlib import Path; from c1.config import Settings; "
            "from c1.daemon.client import control; "
            f"print(json.dumps(control(Settings(home=Path(sys.argv[1])), {op!r})))")
    out = subprocess.run([sys.executable, "-c", code, env["C1_HOME"]], env=env, capture_output=True, text=True,
                         check=True, cwd=tempfile.gettempdir()).stdout
    return json.loads(out)


def stop(tree: Path, env: dict[str, str]) -> None:
    reply = resident(tree, env, "ping")
    resident(tree, env, "stop")
    while reply and os.path.exists(f"/proc/{reply['pid']}"):
        time.sleep(0.02)


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def untimed(text: str):
    def strip(obj):
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if k != "seconds"}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj

    return strip(json.loads(text))


def round_of(tree: Path, env: dict[str, str], docs: Path) -> dict:
    c1 = [sys.executable, "-m", "c1"]
    got = {"help": run([*c1, "--help"], env)[0]}
    stop(tree, env)
    got["cold"], got["cold_cpu"], cold = run([*c1, "search", QUESTION, "--json", "-q"], env)
    pid = resident(tree, env, "ping")["pid"]
    got["cold_resident_cpu"] = cpu_of(pid)
    got["warm"], got["warm_cpu"], _ = run([*c1, "search", QUESTION_2, "--json", "-q"], env)
    warm_same, _, warm = run([*c1, "search", QUESTION, "--json", "-q"], env)
    got["no_daemon"], got["no_daemon_cpu"], here = run([*c1, "search", QUESTION, "--json", "-q", "--no-daemon"], env)
    got["identical"] = untimed(cold) == untimed(here) == untimed(warm)
    stop(tree, env)
    got["index"], got["index_cpu"], _ = run([*c1, "index", str(docs), "-q"], env)
    got["after_index"], _, after = run([*c1, "search", QUESTION, "--json", "-q"], env)
    got["identical"] = got["identical"] and untimed(after) == untimed(here)
    stop(tree, env)
    run([*c1, "index", str(docs), "-q"], env)
    ended = time.perf_counter()
    reply = resident(tree, env, "ping")  # None: this tree's index starts no resident process
    got["warm_after_index"] = got["after_index_warm"] = None
    if reply is not None and warmed(env, reply["pid"]):
        got["warm_after_index"] = time.perf_counter() - ended
        got["after_index_warm"], _, later = run([*c1, "search", QUESTION, "--json", "-q"], env)
        got["identical"] = got["identical"] and untimed(later) == untimed(here)
    return got


def warmed(env: dict[str, str], pid: int, timeout: float = 120) -> bool:
    """Whether the resident process ``pid`` logged its first search of the collection (within ``timeout``)."""
    folder = Path(env["XDG_RUNTIME_DIR"]) / "c1"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in folder.glob("*.log"):
            if any(f"[{pid}]: warm-up: a first search of" in line for line in log.read_text().splitlines()):
                return True
        time.sleep(0.05)
    return False


def med(xs: list[float]) -> float:
    return round(statistics.median(xs), 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", help="another revision, measured alternately with this checkout")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--files", type=int, default=30, help="Enron messages in the collection")
    args = ap.parse_args(argv)
    source = shared_data() / "enron" / "maildir"
    if not source.is_dir():
        sys.exit(f"no shared data at {source} (set C1_SHARED_DATA)")
    work = Path(tempfile.mkdtemp(prefix="c1-first-search-"))
    try:
        docs = work / "docs"
        docs.mkdir()
        for i, path in enumerate(sorted(p for p in source.rglob("*") if p.is_file())[: args.files]):
            shutil.copyfile(path, docs / f"m{i}.eml")
        trees = {"this checkout": REPO}
        if args.against:
            trees = {args.against: export(args.against, work / "against"), **trees}
        envs = {}
        for i, (name, tree) in enumerate(trees.items()):
            runtime = work / f"runtime{i}"
            runtime.mkdir(mode=0o700)
            envs[name] = {**c1_env(C1_HOME=str(work / "home"), C1_DAEMON="1", XDG_RUNTIME_DIR=str(runtime)),
                          "PYTHONPATH": str(tree)}
        first = next(iter(envs.values()))
        subprocess.run([sys.executable, "-m", "c1", "index", str(docs), "-q"], env={**first, "C1_DAEMON": "0"},
                       check=True, cwd=tempfile.gettempdir())
        before = load()
        rounds: dict[str, list[dict]] = {name: [] for name in trees}
        try:
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    rounds[name].append(round_of(tree, envs[name], docs))
        finally:
            for name, tree in trees.items():
                stop(tree, envs[name])
        after = load()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    result = {"bench": "first_search", "files": args.files, "rounds": args.rounds, "against": args.against,
              "load_average_1m": [before, after], "cpus": os.cpu_count(), "trees": {}}
    rows = []
    for name, got in rounds.items():
        m = {k: med([g[k] for g in got]) if None not in [g[k] for g in got] else None for k in got[0] if k != "identical"}
        m["identical"] = f"{sum(g['identical'] for g in got)}/{len(got)}"
        result["trees"][name] = m
        rows += [
            (f"[{name}] c1 --help", f"{m['help']:.2f} s"),
            (f"[{name}] first search, fresh resident process",
             f"{m['cold']:.2f} s wall ({m['cold'] / m['help']:.1f}x --help); CPU: command {m['cold_cpu']:.2f} s, "
             f"resident process {m['cold_resident_cpu']:.2f} s"),
            (f"[{name}] first search, --no-daemon", f"{m['no_daemon']:.2f} s wall, {m['no_daemon_cpu']:.2f} s CPU"),
            (f"[{name}] later search, warm", f"{m['warm']:.2f} s wall, {m['warm_cpu']:.2f} s CPU"),
            (f"[{name}] c1 index (unchanged files), then at once the first search",
             f"{m['index']:.2f} s ({m['index_cpu']:.2f} s CPU), then {m['after_index']:.2f} s"),
            (f"[{name}] c1 index, then the first search once the resident process it started is warm",
             "(no resident process started by the index)" if m["after_index_warm"] is None else
             f"{m['after_index_warm']:.2f} s (warm {m['warm_after_index']:.2f} s after the index ended)"),
            (f"[{name}] identical results (cold, warm, --no-daemon, after index)", m["identical"]),
        ]
    report(rows, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
