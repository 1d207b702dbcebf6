"""A search's process ends without the interpreter's teardown, and loses nothing by it: the whole output,
the exit code, and every ``atexit`` handler registered after the entry point's."""

from __future__ import annotations

import subprocess
import sys

PROBE = r"""
import atexit, os, sys
from c1 import exiting
exiting.install()
marks = sys.argv[1]
fd = os.open(marks, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
class Torn:
    def __del__(self, write=os.write, fd=fd):  # bound now: the teardown clears the modules' names
        write(fd, b"torn down\n")
kept = Torn()
def handler():
    os.write(fd, b"handler ran\n")
atexit.register(handler)
if sys.argv[2] == "skip":
    exiting.skip_teardown()
def body():
    sys.stdout.write("x" * 1_000_000)  # still in the buffer when the handler runs
    raise SystemExit(int(sys.argv[3]))
exiting.leaving(body)
"""


def _probe(tmp_path, mode: str, code: int):
    marks = tmp_path / f"marks-{mode}-{code}"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(marks), mode, str(code)], capture_output=True, timeout=60)
    return proc, marks.read_text().splitlines()


def test_skipping_the_teardown_keeps_the_output_the_code_and_the_handlers(tmp_path):
    proc, marks = _probe(tmp_path, "skip", 3)
    assert proc.returncode == 3 and len(proc.stdout) == 1_000_000 and not proc.stderr
    assert marks == ["handler ran"], "the other handlers run; the objects are not torn down"
    proc, marks = _probe(tmp_path, "skip", 0)
    assert proc.returncode == 0 and len(proc.stdout) == 1_000_000


def test_a_command_that_does_not_ask_is_torn_down_as_usual(tmp_path):
    proc, marks = _probe(tmp_path, "keep", 2)
    assert proc.returncode == 2 and len(proc.stdout) == 1_000_000
    assert marks == ["handler ran", "torn down"]


def test_a_closed_pipe_costs_no_traceback(tmp_path):
    marks = tmp_path / "marks"
    reader = subprocess.Popen([sys.executable, "-c", PROBE, str(marks), "skip", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    reader.stdout.read(10)
    reader.stdout.close()
    reader.wait(timeout=60)
    assert b"Traceback" not in reader.stderr.read()


def test_an_uncaught_error_still_exits_non_zero(tmp_path):
    probe = PROBE.replace("raise SystemExit(int(sys.argv[3]))", "raise RuntimeError('boom')")
    marks = tmp_path / "marks"
    proc = subprocess.run([sys.executable, "-c", probe, str(marks), "skip", "0"], capture_output=True, timeout=60)
    assert proc.returncode == 1 and b"RuntimeError: boom" in proc.stderr
