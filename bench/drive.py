#!/usr/bin/env python3
"""Speed on a user's own drive (issue 33): whole `c1` processes on a small mixed folder.

The folder is built once under ``bench/out/drive/folder`` from the shared data (``--rebuild`` builds it
anew): three filings (3M's 10-K, Adobe's 2015 10-K, Amcor's quarterly earnings), a handful of the legal
contracts, 100 Enron messages in a Maildir, two spreadsheets written here (xlsx, csv), a dozen good PDFs
of the pdf set, German, Chinese and Japanese notes and clauses written here, file names with spaces and
brackets, a link inside the folder and one out of it (c1 skips it unless ``--follow``).

Every figure is min / median / max over ``--runs`` whole processes (start-up included), each with its own
C1_HOME and XDG folders under ``bench/out/drive/home``. A search prints what a user's ``c1 search Q`` prints
into a pipe (the plain output; runs saved before 2026-12-06T06:00 timed ``--json``):

- index: a fresh home each run; the whole ``c1 index`` and the time from its start until every file is
  searchable by keywords (the manifest's keyword phase seen over from outside; c1's own
  ``lexical_seconds`` beside it);
- cold: ``c1 search Q --no-daemon`` (everything in one new process), and a first ``c1 search Q`` that
  has to start the resident process (stopped and waited for before each);
- warm: typed questions (filings, contracts, mail, sheets) through the running resident process, each
  the first time it is asked there (``QUESTIONS`` after the warm-up one, then ``FRESH``): the resident
  process remembers a question's cross-encoder pairs and every chunk's sentences, so a question asked
  again is cheaper, and is shown apart ("asked again": ``QUESTIONS``, rounds 2 to ``--runs``);
- ``--parallel 4`` against one run, the same questions alternated pair by pair through the same resident
  process (which of the two goes first alternates too): the ratio of each pair.

``--profile`` prints where a cold and a warm search spend their time instead (``-X importtime``, cProfile
of a whole ``--no-daemon`` search, cProfile of warm searches in one process that opened the collection
once, as the resident process does). The machine is shared: run it under ``nice``.

    nice -n 10 python bench/drive.py                  # --runs 3 (index runs: --index-runs)
    nice -n 10 python bench/drive.py --profile
    python bench/drive.py --compare 2026-12-06T01:38:28 2026-12-06T01:40:22   # two saved runs, paired
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.drive_folder import build  # noqa: E402
from bench.report import C1, c1_env, load, report  # noqa: E402

WORK = REPO / "bench" / "out" / "drive"
QUESTIONS = [
    "3m net sales 2022 by segment",
    "amcor adjusted eps fourth quarter",
    "adobe subscription revenue 2015",
    "what happens to confidential info when the nda ends",
    "termination for convenience notice period",
    "gas prices in california",
    "can we move the meeting to next week",
    "q2 marketing budget actual vs forecast",
]
FRESH = [
    "3m dividends paid 2022",
    "adobe number of employees",
    "amcor free cash flow guidance fiscal 2024",
    "who can terminate the sponsorship agreement",
    "governing law of the trademark license",
    "enron power trading desk houston",
    "headcount by department 2024",
    "background checks in november 2015",
]
"""Asked once each, after ``QUESTIONS``' first round: more first-time questions for the warm figure."""


def env_for(home: Path) -> dict[str, str]:
    """c1's environment with every folder it writes under ``home`` (the runtime folder private)."""
    for sub in ("runtime", "config", "data", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    (home / "runtime").chmod(0o700)
    return c1_env(C1_HOME=str(home / "c1"), XDG_RUNTIME_DIR=str(home / "runtime"),
                  XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"),
                  XDG_CACHE_HOME=str(home / "cache"))


def run(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one whole process; exits on a failure (0 and 1 are fine)."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=WORK)
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[2:])} failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    return wall, proc.stdout


def resident(env: dict[str, str], op: str) -> dict | None:
    """``ping`` or ``stop`` the resident process of ``env``'s home."""
    code = ("import json, sys; from pathlib import Path; from c1.config import Settings; "
            "from c1.daemon.client import control; "
            f"print(json.dumps(control(Settings(home=Path(sys.argv[1])), {op!r})))")
    out = subprocess.run([sys.executable, "-c", code, env["C1_HOME"]], env=env, capture_output=True, text=True,
                         check=True, cwd=WORK).stdout
    return json.loads(out)


def stop(env: dict[str, str]) -> None:
    """Stop the home's resident process and wait until it is gone."""
    reply = resident(env, "ping")
    resident(env, "stop")
    while reply and os.path.exists(f"/proc/{reply['pid']}"):
        time.sleep(0.02)


def keyword_phase_over(home: Path) -> bool:
    """Whether ``c1 index`` is embedding or done, i.e. every file is searchable by keywords."""
    path = home / "c1" / "collections" / "default" / "manifest.sqlite"
    if not path.exists():
        return False
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.05)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='embedding'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return bool(row and row[0] == "1")


def index_once(folder: Path, home: Path) -> dict:
    """One fresh ``c1 index --json``: wall, keyword-searchable (seen from outside), c1's own figures."""
    shutil.rmtree(home, ignore_errors=True)
    env = env_for(home)
    t0 = time.perf_counter()
    proc = subprocess.Popen([*C1, "index", str(folder), "--json", "-q"], env=env, cwd=WORK,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = None
    while proc.poll() is None:
        if seen is None and keyword_phase_over(home):
            seen = time.perf_counter() - t0
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    out, err = proc.communicate()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"c1 index failed (exit {proc.returncode}): {err.strip()[-300:]}")
    stop(env)
    got = json.loads(out)
    return {"wall": wall, "keywords": seen if seen is not None else got["lexical_seconds"],
            "lexical_seconds": got["lexical_seconds"], "chunks": got["total_chunks"],
            "documents": got["documents"], "skipped": got.get("skipped", [])}


def first_doc(stdout: str) -> str:
    """The file name of the first document of ``c1 search``'s plain output (a pipe gets whole lines: " 1.
    TITLE  PATH[:PAGE]  score S  ID")."""
    first = stdout.split("\n", 1)[0]
    if not first.strip():
        return "-"
    found = re.search(r"  (/.*?)(?::\d+)?  score \d", first)
    return Path(found.group(1)).name if found else "?"


def searches(env: dict[str, str], runs: int) -> dict:
    """Cold (--no-daemon, and starting the resident process), warm, and --parallel 4 against one run."""
    search = [*C1, "search", "-q"]  # the plain output, as a user types it (rendered where the search runs)
    got: dict[str, list] = {"no_daemon": [], "start_resident": [], "warm": [], "again": [], "one": [], "par4": [],
                            "ratio": []}
    for i in range(runs):
        question = QUESTIONS[i % len(QUESTIONS)]
        stop(env)
        got["no_daemon"].append(run([*search, question, "--no-daemon"], env)[0])
        got["start_resident"].append(run([*search, question], env)[0])
    run([*search, QUESTIONS[0]], env)  # the resident process is warm (and its first search done)
    top = {}
    per_question: dict[str, list[float]] = {q: [] for q in QUESTIONS + FRESH}
    asked = [(0, q) for q in QUESTIONS[1:]] + [(0, q) for q in FRESH] + [(r, q) for r in range(1, runs) for q in QUESTIONS]
    for again, question in asked:
        wall, out = run([*search, question], env)
        got["again" if again else "warm"].append(wall)
        per_question[question].append(wall)
        top[question] = first_doc(out)
    for r in range(runs):
        for question in QUESTIONS:
            if r % 2:
                par = run([*search, question, "--parallel", "4"], env)[0]
                one = run([*search, question], env)[0]
            else:
                one = run([*search, question], env)[0]
                par = run([*search, question, "--parallel", "4"], env)[0]
            got["one"].append(one)
            got["par4"].append(par)
            got["ratio"].append(par / one)
    stop(env)
    got["per_question"] = {q: max(v) for q, v in per_question.items() if v}
    got["top"] = top
    return got


def mmm(xs: list[float], unit: str = " s") -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}{unit}"


def figures(args) -> int:
    folder = build(WORK / "folder", rebuild=args.rebuild)
    before = load()
    indexes = [index_once(folder, WORK / "home" / f"index{i}") for i in range(args.index_runs)]
    home = WORK / "home" / "search"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(WORK / "home" / f"index{args.index_runs - 1}", home, symlinks=True,
                    ignore=shutil.ignore_patterns("runtime"))
    got = searches(env_for(home), args.runs)
    last = indexes[-1]
    rows = [
        ("folder", f"{folder} ({last['documents']} documents, {last['chunks']} chunks; "
                   f"{len(last['skipped'])} skipped)"),
        ("c1 index, fresh home (min / median / max)", mmm([x["wall"] for x in indexes])),
        ("  until searchable by keywords", mmm([x["keywords"] for x in indexes])
         + f"  (c1's lexical_seconds {mmm([x['lexical_seconds'] for x in indexes])})"),
        ("cold first search, --no-daemon", mmm(got["no_daemon"])),
        ("cold first search, starting the resident process", mmm(got["start_resident"])),
        (f"warm search, resident process, first time asked ({len(got['warm'])})", mmm(got["warm"])),
        ("  over 2 s", f"{sum(1 for w in got['warm'] if w > 2)} of {len(got['warm'])}"),
        (f"warm search, asked again ({len(got['again'])})", mmm(got["again"]) if got["again"] else "-"),
        *[(f"  slowest of {q!r}", f"{got['per_question'][q]:.2f} s -> {got['top'][q]}") for q in got["per_question"]],
        ("one run (paired with --parallel 4)", mmm(got["one"])),
        ("--parallel 4", mmm(got["par4"])),
        ("--parallel 4 / one run, pair by pair", mmm(got["ratio"], "x")),
    ]
    skipped = [f"{s.get('path', s)}: {s.get('reason', '')}" for s in last["skipped"]] if last["skipped"] else []
    rows += [("skipped", "; ".join(skipped)[:300] or "none")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    report(rows, {"bench": "drive", "commit": commit, "runs": args.runs, "index_runs": args.index_runs,
                  "index": [{k: v for k, v in x.items() if k != "skipped"} for x in indexes],
                  **{k: got[k] for k in ("no_daemon", "start_resident", "warm", "again", "one", "par4", "ratio")},
                  "load_average_1m": [before, load()]})
    return 0


SAVED = REPO / "bench" / "out" / "drive.jsonl"
"""Every run's JSON line (bench/report.py appends it)."""
PAIRED = ("warm", "again", "no_daemon", "start_resident", "one", "par4")
"""The figures whose values two runs of the bench hold in the same order (the same question, the same round)."""


def compare(before: str, after: str) -> int:
    """Two saved runs of bench/out/drive.jsonl (named by their ``time``), figure by figure: each value of
    ``after`` over the same question's in ``before``, as median and geometric mean of those ratios with a
    95 % bootstrap interval of the median (the warm questions fall in two groups, so the median of each run
    alone moves a great deal between runs; the ratio question by question does not)."""
    import math
    import random

    runs = {json.loads(line)["time"]: json.loads(line) for line in SAVED.open()}
    missing = [t for t in (before, after) if t not in runs]
    if missing:
        raise SystemExit(f"no saved run at {', '.join(missing)} in bench/out/drive.jsonl (its 'time' fields)")
    a, b = runs[before], runs[after]
    rng = random.Random(0)
    print(f"{after} ({b.get('commit', '?')}) over {before} ({a.get('commit', '?')}), question by question")
    for key in PAIRED:
        ratios = [y / x for x, y in zip(a.get(key, []), b.get(key, [])) if x > 0]
        if not ratios:
            continue
        boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"  {key:<15} n {len(ratios):>2}  median {statistics.median(ratios):.3f} "
              f"[{boot[49]:.3f}, {boot[1949]:.3f}]  geometric mean {geo:.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs of each search figure (default 3)")
    ap.add_argument("--index-runs", type=int, help="fresh index runs (default: --runs)")
    ap.add_argument("--rebuild", action="store_true", help="build the folder anew")
    ap.add_argument("--build-only", action="store_true", help="build the folder and print where it is")
    ap.add_argument("--profile", action="store_true", help="where a cold and a warm search spend their time")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="two saved runs (their 'time' in bench/out/drive.jsonl), question by question; runs nothing")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.runs < 1 or (args.index_runs is not None and args.index_runs < 1):
        ap.error("--runs and --index-runs must be at least 1")
    args.index_runs = args.index_runs or args.runs
    if args.build_only:
        print(build(WORK / "folder", rebuild=args.rebuild))
        return 0
    if args.profile:
        from bench.drive_profile import profile

        return profile(WORK, QUESTIONS, env_for)
    return figures(args)


if __name__ == "__main__":
    raise SystemExit(main())
