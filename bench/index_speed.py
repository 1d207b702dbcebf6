#!/usr/bin/env python3
"""Indexing speed: how close `c1 index` gets to the embedder's own speed, on real documents.

    python bench/index_speed.py                  # the three SEC filings + the whole Enron maildir
    python bench/index_speed.py --mail 200       # fewer messages (a quicker look)

In one process, into a fresh home: index the corpus with the real embedder, Chroma and tantivy;
then embed the very same chunk texts again, directly, with the same embedder instance and in
batches of the same size. ``ratio`` = index chunks/s ÷ embedder chunks/s: what the rest of the
pipeline (loading, chunking, Chroma, tantivy, the manifest) costs (aim: >= 0.85). Also: peak RSS,
the time of a re-run with nothing changed, and the wall time of ``c1 --help``.

Prints a small table and one JSON line (for logs and comparisons). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def shared_data() -> Path:
    explicit = os.environ.get("C1_SHARED_DATA")
    path = Path(explicit) if explicit else REPO.parent / "shared" / "data"
    if not (path / "sec").is_dir():
        sys.exit(f"shared data not found at {path} (set C1_SHARED_DATA)")
    return path


def build_corpus(data: Path, dest: Path, mail: int | None, sec: bool) -> tuple[int, int]:
    """Copy the SEC PDFs and (some of) the Enron maildir under ``dest``; (pdfs, messages)."""
    pdfs = sorted((data / "sec").glob("*.pdf")) if sec else []
    for p in pdfs:
        (dest / "sec").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest / "sec" / p.name)
    root = data / "enron" / "maildir"
    messages = sorted(p for p in root.rglob("*") if p.is_file())  # user/folder[/sub...]/N.
    if mail is not None:
        messages = messages[:mail]
    for p in messages:
        target = dest / "enron" / p.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    return len(pdfs), len(messages)


def same_texts(settings) -> list[str]:
    """Exactly what the indexer gave the embedder: chunk texts with their context header, in document order."""
    from c1.corpus.headers import stored_contexts
    from c1.corpus.manifest import Manifest

    m = Manifest(settings.collection_dir / "manifest.sqlite", readonly=True)
    try:
        out = []
        for d in sorted(m.all_docs(), key=lambda d: d.doc_id):
            chunks = m.doc_chunks(d.doc_id)
            ctx = stored_contexts(d, chunks)
            out.extend(ctx[c.id].embed_text(c.text) for c in chunks)
        return out
    finally:
        m.close()


def help_wall_times(runs: int = 5) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "c1", "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mail", type=int, default=None, help="index only the first N Enron messages (default: all)")
    parser.add_argument("--no-sec", action="store_true", help="leave out the SEC filings")
    parser.add_argument("--keep", action="store_true", help="keep the temporary home and corpus")
    args = parser.parse_args()

    from c1.config import Settings
    from c1.corpus import indexer as ix
    from c1.corpus.embedders import make_embedder

    work = Path(tempfile.mkdtemp(prefix="c1-bench-"))
    try:
        n_pdfs, n_mail = build_corpus(shared_data(), work / "corpus", args.mail, not args.no_sec)
        settings = Settings().with_flags(home=work / "home", collection="bench")
        embedder = make_embedder(settings.embed_url, settings.embed_model)
        embedder.embed(["warm-up: load the model before the clock starts"])

        report = ix.Indexer(settings, embedder).run([str(work / "corpus")])
        files = report.added + report.updated
        index_cps = report.chunks / report.seconds

        texts = same_texts(settings)
        assert len(texts) == report.chunks, (len(texts), report.chunks)
        t0 = time.perf_counter()
        for start in range(0, len(texts), ix.BATCH_CHUNKS):
            embedder.embed(texts[start : start + ix.BATCH_CHUNKS])
        embed_only = time.perf_counter() - t0
        embed_cps = len(texts) / embed_only

        rerun = ix.Indexer(settings, embedder).run([str(work / "corpus")])
        assert rerun.chunks == 0 and rerun.unchanged == files, rerun
        peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        helps = help_wall_times()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    result = {
        "corpus": {"sec_pdfs": n_pdfs, "enron_messages": n_mail, "files": files, "skipped": len(report.skipped),
                   "documents": report.documents, "chunks": report.chunks},
        "index_seconds": round(report.seconds, 2),
        "index_embed_seconds": round(report.embed_seconds, 2),
        "files_per_second": round(files / report.seconds, 2),
        "chunks_per_second": round(index_cps, 2),
        "embedder_only_seconds": round(embed_only, 2),
        "embedder_chunks_per_second": round(embed_cps, 2),
        "ratio": round(index_cps / embed_cps, 3),
        "peak_rss_mb": round(peak_rss_mb, 1),
        "noop_reindex_seconds": round(rerun.seconds, 3),
        "help_seconds_median": round(statistics.median(helps), 3),
        "embedder": embedder.name,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    rows = [
        ("corpus", f"{n_pdfs} SEC PDFs + {n_mail} Enron messages: {files} files, {report.documents} documents, {report.chunks} chunks"),
        ("index", f"{report.seconds:.1f} s ({report.embed_seconds:.1f} s of it embedding)"),
        ("files/s", f"{result['files_per_second']:.2f}"),
        ("chunks/s (index)", f"{index_cps:.2f}"),
        ("chunks/s (embedder alone, same texts)", f"{embed_cps:.2f}"),
        ("ratio", f"{result['ratio']:.3f}  (aim >= 0.85)"),
        ("peak RSS", f"{peak_rss_mb:.0f} MB"),
        ("re-index, nothing changed", f"{rerun.seconds:.2f} s"),
        ("c1 --help (median of 5)", f"{result['help_seconds_median'] * 1000:.0f} ms"),
        ("load average (1 min)", f"{result['load_average_1m']} on {os.cpu_count()} CPUs"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
