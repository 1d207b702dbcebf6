"""``c1 index``: build the embedder, run the indexer with a progress bar, print the report."""

from __future__ import annotations

from c1.config import Settings
from c1.console import emit_json, err, stderr_is_tty, warn


def run_index(settings: Settings, paths: list[str], *, strict: bool, json_out: bool, quiet: bool) -> int:
    from c1.corpus.embedders import make_embedder
    from c1.corpus.indexer import Indexer

    embedder = make_embedder(settings.embed_url, settings.embed_model, settings.embed_api_key)
    show = not quiet and stderr_is_tty()
    with _progress_bar(show) as on_progress:
        report = Indexer(settings, embedder, progress=on_progress).run(paths)
    if json_out:
        emit_json(report.to_json())
    if not quiet:
        _summary(report)
    return 1 if strict and report.skipped else 0


def _summary(report) -> None:
    con = err()
    con.print(
        f"[bold]{report.collection}[/]: {report.added} added, {report.updated} updated, "
        f"{report.deleted} deleted, {report.unchanged} unchanged, {len(report.skipped)} skipped — "
        f"{report.chunks} chunks embedded in {report.seconds:.1f}s ({report.chunks_per_second:.1f}/s); "
        f"{report.documents} documents, {report.total_chunks} chunks in the collection",
        soft_wrap=True,
    )
    if report.repaired:
        con.print("repaired the state left by an interrupted run")
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
    """``ignored 3 files of unsupported types: .docx 2, .epub 1`` (most common first)."""
    total = sum(counts.values())
    kinds = ", ".join(f"{ext} {n}" for ext, n in counts.items())
    return f"ignored {total} file{'s' if total != 1 else ''} of unsupported types: {kinds}"


class _progress_bar:
    """A rich progress bar on stderr (files, chunks, rate, ETA), or nothing."""

    def __init__(self, show: bool):
        self.show = show

    def __enter__(self):
        if not self.show:
            return lambda p: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("[bold]indexing"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
            TextColumn("{task.fields[chunks]} chunks · {task.fields[rate]}/s"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=err(), transient=True,
        )
        self.bar.__enter__()
        self.task = self.bar.add_task("index", total=None, chunks=0, rate="0.0")

        def update(p):
            elapsed = self.bar.tasks[0].elapsed or 0.0
            rate = f"{p.chunks_done / elapsed:.1f}" if elapsed else "0.0"
            self.bar.update(self.task, total=p.files_total, completed=p.files_done, chunks=p.chunks_done, rate=rate)

        return update

    def __exit__(self, *exc):
        if self.show:
            self.bar.__exit__(*exc)
