"""What ``c1 index`` and ``c1 index --watch`` show on stderr: the progress lines while a run goes, and
its summary (what changed, what was skipped and why)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from c1.terminal.console import err, escape, printable, warn


def summary(report) -> None:
    """The run's summary on stderr: what changed, what was skipped and why, what is left to embed."""
    con = err()
    con.print(
        f"[bold]{escape(report.collection)}[/]: {report.added} added, {report.updated} updated, "
        f"{report.deleted} deleted, {report.unchanged} unchanged, {len(report.skipped)} skipped — "
        f"{report.chunks} chunks written, {report.embedded} embedded in {report.seconds:.1f}s "
        f"(searchable by keywords after {report.lexical_seconds:.1f}s); "
        f"{report.documents} documents, {report.total_chunks} chunks in the collection",
        soft_wrap=True,
    )
    if report.repaired:
        con.print("repaired: the vectors and the lexical index agree with the manifest again")
    if report.without_vectors:
        con.print(f"{report.without_vectors} chunks are searchable by keywords only: `c1 index` embeds them")
    if report.unsupported:
        con.print(_unsupported_line(report.unsupported), soft_wrap=True, markup=False)
    if report.skipped:
        skipped(report)
    for item in report.warnings[:5]:
        warn(f"{printable(item['path'])}: {item['warning']}")


def skipped(report) -> None:
    con = err()
    warn(f"{len(report.skipped)} file(s) skipped:")
    for item in report.skipped[:20]:
        con.print(f"  {printable(item['path'])}: {item['reason']}", soft_wrap=True, markup=False)
    if len(report.skipped) > 20:
        con.print(f"  … and {len(report.skipped) - 20} more (see --json)")


def _unsupported_line(counts: dict[str, int]) -> str:
    """``ignored 3 files of unsupported types: .zip 2, .png 1 (install c1[ocr] to index .png
    files)`` (most common first; what to install for kinds that an extra would read)."""
    from c1.index.loaders.registry import needs_extra

    total = sum(counts.values())
    kinds = ", ".join(f"{ext} {n}" for ext, n in counts.items())
    hints = "; ".join(filter(None, (needs_extra(ext) for ext in counts)))
    return f"ignored {total} file{'s' if total != 1 else ''} of unsupported types: {kinds}" + (f" ({hints})" if hints else "")


@contextmanager
def progress(show: bool):
    """The progress bar around one indexing run (pages read by OCR included); gives the callback."""
    from c1.index.loaders import ocr as ocr_reader

    with _progress_bar(show) as on_progress:
        ocr_reader.on_page = on_progress.ocr_page
        try:
            yield on_progress
        finally:
            ocr_reader.on_page = None


class _progress_bar:
    """The progress lines on stderr while indexing (:func:`progress_lines`), or nothing. Entering gives
    the progress callback; its ``ocr_page(file, page, pages)`` shows OCR's progress inside a file,
    which can take minutes."""

    def __init__(self, show: bool):
        self.show = show

    def __enter__(self):
        if not self.show:
            update = lambda p: None  # noqa: E731
            update.ocr_page = lambda path, page, pages: None
            return update
        from rich.live import Live
        from rich.text import Text

        self.state, self.ocr, self.started, self.embedding_since = None, "", time.monotonic(), None
        self.sizes = FileSizes()
        console = err()

        def render():
            if self.state is None:
                return Text("indexing: looking at the files…")
            since = self.embedding_since if self.state.phase == "embedding" else self.started
            lines = progress_lines(self.state, time.monotonic() - (since or self.started), console.width, self.sizes,
                                   self.ocr)
            return Text("\n".join(lines), no_wrap=True, overflow="ellipsis")

        self.live = Live(console=console, transient=True, refresh_per_second=4, get_renderable=render)
        self.live.__enter__()

        def update(p):
            if p.phase == "embedding" and self.embedding_since is None:
                self.embedding_since = time.monotonic()  # the time left while embedding is by chunks
            self.state, self.ocr = p, ""  # an OCR note is about a file now done

        def ocr_page(path, page, pages):
            self.ocr = f"OCR page {page}/{pages}"

        update.ocr_page = ocr_page
        return update

    def __exit__(self, *exc):
        if self.show:
            self.live.__exit__(*exc)


class FileSizes:
    """The size of the file in hand, looked up once per file."""

    def __init__(self):
        self.path, self.size = None, 0

    def __call__(self, path: str) -> int:
        if path != self.path:
            self.path = path
            try:
                self.size = os.stat(path).st_size
            except OSError:
                self.size = 0
        return self.size


BAR = 20
"""Cells of the bar at most (it shrinks first when the line does not fit)."""


def progress_lines(p, elapsed: float, width: int, size_of=None, ocr: str = "") -> list[str]:
    """Two lines, each at most ``width`` cells: the run (share of the bytes done, files, chunks, time
    left) and the file in hand (its name, the chunks of it embedded of its total, or the page being read).

    The share and the time left count bytes, the committed files' and the embedded part of the file in
    hand: files differ in size by orders of magnitude, so counting files said "ETA 3:33:35" two files in."""
    size_of = size_of or FileSizes()
    if p.phase == "embedding":  # every file is searchable by keywords; the vectors follow, chunk by chunk
        share = p.chunks_done / p.chunks_total if p.chunks_total else 1.0
        tail = f" {share:4.0%} · {p.chunks_done:,}/{p.chunks_total:,} chunks · {_time_left(elapsed, share)}"
        room = width - len("embedding ") - len(tail)
        bar = _bar(share, min(BAR, room)) if room >= 6 else ""
        return [_fit(f"embedding {bar}{tail}", width), _fit("  searchable by keywords meanwhile", width)]
    if p.files_total == 0:  # repairing from the manifest: no files, chunks re-embedded
        return [_fit(f"repairing: {p.chunks_done:,} chunks embedded again from the manifest", width)]
    done = p.bytes_done
    if p.current and p.file_chunks:
        done += size_of(p.current) * min(1.0, p.file_chunks_done / p.file_chunks)
    share = min(1.0, done / p.bytes_total) if p.bytes_total else p.files_done / p.files_total
    left = _time_left(elapsed, share)
    written = getattr(p, "chunks_written", 0)  # counted as files are committed: none shown before the first
    chunks = f" · {written:,} chunks" if written else ""
    tail = f" {share:4.0%} · {p.files_done:,}/{p.files_total:,} files{chunks} · {left}"
    room = width - len("indexing ") - len(tail)
    bar = _bar(share, min(BAR, room)) if room >= 6 else ""
    first = _fit(f"indexing {bar}{tail}" if bar else f"indexing{tail}", width)
    if not p.current:
        return [first]
    if p.page:
        doing = f"page {p.page}/{p.pages}"
    elif ocr:
        doing = ocr
    elif p.file_chunks:
        doing = f"chunk {p.file_chunks_done:,}/{p.file_chunks:,}"
    else:
        doing = "reading"
    name = printable(os.path.basename(p.current)) or printable(p.current)
    second = f"  {_middle(name, max(8, width - len(doing) - 5))}  {doing}"
    return [first, _fit(second, width)]


def _time_left(elapsed: float, share: float) -> str:
    """``4:12 left`` from the rate so far; ``–`` until a few seconds and a little of the work are done."""
    if elapsed < 3 or share < 0.005:
        return "time left –"
    if share >= 1:
        return "0:00 left"
    seconds = int(elapsed * (1 - share) / share)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02}:{secs:02} left" if hours else f"{minutes}:{secs:02} left"


def _bar(share: float, cells: int) -> str:
    full = int(share * cells)
    return "━" * full + ("╸" if full < cells else "") + "─" * max(0, cells - full - 1) + " "


def _middle(text: str, cells: int) -> str:
    """``text`` cut in its middle to ``cells`` (a file name keeps its start and its extension)."""
    if len(text) <= cells:
        return text
    keep = cells - 1
    return text[: keep - keep // 3] + "…" + text[len(text) - keep // 3:]


def _fit(line: str, width: int) -> str:
    """``line`` cut to ``width`` terminal cells (a wide character takes two)."""
    from rich.cells import cell_len, set_cell_size

    return line if cell_len(line) <= width else set_cell_size(line, max(0, width - 1)) + "…"
