"""The read side of a collection, as the agent's tools need it.

Hybrid search runs BM25 (tantivy) and dense (Chroma) concurrently, fuses them with RRF and
re-ranks the top candidates against the query with a blend of embedding similarity, query-term
coverage and the fused rank (weights measured in bench/search_quality.py).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property

from c1.agent.fusion import rrf
from c1.config import Settings
from c1.corpus.embedders import Embedder, EmbedderError, make_embedder
from c1.corpus.manifest import Chunk, DocRecord
from c1.errors import C1Error

STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its of on or "
    "she that the their them they this to was were what when where which who whom whose why will with "
    "you your i we our us not no than then there these those been being into about also can could "
    "would should may might must shall one ones name named called".split()
)
_WORD = re.compile(r"[\w']+")


def content_terms(text: str) -> list[str]:
    """Lower-cased words that carry meaning (no stopwords, no 1-letter tokens), in order, unique."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        w = w.strip("'")
        if len(w) > 1 and w not in STOPWORDS:
            seen.setdefault(w, None)
    return list(seen)


@dataclass
class Hit:
    chunk: Chunk
    doc: DocRecord
    score: float
    """Re-ranked relevance to the query, roughly in [0, 1]."""


@dataclass(frozen=True)
class RerankWeights:
    cosine: float = 0.5
    coverage: float = 0.3
    fused: float = 0.2


class Corpus:
    CANDIDATES = 50

    def __init__(self, settings: Settings, embedder: Embedder | None = None, weights: RerankWeights = RerankWeights()):
        from c1.corpus.indexer import open_store

        self.settings = settings
        self.embedder = embedder or make_embedder(settings.embed_url, settings.embed_model, settings.embed_api_key)
        self.store = open_store(settings, self.embedder, create=False)
        self.weights = weights
        counts = self.store.manifest.counts()
        if counts["chunks"] == 0:
            self.close()
            raise C1Error(f"collection {settings.collection!r} is empty: index some files with `c1 index PATH`")
        self.size = counts["chunks"]
        self._docs: dict[str, DocRecord] = {}
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="c1-search")

    def close(self) -> None:
        self.store.close()
        if hasattr(self, "_pool"):
            self._pool.shutdown(wait=False)

    # lookups ----------------------------------------------------------------------------
    def doc(self, doc_id: str) -> DocRecord | None:
        if doc_id not in self._docs:
            rec = self.store.manifest.doc(doc_id)
            if rec is None:
                return None
            self._docs[doc_id] = rec
        return self._docs[doc_id]

    def chunks(self, ids: list[str]) -> list[Chunk]:
        return self.store.manifest.chunks(ids)

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        return self.store.manifest.doc_chunks(doc_id)

    @cached_property
    def all_chunks(self) -> list[tuple[str, str]]:
        """(id, text) of every chunk, loaded once for grep."""
        return [(c.id, c.text) for c in self.store.manifest.iter_chunks()]

    # search -----------------------------------------------------------------------------
    def embed_query(self, text: str):
        try:
            return self.embedder.embed([text])[0]
        except EmbedderError as exc:
            raise C1Error(str(exc)) from None

    def bm25(self, query: str, k: int) -> list[tuple[str, float]]:
        return self.store.lexical.search(query, k)

    def dense(self, vector, k: int) -> list[tuple[str, float]]:
        return self.store.vectors.query(vector, k)

    def hybrid(self, query: str, k: int, exclude: set[str] = frozenset(), vector=None) -> list[Hit]:
        """Top ``k`` chunks not in ``exclude``: BM25 ∥ dense → RRF → re-rank of the top candidates."""
        import numpy as np

        if vector is None:
            vector = self.embed_query(query)
        want = self.CANDIDATES + len(exclude)
        lexical_f = self._pool.submit(self.bm25, query, want)
        dense = self.dense(vector, want)
        lexical = lexical_f.result()
        fused = [(cid, s) for cid, s in rrf([[c for c, _ in lexical], [c for c, _ in dense]]) if cid not in exclude]
        fused = fused[: self.CANDIDATES]
        if not fused:
            return []
        ids = [cid for cid, _ in fused]
        cos = self._cosines(ids, vector, dict(dense))
        chunks = {c.id: c for c in self.chunks(ids)}
        terms = content_terms(query)
        top_fused = fused[0][1]
        hits = []
        for cid, fscore in fused:
            chunk = chunks.get(cid)
            if chunk is None:
                continue
            doc = self.doc(chunk.doc_id)
            cover = coverage(terms, f"{doc.title} {chunk.text}") if terms else 0.0
            w = self.weights
            score = w.cosine * cos.get(cid, 0.0) + w.coverage * cover + w.fused * (fscore / top_fused)
            hits.append(Hit(chunk, doc, float(np.round(score, 4))))
        hits.sort(key=lambda h: -h.score)
        return hits[:k]

    def _cosines(self, ids: list[str], vector, known: dict[str, float]) -> dict[str, float]:
        import numpy as np

        out = {cid: known[cid] for cid in ids if cid in known}
        missing = [cid for cid in ids if cid not in out]
        for cid, vec in self.store.vectors.vectors(missing).items():
            out[cid] = float(np.dot(np.asarray(vec, dtype=np.float32), vector))
        return out

    def rank_chunks(self, chunks: list[Chunk], query: str, vector=None) -> list[tuple[Chunk, float]]:
        """Order ``chunks`` by similarity to ``query`` (for read_document)."""
        if not chunks:
            return []
        if vector is None:
            vector = self.embed_query(query)
        cos = self._cosines([c.id for c in chunks], vector, {})
        terms = content_terms(query)
        scored = [
            (c, round(0.7 * cos.get(c.id, 0.0) + 0.3 * (coverage(terms, c.text) if terms else 0.0), 4)) for c in chunks
        ]
        return sorted(scored, key=lambda cs: -cs[1])


def coverage(terms: list[str], text: str) -> float:
    """Share of query terms that occur in ``text`` (prefix match, a cheap stand-in for stemming)."""
    words = set(_WORD.findall(text.lower()))
    stems = {w[:5] for w in words if len(w) > 4}
    hit = sum(1 for t in terms if t in words or (len(t) > 4 and t[:5] in stems))
    return hit / len(terms)
