"""``c1 index PATH... --watch``: index, then keep the collection fresh until Ctrl-C.

Output: the usual progress bar and summary for the first run, then one line on stderr per file
that changed (``12:03:04 added notes/ferry.md (3 chunks)``); with ``--json``, one JSON object per
line on stdout: the first run's report (``"event": "index"``), each batch's (``"event": "batch"``,
with ``changes`` and the collection's ``generation``), and ``"event": "stopped"`` at the end.

Ctrl-C stops taking new files, writes those in hand and exits 130 with the collection
consistent; a second Ctrl-C stops at once (the next run repairs, as after any crash). SIGTERM and
SIGHUP stop the same way with exit 0, as ``c1 serve`` does. The collection stays locked for the
whole watch: another ``c1 index`` on it is refused in one line, while searches keep working.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from datetime import datetime

from c1.config import Settings
from c1.terminal.console import emit_json, err, escape, note, stderr_is_tty, warn
from c1.errors import C1Error

SHOWN_PER_BATCH = 20
"""Changed files listed on stderr per batch; the rest are counted in one line (all are in --json)."""


def run_watch(settings: Settings, embedder, paths: list[str], *, json_out: bool, quiet: bool, rebuild: bool,
              debounce: float, committed=lambda: None) -> int:
    """``committed`` is called after the first run and after each batch (the resident process sees it)."""
    from c1.commands.index_view import progress, summary
    from c1.index.indexer import Indexer
    from c1.index.watch import FileEvents, Watch

    stop = threading.Event()
    indexer = Indexer(settings, embedder, stop=stop)
    roots = indexer.roots(paths)
    present = [r for r in roots if os.path.exists(r)]
    if not present:
        raise C1Error(f"nothing to watch: {', '.join(roots)} no longer exist{'s' if len(roots) == 1 else ''} "
                      "(`c1 index` without --watch removes what was indexed from there)")
    show = not quiet and stderr_is_tty()
    signals = _Signals(stop, quiet)
    doing = "c1 index --watch " + " ".join(present)
    batches = _Batches(json_out, quiet)
    with signals, indexer.session(rebuild, doing=doing) as store:
        events = FileEvents(present).start()  # before the first run: nothing written meanwhile is missed
        try:
            with progress(show) as on_progress:
                indexer.progress = on_progress
                report = indexer.sync(store, roots, rebuild=rebuild)
            committed()
            if not quiet:
                summary(report)
                for root in roots:
                    if root not in present:
                        note(f"{root} no longer exists: its documents were removed, and it is not watched")
                note(f"watching {', '.join(present)} for changes (Ctrl-C to stop)")
            if json_out:  # after the notes: a reader of stdout that sees this line finds them on stderr
                emit_json({"event": "index", **report.to_json()})
            watch = Watch(indexer, store, roots, events, debounce, progress=lambda: progress(show))
            if not stop.is_set():
                watch.run(stop, lambda batch: (committed(), batches.print(batch)), on_retry=batches.retry)
        finally:
            events.close()
    if json_out:
        emit_json({"event": "stopped", "signal": signals.name, "batches": batches.count})
    if not quiet:
        note(f"stopped watching ({signals.name}): {batches.count} batch{'es' if batches.count != 1 else ''} of "
             "changes indexed; the collection is consistent")
    return 130 if signals.name == "SIGINT" else 0


class _Batches:
    """Prints what each batch did: lines on stderr, a JSON object on stdout."""

    def __init__(self, json_out: bool, quiet: bool):
        self.json_out, self.quiet = json_out, quiet
        self.count = 0

    def print(self, batch) -> None:
        self.count += 1
        stamp = datetime.now().astimezone()
        if not self.quiet:
            self._lines(batch, stamp)
        if self.json_out:  # last: a reader of stdout knows that stderr has the lines
            emit_json({"event": "batch", "time": stamp.isoformat(timespec="milliseconds"), **batch.to_json()})

    def _lines(self, batch, stamp: datetime) -> None:
        con = err()
        clock = stamp.strftime("%H:%M:%S")
        if batch.report.repaired:
            note(f"{clock} repaired: the vectors and the lexical index agree with the manifest again")
        for c in batch.changes[:SHOWN_PER_BATCH]:
            what = f"{c.change:<8}"
            if c.change == "skipped":
                line = f"{clock} {what}{_shown(c.path)}: {c.reason}"
            elif c.change == "deleted":
                line = f"{clock} {what}{_shown(c.path)}"
            else:
                line = f"{clock} {what}{_shown(c.path)} ({c.chunks} chunk{'s' if c.chunks != 1 else ''})"
            con.print(escape(line), soft_wrap=True, style=_STYLES.get(c.change))
        rest = batch.changes[SHOWN_PER_BATCH:]
        if rest:
            counts = {k: sum(1 for c in rest if c.change == k) for k in ("added", "updated", "deleted", "skipped")}
            con.print(f"{clock} … and {len(rest)} more: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n)
                      + f" ({sum(c.chunks for c in rest)} chunks)", soft_wrap=True, markup=False)
        for item in batch.report.warnings[:5]:
            warn(f"{item['path']}: {item['warning']}")

    def retry(self, message: str, delay: float) -> None:
        warn(f"{message}; trying again in {delay:.0f}s")
        if self.json_out:
            emit_json({"event": "error", "time": datetime.now().astimezone().isoformat(timespec="milliseconds"),
                       "error": message, "retry_in": delay})


_STYLES = {"added": "green", "deleted": "red", "skipped": "yellow"}


def _shown(path: str) -> str:
    """``path`` relative to the working folder when it is below it, else as it is."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class _Signals:
    """While watching: the first Ctrl-C (or SIGTERM, SIGHUP) sets ``stop``, so that the files in hand are
    written and the collection left consistent; a second Ctrl-C raises KeyboardInterrupt at once."""

    def __init__(self, stop: threading.Event, quiet: bool):
        self.stop = stop
        self.quiet = quiet
        self.name: str | None = None
        self.previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                self.previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum, frame) -> None:
        if self.stop.is_set():
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            return
        self.name = signal.Signals(signum).name
        self.stop.set()
        if not self.quiet:
            sys.stderr.write("c1: stopping after the files in hand (Ctrl-C again to stop at once)\n")
            sys.stderr.flush()
