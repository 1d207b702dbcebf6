#!/usr/bin/env python3
"""Indexing speed: how close `c1 index` gets to the embedder's own speed, on real documents.

    python bench/index_speed.py                  # the three SEC filings + the whole Enron maildir
    python bench/index_speed.py --mail 0         # the SEC filings only
    python bench/index_speed.py --mail 200 --repeats 1

Side by side, ``--repeats`` rounds (the machine is shared; the rounds alternate their order): a whole
``c1 index`` process into a fresh home (its own report gives chunks/s; the process's peak RSS is
measured), then the very same chunk texts embedded again in this process by the same embedder, in
rounds of the same size, cut at 256 word pieces (what c1 index embeds) and at 128. ``ratio`` = index
chunks/s ÷ embedder chunks/s at 256: what loading, chunking, Chroma, tantivy and the manifest cost
(aim: >= 0.85); medians over the rounds. Also: the time of a re-run with nothing changed (the whole
process, and the run itself as its report gives it), peak RSS of ``c1 search --no-daemon`` on the
indexed collection, and the wall time of ``c1 --help``.

Prints a small table and one JSON line (for logs and comparisons). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import C1, c1_env, load, report, timed  # noqa: E402
from bench.textpool import shared_data_or_exit  # noqa: E402


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
    from c1.index.headers import stored_contexts
    from c1.store.manifest import Manifest

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


def embed_rate(texts: list[str], max_tokens: int, batch: int) -> float:
    """Chunks/s of the built-in embedder alone on ``texts`` (a fresh instance, its session built first)."""
    from c1.store.embedders import MiniLMEmbedder

    embedder = MiniLMEmbedder(max_tokens=max_tokens)
    embedder.embed(["warm-up: load the model before the clock starts"])
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start : start + batch])
    return len(texts) / (time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mail", type=int, default=None, help="index only the first N Enron messages (default: all)")
    parser.add_argument("--no-sec", action="store_true", help="leave out the SEC filings")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of (c1 index, embedder alone)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary homes and corpus")
    args = parser.parse_args()

    from c1.config import Settings
    from c1.index import indexer as ix

    work = Path(tempfile.mkdtemp(prefix="c1-bench-"))
    env = c1_env(C1_DAEMON="0")
    c1 = C1
    loads = [load()]
    try:
        n_pdfs, n_mail = build_corpus(shared_data_or_exit("sec"), work / "corpus", args.mail, not args.no_sec)
        runs, rates256, rates128, rss_index = [], [], [], []
        texts: list[str] = []
        for r in range(args.repeats):
            home = work / f"home{r}"
            steps = ("index", "embed") if r % 2 == 0 else ("embed", "index")
            for step in steps:
                if step == "index":
                    _, rss, out = timed([*c1, "index", str(work / "corpus"), "--json", "-q"], {**env, "C1_HOME": str(home)})
                    run = json.loads(out)
                    runs.append(run)
                    rss_index.append(rss)
                    if not texts:
                        texts = same_texts(Settings().with_flags(home=home))
                        assert len(texts) == run["chunks"], (len(texts), run["chunks"])
                else:  # round 0 indexes first: the texts come from its collection
                    rates256.append(embed_rate(texts, 256, ix.BATCH_CHUNKS))
                    rates128.append(embed_rate(texts, 128, ix.BATCH_CHUNKS))
        home = work / "home0"
        noop_wall, _, out = timed([*c1, "index", str(work / "corpus"), "--json", "-q"], {**env, "C1_HOME": str(home)})
        noop = json.loads(out)
        assert noop["chunks"] == 0, noop
        _, rss_search, _ = timed([*c1, "search", "What were the total revenues?", "--json", "-q", "--no-daemon"],
                                 {**env, "C1_HOME": str(home)})
        helps = [timed([*c1, "--help"], env)[0] for _ in range(5)]
        loads.append(load())
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    first = runs[0]
    index_cps = statistics.median(r["chunks_per_second"] for r in runs)
    embed_cps = statistics.median(rates256)
    ratios = [r["chunks_per_second"] / e for r, e in zip(runs, rates256)]
    result = {
        "corpus": {"sec_pdfs": n_pdfs, "enron_messages": n_mail, "files": first["added"], "skipped": len(first["skipped"]),
                   "documents": first["documents"], "chunks": first["chunks"]},
        "repeats": len(runs),
        "index_seconds": [r["seconds"] for r in runs],
        "index_chunks_per_second": round(index_cps, 2),
        "embedder_chunks_per_second_256": round(embed_cps, 2),
        "embedder_chunks_per_second_128": round(statistics.median(rates128), 2),
        "ratio": round(statistics.median(ratios), 3),
        "ratios": [round(x, 3) for x in ratios],
        "peak_rss_mb": {"c1_index": max(rss_index), "c1_search_no_daemon": rss_search},
        "noop_reindex_seconds": noop["seconds"],  # Indexer.run's own time
        "noop_reindex_process_seconds": round(noop_wall, 3),  # the whole c1 index process
        "help_seconds_median": round(statistics.median(helps), 3),
        "bench": "index_speed",
        "embedder": "minilm-l6-int8",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_1m": loads,
    }
    seconds = ", ".join(f"{r['seconds']:.1f}" for r in runs)
    rows = [
        ("corpus", f"{n_pdfs} SEC PDFs + {n_mail} Enron messages: {first['added']} files, {first['documents']} documents, "
                   f"{first['chunks']} chunks"),
        ("c1 index (median of rounds)", f"{index_cps:.2f} chunks/s; {seconds} s"),
        ("embedder alone, same texts, 256 / 128 word pieces", f"{embed_cps:.2f} / {result['embedder_chunks_per_second_128']:.2f} chunks/s"),
        ("ratio (index / embedder at 256)", f"{result['ratio']:.3f}  (rounds: {result['ratios']}; aim >= 0.85)"),
        ("peak RSS: c1 index / c1 search --no-daemon", f"{max(rss_index)} / {rss_search} MB"),
        ("re-index, nothing changed: whole process / the run itself", f"{noop_wall:.2f} / {noop['seconds']:.2f} s"),
        ("c1 --help (median of 5)", f"{result['help_seconds_median'] * 1000:.0f} ms"),
    ]
    report(rows, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
