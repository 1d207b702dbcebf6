"""``c1 index``: files → documents → chunks → lexical index, then vectors, incrementally.

Keywords first: a run has two phases. (1) Each file, once read, is chunked and written to the
lexical index and the manifest, its chunks flagged *without vector*: it is searchable by keywords
at once. (2) The flagged chunks are then embedded from the manifest's text, in rounds of
``BATCH_CHUNKS``, each round written to Chroma and then unflagged. Embedding is most of the time of a
run (the model runs over every chunk; reading and writing by keywords is cheap beside it: docs/scaling.md),
so a search made meanwhile finds every file by BM25 and the embedded part by both (c1/retrieval/corpus.py).
A run stopped in phase 2 (Ctrl-C, kill -9, a server down) leaves a keyword-searchable collection;
the next ``c1 index`` embeds what is left. Several files of costly kinds (PDFs) are read by reader
processes, smallest first, and committed as they come back (c1/index/readers.py), so the right filing
of a known-item question is found once its file is read, not after the whole run (bench/first_answer.py
times it; the figures: docs/scaling.md, "Keywords first").

Order of writes for each batch of files in phase 1, chosen so that a crash anywhere is repaired by
the next run: (1) the files are marked *pending* and the collection *dirty* in the manifest; (2) the
old vectors of the files are deleted from Chroma and the lexical index is updated; (3) one manifest
transaction stores the new documents and chunks and clears *pending*. A run that starts on a dirty
collection reconciles first: Chroma ids that the manifest does not know are deleted, chunks whose
vector is missing or stale are flagged for phase 2, pending files re-indexed, and the lexical index
rebuilt from the manifest. In phase 2 a crash between the Chroma write and the unflagging only costs
embedding that round again; Chroma never holds a vector for text the manifest does not have.

The manifest is the source of truth; the two other stores are derived from it and checked at the
start of every run (cheap counts; an unreadable lexical index). Whatever does not agree is
rebuilt from the manifest: chunks Chroma lacks or holds with another content hash are embedded
again, orphans are deleted, the lexical index is refilled. ``--rebuild`` does all of it
unconditionally (a damaged embedded Chroma store is moved aside first). A folder given to
``c1 index`` that no longer exists removes the documents indexed from it. A first run that fails
before anything was stored (an embedding server or a Chroma server that does not answer) removes
the collection it created: nothing is left behind.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from c1.config import Settings
from c1.index.chunking import chunk_spans
from c1.index.documents import Document
from c1.store.embedders import Embedder, EmbedderError
from c1.index.headers import ChunkContext, contexts, stored_contexts
from c1.index.loading import Loaded, Page, load_all
from c1.index.repair import forget_failed_first_run, out_of_sync, reconcile_vectors, refill_lexical
from c1.index.report import IndexReport, Progress, ProgressFn
from c1.store.ids import chunk_id, doc_id_for
from c1.store.manifest import Chunk, DocRecord, FileRecord, Manifest, ManifestDamaged, chunk_hash
from c1.index.walk import under
from c1.errors import C1Error
from c1.store.collection import Store, open_store
from c1.store.lock import CollectionLock

BATCH_CHUNKS = 64
"""Chunks per write batch (phase 1) and per embedding round (phase 2): small enough that progress
moves every few seconds on a laptop CPU, large enough that the per-batch commits (tantivy, manifest,
Chroma) stay a small share of the time."""
MAX_KEPT_CONTEXTS = 2_000_000
"""Chunk contexts kept from phase 1 for phase 2 (about 150 bytes each); past it, phase 2 rebuilds them."""
GENERATION_EVERY_S = 10.0
"""While embedding, readers are told to reopen the collection (the manifest's generation) at most this
often: a reader's Chroma client sees new vectors only once reopened, and reopening costs it a moment."""


def file_hash(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


class Indexer:
    def __init__(self, settings: Settings, embedder: Embedder, progress: ProgressFn | None = None,
                 stop: threading.Event | None = None, embed: bool = True):
        self.settings = settings
        self.embedder = embedder
        self.progress = progress or (lambda p: None)
        self.state = Progress()
        self.stop = stop
        """Once set, files not yet loaded and chunks not yet embedded are left for the next run."""
        self.embed = embed
        """False: phase 1 only (keywords); a later run embeds."""
        from c1.index.readers import wanted_readers

        self.readers = wanted_readers()
        """Reader processes asked for by ``C1_READERS`` (None: as many as pay, :mod:`c1.index.readers`)."""
        self._probed = False
        self._contexts: dict[str, ChunkContext] = {}
        """Chunk id → its context as phase 1 computed it from the whole text, until phase 2 embeds it. A chunk
        left without vector by an earlier run gets its context from the stored chunks (``stored_contexts``),
        which can place a heading differently: the text rebuilt from them has newlines for the gaps between
        chunks (a one-off count on the SEC filings: docs/benchmarks.md, "Figures that were in the code")."""

    # entry points -----------------------------------------------------------------------
    def run(self, paths: list[str], rebuild: bool = False) -> IndexReport:
        """Index ``paths``. ``rebuild``: first re-create Chroma's vectors and the lexical index from the
        manifest, whatever their state."""
        started = time.perf_counter()
        roots = self.roots(paths)
        with self.session(rebuild) as store:
            report = self.sync(store, roots, rebuild=rebuild)
        report.seconds = time.perf_counter() - started
        return report

    def roots(self, paths: list[str]) -> list[str]:
        """``paths`` made absolute; one that does not exist is an error unless files were indexed from it."""
        roots = [os.path.realpath(p) if os.path.exists(p) else os.path.abspath(p) for p in paths]  # as the walk names them
        self._check_missing([r for r in roots if not os.path.exists(r)])
        return roots

    @contextmanager
    def session(self, rebuild: bool = False, doing: str = "c1 index") -> Iterator["Store"]:
        """The collection locked for writing and its stores open, for one run or for a whole watch."""
        cdir = self.settings.collection_dir
        first = not (cdir / "manifest.sqlite").exists()
        with CollectionLock(cdir, doing):
            store = None
            try:
                store = open_store(self.settings, self.embedder, create=True, rebuild=rebuild)
                yield store
            except BaseException:
                if first:
                    forget_failed_first_run(cdir, store)
                    store = None
                raise
            finally:
                if store is not None:
                    store.close()

    def sync(self, store: "Store", roots: list[str], *, rebuild: bool = False,
             changed: list[str] | None = None) -> IndexReport:
        """Bring the collection in line with the files under ``roots``: all of them, or only the
        ``changed`` paths below them (files or folders, still there or gone: what a file watcher saw).
        Stops taking new files once ``self.stop`` is set; what was written is consistent."""
        from c1.index.walk import scan, scan_changed

        started = time.perf_counter()
        report = IndexReport(collection=self.settings.collection)
        report.warnings.extend({"path": path, "warning": w} for path, w in store.notes)
        store.notes.clear()
        resumed = store.manifest.get_meta("embedding") == "1"  # an earlier run stopped while embedding
        if rebuild or store.manifest.get_meta("dirty") == "1" or out_of_sync(store):
            self._reconcile(store, rebuild)
            report.repaired = True
        max_bytes = int(self.settings.max_file_mb * 1024 * 1024)
        if changed is None:
            targets = roots
            found = scan([r for r in roots if os.path.exists(r)], max_bytes=max_bytes, follow=self.settings.follow)
        else:
            targets = [p for p in changed if under(p, roots)]
            found = scan_changed(roots, targets, max_bytes=max_bytes, follow=self.settings.follow)
        sources = found.sources
        report.skipped.extend({"path": p, "reason": r} for p, r in found.skipped)
        report.unsupported = dict(sorted(found.unsupported.items(), key=lambda kv: (-kv[1], kv[0])))
        todo = self._classify(store, sources, report)
        gone = self._vanished(store, targets, {s.path for s in sources})
        if changed is not None:
            self._probed = False  # a watch's batch: the server may have gone since the last one
        if self.embed and (todo or store.manifest.count_without_vectors()):
            self._probe()  # a server that does not answer is said before anything is written
        if todo or gone or report.repaired:
            store.manifest.set_meta("dirty", "1")
            if gone:
                self._remove(store, gone)
                report.deleted = len(gone)
            self._index(store, todo, report)
            if changed is None:
                store.lexical.close()  # merges done before the run ends; a watch's batch has committed, no more
            store.manifest.set_meta("dirty", "0")
            if report.repaired:
                store.manifest.bump_generation()
        report.lexical_seconds = time.perf_counter() - started
        said = language_warning(store.manifest, self.embedder.name) if todo and changed is None else None
        if said:  # said by a run, not by each batch of a watch
            report.warnings.append({"path": str(self.settings.collection_dir), "warning": said})
        if self.embed:
            self._embed_missing(store, report)
            if changed is None:
                self._snapshot(store)
        report.repaired = report.repaired or (resumed and self.embed)
        counts = store.manifest.counts()
        report.documents = counts["documents"]
        report.total_chunks = counts["chunks"]
        report.without_vectors = store.manifest.count_without_vectors()
        report.seconds = time.perf_counter() - started
        return report

    def _snapshot(self, store: "Store") -> None:
        """The vector snapshot (:mod:`c1.store.flat`) of a fully embedded collection, when it has none at the
        store's present mark: every reader then searches the vectors exactly, the same answer in every
        process (Chroma's HNSW graph is approximate, and rebuilt on opening from what its log holds, so
        two processes could find different neighbours), and a first search need not import chromadb."""
        from c1.store import flat

        if store.manifest.count_without_vectors() or flat.fresh(self.settings):
            return
        flat.write(self.settings, store.vectors, flat.vector_mark(self.settings))

    def _probe(self) -> None:
        """Embed one word, once per indexer: a dead embedding server is a one-line error before any write."""
        if self._probed:
            return
        try:
            self.embedder.embed(["c1"])
        except EmbedderError as exc:
            raise C1Error(str(exc)) from None
        self._probed = True

    # planning ---------------------------------------------------------------------------
    def _classify(self, store: "Store", sources, report: IndexReport) -> list[tuple]:
        known = store.manifest.files()
        pending = set(store.manifest.pending())
        todo = []
        for src in sources:
            try:
                st = os.stat(src.path)
            except OSError as exc:
                report.skipped.append({"path": src.path, "reason": f"unreadable: {exc.strerror}"})
                continue
            old = known.get(src.path)
            if old and old.hash and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns and src.path not in pending:
                report.unchanged += 1
                continue
            try:
                digest = file_hash(src.path)
            except OSError as exc:
                report.skipped.append({"path": src.path, "reason": f"unreadable: {exc.strerror}"})
                continue
            rec = FileRecord(src.path, digest, st.st_size, st.st_mtime_ns, src.kind)
            if old and old.hash == digest and src.path not in pending:
                store.manifest.touch(rec)
                report.unchanged += 1
                continue
            todo.append((src, rec, old is None))
        return todo

    @staticmethod
    def _vanished(store: "Store", roots: list[str], seen: set[str]) -> list[str]:
        """Indexed files under the given roots that the walk no longer finds."""
        return [p for p in store.manifest.files_under(roots) if p not in seen]

    def _check_missing(self, missing: list[str]) -> None:
        """A path that does not exist is an error, unless the collection holds files from under it: then
        they were deleted, and this run removes their documents."""
        if not missing:
            return
        known: list[str] = []
        manifest_path = self.settings.collection_dir / "manifest.sqlite"
        if manifest_path.exists():
            from c1.store.readonly import is_writable

            try:
                m = Manifest(manifest_path, readonly=True, immutable=not is_writable(manifest_path.parent))
            except ManifestDamaged:
                m = None  # said once the run opens the store
            if m is not None:
                try:
                    known = list(m.files())
                finally:
                    m.close()
        for root in missing:
            if not any(under(p, [root]) for p in known):
                what = "broken symbolic link" if os.path.islink(root) else "no such file or directory"
                raise C1Error(f"{root}: {what}")

    # writing ----------------------------------------------------------------------------
    def _remove(self, store: "Store", paths: list[str]) -> None:
        docs = store.manifest.docs_of(paths)
        for d in docs:
            for cid in d.chunk_ids():
                self._contexts.pop(cid, None)
        store.manifest.mark_pending(paths)
        store.vectors.delete([cid for d in docs for cid in d.chunk_ids()])
        store.lexical.delete_docs(d.doc_id for d in docs)
        store.lexical.commit()
        store.manifest.remove_files(paths)

    def _index(self, store: "Store", todo: list[tuple], report: IndexReport) -> None:
        self.state = Progress(files_total=len(todo), bytes_total=sum(rec.size for _, rec, _ in todo))
        self.progress(self.state)
        taken = {d: k for k, d in store.manifest.doc_ids_by_key().items()}
        batch: list[Loaded] = []
        size = 0
        for item in load_all(todo, self.readers):
            if isinstance(item, Page):
                self.state.current, self.state.page, self.state.pages = item.path, item.number, item.pages
                self.progress(self.state)
                continue
            if self.stop is not None and self.stop.is_set():
                break  # what is loaded is written below; the rest keeps its old record, for the next run
            self.state.current, self.state.page, self.state.pages = item.rec.path, 0, 0
            self.state.file_chunks = self.state.file_chunks_done = 0  # not embedded yet
            if item.skip:
                report.skipped.append({"path": item.rec.path, "reason": item.skip})
                item.docs = []
                item.rec.hash = None  # retried next run; its old chunks are removed now
            report.warnings.extend({"path": item.rec.path, "warning": w} for w in item.warnings)
            batch.append(item)
            size += sum(len(d.text) for d in item.docs) // (self.settings.chunk_tokens * 4) + 1
            if size >= BATCH_CHUNKS:
                self._flush(store, batch, taken, report)
                batch, size = [], 0
        if batch:
            self._flush(store, batch, taken, report)
        if todo and store.manifest.has_kept_vectors():
            store.manifest.forget_vectors()  # left by a c1 that embedded long files before committing them

    def _flush(self, store: "Store", batch: list[Loaded], taken: dict[str, str], report: IndexReport) -> None:
        """Phase 1 for a batch of files: their chunks into the lexical index and the manifest, flagged
        without vector; the vectors of their old chunks out of Chroma."""
        docs: list[DocRecord] = []
        chunks: list[Chunk] = []
        ctxs: list[ChunkContext] = []
        for item in batch:
            for doc in item.docs:
                record, doc_chunks = self._chunk(doc, taken)
                if not doc_chunks:
                    continue
                docs.append(record)
                chunks.extend(doc_chunks)
                for c, ctx in zip(doc_chunks, contexts(record.title, record.path, record.key, doc.text, doc_chunks)):
                    c.hash = chunk_hash(record.title, ctx.embed_text(c.text))
                    ctxs.append(ctx)
        paths = [item.rec.path for item in batch]
        old_docs = store.manifest.docs_of(paths)
        for d in old_docs:
            for cid in d.chunk_ids():
                self._contexts.pop(cid, None)
        store.manifest.mark_pending(paths)
        store.vectors.delete(sorted({cid for d in old_docs for cid in d.chunk_ids()}))
        store.lexical.delete_docs({d.doc_id for d in old_docs} | {d.doc_id for d in docs})
        for c, ctx in zip(chunks, ctxs):
            store.lexical.add(c.id, c.doc_id, ctx.identity, ctx.lexical_text(c.text))
        store.lexical.commit()
        store.manifest.replace_files([item.rec for item in batch], docs, chunks, vectors=False)
        for c, ctx in zip(chunks, ctxs):  # committed: phase 2 embeds these texts with these headers
            if len(self._contexts) >= MAX_KEPT_CONTEXTS:
                break
            self._contexts[c.id] = ctx
        for item in batch:
            if item.skip:
                continue
            if item.is_new:
                report.added += 1
            else:
                report.updated += 1
        report.chunks += len(chunks)
        self.state.chunks_written += len(chunks)
        self.state.files_done += len(batch)
        self.state.bytes_done += sum(item.rec.size for item in batch)
        self.progress(self.state)

    def _embed_missing(self, store: "Store", report: IndexReport) -> None:
        """Phase 2: embed every chunk flagged without vector, in rounds of ``BATCH_CHUNKS`` in the order
        they were committed; each round is written to Chroma, then unflagged (with the content hash of what
        was embedded). ``embedding`` in the manifest's meta says a run is at it (or was stopped at it)."""
        manifest = store.manifest
        total = manifest.count_without_vectors()
        if not total:
            return
        manifest.set_meta("embedding", "1")
        self.state.phase, self.state.chunks_total, self.state.chunks_done = "embedding", total, 0
        self.state.current, self.state.page, self.state.pages = "", 0, 0
        self.progress(self.state)
        headers: dict[str, dict[str, ChunkContext]] = {}  # per document, its chunks' contexts
        last_bump = time.monotonic()
        previous: list[str] = []
        while True:  # a stop (a watch's first Ctrl-C) still finishes the files in hand; a second one ends it
            ids = manifest.without_vectors(BATCH_CHUNKS)
            if not ids:
                break
            if ids == previous:
                raise C1Error(f"internal error: the manifest keeps {len(ids)} chunks flagged after embedding them")
            previous = ids
            part = manifest.chunks(ids)
            docs = {d: manifest.doc(d) for d in {c.doc_id for c in part}}
            texts = []
            for c in part:
                ctx = self._contexts.pop(c.id, None)
                if ctx is None:
                    if c.doc_id not in headers:
                        if len(headers) >= 64:
                            headers.clear()
                        headers[c.doc_id] = stored_contexts(docs[c.doc_id], manifest.doc_chunks(c.doc_id))
                    ctx = headers[c.doc_id][c.id]
                texts.append(ctx.embed_text(c.text))
                c.hash = chunk_hash(docs[c.doc_id].title, texts[-1])
            t0 = time.perf_counter()
            try:
                vectors = self.embedder.embed(texts)
            except EmbedderError as exc:
                raise C1Error(str(exc)) from None
            report.embed_seconds += time.perf_counter() - t0
            store.vectors.upsert([c.id for c in part], vectors, [c.text for c in part],
                                 [chroma_metadata(docs[c.doc_id], c) for c in part])
            manifest.set_vectors([c.id for c in part], True, {c.id: c.hash for c in part})
            report.embedded += len(part)
            self.state.chunks_done += len(part)
            self.progress(self.state)
            if time.monotonic() - last_bump >= GENERATION_EVERY_S:
                manifest.bump_generation()
                last_bump = time.monotonic()
        if not manifest.count_without_vectors():
            manifest.set_meta("embedding", "0")  # done, or stopped on purpose: not an interrupted run
        manifest.bump_generation()

    def _chunk(self, doc: Document, taken: dict[str, str]) -> tuple[DocRecord, list[Chunk]]:
        doc_id = doc_id_for(doc.key, taken)
        taken[doc_id] = doc.key
        spans = chunk_spans(doc.text, self.settings.chunk_tokens, self.settings.chunk_overlap)
        chunks = [
            Chunk(chunk_id(doc_id, n), doc_id, n, s.start, s.end, doc.page_at(s.start), doc.text[s.start : s.end])
            for n, s in enumerate(spans)
        ]
        source_id = doc.meta.get("source_id")
        meta = {k: v for k, v in doc.meta.items() if k != "source_id"}
        if doc.pages and len(doc.pages) > 1:  # where each page starts: the page of a passage inside a chunk
            meta["page_starts"] = [[start, number] for start, number in doc.pages]
        record = DocRecord(doc_id, doc.key, doc.path, doc.title, None if source_id is None else str(source_id), len(chunks), meta)
        return record, chunks

    # repair -----------------------------------------------------------------------------
    def _reconcile(self, store: "Store", rebuild: bool = False) -> None:
        """Bring Chroma and the lexical index back in line with the manifest (after a crash, a damaged or
        deleted store, a collection folder deleted by hand; everything with ``rebuild``): Chroma's orphans
        and stale vectors are deleted, every chunk whose vector is missing is flagged for phase 2, the
        lexical index is refilled."""
        reconcile_vectors(store, rebuild)
        self.state = Progress(files_total=0, current="rebuilding from the manifest")
        self.progress(self.state)
        refill_lexical(store)
        # Files caught mid-write are re-indexed from their source.
        store.manifest.invalidate(store.manifest.pending())


LANGUAGE_SAMPLE = 300
"""Chunks, spread over the collection, whose language says whether most of its text is English."""


def language_warning(manifest: Manifest, embedder: str) -> str | None:
    """What to say when most of the collection's text is not English and its embedder reads English
    only (both built-in models do): such text is found by its words, hardly by its meaning."""
    from c1.index.language import foreign_share
    from c1.store.embedders import BUILTIN

    last = manifest.db.execute("SELECT MAX(rowid) FROM chunks").fetchone()[0] if embedder in BUILTIN else None
    if not last:
        return None
    ids = list(range(1, last + 1, max(1, last // LANGUAGE_SAMPLE)))[:LANGUAGE_SAMPLE]
    rows = manifest.db.execute(f"SELECT substr(text, 1, 2000) FROM chunks WHERE rowid IN ({','.join('?' * len(ids))})", ids)
    share = foreign_share(r[0] for r in rows)
    if share <= 0.5:
        return None
    return (f"{share:.0%} of this collection's text is not English, and its embedder ({embedder}) reads English "
            "only: that text is found by its words, hardly by its meaning, and a question in one language "
            "finds nothing written in another (see docs/embedders.md)")


def chroma_metadata(doc: DocRecord, c: Chunk) -> dict:
    meta: dict = {"doc": doc.doc_id, "n": c.n, "path": doc.path, "title": doc.title or "", "start": c.start, "end": c.end}
    if c.hash:
        meta["hash"] = c.hash
    if c.page is not None:
        meta["page"] = c.page
    if doc.source_id is not None:
        meta["source_id"] = doc.source_id
    for key, value in doc.meta.items():
        if isinstance(value, (str, int, float, bool)) and value != "":
            meta[key] = value
    return meta
