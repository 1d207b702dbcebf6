"""One writer per collection: the lock file a writer holds, and who holds it now (for a reader's message)."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from c1.errors import C1Error


class CollectionLock:
    """One writer per collection; a second ``c1 index`` fails fast instead of corrupting state.

    The holder writes its pid and what it does into the lock file, so that the one-line refusal
    can name it (``c1 index --watch`` never finishes: waiting for it would hang)."""

    def __init__(self, directory: Path, doing: str = "c1 index"):
        self.path = directory / ".lock"
        self.doing = doing
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise C1Error(f"cannot write the index in {directory}: {exc.strerror}") from None

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise C1Error(f"cannot write the index in {self.path.parent}: {exc.strerror}") from None
        for attempt in range(5):  # a moment's grace: `c1 status` may be looking (lock_holder)
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == 4:
                    os.close(self.fd)
                    raise C1Error(self._refusal()) from None
                time.sleep(0.05)
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps({"pid": os.getpid(), "doing": self.doing}).encode(), 0)
        except OSError:
            pass  # only the refusal's wording depends on it
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)

    def _refusal(self) -> str:
        where = self.path.parent
        holder = lock_holder(where) or {}
        if holder.get("doing", "").startswith("c1 index --watch"):
            return (f"collection {where.name!r} is kept fresh by `{holder['doing']}` (pid {holder.get('pid', '?')}): "
                    "stop it (Ctrl-C) to index other paths into it")
        return f"another `c1 index` is writing to {where}; wait for it to finish"


def lock_holder(directory: Path) -> dict | None:
    """``{"pid", "doing"}`` of the process that holds the collection's lock now; None when none does."""
    path = directory / ".lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return json.loads(os.pread(fd, 4096, 0) or b"{}")
            except ValueError:
                return {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
