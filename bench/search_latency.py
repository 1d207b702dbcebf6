"""Latency: one search_corpus call at 10k and 100k chunks, and a whole built-in search.

1. search_corpus p50/p95 — ``Tools.search`` through a real Context (query embedding, BM25 ∥ dense,
   RRF, re-rank of the top 50, rendering within the per-call token budget), with the 200 HotpotQA
   questions as queries, on collections of 10k and 100k chunks of real text (bench/textpool.py:
   HotpotQA and Enron sentences recombined into ~1,200-character chunks). Embedding 100k chunks
   takes about an hour on 2 cores, so the *stored* vectors are random unit vectors of the
   embedder's dimension (384): the query is embedded for real, the dense ranking is meaningless,
   the cost of every step is real. The collections are written once through the indexer's own
   parts (manifest, tantivy, Chroma) and cached under bench/out/latency_<n>/.
2. A whole built-in search per question (``c1 search --policy builtin -k 5``) on the pooled
   HotpotQA corpus (bench/search_quality.py builds it): median and p95, one run against
   ``--parallel 4`` (wall time and quality).

    python bench/search_latency.py                       # both parts
    python bench/search_latency.py --sizes 10000 --skip-agent
    python bench/search_latency.py --hotpot-home /tmp/hp_home --skip-search
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.search_quality import OUT, Pool, ensure_corpus, percentile, questions  # noqa: E402
from bench.textpool import chunk_texts, hotpot_records  # noqa: E402
from c1.eval import metrics  # noqa: E402

DIM = 384
CHUNKS_PER_DOC = 4
EMBEDDER_NAME = "minilm-l6-int8"  # queries are embedded with the real MiniLM


class _RandomVectors:
    """Stands in for the embedder while writing: only its name and dimension are read."""

    name = EMBEDDER_NAME
    dim = DIM


def build_collection(home: Path, n: int, seed: int = 0) -> Path:
    """``n`` chunks of real text with random unit vectors, written through the indexer's parts."""
    import numpy as np

    from c1.config import load_settings
    from c1.store.ids import chunk_id, doc_id_for
    from c1.index.indexer import chroma_metadata
    from c1.store.collection import open_store
    from c1.store.manifest import Chunk, DocRecord, FileRecord

    settings = load_settings().with_flags(home=str(home), collection="default")
    if (settings.collection_dir / "manifest.sqlite").exists():
        return home
    t0 = time.perf_counter()
    texts = chunk_texts(n, seed=seed)
    rng = np.random.default_rng(seed)
    store = open_store(settings, _RandomVectors(), create=True)
    try:
        taken: dict[str, str] = {}
        step = 4000
        for start in range(0, n, step):
            part = texts[start : start + step]
            docs, chunks, metas = [], [], []
            path = str(home / "synthetic" / f"part{start // step:04d}.txt")
            for i in range(0, len(part), CHUNKS_PER_DOC):
                key = f"{path}#{start + i}"
                doc_id = doc_id_for(key, taken)
                taken[doc_id] = key
                group = part[i : i + CHUNKS_PER_DOC]
                title = " ".join(group[0].split()[:6])
                rec = DocRecord(doc_id, key, path, title, str(start + i), len(group), {})
                docs.append(rec)
                offset = 0
                for j, text in enumerate(group):
                    c = Chunk(chunk_id(doc_id, j), doc_id, j, offset, offset + len(text), None, text)
                    offset += len(text) + 1
                    chunks.append(c)
                    metas.append(chroma_metadata(rec, c))
            vecs = rng.standard_normal((len(chunks), DIM)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            store.vectors.upsert([c.id for c in chunks], vecs, [c.text for c in chunks], metas)
            titles = {d.doc_id: d.title for d in docs}
            for c in chunks:
                store.lexical.add(c.id, c.doc_id, titles[c.doc_id], c.text)
            store.lexical.commit()
            store.manifest.replace_files([FileRecord(path, f"synthetic-{start}", 0, 0, "text")], docs, chunks)
            print(f"  {min(start + step, n)}/{n} chunks", file=sys.stderr, end="\r")
        store.manifest.set_meta("dirty", "0")
    finally:
        store.close()
    print(f"built {n} chunks in {time.perf_counter() - t0:.0f}s under {home}", file=sys.stderr)
    return home


def time_search_corpus(home: Path, queries: list[str], repeats: int = 1) -> dict:
    """search_corpus through a real Context, fresh per query (nothing excluded); plus its parts."""
    from c1.agent.context import Context
    from c1.retrieval.corpus import Corpus
    from c1.agent.tools import Tools
    from c1.config import load_settings

    corpus = Corpus(load_settings().with_flags(home=str(home), collection="default"))
    try:
        for q in queries[:5]:  # warm up: load the model, open Chroma's index, fill OS caches
            Tools(corpus, Context(), q).execute("search_corpus", {"query": q})
        total, embed, bm25, dense, rerank = [], [], [], [], []
        for _ in range(repeats):
            for q in queries:
                corpus.clear_query_cache()
                tools = Tools(corpus, Context(), q)
                t0 = time.perf_counter()
                obs = tools.execute("search_corpus", {"query": q})
                total.append((time.perf_counter() - t0) * 1000)
                assert obs.refs or obs.error is None
                corpus.clear_query_cache()
                t0 = time.perf_counter()
                vec = corpus.embed_query(q)
                t1 = time.perf_counter()
                corpus.bm25(q, corpus.CANDIDATES)
                t2 = time.perf_counter()
                corpus.dense(vec, corpus.CANDIDATES)
                t3 = time.perf_counter()
                corpus.hybrid(q, corpus.CANDIDATES, vector=vec)
                t4 = time.perf_counter()
                embed.append((t1 - t0) * 1000)
                bm25.append((t2 - t1) * 1000)
                dense.append((t3 - t2) * 1000)
                rerank.append((t4 - t3) * 1000)
        size = corpus.size
    finally:
        corpus.close()

    def stats(xs):
        xs = sorted(xs)
        return {"p50": round(statistics.median(xs), 1), "p95": round(percentile(xs, 95), 1)}

    return {"chunks": size, "queries": len(total), "search_corpus_ms": stats(total), "embed_query_ms": stats(embed),
            "bm25_ms": stats(bm25), "dense_ms": stats(dense), "hybrid_without_embedding_ms": stats(rerank)}


def time_agent(home: Path, k: int, limit: int) -> dict:
    """Whole built-in searches per question: one run and --parallel 4, time and quality."""
    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    pool = Pool(home)
    qs = questions(hotpot_records())[: limit or None]
    out = {}
    try:
        for parallel in (1, 4):
            settings = replace(pool.settings, parallel=parallel, max_docs=k)
            run_search(pool.corpus, settings, "warm up", lambda i: BuiltinPolicy(max_docs=k, variant=i))
            ms, rows, calls = [], [], []
            for q in qs:
                pool.corpus.clear_query_cache()
                t0 = time.perf_counter()
                result = run_search(pool.corpus, settings, q.question, lambda i: BuiltinPolicy(max_docs=k, variant=i))
                ms.append((time.perf_counter() - t0) * 1000)
                calls.append(result.stats["tool_calls"])
                titles = [pool.title_of.get(d["id"], d["id"]) for d in result.documents]
                rows.append(metrics.score(q.answer, titles, [pool.text(d["id"]) for d in result.documents], q.gold))
            ms.sort()
            out[f"parallel_{parallel}"] = {
                "questions": len(qs), "ms_median": round(statistics.median(ms)), "ms_p95": round(percentile(ms, 95)),
                "ms_mean": round(statistics.fmean(ms)), "tool_calls_mean": round(statistics.fmean(calls), 1),
                **{key: round(v, 3) for key, v in metrics.summarise(rows).items() if key != "n"},
            }
    finally:
        pool.corpus.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="collection sizes in chunks (comma-separated)")
    ap.add_argument("--repeats", type=int, default=1, help="passes over the 200 queries per size")
    ap.add_argument("--hotpot-home", type=Path, default=OUT / "hotpot_home", help="the pooled HotpotQA corpus")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--limit", type=int, default=0, help="first N questions for the whole-search part")
    ap.add_argument("--skip-search", action="store_true")
    ap.add_argument("--skip-agent", action="store_true")
    ap.add_argument("--json-out", type=Path, default=OUT / "search_latency.jsonl")
    args = ap.parse_args(argv)

    report: dict = {"bench": "search_latency", "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    queries = [q.question for q in questions(hotpot_records())]
    if not args.skip_search:
        report["search_corpus"] = []
        for n in (int(x) for x in args.sizes.split(",") if x.strip()):
            home = build_collection(OUT / f"latency_{n}", n)
            r = time_search_corpus(home, queries, args.repeats)
            report["search_corpus"].append(r)
            s = r["search_corpus_ms"]
            print(f"search_corpus at {r['chunks']:>7} chunks: p50 {s['p50']:6.1f} ms  p95 {s['p95']:6.1f} ms   "
                  f"(embed p50 {r['embed_query_ms']['p50']}, bm25 {r['bm25_ms']['p50']}, dense {r['dense_ms']['p50']}, "
                  f"hybrid without embedding {r['hybrid_without_embedding_ms']['p50']} ms; {r['queries']} queries)")
        print("  stored vectors are random unit vectors (dim 384) — real text, real query embeddings, real BM25; "
              "the dense ranking itself is meaningless at these sizes")
    if not args.skip_agent:
        ensure_corpus(args.hotpot_home)
        agent = time_agent(args.hotpot_home, args.k, args.limit)
        report["builtin_search"] = agent
        for name, r in agent.items():
            print(f"whole built-in search, {name.replace('_', ' ')}: median {r['ms_median']} ms, p95 {r['ms_p95']} ms, "
                  f"{r['tool_calls_mean']} tool calls; full recall {r['full_recall']:.3f}, F1 {r['f1']:.3f}, "
                  f"answer found {r['answer_found']:.3f} ({r['questions']} HotpotQA questions, pooled corpus, k={args.k})")
    print("  (wall times on this machine — 2 cores, shared with other work while measured)")
    from bench.report import save

    save(report, args.json_out)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
