"""Reading an index home that cannot be written (a read-only mount, a read-only copy, chmod a-w).

SQLite reads such a manifest with ``immutable=1`` (``mode=ro`` alone needs to create the WAL's
shared-memory file), unless a write-ahead log lies beside it: a copy of a home taken while a process
had the manifest open (the resident process, ``c1 watch``, ``c1 serve``) or after a ``kill -9`` keeps
its last changes there, and ``immutable=1`` does not read them (it served the text of the previous
version). Then the manifest and its log are read from a private copy, as are tantivy (it takes a lock
file to read its meta data) and Chroma's embedded store (its client writes to its SQLite file when it
opens). The copies make a read-only `c1 search` and `c1 status` a little slower than the same
command in a writable home (a one-off measurement on a 10k-chunk collection: docs/benchmarks.md,
"Figures that were in the code").

A process copies each folder once: the copy is kept (and used again by the resident process's next
request) while the source's files keep their sizes, times and inodes. Copies are removed when the
process ends, by ``exit``, by SIGTERM or SIGHUP (the handler removes them, then the signal does what it
did before); a process killed outright (SIGKILL) leaves its copies, which the next process that copies
removes (their folder names carry the pid).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path

PREFIX = "c1-readonly-"
_lock = threading.RLock()
_copies: dict[tuple, Path] = {}
"""(what, source, mark of the source) → the copy."""
_roots: list[str] = []
_started = False


def is_writable(path: Path) -> bool:
    """Whether this process can create files in ``path`` (a folder that exists)."""
    return os.access(path, os.W_OK | os.X_OK)


def _mark(paths: list[Path]) -> tuple:
    """What changes when any file at or under ``paths`` does (size, time, inode)."""
    parts = []
    for top in paths:
        tops = [(str(top), [], [""])] if top.is_file() else os.walk(top)
        for where, dirs, files in tops:
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(where, name) if name else where
                try:
                    st = os.stat(full)
                except OSError:
                    continue
                parts.append((full, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(parts)


def private_copy(src: Path, what: str) -> Path:
    """A copy of the folder ``src`` in a temporary folder of this process (removed at exit); the same
    copy again while ``src`` has not changed."""
    src = Path(src)

    def fill(dest: Path) -> None:
        if src.exists():
            shutil.copytree(src, dest, copy_function=shutil.copyfile)
            for folder, _, _ in os.walk(dest):  # copytree copied the folders' read-only modes
                os.chmod(folder, 0o700)
        else:
            dest.mkdir()

    return _copy(("dir", what, str(src.resolve())), [src], what, fill)


def private_files(files: list[Path], what: str) -> Path:
    """A folder of this process holding copies of ``files`` (those that exist), under their names."""

    def fill(dest: Path) -> None:
        dest.mkdir()
        for f in files:
            try:
                shutil.copyfile(f, dest / f.name)
            except FileNotFoundError:
                pass

    return _copy(("files", what, *(str(Path(f).resolve()) for f in files)), list(files), what, fill)


def _copy(key: tuple, sources: list[Path], what: str, fill) -> Path:
    with _lock:
        _start()
        full = (*key, _mark(sources))
        kept = _copies.get(full)
        if kept is not None and kept.exists():
            return kept
        root = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
        _roots.append(root)
        dest = Path(root) / what
        fill(dest)
        _copies[full] = dest
        return dest


def _start() -> None:
    """Once per process: removal at exit and on SIGTERM/SIGHUP; the copies of dead processes removed."""
    global _started
    if _started:
        return
    _started = True
    atexit.register(cleanup)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            on_signal(sig)
    sweep()


def on_signal(sig: int) -> None:
    """Remove the copies on ``sig``, then let it do what it did before (a handler of the process's own,
    or the default: end the process). Only from the main thread."""
    before = signal.getsignal(sig)
    if getattr(before, "_c1_readonly", False) or before == signal.SIG_IGN:
        return

    def handler(signum, frame):
        cleanup()
        if callable(before):
            before(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    handler._c1_readonly = True  # type: ignore[attr-defined]
    try:
        signal.signal(sig, handler)
    except ValueError:  # not the main thread after all
        pass


def sweep() -> None:
    """Remove copies left by processes that no longer run (killed by SIGKILL)."""
    base = Path(tempfile.gettempdir())
    try:
        entries = list(base.glob(PREFIX + "*-*"))
    except OSError:
        return
    for entry in entries:
        pid = entry.name[len(PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except PermissionError:  # another user's live process
            pass


def cleanup() -> None:
    """Remove the private copies (at exit)."""
    with _lock:
        for root in _roots:
            shutil.rmtree(root, ignore_errors=True)
        _roots.clear()
        _copies.clear()
