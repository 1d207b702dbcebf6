"""Single-shot baselines on the same corpus and k as the agent: ``bm25``, ``dense``, ``hybrid``.

Each asks its retriever for chunks once, groups them into documents in rank order, and returns
the top ``k`` documents shaped like :attr:`c1.agent.search.SearchResult.documents` (a document's
``chunks`` are the ones the retriever returned for it).
"""

from __future__ import annotations

BASELINES = ("bm25", "dense", "hybrid")


def retrieve(corpus, kind: str, query: str, k: int) -> list[dict]:
    """The top ``k`` documents for ``query`` from one retriever: its first ``search_depth(k)`` chunks
    grouped into documents, each with its chunks among them. When those hold fewer than ``k``
    documents (long documents fill a ranking with their own chunks), the ranking is read further
    for more documents only, each added with its best chunk: the chunks returned stay those of one
    search's depth, as with any system compared against it."""
    if kind not in BASELINES:
        raise ValueError(f"unknown baseline {kind!r}")
    from c1.retrieval.corpus import search_depth

    vector = corpus.embed_query(query) if kind in ("dense", "hybrid") else None
    depth = min(corpus.size, search_depth(k))
    n = depth
    while True:
        ranked = _chunks(corpus, kind, query, n, vector)
        docs = _group(corpus, ranked, k, depth)
        if len(docs) >= k or n >= corpus.size or len(ranked) < n:
            return docs
        n = min(corpus.size, n * 4)


def _chunks(corpus, kind: str, query: str, n: int, vector) -> list[tuple[str, float]]:
    if kind == "bm25":
        return corpus.bm25(query, n)
    if kind == "dense":
        return corpus.dense(vector, n)
    return [(h.chunk.id, h.score) for h in corpus.hybrid(query, n, vector=vector)]


def _group(corpus, ranked: list[tuple[str, float]], k: int, depth: int) -> list[dict]:
    """The first ``k`` documents of ``ranked`` with their chunks among its first ``depth``
    (a document first met deeper keeps only that chunk)."""
    order: dict[str, list[tuple[str, float]]] = {}
    for i, (cid, score) in enumerate(ranked):
        doc_id = cid.rsplit("_", 1)[0]
        if doc_id not in order and len(order) >= k:
            continue
        if doc_id in order and i >= depth:
            continue
        order.setdefault(doc_id, []).append((cid, score))
    chunks = {c.id: c for c in corpus.chunks([cid for hits in order.values() for cid, _ in hits])}
    out = []
    for doc_id, hits in order.items():
        doc = corpus.doc(doc_id)
        got = [chunks[cid] for cid, _ in hits if cid in chunks]
        pages = [c.page for c in got if c.page is not None]
        out.append({
            "id": doc_id,
            "source_id": doc.source_id if doc else None,
            "title": doc.title if doc else "",
            "path": doc.path if doc else "",
            "page": min(pages) if pages else None,
            "score": round(float(hits[0][1]), 6),
            "chunks": [{"id": c.id, "text": c.text, "span": [c.start, c.end], "page": c.page} for c in got],
        })
    return out
