"""``bench/drive.py --profile``: where a cold and a warm search on the drive folder spend their time.

- imports of a whole ``c1 search --no-daemon`` (``python -X importtime``), the largest top-level ones;
- py-spy samples (bench/drive_spy.py) of that whole process and of the resident process over warm
  searches, in parts; without py-spy, cProfile (main thread only) of the whole process instead;
- warm searches in one process that opened the collection once and ran a first search, as the resident
  process does (:class:`c1.service.search_service.Corpora`, :func:`c1.service.search_service.search_here`):
  each question's seconds by default, with ``rerank=off`` (the cross-encoder's share) and ``evidence_tokens=0`` (the passages');
- the chunks' length in o200k tokens per kind of file (the annual reports' long chunks).
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.report import C1

TOP = 22


def _home(work: Path) -> Path:
    home = work / "home" / "search"
    if not (home / "c1").is_dir():
        raise SystemExit(f"no collection at {home}: run `python bench/drive.py` first")
    return home


def imports(env: dict, question: str, work: Path) -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", *C1[1:], "search", question, "--no-daemon",
                           "--json", "-q"], env=env, capture_output=True, text=True, cwd=work)
    top = []
    for line in proc.stderr.splitlines():
        parts = line[len("import time:"):].split("|")
        if not line.startswith("import time:") or len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        name = parts[2][1:].rstrip()
        if not name.startswith(" "):  # a top-level import
            top.append((int(parts[1]), name))
    total = sum(us for us, _ in top)
    print(f"\n## imports of a whole `c1 search --no-daemon`: {total / 1e6:.2f} s in top-level imports")
    for us, name in sorted(top, reverse=True)[:12]:
        print(f"  {us / 1e6:6.2f} s  {name.strip()}")


def cold_profile(env: dict, question: str, work: Path) -> None:
    out = work / "cold.prof"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), *C1[1:], "search", question, "--no-daemon",
                    "--json", "-q"], env=env, capture_output=True, cwd=work, check=False)
    wall = time.perf_counter() - t0
    print(f"\n## cProfile of a whole `c1 search {question!r} --no-daemon` ({wall:.2f} s wall under the profiler)")
    _print_stats(pstats.Stats(str(out)))


def _print_stats(stats: pstats.Stats) -> None:
    buf = io.StringIO()
    stats.stream = buf
    stats.sort_stats("tottime").print_stats(TOP)
    lines = buf.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    for line in lines[start:]:
        if line.strip():
            print("  " + line.rstrip()[:160])


def warm_main() -> None:
    """Run in a process of its own (argv: home, questions as JSON): the warm searches and their profile."""
    from dataclasses import replace

    from c1.config import load_settings
    from c1.service.models import load_models
    from c1.service.search_service import Corpora, search_here

    home, questions = sys.argv[1], json.loads(sys.argv[2])
    base = load_settings().with_flags(home=home)
    corpora = Corpora(share_embedders=True)
    corpus = corpora.get(base)
    load_models(base, corpora.embedder(base))
    quiet = lambda *a: None  # noqa: E731
    search_here(base, questions[0], quiet, corpus=corpus)  # the resident process's first search
    variants = {"default": base, "rerank off": replace(base, rerank="off"),
                "evidence_tokens 0": replace(base, evidence_tokens=0)}
    seconds: dict[str, dict[str, float]] = {name: {} for name in variants}
    profiler = cProfile.Profile()
    for question in questions:
        for name, settings in variants.items():
            if name == "default":
                profiler.enable()
            t0 = time.perf_counter()
            search_here(settings, question, quiet, corpus=corpus)
            seconds[name][question] = time.perf_counter() - t0
            if name == "default":
                profiler.disable()
    print(f"\n## warm searches in one process (collection open, first search done), seconds")
    print(f"  {'question':<55} " + "  ".join(f"{n:>17}" for n in variants))
    for question in questions:
        print(f"  {question:<55} " + "  ".join(f"{seconds[n][question]:17.2f}" for n in variants))
    print(f"  {'median':<55} " + "  ".join(f"{statistics.median(seconds[n].values()):17.2f}" for n in variants))
    if sys.argv[3:] == ["cprofile"]:
        print("\n## cProfile of the default warm searches above (main thread only)")
        _print_stats(pstats.Stats(profiler))
    _chunk_lengths(home)


def _chunk_lengths(home: str) -> None:
    """Word pieces per chunk by kind of file, from the manifest (the annual reports' long chunks)."""
    import sqlite3

    from c1.tokens import count_tokens

    db = sqlite3.connect(f"file:{home}/collections/default/manifest.sqlite?mode=ro", uri=True)
    rows = db.execute("SELECT d.path, c.text FROM chunks c JOIN docs d USING (doc_id)").fetchall()
    by_kind: dict[str, list[int]] = {}
    for path, body in rows:
        by_kind.setdefault(_kind(path), []).append(count_tokens(body))
    print("\n## chunk length (o200k tokens) by kind of file: chunks, median, max")
    for kind, lengths in sorted(by_kind.items()):
        print(f"  {kind:<10} {len(lengths):6d} {statistics.median(lengths):8.0f} {max(lengths):8d}")


def _kind(path: str) -> str:
    for part in ("filings", "contracts", "mail", "sheets", "pdf", "notes"):
        if f"/{part}/" in path:
            return part
    return "other"


def profile(work: Path, questions: list[str], env_for) -> int:
    from bench.drive_spy import spy_all

    home = _home(work)
    env = env_for(home)
    imports(env, questions[0], work)
    sampled = spy_all(env, questions, work)
    if not sampled:
        cold_profile(env, questions[0], work)
    proc = subprocess.run([sys.executable, "-c", "from bench.drive_profile import warm_main; warm_main()",
                           env["C1_HOME"], json.dumps(questions), "" if sampled else "cprofile"],
                          env={**env, "PYTHONPATH": f"{work.parents[2]}:{env.get('PYTHONPATH', '')}"}, cwd=work,
                          capture_output=True, text=True)
    print(proc.stdout, end="")
    if proc.returncode:
        print(proc.stderr.strip()[-1500:])
    (work / "cold.prof").unlink(missing_ok=True)
    return proc.returncode
