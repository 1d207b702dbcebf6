"""The read side of a collection, as the agent's tools need it.

Hybrid search runs BM25 (tantivy) and dense (Chroma) concurrently, fuses them with RRF (k=60) and
scores the top 50 candidates by their fused rank (relative to the best one's; blends with the embedding
similarity and query-term coverage did no better, docs/relevance.md), under a relevance floor for
candidates that share no word with the query. Chunks of long documents then get
document-level evidence: how well their document's identity (title, file-name words, first
page) matches the names and period the query asks about (c1/retrieval/identity.py).

A Corpus may live long (``c1 serve``, ``c1 mcp``) while ``c1 index`` changes the collection in
another process: :meth:`Corpus.refresh` (c1/retrieval/corpus_open.py), called before each search, reopens the stores when the
manifest's generation counter moved (or the collection was removed and indexed again), which also
gives Chroma's embedded client a fresh look at vectors it caches in memory; a read from Chroma that fails
in the middle of a search (``c1 index --watch`` wrote meanwhile, and the client does not know ids that
the manifest already shows) is made again on the collection reopened. Its caches are bounded:
document records (LRU), query vectors, and the chunk text kept for grep (streamed from the manifest
past ``GREP_CACHE_CHARS``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from c1.retrieval.corpus_open import OpenCollection
from c1.retrieval.fusion import RRF_K, rrf
from c1.config import Settings
from c1.store.embedders import Embedder, EmbedderError, embedder_for
from c1.store.manifest import Chunk, DocRecord
from c1.errors import C1Error
from c1.retrieval.terms import content_terms, coverage

def search_depth(k: int) -> int:
    """How many chunks of a ranking one search returns for ``k`` documents: ``max(4k, 20)`` (a
    document has several; the single-shot baselines and the built-in policy's anchor read as deep)."""
    return max(4 * k, 20)


@dataclass
class Hit:
    chunk: Chunk
    doc: DocRecord
    score: float
    """Re-ranked relevance to the query, roughly in [0, 1], plus up to ``Corpus.W_DOC`` when the
    chunk's document is the one the query names (``Corpus.doc_evidence``)."""


AUTO_RERANK = {"search": False, "read": False}
"""Where ``--rerank auto`` re-ranks with the cross-encoder: nowhere yet, by measurement (docs/embedders.md):
on the legal slice it put a gold clause first in a document's chunks less often than the cosine/coverage
blend, at seconds a document, and it did not lift a bge hybrid search. ``--rerank onnx`` (or a server's
URL) turns both places on."""


class Corpus(OpenCollection):
    CANDIDATES = 50
    W_DOC = 0.5
    """Weight of document-level evidence (``doc_evidence``) added to a chunk's re-ranked score."""

    RERANK_TOP = 10
    """How many of its first chunks the cross-encoder re-orders (when it does, see ``AUTO_RERANK``): of a hybrid
    search's, and of a document's best by ``rank_chunks``' blend for a read (12 there until stop 42: one number
    for one job)."""

    DOC_CACHE = 4096
    """Document records kept (least recently used dropped first)."""
    CHUNK_CACHE = 8192
    """Chunks kept as the manifest gave them (about 16 MB; least recently used dropped first): a run, its
    turns, the runs of ``--parallel`` and the passages ask for the same candidates and documents again,
    and four runs asking one SQLite connection at once waited for it (docs/performance.md, "Tenth look")."""
    PAIR_CACHE = 8192
    """(query, text) scores the reranker gave that are kept (about 5 MB): a pair is scored once per process."""
    GREP_CACHE_CHARS = 64_000_000
    """Chunk text kept in memory for grep; a larger collection is streamed from the manifest at each grep."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None):
        self.settings = settings
        self._own_embedder = embedder is None  # chosen by the collection's record: follows a --rebuild
        self.embedder = embedder or embedder_for(settings)
        self._reranker = None
        self._rerank_problem: str | None = None
        self._qcache: dict[str, object] = {}
        self._pairs: dict[tuple[str, str], float] = {}
        """The reranker's score of a (query, text) pair already scored: a read of a filing and its passages
        score the same table pages for the same question."""
        self._asked: dict[str, object] = {}
        self._lock = threading.Lock()
        self._users: dict[int, int] = {}
        """Calls in progress per store (by ``id``): a store replaced by a re-open is closed when its last call ends."""
        self._open()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="c1-search")

    # lookups ----------------------------------------------------------------------------
    def doc(self, doc_id: str) -> DocRecord | None:
        docs = self._docs
        with self._lock:
            if doc_id in docs:
                docs.move_to_end(doc_id)
                return docs[doc_id]
        with self._held() as store:
            rec = store.manifest.doc(doc_id)
        if rec is None:
            return None
        with self._lock:
            docs[doc_id] = rec
            while len(docs) > self.DOC_CACHE:
                docs.popitem(last=False)
        return rec

    def chunks(self, ids: list[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked (unknown ids are left out)."""
        memo = self._chunk_memo  # this state's (a re-open starts another)
        with self._lock:
            got = {i: memo[i] for i in ids if i in memo}
            for i in got:
                memo.move_to_end(i)
        missing = [i for i in dict.fromkeys(ids) if i not in got]
        if missing:
            with self._held() as store:
                fetched = store.manifest.chunks(missing)
            with self._lock:
                for c in fetched:
                    got[c.id] = memo[c.id] = c
                while len(memo) > self.CHUNK_CACHE:
                    memo.popitem(last=False)
        return [got[i] for i in ids if i in got]

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        """A document's chunks in order (a new list each call; the chunks themselves are shared)."""
        memo = self._doc_chunk_memo
        with self._lock:
            if doc_id in memo:
                memo.move_to_end(doc_id)
                return list(memo[doc_id])
        with self._held() as store:
            got = store.manifest.doc_chunks(doc_id)
        with self._lock:
            memo[doc_id] = tuple(got)
            while sum(len(v) for v in memo.values()) > self.CHUNK_CACHE and len(memo) > 1:
                memo.popitem(last=False)
        return got

    @property
    def all_chunks(self) -> Iterable[tuple[str, str]]:
        """(id, text) of every chunk, for grep: kept in memory up to ``GREP_CACHE_CHARS``, streamed beyond."""
        manifest, cached = self.store.manifest, self._grep
        if cached is not None:
            return cached
        if self._grep_streams:
            return ((c.id, c.text) for c in manifest.iter_chunks())
        out, size = [], 0
        for c in manifest.iter_chunks():
            out.append((c.id, c.text))
            size += len(c.text)
            if size > self.GREP_CACHE_CHARS:
                self._grep_streams = True
                return ((c.id, c.text) for c in manifest.iter_chunks())
        self._grep = out
        return out

    # search -----------------------------------------------------------------------------
    def embed_query(self, text: str):
        """The query's vector; the last few are kept (a policy and its tools embed the same question)."""
        vec = self._qcache.get(text)
        if vec is not None:
            return vec
        try:
            vec = self.embedder.embed_queries([text])[0]
        except EmbedderError as exc:
            raise C1Error(str(exc)) from None
        if len(self._qcache) >= 256:
            self._qcache.pop(next(iter(self._qcache)), None)
        self._qcache[text] = vec
        return vec

    # re-ranking ---------------------------------------------------------------------------
    def reranks(self, place: str) -> bool:
        """Whether the cross-encoder re-ranks at ``place`` ("search": hybrid's first chunks; "read": a
        document's chunks): ``--rerank off`` nowhere, ``onnx`` or a URL everywhere, ``auto`` by ``AUTO_RERANK``."""
        setting = self.settings.rerank
        if setting == "off" or self._rerank_problem is not None:
            return False
        return AUTO_RERANK[place] if setting == "auto" else True

    def score_passages(self, query: str, texts: list[str]) -> list[float] | None:
        """The reranker's score of each text for ``query`` (higher: more relevant; a logit for the
        built-in cross-encoder), or None when re-ranking is off (``--rerank off``, or ``auto`` without
        the model package). A named reranker that fails is an error; ``auto`` falls back to no re-ranking."""
        if self.settings.rerank == "off" or self._rerank_problem is not None:
            return None
        from c1.retrieval.rerankers import make_reranker

        try:
            if self._reranker is None:
                self._reranker = make_reranker(self.settings.rerank)
            known = self._pairs
            got = {t: v for t in texts if (v := known.get((query, t))) is not None}
            missing = [t for t in dict.fromkeys(texts) if t not in got]
            if missing:
                got.update(zip(missing, self._reranker.score(query, missing)))
                with self._lock:
                    if len(known) + len(missing) > self.PAIR_CACHE:
                        known.clear()
                    known.update(((query, t), got[t]) for t in missing)
            return [got[t] for t in texts]
        except EmbedderError as exc:  # RerankerError, or the model package missing
            if self.settings.rerank != "auto":
                raise C1Error(str(exc)) from None
            self._rerank_problem = str(exc)
            self.warnings.append(f"re-ranking is off: {exc}")
            return None

    def _reranked(self, query: str, texts: list[str], scores: list[float]) -> list[tuple[int, float]] | None:
        """(index, score) of ``texts`` (ranked best first, with ``scores``) in the reranker's order, each rank
        keeping the score it had (the scale callers know); None when re-ranking is off."""
        got = self.score_passages(query, texts) if len(texts) > 1 else None
        if got is None:
            return None
        order = sorted(range(len(texts)), key=lambda i: -got[i])
        return list(zip(order, sorted(scores, reverse=True)))

    def clear_query_cache(self) -> None:
        """Forget cached query vectors (benchmarks that time whole searches call it between questions)."""
        self._qcache.clear()

    def mentions(self, phrase: str, field: str = "text") -> int:
        """How many chunks of the collection hold ``phrase`` (cached: titles are asked about often);
        ``field="title"``: how many belong to documents whose identity (title, file-name words) holds it."""
        key = (field, phrase)
        got = self._mentions.get(key)
        if got is None:
            with self._held() as store:
                lexical = store.lexical
                if lexical is None:  # damaged (see warnings): nothing is known to be common
                    return 0
                if len(self._mentions) >= self.DOC_CACHE:
                    self._mentions.clear()
                got = self._mentions[key] = lexical.phrase_count(phrase, field)
        return got

    def name_mentions(self, phrase: str) -> int:
        return self.mentions(phrase, "title")

    def bm25(self, query: str, k: int) -> list[tuple[str, float]]:
        with self._held() as store:
            lexical = store.lexical
            return lexical.search(query, k) if lexical is not None else []  # None: damaged (see warnings)

    def dense(self, vector, k: int) -> list[tuple[str, float]]:
        return self._from_vectors(lambda vectors: vectors.query(vector, k))

    def candidates(self, query: str, exclude: set[str] = frozenset(), vector=None,
                   n: int | None = None) -> tuple[list[tuple[str, float]], dict, set[str]]:
        """BM25 ∥ dense → RRF: the top ``n`` (default ``CANDIDATES``) (id, fused score) not in
        ``exclude``, the dense cosines already known, and the ids BM25 found."""
        n = max(n or 0, self.CANDIDATES)
        want = n + len(exclude)
        lexical_f = self._pool.submit(self.bm25, query, want)
        dense = self.dense(vector, want)
        lexical = lexical_f.result()
        fused = rrf([[c for c, _ in lexical], [c for c, _ in dense]])
        if self.embedding is not None:  # still being embedded: see _stand_in
            fused = self._stand_in(fused, [c for c, _ in lexical])
        fused = [(cid, s) for cid, s in fused if cid not in exclude]
        return fused[:n], dict(dense), {c for c, _ in lexical}

    def _stand_in(self, fused: list[tuple[str, float]], lexical: list[str]) -> list[tuple[str, float]]:
        """While a collection is being embedded, a chunk BM25 found that has no vector yet could not be
        found by the dense side at all: a missing vote is no vote against. It gets the dense side's vote at
        its BM25 rank, so that BM25's first is not put below chunks both sides found only because those
        have vectors (with no vector anywhere, the order is BM25's, as before)."""
        with self._held() as store:
            lacking = store.manifest.lacking_vectors(lexical)
        if not lacking:
            return fused
        extra = {cid: 1.0 / (RRF_K + rank) for rank, cid in enumerate(lexical, start=1) if cid in lacking}
        return sorted(((cid, s + extra.get(cid, 0.0)) for cid, s in fused), key=lambda kv: -kv[1])

    def hybrid(self, query: str, k: int, exclude: set[str] = frozenset(), vector=None) -> list[Hit]:
        """Top ``k`` chunks not in ``exclude``: BM25 ∥ dense → RRF → re-rank of the top ``max(k, CANDIDATES)``.

        A relevance floor drops candidates that share no content word with the query and whose
        cosine is under the embedder's ``support_sim`` (what it calls close to a question: 0.60 for
        bge-small, where random letter strings reach a top-1 cosine of 0.56-0.60 at the median; none for a
        model of unknown scale): a query that matches nothing (``zzqqxx``) returns nothing instead of its
        nearest random neighbours.
        """
        if vector is None:
            vector = self.embed_query(query)
        fused, known, lexical = self.candidates(query, exclude, vector, k)
        if not fused:
            return []
        chunks = {c.id: c for c in self.chunks([cid for cid, _ in fused])}
        terms = content_terms(query)
        top_fused = fused[0][1]
        floor = getattr(self.embedder, "support_sim", None)  # what its embedder calls close to a question
        hits = []
        for cid, fscore in fused:
            chunk = chunks.get(cid)
            if chunk is None:
                continue
            doc = self.doc(chunk.doc_id)
            if cid not in lexical and floor is not None and known.get(cid, 0.0) < floor:  # no query word, not close either
                if not terms or coverage(terms, f"{doc.title} {chunk.text}") == 0.0:
                    continue
            hits.append(Hit(chunk, doc, float(fscore / top_fused)))
        evidence = self.doc_evidence(query, [h.doc.doc_id for h in hits])
        for h in hits:
            h.score = round(h.score + self.W_DOC * evidence.get(h.doc.doc_id, 0.0), 4)
        hits.sort(key=lambda h: -h.score)
        if self.reranks("search"):
            head = hits[: self.RERANK_TOP]
            order = self._reranked(query, [passage_text(h.doc, h.chunk) for h in head], [h.score for h in head])
            if order is not None:
                reordered = [head[i] for i, _ in order]
                for h, (_, score) in zip(reordered, order):
                    h.score = score
                hits[: len(head)] = reordered
        return hits[:k]

    # documents ----------------------------------------------------------------------------
    def identity(self, doc_id: str):
        """The document's :class:`~c1.retrieval.identity.Identity` (title, file-name words, first page)."""
        from c1.retrieval.identity import identity
        from c1.store.names import file_name_words

        got = self._identities.get(doc_id)
        if got is None:
            if len(self._identities) >= self.DOC_CACHE:
                self._identities.clear()
            doc = self.doc(doc_id)
            first = self.chunks([f"{doc_id}_0"]) if doc else []
            words = file_name_words(doc.path) if doc and doc.key == doc.path else ""
            got = self._identities[doc_id] = identity(doc.title if doc else "", words, first[0].text if first else "")
        return got

    def doc_evidence(self, question: str, doc_ids) -> dict[str, float]:
        """How well each document's identity matches the names and period ``question`` asks about,
        in [0, 1], relative to the other documents given (:func:`c1.retrieval.identity.evidence`).

        Only where a document of several chunks is among them: a one-chunk document (a
        passage, a message) is whole in its chunk, whose own score already reflects its title and
        first lines; beside long documents, it is judged alike (else a workbook that names the
        question's product outranks the inventory sheet that holds the answer in one chunk)."""
        from c1.retrieval.identity import asked, evidence

        wanted = self._asked.get(question)
        if wanted is None:
            if len(self._asked) >= 256:
                self._asked.pop(next(iter(self._asked)))
            wanted = self._asked[question] = asked(question)
        if not wanted:
            return {}
        docs = [d for d in dict.fromkeys(doc_ids) if self.doc(d) is not None]
        if not any(self.doc(d).n_chunks > 1 for d in docs):
            return {}
        long = docs  # beside long documents, a one-chunk one (a CSV, a note) is judged alike
        rarity = lambda phrase: math.log(1 + self.size / (self.mentions(phrase) + 1))  # noqa: E731 (names by IDF)
        return {d: v for d, v in evidence(wanted, {d: self.identity(d) for d in long}, rarity).items() if v}

    def _cosines(self, ids: list[str], vector, known: dict[str, float]) -> dict[str, float]:
        """Cosine of each chunk with ``vector``: from the dense results where known, else from the stored vectors."""
        import numpy as np

        out = {cid: known[cid] for cid in ids if cid in known}
        missing = [cid for cid in ids if cid not in out]
        got = self._from_vectors(lambda vectors: vectors.vectors(missing))
        if len(got) < len(missing) and self._snapshot_behind():
            got = self._reopened(lambda vectors: vectors.vectors(missing))
        if got:
            mids = list(got)
            mat = np.asarray([got[c] for c in mids], dtype=np.float32)
            for cid, value in zip(mids, mat @ np.asarray(vector, dtype=np.float32)):
                out[cid] = float(value)
        return out

    def rank_chunks(self, chunks: list[Chunk], query: str, vector=None, rerank: bool = False) -> list[tuple[Chunk, float]]:
        """Order ``chunks`` (anything with ``id`` and ``text``) by similarity to ``query``: 0.7 × cosine of the
        stored vector + 0.3 × query-term coverage (read_document; the built-in policy's view of what it holds).
        ``rerank`` (read_document): the first ``RERANK_TOP`` are then re-ordered by the cross-encoder
        where it re-ranks ("read", see :meth:`reranks`)."""
        if not chunks:
            return []
        if vector is None:
            vector = self.embed_query(query)
        cos = self._cosines([c.id for c in chunks], vector, {})
        terms = content_terms(query)
        scored = [
            (c, round(0.7 * cos.get(c.id, 0.0) + 0.3 * (coverage(terms, c.text) if terms else 0.0), 4)) for c in chunks
        ]
        scored.sort(key=lambda cs: -cs[1])
        if rerank and self.reranks("read"):
            head = scored[: self.RERANK_TOP]
            order = self._reranked(query, [c.text for c, _ in head], [s for _, s in head])
            if order is not None:
                scored[: len(head)] = [(head[i][0], score) for i, score in order]
        return scored


def passage_text(doc: DocRecord, chunk: Chunk) -> str:
    """What the reranker reads of a chunk: its document's title (a passage's text may not name its subject), then the text."""
    title = (doc.title or "").strip()
    return f"{title}\n{chunk.text}" if title and not chunk.text.startswith(title) else chunk.text
