"""The vector store: a Chroma collection, embedded (PersistentClient) or remote (HttpClient).

c1 computes embeddings itself (Chroma's default embedding function downloads a model at run
time) and records which embedder it used in the collection's metadata. Each chunk's metadata
also carries the content hash that the manifest keeps (``hash``), so that a crash between the
Chroma write and the manifest write is visible: same id, different hash.

Errors say what failed: a collection that is not there ("run c1 index"), a store that cannot be
opened (damaged: "c1 index --rebuild"), a server that does not answer. Chroma's embedded client
writes to its SQLite file when it opens, so a read-only store is opened from a private copy.
"""

from __future__ import annotations

import sys
import threading
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from c1.errors import C1Error

if TYPE_CHECKING:
    import numpy as np

BATCH = 4000  # under Chroma's reported maximum batch size (5,461)
PREFIX = "c1-"


def chroma_name(collection: str) -> str:
    return PREFIX + collection


def embedded_path(home: Path) -> Path:
    """The embedded Chroma store shared by the collections of ``home``."""
    return home / "chroma"


class StoreUnavailable(C1Error):
    """The Chroma store itself cannot be used (damaged file, server down), not just one collection."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason or message


def _describe(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _chromadb():
    """chromadb, imported by one thread at a time: a reader that searches a snapshot (c1/store/flat.py)
    imports it only when another collection needs it, maybe beside another request's imports."""
    with _IMPORTING:
        import chromadb
        import chromadb.api.client  # noqa: F401 - what fresh_clients reads

    return chromadb


_IMPORTING = threading.Lock()


def _client(home: Path, url: str | None, readonly: bool = False):
    chromadb = _chromadb()
    settings = chromadb.Settings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        if not parsed.hostname:
            raise C1Error(f"--chroma-url {url!r} is not a URL like http://127.0.0.1:8000")
        try:
            with _CLIENTS:
                return chromadb.HttpClient(
                    host=parsed.hostname,
                    port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                    ssl=parsed.scheme == "https",
                    settings=settings,
                )
        except Exception as exc:  # chromadb raises ValueError/ConnectionError variants
            raise StoreUnavailable(f"cannot reach the Chroma server at {url}: {_describe(exc)}", _describe(exc)) from None
    path = embedded_path(home)
    with _CLIENTS:
        return _persistent_client(chromadb, home, path, readonly, settings)


def _persistent_client(chromadb, home: Path, path: Path, readonly: bool, settings):
    if readonly:
        from c1.store.readonly import private_copy

        path = private_copy(path, "chroma")
    else:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise C1Error(f"cannot write to {path}: {exc.strerror}") from None
    try:
        return chromadb.PersistentClient(path=str(path), settings=settings)
    except Exception as exc:
        fresh_clients()  # Chroma caches the half-started client: the next attempt must really open the store
        raise StoreUnavailable(
            f"the embedded Chroma store {embedded_path(home)} cannot be opened ({_describe(exc)}): "
            "`c1 index --rebuild` moves it aside and rebuilds the vectors from the manifest", _describe(exc)
        ) from None


def fresh_clients() -> None:
    """Forget Chroma's per-path client cache: the next embedded client reads the store anew (a long-lived
    reader must, to see what another process wrote; an open client keeps its HNSW index in memory).

    The forgotten clients' systems are stopped once no :class:`VectorStore` uses them any more: left
    running, each held its copy of the index for good: a long-lived reader grew by one such copy at every
    re-index it saw (docs/benchmarks.md, "Figures that were in the code"). Nothing to
    forget in a process that never opened Chroma (its searches read snapshots): chromadb stays unimported."""
    if "chromadb" not in sys.modules:
        return
    _chromadb()
    from chromadb.api.client import SharedSystemClient

    with _CLIENTS:
        for system in SharedSystemClient._identifier_to_system.values():
            if _users.get(id(system)):
                _retired[id(system)] = system
            else:
                _stop(system)
        SharedSystemClient.clear_system_cache()


_CLIENTS = threading.RLock()
"""Chroma's client cache is not safe for threads: two clients created at once for one store can fail
("Could not connect to tenant default_tenant"), so creating, forgetting and releasing them is serialised."""
_users: dict[int, int] = {}
"""id(system) → how many open VectorStores use it."""
_retired: dict[int, object] = {}
"""Systems already forgotten by the cache, stopped when their last VectorStore closes."""


def _use(system) -> None:
    with _CLIENTS:
        _users[id(system)] = _users.get(id(system), 0) + 1


def _release(system) -> None:
    with _CLIENTS:
        left = _users.get(id(system), 1) - 1
        if left > 0:
            _users[id(system)] = left
            return
        _users.pop(id(system), None)
        if _retired.pop(id(system), None) is not None:
            _stop(system)


def _stop(system) -> None:
    try:
        system.stop()
    except Exception:  # already stopped, or half started
        pass


class VectorStore:
    def __init__(self, home: Path, collection: str, url: str | None, embedder_name: str | None, create: bool,
                 readonly: bool = False):
        with _CLIENTS:
            self.client = _client(home, url, readonly=readonly and not url)
            system = getattr(self.client, "_system", None)
            if system is not None:
                _use(system)
        self._release = weakref.finalize(self, _release, system) if system is not None else None
        self.collection = collection
        self.name = chroma_name(collection)
        self.where = url or str(embedded_path(home))
        self.embedder_label = embedder_name or "unknown"
        if create:
            with self._errors("cannot create the collection"):
                self.col = self._create()
            return
        from chromadb.errors import NotFoundError

        try:
            self.col = self.client.get_collection(self.name, embedding_function=None)
        except NotFoundError:
            raise C1Error(f"collection {collection!r} has no vectors in {self.where}: run `c1 index` "
                          "(or `c1 index --rebuild` to rebuild them from the manifest)") from None
        except Exception as exc:
            raise C1Error(f"cannot open collection {collection!r} in Chroma at {self.where}: {_describe(exc)}") from None

    def close(self) -> None:
        """Done with the client (also when collected): a system that :func:`fresh_clients` forgot is stopped."""
        if self._release is not None:
            self._release()

    def _create(self):
        return self.client.get_or_create_collection(
            self.name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"c1_embedder": self.embedder_label},
        )

    @contextmanager
    def _errors(self, what: str):
        """Chroma's exceptions (and the HTTP client's) as one line naming the store."""
        try:
            yield
        except C1Error:
            raise
        except Exception as exc:
            raise C1Error(f"Chroma at {self.where}: {what} {self.name}: {_describe(exc)}") from None

    @property
    def embedder_name(self) -> str | None:
        return (self.col.metadata or {}).get("c1_embedder")

    def reset(self) -> None:
        """Drop every vector of this collection (``c1 index --rebuild``, or a collection re-created by hand)."""
        with self._errors("cannot reset"):
            drop_collection(self.client, self.collection)
            self.col = self._create()

    def upsert(self, ids: list[str], vectors: "np.ndarray", texts: list[str], metas: list[dict]) -> None:
        with self._errors("cannot write to"):
            for s in range(0, len(ids), BATCH):
                e = s + BATCH
                self.col.upsert(ids=ids[s:e], embeddings=vectors[s:e], documents=texts[s:e], metadatas=metas[s:e])

    def delete(self, ids: list[str]) -> None:
        with self._errors("cannot delete from"):
            for s in range(0, len(ids), BATCH):
                self.col.delete(ids=ids[s : s + BATCH])

    def all_ids(self) -> set[str]:
        return set(self.hashes(with_hashes=False))

    def hashes(self, with_hashes: bool = True) -> dict[str, str | None]:
        """Every chunk id in the collection → its content hash (None where not recorded)."""
        out: dict[str, str | None] = {}
        include = ["metadatas"] if with_hashes else []
        offset = 0
        with self._errors("cannot read"):
            while True:
                page = self.col.get(include=include, limit=BATCH, offset=offset)
                metas = page.get("metadatas") or [None] * len(page["ids"])
                out.update((i, (m or {}).get("hash")) for i, m in zip(page["ids"], metas))
                if len(page["ids"]) < BATCH:
                    return out
                offset += BATCH

    def count(self) -> int:
        with self._errors("cannot count"):
            return self.col.count()

    def query(self, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        n = min(k, self.count())
        if n <= 0:
            return []
        with self._errors("cannot query"):
            res = self.col.query(query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"])
        return [(i, 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0])]

    def vectors(self, ids: list[str]) -> dict[str, "np.ndarray"]:
        if not ids:
            return {}
        with self._errors("cannot read"):
            got = self.col.get(ids=ids, include=["embeddings"])
        return dict(zip(got["ids"], got["embeddings"]))


def drop_collection(client, collection: str) -> bool:
    """Delete the Chroma collection of ``collection``; False when there was none."""
    from chromadb.errors import NotFoundError

    try:
        client.delete_collection(chroma_name(collection))
    except NotFoundError:
        return False
    except ValueError as exc:  # older clients: "Collection ... does not exist"
        if "does not exist" not in str(exc):
            raise
        return False
    return True


def remove_vectors(home: Path, collection: str, url: str | None) -> bool:
    """``c1 rm``: delete the collection's vectors from its store; False when the store held none."""
    if not url and not (embedded_path(home) / "chroma.sqlite3").exists():
        return False
    client = _client(home, url)
    try:
        return drop_collection(client, collection)
    except Exception as exc:
        raise C1Error(f"Chroma at {url or embedded_path(home)}: cannot delete {chroma_name(collection)}: "
                      f"{_describe(exc)}") from None


def move_aside(home: Path) -> Path:
    """Rename a damaged embedded store to ``chroma.damaged-N`` and return the new name."""
    src = embedded_path(home)
    n = 1
    while (dest := src.with_name(f"chroma.damaged-{n}")).exists():
        n += 1
    src.rename(dest)
    fresh_clients()
    return dest
