#!/usr/bin/env python3
"""Start-up cost of the CLI, this checkout against another revision, side by side.

Each round runs, for both trees alternately, a whole `c1 --help` process (wall time) and
`python -X importtime -c "import c1.cli"` (the cumulative import time of c1.cli), from a neutral
folder so that each tree's own ``c1`` is the one imported. Medians over the rounds; the machine's
load is printed because start-up times move with it.

    python bench/startup.py --against HEAD~1 --rounds 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import OUT, save  # noqa: E402


def export(rev: str, dest: Path) -> Path:
    """The ``c1`` package of ``rev`` written under ``dest``."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "c1"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def measure(tree: Path) -> tuple[float, float]:
    """(wall seconds of `c1 --help`, milliseconds to import c1.cli) with ``tree`` first on the path."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "c1", "--help"], env=env, capture_output=True, cwd=tempfile.gettempdir(), check=True)
    wall = time.perf_counter() - t0
    probe = f"import c1.cli; assert c1.cli.__file__.startswith({str(tree)!r})"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", probe], env=env, capture_output=True, text=True,
                          cwd=tempfile.gettempdir(), check=True)
    line = next(x for x in proc.stderr.splitlines() if x.endswith("| c1.cli"))
    return wall, int(line.split("|")[1]) / 1000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", default="HEAD~1", help="the revision to compare with (default: HEAD~1)")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        trees = {args.against: export(args.against, Path(tmp)), "this checkout": REPO}
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
        load = [os.getloadavg()[0]]
        for _ in range(args.rounds):
            for name, tree in trees.items():
                got[name].append(measure(tree))
        load.append(os.getloadavg()[0])
    print(f"{'tree':<16}{'c1 --help (s)':>16}{'import c1.cli (ms)':>20}   medians of {args.rounds} alternated rounds, "
          f"load {load[0]:.1f}-{load[1]:.1f}")
    result = {"bench": "startup", "against": args.against, "rounds": args.rounds, "load": [round(x, 2) for x in load],
              "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "trees": {}}
    for name, rows in got.items():
        help_s, import_ms = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        result["trees"][name] = {"help_seconds": round(help_s, 3), "import_cli_ms": round(import_ms, 1)}
        print(f"{name:<16}{help_s:>16.3f}{import_ms:>20.1f}")
    save(result, OUT / "startup.jsonl")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
