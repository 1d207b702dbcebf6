"""Exact dense search from a snapshot of a collection's vectors, for readers that need not open Chroma.

Importing chromadb is the largest part of a fresh process's first search (docs/benchmarks.md, "Where
the first search's time goes"), and Chroma's HNSW graph is approximate and rebuilt on opening from its
write log, so two processes can find different neighbours for one query. So for an embedded collection of up to
:data:`FLAT_MAX` chunks, ``c1 index`` (once every chunk has its vector) and the resident process (once it
has answered a search, after a watch's writes) write the vectors Chroma holds (ids and a float32 matrix)
to ``vectors.npz`` beside the manifest, stamped with the Chroma store's :func:`vector_mark`. A reader
whose mark equals the stamp searches the snapshot by exact cosine similarity instead of opening
Chroma; every write to the Chroma store changes the mark, so a stale snapshot is never read (that
reader opens Chroma as before, and the resident process writes a new snapshot after its search).

Chroma stays the store of the vectors: the snapshot is a cache that any reader may ignore and anyone
may delete. Below :data:`FLAT_MAX` an exact scan is as fast as Chroma's query and finds what its HNSW
graph finds, up to the graph's approximation (bench/flat_vectors.py counts the top 50 both share;
docs/benchmarks.md, "The vector snapshot").
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from c1.config import Settings

SNAPSHOT = "vectors.npz"
FLAT_MAX = 25_000
"""The most chunks a snapshot is written for: about where a scan, whose cost grows with the number of
chunks, costs what Chroma's HNSW query costs, which grows with its log (bench/flat_vectors.py times both,
one BLAS thread; docs/benchmarks.md, "The vector snapshot").
A larger collection is searched through Chroma, and its first search pays chromadb's import."""
BATCH = 4000


def vector_mark(settings: "Settings") -> tuple | None:
    """What changes whenever a writer changes the embedded Chroma store's vectors: every add, update or
    delete (of any collection) takes the next number of Chroma's write log (``embeddings_queue``; each
    segment's last applied number is kept in ``max_seq_id`` once the log is purged), a re-created
    collection has another id, a store moved aside another file. Not the files' times: a writer that
    only opens the store (the keyword phase of ``c1 index``) rewrites its HNSW files unchanged. None for
    a Chroma server (always read afresh) or when the store cannot be read (then it is reopened)."""
    if settings.chroma_url:
        return None
    path = settings.home / "chroma" / "chroma.sqlite3"
    try:
        inode = os.stat(path).st_ino
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            return (inode, tuple(db.execute("SELECT MAX(seq_id), COUNT(*) FROM embeddings_queue")),
                    tuple(db.execute("SELECT segment_id, seq_id FROM max_seq_id ORDER BY segment_id")),
                    tuple(db.execute("SELECT id, name FROM collections ORDER BY id")))
        finally:
            db.close()
    except (OSError, sqlite3.Error):
        return None


def _stamp(mark: tuple, collection: str, embedder_label: str) -> list:
    """What a snapshot is stamped with, as it reads back from the file (JSON: tuples become lists)."""
    return json.loads(json.dumps([mark, collection, embedder_label]))


def _stamped(settings: "Settings", mark: tuple | None):
    """The collection's snapshot file opened (an ``NpzFile``, to be closed) and its stamp read, or None
    when there is no mark or no readable snapshot."""
    path = snapshot_path(settings)
    if mark is None or not path.is_file():
        return None
    import numpy as np

    try:
        z = np.load(path, allow_pickle=False)
    except Exception:  # noqa: BLE001 - a cut or foreign file is only a cache that is not there
        return None
    try:
        return z, json.loads(str(z["stamp"]))
    except Exception:  # noqa: BLE001 - as above
        z.close()
        return None


def snapshot_path(settings: "Settings") -> Path:
    return settings.collection_dir / SNAPSHOT


class FlatVectors:
    """The read side of :class:`c1.store.vectors.VectorStore` over a snapshot: ``query`` scans every vector."""

    def __init__(self, ids: list[str], matrix: "np.ndarray", collection: str, where: str, embedder_label: str):
        import numpy as np

        self.ids = ids
        self._rows = {cid: i for i, cid in enumerate(ids)}
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self._norms = np.where(norms > 0, norms, 1.0)
        self._unit = matrix / self._norms  # one copy in memory: a stored vector is its unit row × its norm
        self.collection = collection
        self.where = where
        self.embedder_label = embedder_label

    @property
    def embedder_name(self) -> str | None:
        return self.embedder_label

    def close(self) -> None:
        pass

    def count(self) -> int:
        return len(self.ids)

    def query(self, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        """The ``k`` nearest by cosine similarity (Chroma's ``1 - cosine distance``), best first."""
        import numpy as np

        n = min(k, len(self.ids))
        if n <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        sims = self._unit @ (q / norm if norm > 0 else q)
        top = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
        top = top[np.lexsort((top, -sims[top]))]  # best first; equal scores in the snapshot's order
        ids = self.ids
        return [(ids[i], s) for i, s in zip(top.tolist(), sims[top].tolist())]  # Python numbers, read at once

    def vectors(self, ids: list[str]) -> dict[str, "np.ndarray"]:
        rows = {cid: self._rows[cid] for cid in ids if cid in self._rows}
        return {cid: self._unit[r] * self._norms[r] for cid, r in rows.items()}


def load(settings: "Settings", mark: tuple | None, embedder_label: str) -> FlatVectors | None:
    """The snapshot of ``settings``' collection if it was written at ``mark`` for this embedder, else None."""
    import numpy as np

    opened = _stamped(settings, mark)
    if opened is None:
        return None
    z, stamp = opened
    try:
        if stamp != _stamp(mark, settings.collection, embedder_label):
            return None
        ids = [str(i) for i in z["ids"]]
        matrix = np.ascontiguousarray(z["vectors"], dtype=np.float32)
    except Exception:  # noqa: BLE001 - a cut or foreign file is only a cache that is not there
        return None
    finally:
        z.close()
    if matrix.ndim != 2 or len(ids) != len(matrix):
        return None
    return FlatVectors(ids, matrix, settings.collection, str(settings.home / "chroma"), embedder_label)


def fresh(settings: "Settings") -> bool:
    """Whether the collection has a snapshot written at the store's present mark (only its stamp is read):
    the resident process then need not import chromadb ahead of its first search."""
    mark = vector_mark(settings)
    opened = _stamped(settings, mark)
    if opened is None:
        return False
    z, stamp = opened
    z.close()
    return stamp[:2] == _stamp(mark, settings.collection, "")[:2]


def write(settings: "Settings", vectors, mark: tuple | None) -> bool:
    """Write the snapshot of what ``vectors`` (an open :class:`~c1.store.vectors.VectorStore`) holds, if it
    is embedded, holds 1 to :data:`FLAT_MAX` vectors and no writer changed it while it was read (the mark
    before and after). Atomic: a reader finds the old file or the new one. True when written."""
    import numpy as np

    if mark is None or settings.chroma_url or not os.access(settings.collection_dir, os.W_OK):
        return False
    total = vectors.count()
    if not 0 < total <= FLAT_MAX:
        return False
    ids: list[str] = []
    parts = []
    offset = 0
    while offset < total:
        page = vectors.col.get(include=["embeddings"], limit=BATCH, offset=offset)
        if not page["ids"]:
            break
        ids.extend(page["ids"])
        parts.append(np.asarray(page["embeddings"], dtype=np.float32))
        offset += len(page["ids"])
    if len(ids) != total or len(set(ids)) != total or vector_mark(settings) != mark:
        return False  # a writer meanwhile: the next search's snapshot will be right
    path = snapshot_path(settings)
    tmp = path.with_name(f".{SNAPSHOT}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, ids=np.asarray(ids), vectors=np.concatenate(parts),
                     stamp=np.asarray(json.dumps(_stamp(mark, settings.collection, vectors.embedder_label))))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
    return True
