"""vLLM as a supervised child: its own process group, its log pumped to a file, stopped with nothing
left behind (SIGINT, then SIGTERM, then SIGKILL to the whole group); SIGTERM and SIGHUP turned into an
exception that unwinds like Ctrl-C."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from pathlib import Path

from c1.model.errors import ServerDied


class Terminated(BaseException):
    """SIGTERM/SIGHUP arrived: unwind like KeyboardInterrupt, then stop vLLM."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def signals_raise():
    """Turn SIGTERM and SIGHUP into :class:`Terminated` (main thread only: Python delivers
    signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class ServerProcess:
    """vLLM as a child in its own session and process group, its output pumped by a thread
    into a log file, the last lines kept for error messages."""

    def __init__(self, command: Sequence[str], log_path: str | Path, on_log: Callable[[str], None] | None = None,
                 env: dict[str, str] | None = None):
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._tail: collections.deque[str] = collections.deque(maxlen=40)
        self._on_log = on_log
        self.proc = subprocess.Popen(
            list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, **env} if env else None,
        )  # fmt: skip
        self._pump = threading.Thread(target=self._read_output, name="vllm-log", daemon=True)
        self._pump.start()

    def _read_output(self) -> None:
        assert self.proc.stdout is not None
        with open(self.log_path, "ab") as log:
            for raw in self.proc.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip()
                self._tail.append(line)
                if self._on_log:
                    self._on_log(line)

    def tail(self, lines: int = 20) -> str:
        self._pump.join(timeout=1.0)  # after an exit, let the last lines arrive
        return "\n".join(list(self._tail)[-lines:])

    def died(self, summary: str) -> ServerDied:
        return ServerDied(summary, self.tail(), str(self.log_path), self.proc.returncode)

    def stop(self, grace_s: float = 15.0) -> None:
        stop_process_group(self.proc, grace_s=grace_s)


def _group_alive(pgid: int) -> bool:
    """Does any live (non-zombie) process remain in the group?"""
    proc_dir = Path("/proc")
    if proc_dir.is_dir():
        for entry in proc_dir.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
            if fields[0] != "Z" and int(fields[2]) == pgid:
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait_group(proc: subprocess.Popen, pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        proc.poll()  # reap the leader as soon as it exits
        if proc.returncode is not None and not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def stop_process_group(proc: subprocess.Popen, *, grace_s: float = 15.0) -> None:
    """Stop the child's whole process group: SIGINT (vLLM shuts down cleanly and frees the
    GPU), after ``grace_s`` SIGTERM, then SIGKILL. A Ctrl-C while waiting skips to SIGKILL."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, max(grace_s / 3, 1.0)), (signal.SIGKILL, 10.0)):
        try:
            if _wait_group(proc, pgid, 0):
                return
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        try:
            if _wait_group(proc, pgid, wait_s):
                return
        except KeyboardInterrupt:
            continue
