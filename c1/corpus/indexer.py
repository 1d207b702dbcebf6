"""``c1 index``: files → documents → chunks → vectors + lexical index, incrementally.

Order of writes for each batch of files, chosen so that a crash anywhere is repaired by the next
run: (1) the files are marked *pending* and the collection *dirty* in the manifest; (2) Chroma and
the lexical index are updated; (3) one manifest transaction stores the new documents and chunks
and clears *pending*. A run that starts on a dirty collection reconciles first: Chroma ids that
the manifest does not know are deleted, missing ones re-embedded from the stored chunk text,
pending files re-indexed, and the lexical index rebuilt from the manifest.

The manifest is the source of truth; the two other stores are derived from it and checked at the
start of every run (cheap counts; an unreadable lexical index). Whatever does not agree is
rebuilt from the manifest: chunks Chroma lacks or holds with another content hash are embedded
again, orphans are deleted, the lexical index is refilled. ``--rebuild`` does all of it
unconditionally (a damaged embedded Chroma store is moved aside first). A folder given to
``c1 index`` that no longer exists removes the documents indexed from it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from c1.config import Settings
from c1.corpus.chunking import chunk_spans
from c1.corpus.documents import Document, Skip
from c1.corpus.embedders import Embedder, EmbedderError
from c1.corpus.headers import ChunkContext, contexts, stored_contexts
from c1.corpus.ids import chunk_id, doc_id_for
from c1.corpus.manifest import Chunk, DocRecord, FileRecord, Manifest, ManifestDamaged, chunk_hash
from c1.corpus.walk import under
from c1.errors import C1Error

BATCH_CHUNKS = 64
"""Chunks per write batch: small enough that progress moves every few seconds on a laptop CPU,
large enough that the per-batch commits (tantivy, manifest) stay a small share of the time."""
LOAD_AHEAD = 8
"""Files loaded ahead of the embedder (the pages of the one being read stream regardless)."""


@dataclass
class IndexReport:
    collection: str
    added: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: list[dict] = field(default_factory=list)
    unsupported: dict[str, int] = field(default_factory=dict)
    """Files of unsupported types inside the folders indexed, by extension."""
    warnings: list[dict] = field(default_factory=list)
    documents: int = 0
    chunks: int = 0
    total_chunks: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    repaired: bool = False
    reused: int = 0
    """Chunks whose vectors an interrupted run had embedded (in the middle of a long file): not embedded again."""

    @property
    def chunks_per_second(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        out = asdict(self)
        out["chunks_per_second"] = round(self.chunks_per_second, 2)
        out["seconds"] = round(self.seconds, 3)
        out["embed_seconds"] = round(self.embed_seconds, 3)
        return out


@dataclass
class Progress:
    files_total: int = 0
    files_done: int = 0
    chunks_done: int = 0
    """Chunks embedded so far (a long file's, round by round)."""
    current: str = ""
    page: int = 0
    """The page of ``current`` being read, of ``pages`` (0: not a paged file, or once it is read)."""
    pages: int = 0
    bytes_total: int = 0
    """Bytes of the files to index, and of those committed (the progress line's ETA is by bytes)."""
    bytes_done: int = 0
    file_chunks: int = 0
    """Chunks of the file being embedded (``current``), and how many are embedded."""
    file_chunks_done: int = 0


ProgressFn = Callable[[Progress], None]


def file_hash(path: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


class CollectionLock:
    """One writer per collection; a second ``c1 index`` fails fast instead of corrupting state.

    The holder writes its pid and what it does into the lock file, so that the one-line refusal
    can name it (``c1 index --watch`` never finishes: waiting for it would hang)."""

    def __init__(self, directory: Path, doing: str = "c1 index"):
        self.path = directory / ".lock"
        self.doing = doing
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise C1Error(f"cannot write the index in {directory}: {exc.strerror}") from None

    def __enter__(self):
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise C1Error(f"cannot write the index in {self.path.parent}: {exc.strerror}") from None
        for attempt in range(5):  # a moment's grace: `c1 status` may be looking (lock_holder)
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == 4:
                    os.close(self.fd)
                    raise C1Error(self._refusal()) from None
                time.sleep(0.05)
        try:
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, json.dumps({"pid": os.getpid(), "doing": self.doing}).encode(), 0)
        except OSError:
            pass  # only the refusal's wording depends on it
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)

    def _refusal(self) -> str:
        where = self.path.parent
        holder = lock_holder(where) or {}
        if holder.get("doing", "").startswith("c1 index --watch"):
            return (f"collection {where.name!r} is kept fresh by `{holder['doing']}` (pid {holder.get('pid', '?')}): "
                    "stop it (Ctrl-C) to index other paths into it")
        return f"another `c1 index` is writing to {where}; wait for it to finish"


def lock_holder(directory: Path) -> dict | None:
    """``{"pid", "doing"}`` of the process that holds the collection's lock now; None when none does."""
    path = directory / ".lock"
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                return json.loads(os.pread(fd, 4096, 0) or b"{}")
            except ValueError:
                return {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@dataclass
class _Loaded:
    rec: FileRecord
    is_new: bool
    docs: list[Document] = field(default_factory=list)
    skip: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Page:
    """A page of a file being read (its progress is shown before the file is done)."""

    path: str
    number: int
    pages: int


class Indexer:
    def __init__(self, settings: Settings, embedder: Embedder, progress: ProgressFn | None = None,
                 stop: threading.Event | None = None):
        self.settings = settings
        self.embedder = embedder
        self.progress = progress or (lambda p: None)
        self.state = Progress()
        self.stop = stop
        """Once set, files not yet loaded are left for the next run (``c1 index --watch`` stopping)."""
        self._kept_any = False

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
        with CollectionLock(self.settings.collection_dir, doing):
            store = open_store(self.settings, self.embedder, create=True, rebuild=rebuild)
            try:
                yield store
            finally:
                store.close()

    def sync(self, store: "Store", roots: list[str], *, rebuild: bool = False,
             changed: list[str] | None = None) -> IndexReport:
        """Bring the collection in line with the files under ``roots``: all of them, or only the
        ``changed`` paths below them (files or folders, still there or gone: what a file watcher saw).
        Stops taking new files once ``self.stop`` is set; what was written is consistent."""
        from c1.corpus.walk import scan, scan_changed

        started = time.perf_counter()
        report = IndexReport(collection=self.settings.collection)
        report.warnings.extend({"path": path, "warning": w} for path, w in store.notes)
        store.notes.clear()
        if rebuild or store.manifest.get_meta("dirty") == "1" or _out_of_sync(store):
            self._reconcile(store, rebuild)
            report.repaired = True
        max_bytes = int(self.settings.max_file_mb * 1024 * 1024)
        if changed is None:
            targets = roots
            found = scan([r for r in roots if os.path.exists(r)], max_bytes=max_bytes)
        else:
            targets = [p for p in changed if under(p, roots)]
            found = scan_changed(roots, targets, max_bytes=max_bytes)
        sources = found.sources
        report.skipped.extend({"path": p, "reason": r} for p, r in found.skipped)
        report.unsupported = dict(sorted(found.unsupported.items(), key=lambda kv: (-kv[1], kv[0])))
        todo = self._classify(store, sources, report)
        gone = self._vanished(store, targets, {s.path for s in sources})
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
        counts = store.manifest.counts()
        report.documents = counts["documents"]
        report.total_chunks = counts["chunks"]
        report.seconds = time.perf_counter() - started
        return report

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
            from c1.corpus.readonly import is_writable

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
        store.manifest.mark_pending(paths)
        store.vectors.delete([cid for d in docs for cid in d.chunk_ids()])
        store.lexical.delete_docs(d.doc_id for d in docs)
        store.lexical.commit()
        store.manifest.remove_files(paths)

    def _load_all(self, todo: list[tuple]) -> Iterator[_Loaded | _Page]:
        """Load files in a background thread so that parsing overlaps with embedding; the pages of a
        paged file (PDF) are reported one by one as they are read (progress), then the file itself.
        At most ``LOAD_AHEAD`` files are loaded ahead of the embedder."""
        from c1.corpus.loaders import load_with_warnings

        out: queue.Queue = queue.Queue()
        ahead = threading.Semaphore(LOAD_AHEAD)
        stop = threading.Event()

        def work():
            try:
                for src, rec, is_new in todo:
                    ahead.acquire()
                    if stop.is_set():
                        return
                    item = _Loaded(rec, is_new)

                    def on_page(number, pages, path=rec.path):
                        out.put(_Page(path, number, pages))

                    try:
                        item.docs, item.warnings = load_with_warnings(src, on_page=on_page)
                    except Skip as exc:
                        item.skip = str(exc)
                    except Exception as exc:  # a loader bug must not kill the run
                        item.skip = f"loader error: {type(exc).__name__}: {exc}"
                    out.put(item)
            finally:
                out.put(None)

        thread = threading.Thread(target=work, daemon=True, name="c1-loader")
        thread.start()
        try:
            while (item := out.get()) is not None:
                if isinstance(item, _Loaded):
                    ahead.release()
                yield item
        finally:
            stop.set()
            ahead.release()  # a loader waiting for room sees ``stop``

    def _index(self, store: "Store", todo: list[tuple], report: IndexReport) -> None:
        self.state = Progress(files_total=len(todo), bytes_total=sum(rec.size for _, rec, _ in todo))
        self.progress(self.state)
        self._kept_any = store.manifest.has_kept_vectors()
        taken = {d: k for k, d in store.manifest.doc_ids_by_key().items()}
        batch: list[_Loaded] = []
        size = 0
        for item in self._load_all(todo):
            if isinstance(item, _Page):
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
        if self._kept_any:
            store.manifest.forget_vectors()  # every file is committed: no kept vector is needed any more

    def _flush(self, store: "Store", batch: list[_Loaded], taken: dict[str, str], report: IndexReport) -> None:
        docs: list[DocRecord] = []
        chunks: list[Chunk] = []
        metas: list[dict] = []
        embed_inputs: list[str] = []
        ctxs: list[ChunkContext] = []
        owners: list[int] = []  # for each embed input, the index of its file in ``batch``
        for i, item in enumerate(batch):
            for doc in item.docs:
                record, doc_chunks = self._chunk(doc, taken)
                if not doc_chunks:
                    continue
                docs.append(record)
                chunks.extend(doc_chunks)
                for c, ctx in zip(doc_chunks, contexts(record.title, record.path, record.key, doc.text, doc_chunks)):
                    text = ctx.embed_text(c.text)
                    c.hash = chunk_hash(record.title, text)
                    metas.append(chroma_metadata(record, c))
                    embed_inputs.append(text)
                    ctxs.append(ctx)
                    owners.append(i)
        paths = [item.rec.path for item in batch]
        old_ids = {cid for d in store.manifest.docs_of(paths) for cid in d.chunk_ids()}
        new_ids = [c.id for c in chunks]
        store.manifest.mark_pending(paths)
        t0 = time.perf_counter()
        try:
            vectors = self._embed(store, paths, embed_inputs, owners, report)
        except EmbedderError as exc:
            raise C1Error(str(exc)) from None
        report.embed_seconds += time.perf_counter() - t0
        store.vectors.delete(sorted(old_ids - set(new_ids)))
        if chunks:
            store.vectors.upsert(new_ids, vectors, [c.text for c in chunks], metas)
        store.lexical.delete_docs({doc_of_id for doc_of_id in (i.rsplit("_", 1)[0] for i in old_ids)} | {d.doc_id for d in docs})
        for c, ctx in zip(chunks, ctxs):
            store.lexical.add(c.id, c.doc_id, ctx.identity, ctx.lexical_text(c.text))
        store.lexical.commit()
        store.manifest.replace_files([item.rec for item in batch], docs, chunks)
        for item in batch:
            if item.skip:
                continue
            if item.is_new:
                report.added += 1
            else:
                report.updated += 1
        report.chunks += len(chunks)
        self.state.files_done += len(batch)
        self.state.bytes_done += sum(item.rec.size for item in batch)
        self.progress(self.state)

    def _embed(self, store: "Store", paths: list[str], inputs: list[str], owners: list[int], report: IndexReport):
        """The vectors of ``inputs`` (``owners[i]``: the index in ``paths`` of input i's file), embedded in
        rounds of ``BATCH_CHUNKS`` with progress after each. A file embedded over several rounds (a long
        one) has each round's vectors kept in the manifest until it is committed, and takes the vectors an
        interrupted run kept for it (c1/corpus/vector_cache.py)."""
        import numpy as np

        from c1.corpus.vector_cache import Vectors

        kept: dict[str, bytes] = {}
        if self._kept_any:
            for path in paths:
                kept.update(store.manifest.kept_vectors(path))
        cache = Vectors(self.embedder, kept)
        per_file, done = Counter(owners), Counter()
        out = np.zeros((len(inputs), self.embedder.dim), dtype=np.float32)
        for start in range(0, len(inputs), BATCH_CHUNKS):
            end = min(start + BATCH_CHUNKS, len(inputs))
            out[start:end], keys, new = cache.embed(inputs[start:end])
            keep: dict[str, dict[str, bytes]] = {}
            for key, owner in zip(keys, owners[start:end]):
                if key in new and per_file[owner] > BATCH_CHUNKS:
                    keep.setdefault(paths[owner], {})[key] = new[key].tobytes()
            for path, vectors in keep.items():
                store.manifest.keep_vectors(path, vectors)
                self._kept_any = True
            self.state.chunks_done += end - start
            done.update(owners[start:end])
            owner = owners[end - 1]  # the file in hand: its chunks embedded, of its total
            self.state.current, self.state.page = paths[owner], 0
            self.state.file_chunks, self.state.file_chunks_done = per_file[owner], done[owner]
            self.progress(self.state)
        report.reused += len(cache.reused)
        return out

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
        deleted store, a collection folder deleted by hand; everything with ``rebuild``)."""
        expected = store.manifest.chunk_hashes()
        if rebuild or not expected:
            if rebuild or store.vectors.count():
                store.vectors.reset()
            present: dict[str, str | None] = {}
        else:
            present = store.vectors.hashes()
        store.vectors.delete(sorted(set(present) - set(expected)))
        stale = {i for i, h in expected.items() if i in present and h and present[i] and h != present[i]}
        redo = sorted((set(expected) - set(present)) | stale)
        self.state = Progress(files_total=0, current="rebuilding from the manifest")
        ctx: dict[str, ChunkContext] = {}  # chunk id → its header, per document as it comes
        for start in range(0, len(redo), BATCH_CHUNKS):
            part = store.manifest.chunks(redo[start : start + BATCH_CHUNKS])
            docs = {d: store.manifest.doc(d) for d in {c.doc_id for c in part}}
            texts = []
            for c in part:
                if c.id not in ctx:
                    ctx.update(stored_contexts(docs[c.doc_id], store.manifest.doc_chunks(c.doc_id)))
                texts.append(ctx[c.id].embed_text(c.text))
                c.hash = chunk_hash(docs[c.doc_id].title, texts[-1])
            try:
                vectors = self.embedder.embed(texts)
            except EmbedderError as exc:
                raise C1Error(str(exc)) from None
            store.vectors.upsert([c.id for c in part], vectors, [c.text for c in part],
                                 [chroma_metadata(docs[c.doc_id], c) for c in part])
            store.manifest.set_hashes({c.id: c.hash for c in part if not expected.get(c.id)})
            self.state.chunks_done += len(part)
            self.progress(self.state)
        store.lexical.clear()
        for d in store.manifest.all_docs():
            doc_chunks = store.manifest.doc_chunks(d.doc_id)
            headers = stored_contexts(d, doc_chunks)
            for c in doc_chunks:
                store.lexical.add(c.id, c.doc_id, headers[c.id].identity, headers[c.id].lexical_text(c.text))
        store.lexical.commit()
        # Files caught mid-write are re-indexed from their source.
        store.manifest.invalidate(store.manifest.pending())


def _out_of_sync(store: "Store") -> bool:
    """Cheap check at the start of a run: the derived stores hold as many chunks as the manifest."""
    n = store.manifest.counts()["chunks"]
    return store.lexical_damaged or store.vectors.count() != n or store.lexical.count() != n


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


@dataclass
class Store:
    manifest: Manifest
    vectors: "object"
    lexical: "object | None"
    """None for a reader when the lexical index cannot be opened (``lexical_problem`` says why)."""
    readonly: bool = False
    lexical_problem: str | None = None
    lexical_damaged: bool = False
    """A writer found the lexical index unreadable and started a new one: it must be refilled."""
    notes: list[tuple[str, str]] = field(default_factory=list)
    """(path, what happened) for repairs made while opening, e.g. a damaged store moved aside."""

    def close(self) -> None:
        try:
            if self.lexical is not None and not self.readonly:
                self.lexical.close()
        finally:
            self.manifest.close()
            close = getattr(self.vectors, "close", None)
            if close is not None:
                close()


def _store_id(chroma_url: str | None) -> str:
    """"embedded", or the server URL in one spelling (scheme added, trailing slash dropped)."""
    if not chroma_url or chroma_url == "embedded":
        return "embedded"
    url = chroma_url if "://" in chroma_url else f"http://{chroma_url}"
    return url.rstrip("/")


def _describe_store(where: str) -> str:
    return "the embedded store" if where == "embedded" else f"the Chroma server at {where}"


def open_manifest(settings: Settings, create: bool) -> tuple[Manifest, bool]:
    """The collection's manifest and whether it was opened read-only (a reader in a home it cannot write)."""
    from c1.corpus.readonly import is_writable

    cdir = settings.collection_dir
    path = cdir / "manifest.sqlite"
    if not create and not path.exists():
        raise C1Error(f"no index named {settings.collection!r} under {settings.home}: run `c1 index PATH` first")
    readonly = not create and not is_writable(cdir)
    try:
        return Manifest(path, readonly=not create, immutable=readonly), readonly
    except ManifestDamaged as exc:
        raise ManifestDamaged(
            f"collection {settings.collection!r}: {exc}; it is the collection's source of truth: remove the "
            f"collection with `c1 rm -c {settings.collection}` and index its files again"
        ) from None


def open_store(settings: Settings, embedder: Embedder | None, create: bool, rebuild: bool = False) -> Store:
    """Open the three parts of a collection; refuse an embedder or a Chroma store other than the
    recorded ones (the manifest would claim chunks that the other store does not hold). Without
    ``--chroma-url``, a collection indexed into a Chroma server is opened on that server.

    A reader (``create=False``) never writes: in a home it cannot write, Chroma and the lexical index
    are read from private copies. A writer replaces an unreadable lexical index by an empty one (the
    run refills it) and, with ``rebuild``, moves an unreadable embedded Chroma store aside."""
    manifest, readonly = open_manifest(settings, create)
    try:
        return _open_parts(settings, manifest, embedder, create, rebuild, readonly)
    except BaseException:
        manifest.close()
        raise


def _open_parts(settings: Settings, manifest: Manifest, embedder: Embedder | None, create: bool, rebuild: bool,
                readonly: bool) -> Store:
    from c1.corpus.vectors import StoreUnavailable, VectorStore, move_aside

    cdir = settings.collection_dir
    recorded = manifest.get_meta("embedder")
    recorded_where = manifest.get_meta("chroma")
    if embedder is not None and manifest.counts()["chunks"] == 0:
        recorded = recorded_where = None  # nothing stored yet (a first run that failed): rebind
    if recorded_where and recorded_where != "embedded" and not settings.chroma_url:
        settings = replace(settings, chroma_url=recorded_where)  # the collection's own server
    where = _store_id(settings.chroma_url)
    if recorded_where and _store_id(recorded_where) != where:
        raise C1Error(
            f"collection {settings.collection!r} keeps its vectors in {_describe_store(recorded_where)}, "
            f"not {_describe_store(where)}: use the same --chroma-url, or another --collection"
        )
    switch = bool(create and rebuild and embedder is not None and recorded and recorded != embedder.name)
    if embedder is not None and recorded and recorded != embedder.name and not switch:
        raise C1Error(
            f"collection {settings.collection!r} was indexed with embedder {recorded!r}, not {embedder.name!r}: "
            "use the same --embed-url/--embed-model, or another --collection"
        )
    notes: list[tuple[str, str]] = []
    name = embedder.name if embedder else recorded
    try:
        vectors = VectorStore(settings.home, settings.collection, settings.chroma_url, name, create, readonly=readonly)
    except StoreUnavailable as exc:
        if not (create and rebuild and where == "embedded"):
            raise
        moved = move_aside(settings.home)
        notes.append((str(moved), f"the embedded Chroma store could not be opened ({exc.reason}): moved it to {moved} "
                                  "and rebuilt this collection's vectors; the other collections of this home need "
                                  "`c1 index -c NAME` too"))
        vectors = VectorStore(settings.home, settings.collection, settings.chroma_url, name, create)
    if switch:  # --rebuild with another embedder: its vectors go before the new name is recorded (never mixed)
        vectors.reset()
        recorded = None
    if create and embedder is not None and not recorded:  # bound once the store has opened
        manifest.set_meta("embedder", embedder.name)
        manifest.set_meta("chroma", where)
    lexical, problem, damaged = _open_lexical(cdir / "lexical", create, readonly)
    if damaged:
        notes.append((str(cdir / "lexical"), f"{problem}; rebuilt it from the manifest"))
    return Store(manifest, vectors, lexical, readonly, problem, damaged, notes)


def _open_lexical(path: Path, create: bool, readonly: bool):
    """(index or None, what is wrong with it, whether a writer replaced a damaged one)."""
    import shutil

    from c1.corpus.lexical import LexicalIndex

    if not create and not (path / "meta.json").exists():
        return None, f"the lexical index {path} is missing", False
    try:
        lexical = LexicalIndex(path, readonly=readonly)
        lexical.count()  # opens every segment: a cut or emptied file fails here
        return lexical, None, False
    except (ValueError, OSError) as exc:
        problem = f"the lexical index {path} is damaged ({str(exc).splitlines()[0][:160]})"
    if not create:
        return None, problem, False
    shutil.rmtree(path, ignore_errors=True)
    return LexicalIndex(path), problem, True
