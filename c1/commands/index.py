"""``c1 index``: build the embedder, run the indexer with a progress bar, print the report."""

from __future__ import annotations

import os
from contextlib import contextmanager

from c1.config import DEBOUNCE, Settings
from c1.console import emit_json, err, escape, stderr_is_tty, warn
from c1.errors import C1Error


def run_index(settings: Settings, paths: list[str], *, strict: bool, json_out: bool, quiet: bool,
              rebuild: bool = False, ocr: bool = False, watch: bool = False, debounce: float | None = None) -> int:
    from c1.corpus.embedders import embedder_for
    from c1.corpus.indexer import Indexer
    from c1.corpus.loaders import ocr as ocr_reader

    if watch and strict:
        raise C1Error("--strict sets the exit code of one run; a watch runs until stopped: use --strict without --watch")
    if debounce is not None and not watch:
        raise C1Error("--debounce goes with --watch")
    if ocr and not ocr_reader.available():
        raise C1Error(f"--ocr needs the OCR engine: pip install 'c1[{ocr_reader.EXTRA}]'")
    ocr_reader.set_mode("always" if ocr else "auto")
    embedder = embedder_for(settings, rebuild=rebuild, strict=True)
    if watch:
        from c1.commands.watch import run_watch

        return run_watch(settings, embedder, paths, json_out=json_out, quiet=quiet, rebuild=rebuild,
                         debounce=DEBOUNCE if debounce is None else debounce)
    with progress(not quiet and stderr_is_tty()) as on_progress:
        report = Indexer(settings, embedder, progress=on_progress).run(paths, rebuild=rebuild)
    if json_out:
        emit_json(report.to_json())
    if not quiet:
        _summary(report)
    return 1 if strict and report.skipped else 0


def _summary(report) -> None:
    con = err()
    con.print(
        f"[bold]{escape(report.collection)}[/]: {report.added} added, {report.updated} updated, "
        f"{report.deleted} deleted, {report.unchanged} unchanged, {len(report.skipped)} skipped — "
        f"{report.chunks} chunks embedded in {report.seconds:.1f}s ({report.chunks_per_second:.1f}/s); "
        f"{report.documents} documents, {report.total_chunks} chunks in the collection",
        soft_wrap=True,
    )
    if report.repaired:
        con.print("repaired: the vectors and the lexical index agree with the manifest again")
    if report.unsupported:
        con.print(_unsupported_line(report.unsupported), soft_wrap=True, markup=False)
    if report.skipped:
        warn(f"{len(report.skipped)} file(s) skipped:")
        for item in report.skipped[:20]:
            con.print(f"  {item['path']}: {item['reason']}", soft_wrap=True, markup=False)
        if len(report.skipped) > 20:
            con.print(f"  … and {len(report.skipped) - 20} more (see --json)")
    for item in report.warnings[:5]:
        warn(f"{item['path']}: {item['warning']}")


def _unsupported_line(counts: dict[str, int]) -> str:
    """``ignored 3 files of unsupported types: .zip 2, .png 1 (install c1[ocr] to index .png
    files)`` (most common first; what to install for kinds that an extra would read)."""
    from c1.corpus.loaders.registry import needs_extra

    total = sum(counts.values())
    kinds = ", ".join(f"{ext} {n}" for ext, n in counts.items())
    hints = "; ".join(filter(None, (needs_extra(ext) for ext in counts)))
    return f"ignored {total} file{'s' if total != 1 else ''} of unsupported types: {kinds}" + (f" ({hints})" if hints else "")


@contextmanager
def progress(show: bool):
    """The progress bar around one indexing run (pages read by OCR included); gives the callback."""
    from c1.corpus.loaders import ocr as ocr_reader

    with _progress_bar(show) as on_progress:
        ocr_reader.on_page = on_progress.ocr_page
        try:
            yield on_progress
        finally:
            ocr_reader.on_page = None


class _progress_bar:
    """A rich progress bar on stderr (files, chunks, rate, ETA, the page OCR is reading), or
    nothing. Entering gives the progress callback; its ``ocr_page(file, page, pages)`` shows
    OCR's progress inside a file, which can take minutes."""

    def __init__(self, show: bool):
        self.show = show

    def __enter__(self):
        if not self.show:
            update = lambda p: None  # noqa: E731
            update.ocr_page = lambda path, page, pages: None
            return update
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
            TextColumn("{task.fields[chunks]} chunks · {task.fields[rate]}/s"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[note]}", markup=False),
            console=err(), transient=True,
        )
        self.bar.__enter__()
        self.task = self.bar.add_task("index", total=None, chunks=0, rate="0.0", note="")

        def update(p):
            elapsed = self.bar.tasks[0].elapsed or 0.0
            rate = f"{p.chunks_done / elapsed:.1f}" if elapsed else "0.0"
            note = f"{os.path.basename(p.current)} p. {p.page}/{p.pages}" if p.page else ""  # a long file, as it is read
            self.bar.update(self.task, total=p.files_total, completed=p.files_done, chunks=p.chunks_done, rate=rate,
                            note=note)  # an OCR note is about a file now done

        def ocr_page(path, page, pages):
            self.bar.update(self.task, note=f"OCR {os.path.basename(path)} page {page}/{pages}")

        update.ocr_page = ocr_page
        return update

    def __exit__(self, *exc):
        if self.show:
            self.bar.__exit__(*exc)
