"""py-spy samples (every thread, idle ones left out) of a cold ``c1 search --no-daemon`` and of the
resident process over warm searches, summed into the parts a search is made of (bench/drive.py --profile).

Each sample goes to the first part its stack shows, in the order of ``PARTS``: an import inside the
cross-encoder counts as an import, the cross-encoder inside the passages as the cross-encoder.
"""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.report import C1

RATE = 100
PARTS = [
    ("imports", ("_find_and_load",)),
    ("model load (ONNX sessions, o200k encoding)", ("onnx_session", "_create_inference_session",
                                                    "load_harmony_encoding", "(c1/tokens.py:")),
    ("cross-encoder (re-ranking, passage scores)", ("c1/retrieval/rerankers.py",)),
    ("query embedding", ("c1/store/embedders.py",)),
    ("evidence: _mid_sentence regex over document text", ("_mid_sentence (",)),
    ("evidence ranking (the rest)", ("c1/retrieval/evidence.py",)),
    ("passages: sentences, lines, scoring", ("c1/retrieval/passages.py", "c1/retrieval/sentences.py",
                                             "c1/retrieval/scorers.py")),
    ("keyword search (tantivy, stems)", ("c1/store/lexical.py", "c1/store/keywords.py")),
    ("dense search (vector snapshot, Chroma)", ("c1/store/flat.py", "c1/store/vectors.py", "chromadb/")),
    ("opening the collection", ("c1/retrieval/corpus.py:", "c1/store/collection.py")),
    ("agent loop, tools, context counting", ("c1/agent/", "c1/model/harmony.py")),
    ("CLI, resident process, output", ("c1/",)),
]
IDLE = ("_worker (concurrent/futures/thread.py", "wait (threading.py", "select (selectors.py", "accept (socket.py",
        "Resident.serve (c1/daemon/server.py")  # its accept() is C: the leaf Python frame while it waits


def available() -> str | None:
    return shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")


def summary(raw: Path, title: str, wall: float) -> None:
    """Print the parts' shares of ``raw`` (py-spy's collapsed stacks) and the busiest c1 functions."""
    parts: collections.Counter = collections.Counter()
    inner: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        frames = stack.split(";")
        if not n.isdigit() or any(mark in frames[-1] for mark in IDLE):
            continue
        total += int(n)
        part = next((name for name, marks in PARTS if any(m in stack for m in marks)), "other (Python, libraries)")
        parts[part] += int(n)
        own = [f for f in frames if "(c1/" in f]
        if own:
            inner[own[-1].split(":")[0] + ")"] += int(n)
    print(f"\n## {title}: {wall:.2f} s wall, {total / RATE:.2f} s of busy samples (all threads)")
    for name, n in parts.most_common():
        print(f"  {n / RATE:6.2f} s  {100 * n / max(total, 1):5.1f} %  {name}")
    print("  busiest c1 functions (innermost c1 frame):")
    for name, n in inner.most_common(8):
        print(f"  {n / RATE:6.2f} s  {name}")


def cold(spy: str, env: dict, question: str, work: Path) -> None:
    raw = work / "cold.spy"
    t0 = time.perf_counter()
    subprocess.run([spy, "record", "-r", str(RATE), "-f", "raw", "-o", str(raw), "--", sys.executable, *C1[1:],
                    "search", question, "--no-daemon", "--json", "-q"], env=env, cwd=work, capture_output=True)
    summary(raw, f"cold `c1 search {question!r} --no-daemon` under py-spy", time.perf_counter() - t0)
    raw.unlink(missing_ok=True)


def _control(env: dict, op: str, work: Path) -> dict | None:
    code = ("import json, sys; from pathlib import Path; from c1.config import Settings; "
            "from c1.daemon.client import control; "
            f"print(json.dumps(control(Settings(home=Path(sys.argv[1])), {op!r})))")
    out = subprocess.run([sys.executable, "-c", code, env["C1_HOME"]], env=env, capture_output=True, text=True,
                         cwd=work, check=True).stdout
    return json.loads(out)


def warm(spy: str, env: dict, questions: list[str], work: Path) -> None:
    """The resident process sampled while it answers ``questions`` (it is started and warm first)."""
    raw = work / "warm.spy"
    search = [*C1, "search", "--json", "-q"]
    subprocess.run([*search, questions[0]], env=env, cwd=work, capture_output=True)
    pid = (_control(env, "ping", work) or {}).get("pid")
    if pid is None:
        print("\n(no resident process to sample)")
        return
    rec = subprocess.Popen([spy, "record", "-r", str(RATE), "-f", "raw", "-o", str(raw), "--pid", str(pid)],
                           cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # py-spy attached
    t0 = time.perf_counter()
    for question in questions:
        subprocess.run([*search, question], env=env, cwd=work, capture_output=True)
    wall = time.perf_counter() - t0
    rec.send_signal(signal.SIGINT)
    rec.wait(timeout=30)
    _control(env, "stop", work)
    if raw.exists():
        summary(raw, f"the resident process over {len(questions)} warm searches under py-spy", wall)
        raw.unlink()
    else:
        print("\n(py-spy wrote no samples of the resident process)")


def spy_all(env: dict, questions: list[str], work: Path) -> bool:
    spy = available()
    if spy is None:
        print("\n(py-spy not installed: `pip install py-spy` for the sampled profiles)")
        return False
    cold(spy, env, questions[0], work)
    warm(spy, env, questions, work)
    return True


if __name__ == "__main__":  # pragma: no cover - a manual look at a saved file
    summary(Path(sys.argv[1]), sys.argv[1], float(os.environ.get("WALL", "0")))
