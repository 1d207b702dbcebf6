"""Helpers the benches share: whole c1 processes timed with their peak memory, and the report."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "out"
C1 = [sys.executable, "-m", "c1"]


def c1_env(**extra: str) -> dict[str, str]:
    """This environment without C1_* settings, running this checkout's c1, plus ``extra``. The checkout's
    bytecode is written first, as ``pip install .`` writes it at install: a timed process never compiles
    a module it imports (where ``PYTHONDONTWRITEBYTECODE`` is set, a module edited since its bytecode was
    written is compiled by every process: 37 modules, 36 ms of a warm search's command on this machine)."""
    _bytecode()
    env = {k: v for k, v in os.environ.items() if not k.startswith("C1_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


@functools.cache
def _bytecode() -> None:
    import compileall

    compileall.compile_dir(REPO / "c1", quiet=1)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MB, stdout) of one whole process; exits on a failure (0 and 1 are fine)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed (exit {os.waitstatus_to_exitcode(status)})")
    return wall, usage.ru_maxrss // 1024, out.decode()


def load() -> float:
    return round(os.getloadavg()[0], 2)


def report(rows: list[tuple[str, str]], result: dict) -> None:
    """Print ``rows`` as a table (with the load average when ``result`` has one), then ``result`` as one JSON
    line, also appended to bench/out/NAME.jsonl."""
    if "load_average_1m" in result:
        rows = [*rows, ("load average (1 min), before / after", f"{result['load_average_1m']} on {os.cpu_count()} CPUs")]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **result})
    print(line)
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / f"{result.get('bench', 'bench')}.jsonl", "a") as f:
        f.write(line + "\n")


def save(report: dict, json_out: Path, rows: list[dict] | None = None, rows_path: Path | None = None) -> None:
    """Append ``report`` as one line to ``json_out``; write ``rows`` (one JSON line each) to ``rows_path`` if given."""
    json_out.parent.mkdir(parents=True, exist_ok=True)
    with open(json_out, "a") as f:
        f.write(json.dumps(report) + "\n")
    if rows_path:
        with open(rows_path, "w") as f:
            for r in rows or []:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
