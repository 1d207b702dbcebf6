"""Keep a collection fresh: file events → settled batches → the indexer, for the changed paths only.

watchfiles (Rust's notify: inotify, FSEvents, kqueue; polling with ``WATCHFILES_FORCE_POLLING=1``)
reports changed paths on a thread of its own. The :class:`Batcher` holds each path until it has
been quiet for the debounce, so that an editor's atomic save (a temporary file renamed over the
old one), a copy in progress or a burst of new files settle into one batch, and a file still
being written waits until it is complete. The batch is then indexed as ``c1 index`` would index
those paths (:meth:`Indexer.sync`: the same walk rules, the same crash-safe order of writes),
under the collection lock that the watch holds from start to end.

What a batch did is read from the manifest before and after (:func:`changes`), not from the
indexer's insides: added, updated, deleted or skipped, with each file's chunks.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import ContextManager

from c1.config import DEBOUNCE
from c1.index.walk import under
from c1.errors import C1Error

MAX_HOLD = 60.0
"""A path that keeps changing for this long is indexed as it stands (a log written without pause)."""
IDLE_WAIT = 0.25
"""Longest wait for file events before the stop flag is looked at again."""
RETRY_MAX = 60.0
"""Longest pause between attempts when a batch fails (an embedding server or Chroma server away)."""


def max_wait(debounce: float) -> float:
    """How long settled paths may wait for a burst of other changes to end: a stream of changes is
    cut into batches at least this often."""
    return max(2.0, 4 * debounce)


class Batcher:
    """Which changed paths are ready to index, given when each was last seen to change (pure: the
    caller gives the clock).

    A path is *settled* once it has been quiet for ``debounce`` seconds. Settled paths go out
    together when every pending path has settled (the burst is over), or when the oldest of them
    has waited :func:`max_wait`; paths still changing wait for the next batch, unless they have
    been changing for ``max_hold``.
    """

    def __init__(self, debounce: float, max_hold: float = MAX_HOLD):
        self.debounce = debounce
        self.max_wait = max_wait(debounce)
        self.max_hold = max_hold
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self.last)

    def add(self, paths: Iterable[str], now: float) -> None:
        for path in paths:
            self.first.setdefault(path, now)
            self.last[path] = now

    def take(self, now: float) -> list[str]:
        """The paths to index now (sorted), removed from the pending set; [] while none is due."""
        settled = [p for p, t in self.last.items() if now - t >= self.debounce or now - self.first[p] >= self.max_hold]
        if not settled:
            return []
        if len(settled) < len(self.last) and now - min(self.first[p] for p in settled) < self.max_wait:
            return []  # a burst still going on: one batch when it ends
        for path in settled:
            del self.first[path], self.last[path]
        return sorted(settled)

    def due_in(self, now: float) -> float | None:
        """Seconds until :meth:`take` may give something (0: now); None while nothing is pending."""
        if not self.last:
            return None
        settled = [self.first[p] for p, t in self.last.items() if now - t >= self.debounce]
        times = [t + self.debounce for t in self.last.values() if now - t < self.debounce]
        times += [f + self.max_hold for f in self.first.values()]
        if settled:
            times.append(min(settled) + self.max_wait)
        return max(0.0, min(times) - now)


class FileEvents:
    """watchfiles on threads of its own; :meth:`get` gives the paths under ``roots`` that changed since
    the last call.

    Folders are watched recursively. A file given as a root is watched through its folder, without
    the folder's sub-folders: an editor's save replaces the file, and a watch on the file itself
    would end with the old one."""

    def __init__(self, roots: list[str]):
        self.dirs = sorted({r for r in roots if os.path.isdir(r)})
        self.files = sorted({r for r in roots if not os.path.isdir(r)})
        parents = sorted({os.path.dirname(f) for f in self.files if not under(f, self.dirs)})
        self.watched = self.dirs + parents
        self._groups = [(group, recursive) for group, recursive in ((self.dirs, True), (parents, False)) if group]
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._ready = [threading.Event() for _ in self._groups]
        self._error: BaseException | None = None
        self._threads = [threading.Thread(target=self._run, args=(group, recursive, ready), daemon=True,
                                          name="c1-watch") for (group, recursive), ready in zip(self._groups, self._ready)]

    def start(self) -> "FileEvents":
        """Start watching; returns once changes are being recorded."""
        for thread in self._threads:
            thread.start()
        for ready in self._ready:
            ready.wait(30)
        self._raise()
        return self

    def _run(self, paths: list[str], recursive: bool, ready: threading.Event) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(
                *paths, watch_filter=None, debounce=100, step=20, rust_timeout=200, yield_on_timeout=True,
                stop_event=self._stop, raise_interrupt=False, recursive=recursive, ignore_permission_denied=True,
            ):
                ready.set()
                got = {p for _, p in changes if under(p, self.dirs) or p in self.files}
                if got:
                    self._queue.put(got)
        except BaseException as exc:  # the watch itself failed (a watch limit, a folder gone): said by get()
            self._error = exc
        finally:
            ready.set()

    def _raise(self) -> None:
        if self._error is not None:
            text = str(self._error).strip() or type(self._error).__name__
            hint = " (raise fs.inotify.max_user_watches, or watch fewer folders)" if "limit" in text else ""
            raise C1Error(f"cannot watch {', '.join(self.watched)}: {text}{hint}")

    def get(self, timeout: float) -> set[str]:
        """Paths changed since the last call, waiting up to ``timeout`` seconds for the first one."""
        out: set[str] = set()
        try:
            out |= self._queue.get(timeout=timeout)
            while True:
                out |= self._queue.get_nowait()
        except queue.Empty:
            pass
        if not out:
            self._raise()
        return out

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)


# what a batch did --------------------------------------------------------------------------------


@dataclass
class Change:
    path: str
    change: str
    """``added``, ``updated``, ``deleted`` or ``skipped``."""
    chunks: int = 0
    reason: str | None = None
    """Why a file was skipped."""

    def to_json(self) -> dict:
        out = {"path": self.path, "change": self.change, "chunks": self.chunks}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def changes(before: dict, after: dict, chunks: dict[str, int], skipped: list[dict]) -> list[Change]:
    """Per file, what a run did, from the manifest's file records (path → record with ``hash``) before
    and after it and the report's skipped files; a file whose content did not change is left out."""
    reasons = {s["path"]: s["reason"] for s in skipped}
    out = []
    for path in sorted(set(before) | set(after) | set(reasons)):
        old, new = before.get(path), after.get(path)
        if path in reasons:
            out.append(Change(path, "skipped", 0, reasons[path]))
        elif new is None:
            out.append(Change(path, "deleted"))
        elif old is None:
            out.append(Change(path, "added", chunks.get(path, 0)))
        elif old.hash != new.hash:
            out.append(Change(path, "updated", chunks.get(path, 0)))
    return out


@dataclass
class Batch:
    """One round of changes, indexed."""

    report: object
    """The :class:`~c1.index.report.IndexReport` of the run over the changed paths."""
    changes: list[Change] = field(default_factory=list)
    generation: int = 0
    """The manifest's generation after it (what readers compare to reload)."""

    def to_json(self) -> dict:
        return {**self.report.to_json(), "changes": [c.to_json() for c in self.changes], "generation": self.generation}


class Watch:
    """Index the changes under ``roots`` as they settle, until ``stop`` is set. The caller holds the
    collection (``Indexer.session``) and has started ``events`` before its first full run, so that
    nothing written meanwhile is missed."""

    def __init__(self, indexer, store, roots: list[str], events: FileEvents, debounce: float = DEBOUNCE,
                 progress: Callable[[], ContextManager] = lambda: nullcontext(lambda p: None)):
        """``progress()`` gives, for each batch, a context that yields the indexer's progress callback."""
        self.indexer = indexer
        self.store = store
        self.roots = roots
        self.events = events
        self.progress = progress
        self.batcher = Batcher(debounce)
        self.lost: set[str] = set()
        """Watched folders that were removed: their watch ended with them."""

    def run(self, stop: threading.Event, on_batch: Callable[[Batch], None],
            on_retry: Callable[[str, float], None] = lambda message, delay: None) -> None:
        """``on_batch`` gets each batch that changed something; ``on_retry`` each failure and the pause
        before the batch is tried again (its paths are kept)."""
        delay = 0.0
        while not stop.is_set():
            due = self.batcher.due_in(time.monotonic())
            got = self.events.get(IDLE_WAIT if due is None else min(max(due, 0.001), IDLE_WAIT))
            now = time.monotonic()
            self.batcher.add(got, now)
            paths = self.batcher.take(now)
            if not paths:
                continue
            try:
                batch = self.apply(paths)
            except C1Error as exc:
                delay = min(max(2 * delay, 1.0), RETRY_MAX)
                on_retry(str(exc), delay)
                self.batcher.add(paths, time.monotonic())
                stop.wait(delay)
                continue
            delay = 0.0
            if batch.changes or batch.report.repaired or batch.report.warnings:
                on_batch(batch)

    def apply(self, paths: list[str]) -> Batch:
        """Index the changed ``paths`` (files or folders, present or gone) and say what changed."""
        manifest = self.store.manifest
        targets = [p for p in paths if under(p, self.roots)]
        before = manifest.files_under(targets)
        with self.progress() as on_progress:
            self.indexer.progress = on_progress
            report = self.indexer.sync(self.store, self.roots, changed=targets)
        after = manifest.files_under(targets)
        for root in self.events.dirs:
            if root not in self.lost and not os.path.isdir(root):
                self.lost.add(root)
                report.warnings.append({"path": root, "warning": "the folder was removed: its documents are removed "
                                        "and it is no longer watched (watch it again once it is back)"})
        chunks: dict[str, int] = {}
        for doc in manifest.docs_of([p for p, rec in after.items() if before.get(p) is None or before[p].hash != rec.hash]):
            chunks[doc.path] = chunks.get(doc.path, 0) + doc.n_chunks
        return Batch(report, changes(before, after, chunks, report.skipped), manifest.generation())
