"""``c1 index``: build the embedder, run the indexer with a progress bar, print the report."""

from __future__ import annotations

from c1.commands.index_view import progress, skipped, summary
from c1.config import DEBOUNCE, Settings
from c1.terminal.console import emit_json, stderr_is_tty
from c1.errors import C1Error


def run_index(settings: Settings, paths: list[str], *, strict: bool, json_out: bool, quiet: bool,
              rebuild: bool = False, ocr: bool = False, watch: bool = False, debounce: float | None = None,
              keywords_only: bool = False) -> int:
    from c1.store.embedders import embedder_for
    from c1.index.indexer import Indexer
    from c1.index.loaders import ocr as ocr_reader

    if watch and strict:
        raise C1Error("--strict sets the exit code of one run; a watch runs until stopped: use --strict without --watch")
    if debounce is not None and not watch:
        raise C1Error("--debounce goes with --watch")
    if keywords_only and watch:
        raise C1Error("--keywords-only stops before embedding; a watch runs until stopped: use one or the other")
    if ocr and not ocr_reader.available():
        raise C1Error(f"--ocr needs the OCR engine: pip install 'c1[{ocr_reader.EXTRA}]'")
    ocr_reader.set_mode("always" if ocr else "auto")
    embedder = embedder_for(settings, rebuild=rebuild, strict=True)
    from c1.daemon.client import kept_warm

    if watch:
        from c1.commands.watch import run_watch

        with kept_warm(settings, keep=True) as committed:  # the resident process answers searches warm meanwhile
            return run_watch(settings, embedder, paths, json_out=json_out, quiet=quiet, rebuild=rebuild,
                             debounce=DEBOUNCE if debounce is None else debounce, committed=committed)
    try:
        with kept_warm(settings), progress(not quiet and stderr_is_tty()) as on_progress:  # the next search: warm
            report = Indexer(settings, embedder, progress=on_progress, embed=not keywords_only).run(paths, rebuild=rebuild)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(interrupted(settings)) from None  # the CLI prints it (exit 130)
    if json_out:
        emit_json(report.to_json())
    if not quiet:
        summary(report)
    elif strict and report.skipped:  # the exit code says that files were skipped: say which, even with -q
        skipped(report)
    return 1 if strict and report.skipped else 0


def interrupted(settings: Settings) -> str:
    """What Ctrl-C left: the files committed before it are kept (searchable by keywords at once), and the
    next run goes on from there (it re-reads only what is not indexed yet, and embeds what has no vector)."""
    from c1.store.manifest import Manifest

    path = settings.collection_dir / "manifest.sqlite"
    try:
        manifest = Manifest(path, readonly=True)
        try:
            counts, waiting = manifest.counts(), manifest.count_without_vectors()
            counts["files"] = manifest.indexed_count()  # not those skipped (kept to be retried)
        finally:
            manifest.close()
    except Exception:  # nothing was written yet (or it cannot be read now): nothing to keep
        return "interrupted before anything was indexed"
    line = (f"interrupted: what was indexed is kept ({counts['files']:,} files, {counts['chunks']:,} chunks in "
            f"{settings.collection!r}); run the same `c1 index` again to go on from there")
    if waiting:
        line += f"; {waiting:,} of those chunks are searchable by keywords only until it embeds them"
    return line
