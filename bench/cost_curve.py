#!/usr/bin/env python3
"""The cost curve: what a collection of 10k, 100k (and, with ``--sizes``, 1M) chunks costs on this machine.

Per size, printed side by side:

- **index s / 1k chunks**: the real ``c1 index`` keyword phase (walk, read, chunk, section headings,
  tantivy, manifest; c1/index/indexer.py with ``embed=False``) over a folder of Markdown notes of
  realistic text (bench/textpool.py: real HotpotQA and Enron sentences recombined, notes of 2 to 12
  paragraphs under a heading). Embedding is left out: it is the model's cost (about 12 chunks/s on
  2 cores with the built-in model: bench/embedder_speed.py), the same per chunk at every size.
- **vector write s / 1k chunks**: the vectors then written to Chroma the way the embedding phase
  writes them (upsert in rounds, manifest unflagged) — synthetic unit vectors of dimension 384,
  since embedding 100k chunks would take two hours here; the dense ranking is meaningless, every
  cost is real.
- **search p50 / p95** (ms): ``Corpus.hybrid`` (query embedded by the real model, BM25 ∥ dense, RRF,
  re-rank, document evidence) for the 200 HotpotQA questions, in a fresh reader process after five
  warm-up queries; BM25 and dense alone beside it.
- **resident memory**: peak RSS of that reader process (what ``c1 serve`` or the resident process
  holds for the collection) and of the indexing process.
- **disk**: the manifest, the lexical index and the Chroma store.

Sizes not run are extrapolated from the two largest run, linearly, and marked as such. The text
folders are generated once under bench/out/cost_text_N/; each run builds the index anew.

    nice -n 10 python bench/cost_curve.py                      # 10k and 100k
    nice -n 10 python bench/cost_curve.py --sizes 10000        # quick
    nice -n 10 python bench/cost_curve.py --sizes 10000,100000,1000000   # 1M: hours and ~4 GB of disk
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import OUT, load, report  # noqa: E402

DIM = 384
EMBEDDER_NAME = "minilm-l6-int8"  # queries are embedded by the real model
CHARS_PER_CHUNK = 1900
"""About how many characters of text make one chunk (512 word pieces, 48 overlapping): to size the folders."""


class _NoEmbedding:
    """The embedder as the keyword phase sees it: a name and a dimension, never called."""

    name = EMBEDDER_NAME
    dim = DIM

    def embed(self, texts):  # pragma: no cover - the keyword phase never embeds
        raise AssertionError("the cost curve does not embed")


def text_folder(n: int, seed: int = 0) -> Path:
    """A folder of Markdown notes holding about ``n`` chunks of realistic text (made once)."""
    from bench.textpool import chunk_texts

    folder = OUT / f"cost_text_{n}"
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(seed)
    paragraphs = chunk_texts(min(n, 20_000) * 2, chars=950, seed=seed)  # recombined below: ~2 per chunk
    chars, files = 0, 0
    while chars < n * CHARS_PER_CHUNK:
        sub = folder / f"{files // 1000:04d}"
        sub.mkdir(parents=True, exist_ok=True)
        k = rng.randint(2, 12)
        body = [paragraphs[rng.randrange(len(paragraphs))] for _ in range(k)]
        title = " ".join(body[0].split()[:6]).strip(".,;:")
        text = f"# {title}\n\n" + "\n\n".join(body) + "\n"
        (sub / f"note{files:07d}.md").write_text(text, encoding="utf-8")
        chars += len(text)
        files += 1
    done.write_text(json.dumps({"files": files, "chars": chars}))
    return folder


def cpu() -> float:
    """CPU seconds of this process so far (all its threads): on a shared machine, what the work cost."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def build(folder: Path, home: Path, documents: bool = True) -> dict:
    """(In a child process.) The keyword phase over ``folder``, then synthetic vectors written as the
    embedding phase writes them (``documents``: with the chunk text, as c1 writes them; else vectors and
    metadata only); wall and CPU seconds of each, chunks, peak RSS."""
    import numpy as np

    from c1.config import load_settings
    from c1.index.indexer import BATCH_CHUNKS, Indexer, chroma_metadata

    settings = load_settings().with_flags(home=str(home), collection="default")
    t0, c0 = time.perf_counter(), cpu()
    rep = Indexer(settings, _NoEmbedding(), embed=False).run([str(folder)])
    lexical, lexical_cpu = time.perf_counter() - t0, cpu() - c0
    indexer = Indexer(settings, _NoEmbedding())
    rng = np.random.default_rng(0)
    t0, c0 = time.perf_counter(), cpu()
    with indexer.session() as store:
        manifest = store.manifest
        round_size = BATCH_CHUNKS * 16  # the embedding phase's rounds, fewer commits: the model is not waited for
        while ids := manifest.without_vectors(round_size):
            part = manifest.chunks(ids)
            docs = {d: manifest.doc(d) for d in {c.doc_id for c in part}}
            vecs = rng.standard_normal((len(part), DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            metas = [chroma_metadata(docs[c.doc_id], c) for c in part]
            if documents:
                store.vectors.upsert([c.id for c in part], vecs, [c.text for c in part], metas)
            else:
                store.vectors.col.upsert(ids=[c.id for c in part], embeddings=vecs, metadatas=metas)
            manifest.set_vectors(ids, True)
        manifest.bump_generation()
    vectors, vectors_cpu = time.perf_counter() - t0, cpu() - c0
    return {"chunks": rep.total_chunks, "files": rep.added, "lexical_s": lexical, "lexical_cpu": lexical_cpu,
            "vectors_s": vectors, "vectors_cpu": vectors_cpu,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def search(home: Path, queries: int) -> dict:
    """(In a child process.) Hybrid, BM25 and dense latencies on the collection in ``home``; peak RSS."""
    from bench.textpool import hotpot_records
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings

    questions = [r["question"] for r in hotpot_records()][:queries]
    corpus = Corpus(load_settings().with_flags(home=str(home), collection="default"))
    try:
        for q in questions[:5]:
            corpus.hybrid(q, 10)
        hybrid, bm25, dense, hybrid_cpu = [], [], [], []
        for q in questions:
            corpus.clear_query_cache()
            t0, c0 = time.perf_counter(), cpu()
            corpus.hybrid(q, 10)
            hybrid.append((time.perf_counter() - t0) * 1000)
            hybrid_cpu.append((cpu() - c0) * 1000)
            vec = corpus.embed_query(q)
            t0 = time.perf_counter()
            corpus.bm25(q, corpus.CANDIDATES)
            bm25.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            corpus.dense(vec, corpus.CANDIDATES)
            dense.append((time.perf_counter() - t0) * 1000)
    finally:
        corpus.close()
    return {"hybrid_p50": pct(hybrid, 50), "hybrid_p95": pct(hybrid, 95), "hybrid_cpu_p50": pct(hybrid_cpu, 50),
            "bm25_p50": pct(bm25, 50),
            "dense_p50": pct(dense, 50), "queries": len(questions),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def pct(xs: list[float], p: int) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))], 1)


def size_mb(path: Path) -> float:
    if not path.exists():
        return 0.0
    files = [path] if path.is_file() else [f for f in path.rglob("*") if f.is_file()]
    return round(sum(f.stat().st_size for f in files) / 1e6, 1)


def child(mode: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, f"--_{mode}", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "C1_DAEMON": "0"})
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(n: int, queries: int, documents: bool) -> dict:
    folder = text_folder(n)
    home = OUT / f"cost_home_{n}"
    shutil.rmtree(home, ignore_errors=True)
    built = child("build", str(folder), str(home), "documents" if documents else "no-documents")
    found = child("search", str(home), str(queries))
    cdir = home / "collections" / "default"
    disk = {"manifest_mb": size_mb(cdir / "manifest.sqlite") + size_mb(cdir / "manifest.sqlite-wal"),
            "lexical_mb": size_mb(cdir / "lexical"), "chroma_mb": size_mb(home / "chroma")}
    k = built["chunks"] / 1000
    return {
        "size": n, "chunks": built["chunks"], "files": built["files"],
        "index_s_per_1k": round(built["lexical_s"] / k, 2), "index_cpu_s_per_1k": round(built["lexical_cpu"] / k, 2),
        "vector_write_s_per_1k": round(built["vectors_s"] / k, 2),
        "vector_write_cpu_s_per_1k": round(built["vectors_cpu"] / k, 2), "chroma_documents": documents,
        "index_peak_mb": round(built["peak_mb"]), "reader_peak_mb": round(found["peak_mb"]),
        **{key: found[key] for key in ("hybrid_p50", "hybrid_p95", "hybrid_cpu_p50", "bm25_p50", "dense_p50")},
        **disk, "disk_mb": round(sum(disk.values()), 1), "extrapolated": False,
    }


def extrapolate(rows: list[dict], n: int) -> dict:
    """A size not run, linearly from the two largest measured (per-1k costs: the largest's)."""
    a, b = sorted(rows, key=lambda r: r["chunks"])[-2:]
    scale = lambda key: round(b[key] + (b[key] - a[key]) * (n - b["chunks"]) / (b["chunks"] - a["chunks"]), 1)  # noqa: E731
    out = {"size": n, "chunks": n, "files": None, "extrapolated": True, "chroma_documents": b["chroma_documents"],
           **{key: b[key] for key in ("index_s_per_1k", "index_cpu_s_per_1k", "vector_write_s_per_1k",
                                      "vector_write_cpu_s_per_1k")}}
    for key in ("index_peak_mb", "reader_peak_mb", "hybrid_p50", "hybrid_p95", "hybrid_cpu_p50", "bm25_p50", "dense_p50",
                "manifest_mb", "lexical_mb", "chroma_mb", "disk_mb"):
        out[key] = max(scale(key), b[key])
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_build":
        print(json.dumps(build(Path(argv[1]), Path(argv[2]), argv[3] == "documents")))
        return 0
    if argv and argv[0] == "--_search":
        print(json.dumps(search(Path(argv[1]), int(argv[2]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="chunk counts to build (comma-separated)")
    ap.add_argument("--extrapolate", default="1000000", help="sizes to extrapolate when not run (comma-separated)")
    ap.add_argument("--queries", type=int, default=200, help="HotpotQA questions timed per size")
    ap.add_argument("--without-documents", action="store_true",
                    help="write vectors and metadata to Chroma without the chunk text (c1 reads text from the "
                         "manifest; Chroma's copy also gets its own full-text index)")
    args = ap.parse_args(argv)
    before = load()
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        print(f"size {n}: building …", file=sys.stderr)
        rows.append(measure(n, args.queries, not args.without_documents))
        print(f"size {n}: {rows[-1]}", file=sys.stderr)
    ran = {r["size"] for r in rows}
    if len(rows) >= 2:
        rows += [extrapolate(rows, int(x)) for x in args.extrapolate.split(",") if x and int(x) not in ran]
    table = []
    for r in rows:
        mark = " (extrapolated)" if r["extrapolated"] else ""
        table.append((f"{r['size']:,} chunks{mark}",
                      f"index {r['index_s_per_1k']} s/1k, CPU {r['index_cpu_s_per_1k']} s/1k (+ vectors "
                      f"{r['vector_write_s_per_1k']} s/1k, CPU {r['vector_write_cpu_s_per_1k']}) · "
                      f"hybrid p50 {r['hybrid_p50']} ms p95 {r['hybrid_p95']} ms, CPU p50 {r['hybrid_cpu_p50']} ms "
                      f"(bm25 {r['bm25_p50']}, dense "
                      f"{r['dense_p50']}) · reader RSS {r['reader_peak_mb']} MB, indexer {r['index_peak_mb']} MB · "
                      f"disk {r['disk_mb']} MB (manifest {r['manifest_mb']}, lexical {r['lexical_mb']}, "
                      f"chroma {r['chroma_mb']})"))
    report(table, {"bench": "cost_curve", "rows": rows, "load_average_1m": [before, load()],
                   "cpus": os.cpu_count()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
