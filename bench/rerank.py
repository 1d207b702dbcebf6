#!/usr/bin/env python3
"""What the cross-encoder reranker buys, and costs, at the two places c1 can use it (docs/embedders.md).

Reuses the homes bench/embedders.py builds (``bench/out/emb/<config>/<corpus>``; run it first).

search   c1's hybrid ranking (Corpus.hybrid, no re-ranking), then its first N chunks re-ordered by the
         cross-encoder (N = 10, 20): ``reorder`` takes the model's order, ``rrf`` fuses it with the
         hybrid order (RRF, k = 60). HotpotQA pooled: recall@5 of the gold titles; legal: the gold
         file at rank 1. Seconds of re-ranking per question.
read     read_document's ranking of a document's chunks (Corpus.rank_chunks: 0.7 cosine + 0.3
         coverage), then its first M re-ordered by the model (M = 8, 12). Legal: the question's gold
         document, and whether its first chunk overlaps a gold span (a long contract: the document is
         easy to find, the clause is not). Seconds per document.

policy   the built-in policy end to end (it reads documents) with ``--rerank off`` and ``onnx``: the gold
         document at rank 1 and seconds per search.

    nice -n 10 python bench/rerank.py --config bge --limit 60
    nice -n 10 python bench/rerank.py --places policy --corpora legal --limit 40
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.embedders import CORPORA, OUT, ensure, make, ranked_docs  # noqa: E402
from bench.textpool import shared_data  # noqa: E402


def spread(items: list, n: int) -> list:
    """``n`` of ``items`` evenly spaced (the legal questions come grouped by kind of contract)."""
    if n >= len(items):
        return items
    return [items[i * len(items) // n] for i in range(n)]


def rrf_order(n: int, scores: list[float], k: int = 60) -> list[int]:
    by_model = sorted(range(n), key=lambda i: -scores[i])
    fused = {i: 1 / (k + 1 + i) for i in range(n)}
    for r, i in enumerate(by_model):
        fused[i] += 1 / (k + 1 + r)
    return sorted(range(n), key=lambda i: -fused[i])


def search_study(config: str, corpus: str, limit: int, tops: list[int], reranker) -> dict:
    from dataclasses import replace

    from c1.retrieval.corpus import Corpus, passage_text

    embedder = make(config)
    settings, qs, key, _ = ensure(config, corpus, embedder)
    c = Corpus(replace(settings, rerank="off"), embedder)
    keys = {d.doc_id: key(d) for d in c.store.manifest.all_docs()}
    qs = spread(qs, limit)
    systems: dict[str, list] = {"hybrid": []}
    seconds: dict[int, list[float]] = {n: [] for n in tops}
    search_s = []
    for q, gold in qs:
        t = time.perf_counter()
        hits = c.hybrid(q, c.CANDIDATES)
        search_s.append(time.perf_counter() - t)
        ids = [h.chunk.id for h in hits]
        systems["hybrid"].append(([keys[d] for d in ranked_docs(ids, 10)], gold))
        for n in tops:
            head = hits[:n]
            t = time.perf_counter()
            scores = reranker.score(q, [passage_text(h.doc, h.chunk) for h in head])
            seconds[n].append(time.perf_counter() - t)
            for name, order in (("reorder", sorted(range(len(head)), key=lambda i: -scores[i])),
                                ("rrf", rrf_order(len(head), scores))):
                new = [ids[i] for i in order] + ids[n:]
                systems.setdefault(f"{name}@{n}", []).append(([keys[d] for d in ranked_docs(new, 10)], gold))
    c.close()
    out = {"place": "search", "config": config, "corpus": corpus, "questions": len(qs),
           "hybrid_s": round(statistics.median(search_s), 3)}
    for name, rows in systems.items():
        out[name] = {"r@5": round(sum(len(set(d[:5]) & g) / len(g) for d, g in rows) / len(rows), 3),
                     "rank1": round(sum(bool(d) and d[0] in g for d, g in rows) / len(rows), 3)}
    out["rerank_s"] = {n: round(statistics.median(v), 3) for n, v in seconds.items()}
    return out


def read_study(config: str, limit: int, tops: list[int], reranker) -> dict:
    from dataclasses import replace

    from c1.retrieval.corpus import Corpus

    embedder = make(config)
    settings, qs, key, _ = ensure(config, "legal", embedder)
    c = Corpus(replace(settings, rerank="off"), embedder)
    files = (shared_data() / "legal" / "files").resolve()
    doc_of = {str(Path(d.path).resolve().relative_to(files)): d for d in c.store.manifest.all_docs()}
    queries = [json.loads(line) for line in (shared_data() / "legal" / "queries.jsonl").read_text().splitlines() if line]
    queries = spread(queries, limit)
    hit = {"blend": 0, **{f"reorder@{m}": 0 for m in tops}}
    seconds: dict[int, list[float]] = {m: [] for m in tops}
    n_chunks = []
    for q in queries:
        (gold_file,) = q["gold_ids"]
        doc = doc_of[gold_file]
        spans = [(s, e) for f, s, e in q["gold_spans"] if f == gold_file]
        chunks = c.doc_chunks(doc.doc_id)
        n_chunks.append(len(chunks))
        good = {ch.id for ch in chunks if any(ch.start < e and s < ch.end for s, e in spans)}
        blend = [ch for ch, _ in c.rank_chunks(chunks, q["question"])]
        hit["blend"] += blend[0].id in good
        for m in tops:
            head = blend[:m]
            t = time.perf_counter()
            scores = reranker.score(q["question"], [ch.text for ch in head])
            seconds[m].append(time.perf_counter() - t)
            best = head[max(range(len(head)), key=lambda i: scores[i])]
            hit[f"reorder@{m}"] += best.id in good
    c.close()
    n = len(queries)
    return {"place": "read", "config": config, "corpus": "legal", "questions": n,
            "chunks_per_doc": statistics.median(n_chunks),
            **{k: round(v / n, 3) for k, v in hit.items()},
            "rerank_s": {m: round(statistics.median(v), 3) for m, v in seconds.items()}}


def policy_study(config: str, corpus: str, limit: int) -> dict:
    """The built-in policy end to end (it calls read_document), re-ranking off against ``onnx`` (both places), question by
    question in turn (the same load for both): the gold document at rank 1, and seconds per search."""
    from dataclasses import replace

    from c1.retrieval.corpus import Corpus
    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    embedder = make(config)
    settings, qs, key, _ = ensure(config, corpus, embedder)
    corpora = {r: Corpus(replace(settings, rerank=r, max_docs=5), embedder) for r in ("off", "onnx")}
    keys = {d.doc_id: key(d) for d in corpora["off"].store.manifest.all_docs()}
    hits = {r: 0 for r in corpora}
    seconds: dict[str, list[float]] = {r: [] for r in corpora}
    qs = spread(qs, limit)
    for q, gold in qs:
        for r, c in corpora.items():
            c.clear_query_cache()
            t = time.perf_counter()
            result = run_search(c, c.settings, q, lambda i: BuiltinPolicy(max_docs=5, variant=i))
            seconds[r].append(time.perf_counter() - t)
            docs = [keys.get(d["id"]) for d in result.documents]
            hits[r] += bool(docs) and docs[0] in gold
    for c in corpora.values():
        c.close()
    return {"place": "policy", "config": config, "corpus": corpus, "questions": len(qs),
            **{f"{r}_rank1": round(hits[r] / len(qs), 3) for r in corpora},
            **{f"{r}_s": round(statistics.median(v), 2) for r, v in seconds.items()}}


def main(argv=None) -> int:
    from c1.retrieval.rerankers import OnnxReranker

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="bge")
    ap.add_argument("--corpora", default="hotpot,legal")
    ap.add_argument("--limit", type=int, default=60, help="questions per corpus, spread evenly over its list")
    ap.add_argument("--tops", default="10,20")
    ap.add_argument("--read-tops", default="8,12")
    ap.add_argument("--max-tokens", type=int, default=None, help="the cross-encoder's cut (query + passage; default: the model's own, 512)")
    ap.add_argument("--places", default="read,search")
    ap.add_argument("--out", type=Path, default=OUT / "rerank.jsonl")
    args = ap.parse_args(argv)
    reranker = OnnxReranker(max_tokens=args.max_tokens)
    results = []
    if "read" in args.places:
        results.append(read_study(args.config, args.limit, [int(x) for x in args.read_tops.split(",")], reranker))
        print(json.dumps(results[-1]), flush=True)
    if "search" in args.places:
        for corpus in args.corpora.split(","):
            assert corpus in CORPORA
            results.append(search_study(args.config, corpus, args.limit, [int(x) for x in args.tops.split(",")], reranker))
            print(json.dumps(results[-1]), flush=True)
    if "policy" in args.places:
        for corpus in args.corpora.split(","):
            results.append(policy_study(args.config, corpus, args.limit))
            print(json.dumps(results[-1]), flush=True)
    with open(args.out, "a", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps({**r, "max_tokens": reranker.max_tokens}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
