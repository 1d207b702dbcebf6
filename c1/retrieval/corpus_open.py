"""Keeping a collection open, and fresh, for a reader that may live long (``c1 serve``, ``c1 mcp``, the
resident process) while ``c1 index`` changes it in another process (:class:`OpenCollection`, a part of
:class:`c1.retrieval.corpus.Corpus`): its stores opened, reopened when the manifest's generation moved
(or the collection was removed and indexed again), never closed under a call that reads them, and the
vector snapshot a fresh reader can search without Chroma written once per state; a read that finds the
vectors behind the manifest (a write meanwhile) made again on the collection opened anew."""

from __future__ import annotations

import contextlib
import os
from collections import OrderedDict

from c1.errors import C1Error
from c1.store.embedders import embedder_for
from c1.store.flat import vector_mark
from c1.store.manifest import DocRecord


class OpenCollection:
    """The stores of ``self.settings``'s collection, and their lifecycle."""

    def _open(self, vectors=None) -> None:
        from c1.store.collection import open_store

        mark = vector_mark(self.settings)  # before the store is read: a write after it changes the mark
        store = open_store(self.settings, self.embedder, create=False, vectors=vectors, flat_mark=mark)
        self._vectors_mark = None if store.readonly else mark
        self._snapshot_mark = None
        counts = store.manifest.counts()
        if counts["chunks"] == 0:
            store.close()
            raise C1Error(f"collection {self.settings.collection!r} is empty: index some files with `c1 index PATH`")
        self.store = store
        self.size = counts["chunks"]
        self.generation = store.manifest.generation()
        self._manifest_id = _file_id(store.manifest.path)
        self._docs: OrderedDict[str, DocRecord] = OrderedDict()
        self._chunk_memo: OrderedDict[str, object] = OrderedDict()  # chunk id → Chunk (Corpus.chunks)
        self._doc_chunk_memo: OrderedDict[str, tuple] = OrderedDict()  # doc id → its chunks (Corpus.doc_chunks)
        self._grep: list[tuple[str, str]] | None = None
        self._grep_streams = False
        self._identities: dict[str, object] = {}  # per document, what its title, file name and first page say
        self._mentions: dict[str, int] = {}  # phrase → chunks that hold it
        self.warnings = []
        if store.lexical is None:
            self.warnings.append(f"keyword search is off: {store.lexical_problem}; `c1 index` repairs it")
        elif (n := store.lexical.count()) != self.size:
            self.warnings.append(f"the lexical index holds {n} of the {self.size} chunks; `c1 index` repairs it")
        self._base_warnings = list(self.warnings)
        self._embedding_state()

    def _embedding_state(self) -> None:
        """``self.embedding``: None once every chunk has its vector, else how far embedding is (``c1 index``
        writes keywords first): chunks without a vector are found by BM25 only, so results may be less
        complete, never wrong. Said in ``warnings`` (stderr) and in ``--json`` (stats)."""
        from c1.store.lock import lock_holder

        missing = self.store.manifest.count_without_vectors()
        self.warnings = list(self._base_warnings)
        if not missing:
            self.embedding = None
            return
        done = self.size - missing
        writer = lock_holder(self.settings.collection_dir)
        self.embedding = {"chunks": self.size, "embedded": done, "share": round(done / self.size, 4),
                          "indexing": writer is not None}
        how = (f"still being embedded (pid {writer.get('pid', '?')})" if writer is not None
               else "not fully embedded: `c1 index` embeds the rest")
        self.warnings.append(f"the collection is {how}: {done:,} of {self.size:,} chunks have vectors "
                             f"({100 * done / self.size:.0f}%); the others are searched by keywords only")

    def refresh(self) -> bool:
        """Reopen the collection if ``c1 index`` changed it since it was opened; True when it did.
        The old store is closed (its manifest, lexical index, vector client) once no call is reading
        it (:meth:`_held`)."""
        with self._lock:
            try:
                same_file = _file_id(self.store.manifest.path) == self._manifest_id
            except FileNotFoundError:
                raise C1Error(f"collection {self.settings.collection!r} was removed") from None
            if same_file and self.store.manifest.generation() == self.generation:
                if self.embedding is not None:
                    self._embedding_state()  # how far embedding is, between two reopenings
                return False
            old = self.store
            kept = None
            if same_file and self._vectors_mark is not None and vector_mark(self.settings) == self._vectors_mark:
                kept = old.vectors  # only the manifest and the lexical index changed (the keyword phase of
                # `c1 index`): no new Chroma client, no HNSW index read again; what this client holds is what
                # a fresh one would read. An embedder change (--rebuild) writes vectors: not this path.
            else:
                from c1.store.vectors import fresh_clients

                fresh_clients()
                if self._own_embedder:  # `c1 index --rebuild` may have changed the collection's embedder
                    from c1.store.embedders import builtin_for

                    if not self.settings.embed_url and builtin_for(self.settings) != self.embedder.name:
                        self.embedder = embedder_for(self.settings)
                        self._qcache.clear()
            self._open(vectors=kept)
            if kept is not None and self.store.vectors is kept:
                old.vectors_passed_on = True
            idle = self._users.get(id(old), 0) == 0
        if idle:  # else the last call still reading it closes it (_held)
            old.close()
        return True

    @contextlib.contextmanager
    def _held(self):
        """The current store, for one call: a re-open meanwhile does not close it under the call."""
        with self._lock:
            store = self.store
            key = id(store)
            self._users[key] = self._users.get(key, 0) + 1
        try:
            yield store
        finally:
            with self._lock:
                self._users[key] -= 1
                last = self._users[key] == 0
                if last:
                    del self._users[key]
                retired = last and store is not self.store
            if retired:
                store.close()

    def snapshot_vectors(self) -> bool:
        """Write the snapshot that lets a fresh reader search this collection without Chroma
        (:mod:`c1.store.flat`), once per state of the store, when it is fully embedded and not already read
        from a snapshot. The resident process calls it after answering. True when written."""
        from c1.store import flat

        with self._held() as store:
            mark = self._vectors_mark
            if (mark is None or mark == self._snapshot_mark or self.embedding is not None
                    or isinstance(store.vectors, flat.FlatVectors)):
                return False
            self._snapshot_mark = mark
            return flat.write(self.settings, store.vectors, mark)

    def close(self) -> None:
        self.store.close()
        if hasattr(self, "_pool"):
            self._pool.shutdown(wait=False)

    def _from_vectors(self, read):
        """``read(vector store)``; when it fails, once more after reopening the collection. Chroma's embedded
        client keeps its index in memory, so while ``c1 index`` (a watch) writes, ids that the manifest and
        the lexical index already show can be missing from it ("Error finding id")."""
        try:
            with self._held() as store:
                return read(store.vectors)
        except C1Error:
            return self._reopened(read)

    def _reopened(self, read):
        """``read(vector store)`` on the collection opened anew (and Chroma's clients made afresh)."""
        from c1.store.vectors import fresh_clients

        with self._lock:
            fresh_clients()
            old = self.store
            self._open()
            idle = self._users.get(id(old), 0) == 0
        if idle:
            old.close()
        with self._held() as store:
            return read(store.vectors)

    def _snapshot_behind(self) -> bool:
        """Whether the vectors are read from a snapshot that a write to the store has since left behind
        (``c1 index`` in another process: the manifest already shows chunks the snapshot lacks)."""
        from c1.store.flat import FlatVectors, vector_mark

        mark = self._vectors_mark  # None for a read-only copy: nobody writes to it
        return mark is not None and isinstance(self.store.vectors, FlatVectors) and vector_mark(self.settings) != mark


def _file_id(path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino
