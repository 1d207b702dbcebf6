"""Reading the files of a run ahead of the writer: in a background thread, or by reader processes
when several files are of costly kinds (:mod:`c1.index.readers`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from c1.index.documents import Document, Skip
from c1.store.manifest import FileRecord

LOAD_AHEAD = 8
"""Files loaded ahead of the embedder (the pages of the one being read stream regardless)."""


@dataclass
class Loaded:
    """A file read (its documents), or skipped (why), ready to be written."""

    rec: FileRecord
    is_new: bool
    docs: list[Document] = field(default_factory=list)
    skip: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class Page:
    """A page of a file being read (its progress is shown before the file is done)."""

    path: str
    number: int
    pages: int


def load_all(todo: list[tuple], wanted_readers: int | None = None) -> Iterator[Loaded | Page]:
    """Load files in a background thread so that parsing overlaps with embedding; the pages of a
    paged file (PDF) are reported one by one as they are read (progress), then the file itself.
    At most ``LOAD_AHEAD`` files are loaded ahead of the embedder. Several files of costly kinds (PDFs)
    are read by reader processes instead, smallest first (:mod:`c1.index.readers`)."""
    from c1.index import readers
    from c1.index.loaders import load_with_warnings

    if n := readers.reader_count([src.kind for src, _, _ in todo], wanted_readers):
        yield from load_in_processes(todo, n)
        return

    out: queue.Queue = queue.Queue()
    ahead = threading.Semaphore(LOAD_AHEAD)
    stop = threading.Event()

    def work():
        try:
            for src, rec, is_new in todo:
                ahead.acquire()
                if stop.is_set():
                    return
                item = Loaded(rec, is_new)

                def on_page(number, pages, path=rec.path):
                    out.put(Page(path, number, pages))

                try:
                    item.docs, item.warnings = load_with_warnings(src, on_page=on_page)
                except Skip as exc:
                    item.skip = str(exc)
                except Exception as exc:  # a loader bug must not kill the run
                    item.skip = f"loader error: {type(exc).__name__}: {exc}"
                out.put(item)
        finally:
            out.put(None)

    thread = threading.Thread(target=work, daemon=True, name="c1-loader")
    thread.start()
    try:
        while (item := out.get()) is not None:
            if isinstance(item, Loaded):
                ahead.release()
            yield item
    finally:
        stop.set()
        ahead.release()  # a loader waiting for room sees ``stop``


def load_in_processes(todo: list[tuple], n: int) -> Iterator[Loaded | Page]:
    """``load_all`` by ``n`` reader processes: files handed out smallest first, each yielded once read
    (in the order they are ready), the pages of those in hand as they are read."""
    from c1.index import readers

    order = readers.smallest_first(todo)
    pool = readers.Pool(n)
    done: set[str] = set()
    try:
        for event in pool.results([src for src, _, _ in order], lambda i: readers.read(order[i][0])):
            if event[0] == "page":
                if event[1] not in done:  # a page event may arrive after its file
                    yield Page(*event[1:])
                continue
            _, i, (docs, warnings, skip) = event
            _src, rec, is_new = order[i]
            done.add(rec.path)
            yield Loaded(rec, is_new, docs, skip, warnings)
    finally:
        pool.close()
