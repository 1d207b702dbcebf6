"""Reading files for ``c1 index`` in several processes, results in the order they are ready.

Why: PDFium is not thread-safe, so one process reads one PDF page at a time (c1.index.loaders.pdf_pdfium
holds a lock around every call), and the other loaders are pure Python under the GIL. On the 21 shared
filings, reading is most of the keyword phase's CPU (docs/scaling.md), so a process per core divides
the time until every file is searchable by keywords by the cores.

- Used when there is enough to read to pay for starting the processes (:func:`reader_count`: at least
  two files of the kinds whose reading is costly, and two cores); otherwise the indexer reads in one
  thread as before.
- The processes are started by ``spawn`` (no fork of a process that holds threads, locks and open
  stores), ignore SIGINT (Ctrl-C is the indexer's to handle: it stops taking files and the processes
  are ended) from their first instruction: they are started with SIGINT blocked (the thread that
  starts them blocks it, as multiprocessing's resource tracker does), so a Ctrl-C while one is still
  importing stays pending until its initializer ignores it — no ``KeyboardInterrupt`` traceback from a
  reader that was starting and die with the indexer (``PR_SET_PDEATHSIG``), so a ``kill -9`` leaves no reader behind.
  They only read: every write stays in the indexer, in the same crash-safe order as with one reader.
- Smaller files first: more files become searchable sooner (a 10-K of 250 pages does not hold up ten
  short notes behind it).
- A reader process that dies (a crash inside a native library) breaks the pool: the files it had not
  returned are read again in the indexer's own process, as they would have been without processes.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
from collections.abc import Callable, Iterator

COSTLY_KINDS = frozenset({"pdf", "image", "docx", "pptx", "epub", "odt", "ods", "xlsx", "rtf"})
"""Kinds whose reading costs far more than starting a process (parsing, PDFium, OCR)."""
MAX_READERS = 8
AHEAD_PER_READER = 2
"""Files handed to each process ahead of the one it reads (so that none waits for its next file)."""


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def wanted_readers() -> int | None:
    """``C1_READERS``: the number of reader processes asked for (0 or 1: none), or None (chosen by
    :func:`reader_count`). A value that is not a whole number from 0 to 64 is a one-line error."""
    from c1.errors import C1Error

    env = os.environ.get("C1_READERS", "").strip()
    if not env:
        return None
    if not env.isdigit() or int(env) > 64:
        raise C1Error(f"C1_READERS={env!r} is not a number of reader processes from 0 to 64", 2)
    return int(env)


def reader_count(kinds: list[str], wanted: int | None = None) -> int:
    """How many reader processes for files of these ``kinds`` (in the indexer's order): 0 means read
    in the indexer's own process. ``wanted`` (:func:`wanted_readers`): a number forces it (tests,
    benchmarks; 0 or 1: no processes), bounded by the number of files."""
    if wanted is not None:
        n = min(wanted, len(kinds), MAX_READERS)
        return n if n >= 2 else 0
    costly = sum(1 for k in kinds if k in COSTLY_KINDS)
    n = min(available_cpus(), costly, MAX_READERS)
    return n if n >= 2 else 0


def smallest_first(todo: list[tuple]) -> list[tuple]:
    """``(source, record, is_new)`` items sorted by file size, then path (the walk's order among equals)."""
    return sorted(todo, key=lambda item: (item[1].size, item[1].path))


# the reader processes ----------------------------------------------------------------------

_pages: object = None
"""In a reader process: the queue its page events go to."""


def _init(pages) -> None:
    global _pages
    _pages = pages
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the indexer decides
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked since the start (Pool.submit): a
    # Ctrl-C that came while this process was starting was pending, and is discarded now that it is ignored
    try:  # die with the indexer, even by kill -9 (Linux)
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:
            os._exit(0)  # the indexer died before the line above
    except (OSError, AttributeError):
        pass


def read(source) -> tuple[list, list[str], str | None]:
    """(documents, warnings, skip reason or None) of one file; never raises for a bad file."""
    from c1.index.documents import Skip
    from c1.index.loaders import load_with_warnings

    def on_page(number: int, pages: int) -> None:
        if _pages is not None:
            _pages.put((source.path, number, pages))

    try:
        docs, warnings = load_with_warnings(source, on_page=on_page)
        return docs, warnings, None
    except Skip as exc:
        return [], [], str(exc)
    except Exception as exc:  # a loader bug must not kill the run
        return [], [], f"loader error: {type(exc).__name__}: {exc}"


class Pool:
    """``n`` reader processes; :meth:`results` yields ``("page", path, number, pages)`` events and
    ``("file", index, (docs, warnings, skip))`` results as they come. ``fallback(index)`` reads a file in
    this process when the pool broke under it."""

    def __init__(self, n: int):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("spawn")
        self.page_queue = ctx.Queue()
        self.executor = ProcessPoolExecutor(n, mp_context=ctx, initializer=_init, initargs=(self.page_queue,))
        self.n = n
        self.out: queue.Queue = queue.Queue()
        self._closed = threading.Event()
        self._forward = threading.Thread(target=self._pages, daemon=True, name="c1-reader-pages")
        self._forward.start()

    def _pages(self) -> None:
        while not self._closed.is_set():
            try:
                item = self.page_queue.get(timeout=0.2)
            except queue.Empty:
                continue
            except (EOFError, OSError, ValueError):
                return
            self.out.put(("page", *item))

    def results(self, sources: list, fallback: Callable[[int], tuple]) -> Iterator[tuple]:
        """Every source read once, results in the order they are ready. Files are handed out as results are
        taken, at most ``AHEAD_PER_READER`` ahead of each process: what is read ahead stays bounded."""
        from concurrent.futures.process import BrokenProcessPool

        pending = list(range(len(sources)))[::-1]  # popped from the end: the first source first
        inflight = 0
        broken = False
        done = 0

        def submit() -> bool:
            nonlocal inflight, broken
            if not pending or broken:
                return False
            index = pending[-1]
            try:
                future = self.submit(sources[index])
            except (BrokenProcessPool, RuntimeError):
                broken = True
                return False
            pending.pop()
            inflight += 1
            future.add_done_callback(lambda f, i=index: self.out.put(("done", i, f)))
            return True

        while inflight < self.n * (1 + AHEAD_PER_READER) and submit():
            pass
        while done < len(sources):
            if inflight == 0 and (broken or not pending):
                index = pending.pop()  # the pool broke: what is left is read here
                done += 1
                yield ("file", index, fallback(index))
                continue
            item = self.out.get()
            if item[0] == "page":
                yield item
                continue
            _, index, future = item
            inflight -= 1
            try:
                result = future.result()
            except BrokenProcessPool:
                broken = True
                pending.append(index)  # read again here, once nothing is in flight
                continue
            except Exception as exc:  # e.g. a document that cannot be pickled back
                result = ([], [], f"loader error: {type(exc).__name__}: {exc}")
            done += 1
            yield ("file", index, result)
            while inflight < self.n * (1 + AHEAD_PER_READER) and submit():
                pass

    def submit(self, source):
        """``executor.submit``, a Ctrl-C meanwhile held back until it returns. A submit may start a reader
        process (spawn starts them one per submit): it inherits SIGINT blocked from this thread, until its
        initializer ignores it; and a KeyboardInterrupt here in the middle of handing the new process its
        start-up data would leave it an ``EOFError`` traceback to print, so in the main thread the signal is
        only noted, and raised once the process has what it needs."""
        held: list[int] = []
        main = threading.current_thread() is threading.main_thread()
        handler = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum)) if main else None
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return self.executor.submit(read, source)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            if main:
                signal.signal(signal.SIGINT, handler)
                if held:
                    signal.raise_signal(signal.SIGINT)  # now, to the handler that was in place

    def close(self) -> None:
        """End the processes now (a file in hand is not waited for: the indexer has stopped taking files)."""
        if self._closed.is_set():
            return
        self._closed.set()
        processes = list(getattr(self.executor, "_processes", {}).values())
        for p in processes:
            try:
                p.terminate()
            except Exception:
                pass
        try:
            self.executor.shutdown(wait=True, cancel_futures=True)
        except Exception:
            pass
        self._forward.join(timeout=2)
        self.page_queue.cancel_join_thread()  # a process ended in the middle of a put may hold its lock
        self.page_queue.close()
