"""The manifest: the source of truth of a collection, in one SQLite file.

It records every indexed file (content hash, size, mtime), its documents, and their chunks with
text, span and metadata. Chroma (vectors) and the lexical index are derived from it: after an
interrupted run (``dirty`` flag still set) they are reconciled against it, so a crash at any point
never leaves duplicate, missing or orphaned chunks behind once the next run has finished.

Each chunk keeps a content hash of what was embedded (``hash``), also stored in the chunk's Chroma
metadata: chunk ids are reused across versions of a document, so only the hashes tell whether
Chroma holds the text the manifest records. The ``generation`` counter in ``meta`` goes up with
every committed change, so long-lived readers (``c1 serve``, ``c1 mcp``) know when to reload.

``embedded`` kept the vectors of a long file embedded round by round until its documents were
committed, by a c1 that embedded before committing; a run now only empties it (its chunks are
committed first, then embedded: the ``vector`` flag below).

A chunk's ``vector`` flag says whether Chroma holds its vector: chunks are committed (and searchable
by keywords) before they are embedded, and ``c1 index`` embeds the flagged ones afterwards
(c1/index/indexer.py).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from c1.errors import C1Error

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY, hash TEXT, size INTEGER, mtime_ns INTEGER, kind TEXT
);
CREATE INDEX IF NOT EXISTS files_hash ON files(hash);
CREATE TABLE IF NOT EXISTS pending (path TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS docs (
  doc_id TEXT PRIMARY KEY, key TEXT UNIQUE NOT NULL, path TEXT NOT NULL, title TEXT,
  source_id TEXT, n_chunks INTEGER NOT NULL, meta TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS docs_path ON docs(path);
CREATE TABLE IF NOT EXISTS chunks (
  id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, n INTEGER NOT NULL, start INTEGER NOT NULL,
  "end" INTEGER NOT NULL, page INTEGER, text TEXT NOT NULL, hash TEXT
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, n);
CREATE TABLE IF NOT EXISTS embedded (path TEXT NOT NULL, input TEXT NOT NULL, vector BLOB NOT NULL,
  PRIMARY KEY (path, input));
"""


@dataclass
class Chunk:
    id: str
    doc_id: str
    n: int
    start: int
    end: int
    page: int | None
    text: str
    hash: str | None = None
    """Content hash of the chunk (:func:`chunk_hash`); None in manifests written before hashes."""


def chunk_hash(title: str | None, text: str) -> str:
    """What identifies a chunk's content: its text and its document's title (both shape its vector)."""
    return hashlib.blake2b(f"{title or ''}\0{text}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass
class DocRecord:
    doc_id: str
    key: str
    path: str
    title: str
    source_id: str | None
    n_chunks: int
    meta: dict = field(default_factory=dict)

    def chunk_ids(self) -> list[str]:
        return [f"{self.doc_id}_{n}" for n in range(self.n_chunks)]


@dataclass
class FileRecord:
    path: str
    hash: str | None
    size: int
    mtime_ns: int
    kind: str


class ManifestDamaged(C1Error):
    """The manifest cannot be read: the collection's source of truth is gone, only a re-index helps."""


def _has_log(path: Path) -> bool:
    """Whether a write-ahead log with committed changes may lie beside the manifest."""
    try:
        return path.with_name(path.name + "-wal").stat().st_size > 0
    except OSError:
        return False


def _open_copy(path: Path) -> sqlite3.Connection:
    """The manifest and its write-ahead log read from a private copy (c1/store/readonly.py): SQLite opened
    with ``immutable=1`` ignores the log, where the last changes of the writable home may still be."""
    from c1.store.readonly import private_files

    where = private_files([path, path.with_name(path.name + "-wal")], "manifest")
    db = sqlite3.connect(where / path.name, check_same_thread=False)
    db.execute("PRAGMA query_only=1")
    db.execute("SELECT COUNT(*) FROM meta").fetchone()
    return db


class Manifest:
    def __init__(self, path: Path, readonly: bool = False, immutable: bool = False):
        """``readonly``: open for reading only (``immutable``: the file cannot change while open, as on a
        read-only file system, where SQLite could not create the WAL's shared-memory file; a log beside it
        is then read from a private copy)."""
        self.path = path
        try:
            if readonly and immutable and _has_log(path):
                self.db = _open_copy(path)
            elif readonly:
                mode = "immutable=1" if immutable else "mode=ro"
                self.db = sqlite3.connect(f"{path.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False)
                self.db.execute("SELECT COUNT(*) FROM meta").fetchone()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, check_same_thread=False)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(SCHEMA)
                self._migrate()
            columns = self._columns("chunks")
            self.has_hashes = "hash" in columns
            self.has_vector_flags = "vector" in columns
        except sqlite3.DatabaseError as exc:
            raise ManifestDamaged(f"the manifest {path} cannot be read ({exc})") from None

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.db.execute(f"PRAGMA table_info({table})")}

    def _migrate(self) -> None:
        if "hash" not in self._columns("chunks"):  # manifests written before chunk hashes
            with self.db:
                self.db.execute("ALTER TABLE chunks ADD COLUMN hash TEXT")
        if "vector" not in self._columns("chunks"):  # before keywords-first indexing: every chunk had its vector
            with self.db:
                self.db.execute("ALTER TABLE chunks ADD COLUMN vector INTEGER NOT NULL DEFAULT 1")
        self.db.execute("CREATE INDEX IF NOT EXISTS chunks_without_vector ON chunks(vector) WHERE vector = 0")

    def close(self) -> None:
        self.db.close()

    # generation -------------------------------------------------------------------------
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def _bump(self) -> None:
        """Inside a transaction: one more committed change."""
        self.db.execute(
            "INSERT INTO meta VALUES ('generation', '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )

    def bump_generation(self) -> None:
        with self.db:
            self._bump()

    # meta -------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # files ------------------------------------------------------------------------------
    def files(self) -> dict[str, FileRecord]:
        rows = self.db.execute("SELECT path, hash, size, mtime_ns, kind FROM files")
        return {r[0]: FileRecord(*r) for r in rows}

    def files_under(self, roots: Iterable[str]) -> dict[str, FileRecord]:
        """The files recorded at or below these paths (absolute, ``/``-separated), found through the
        primary key's order: a file watcher asks this of a few changed paths in a collection of any size."""
        out: dict[str, FileRecord] = {}
        for root in roots:
            base = root.rstrip("/")
            rows = self.db.execute(
                "SELECT path, hash, size, mtime_ns, kind FROM files WHERE path = ? OR (path > ? AND path < ?)",
                (root, base + "/", base + "0"),  # "0" follows "/": every path below
            )
            out.update((r[0], FileRecord(*r)) for r in rows)
        return out

    def pending(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT path FROM pending")]

    def mark_pending(self, paths: Iterable[str]) -> None:
        with self.db:
            self.db.executemany("INSERT OR IGNORE INTO pending VALUES (?)", [(p,) for p in paths])

    def invalidate(self, paths: Iterable[str]) -> None:
        """Forget the hash of these files so that the next run that walks them re-indexes them (which the
        pending mark, cleared here, would otherwise have said)."""
        args = [(p,) for p in paths]
        with self.db:
            self.db.executemany("UPDATE files SET hash=NULL WHERE path=?", args)
            self.db.executemany("DELETE FROM pending WHERE path=?", args)

    def touch(self, rec: FileRecord) -> None:
        with self.db:
            self.db.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (rec.size, rec.mtime_ns, rec.path))

    # docs and chunks ----------------------------------------------------------------------
    def docs_of(self, paths: Iterable[str]) -> list[DocRecord]:
        out = []
        for p in paths:
            out.extend(self._docs("WHERE path=?", (p,)))
        return out

    def doc(self, doc_id: str) -> DocRecord | None:
        docs = self._docs("WHERE doc_id=?", (doc_id,))
        return docs[0] if docs else None

    def all_docs(self) -> list[DocRecord]:
        return self._docs("", ())

    def doc_ids_by_key(self) -> dict[str, str]:
        return {k: d for k, d in self.db.execute("SELECT key, doc_id FROM docs")}

    def copies(self, doc_ids: Iterable[str]) -> dict[str, list[tuple[str, str, int]]]:
        """For each of these documents that has copies: the same document of every byte-identical file
        (same content hash, same key past the file's path: a mailbox's message, a JSONL record), as
        ``(doc_id, path, mtime_ns)`` sorted oldest first (then by path), itself included."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        for doc_id in dict.fromkeys(doc_ids):
            row = self.db.execute(
                "SELECT d.key, d.path, f.hash FROM docs d JOIN files f ON f.path = d.path WHERE d.doc_id=?", (doc_id,)
            ).fetchone()
            if row is None or not row[2]:
                continue
            key, path, digest = row
            suffix = key[len(path):] if key.startswith(path) else None
            if suffix is None:
                continue
            same = self.db.execute(
                "SELECT d.doc_id, f.path, f.mtime_ns FROM files f JOIN docs d ON d.key = f.path || ? "
                "WHERE f.hash=?", (suffix, digest)
            ).fetchall()
            if len(same) > 1:
                out[doc_id] = sorted(((d, p, int(m or 0)) for d, p, m in same), key=lambda t: (t[2], t[1]))
        return out

    def _docs(self, where: str, args: tuple) -> list[DocRecord]:
        rows = self.db.execute(
            f"SELECT doc_id, key, path, title, source_id, n_chunks, meta FROM docs {where}", args
        )
        return [DocRecord(*r[:6], meta=json.loads(r[6])) for r in rows]

    def replace_files(self, files: list[FileRecord], docs: list[DocRecord], chunks: list[Chunk],
                      vectors: bool = True) -> None:
        """In one transaction: drop the old documents of ``files``, store the new ones, clear pending.
        ``vectors``: whether Chroma already holds the new chunks' vectors (False: they are to be embedded)."""
        paths = [(f.path,) for f in files]
        with self.db:
            self.db.executemany(
                "DELETE FROM chunks WHERE doc_id IN (SELECT doc_id FROM docs WHERE path=?)", paths
            )
            self.db.executemany("DELETE FROM docs WHERE path=?", paths)
            self.db.executemany(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                [(f.path, f.hash, f.size, f.mtime_ns, f.kind) for f in files],
            )
            self.db.executemany(
                "INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(d.doc_id, d.key, d.path, d.title, d.source_id, d.n_chunks, json.dumps(d.meta)) for d in docs],
            )
            self.db.executemany(
                'INSERT INTO chunks (id, doc_id, n, start, "end", page, text, hash, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                [(c.id, c.doc_id, c.n, c.start, c.end, c.page, c.text, c.hash, int(vectors)) for c in chunks],
            )
            self.db.executemany("DELETE FROM pending WHERE path=?", paths)
            self.db.executemany("DELETE FROM embedded WHERE path=?", paths)
            self._bump()

    def remove_files(self, paths: list[str]) -> None:
        args = [(p,) for p in paths]
        with self.db:
            self.db.executemany("DELETE FROM embedded WHERE path=?", args)
            self.db.executemany(
                "DELETE FROM chunks WHERE doc_id IN (SELECT doc_id FROM docs WHERE path=?)", args
            )
            self.db.executemany("DELETE FROM docs WHERE path=?", args)
            self.db.executemany("DELETE FROM files WHERE path=?", args)
            self.db.executemany("DELETE FROM pending WHERE path=?", args)
            self._bump()

    def indexed_count(self) -> int:
        """Files indexed (skipped ones are recorded without a hash, to be retried)."""
        return self.db.execute("SELECT COUNT(*) FROM files WHERE hash IS NOT NULL").fetchone()[0]

    # vectors an older c1 kept of a long file before committing it: nothing reads them now ----
    def has_kept_vectors(self) -> bool:
        return self.db.execute("SELECT 1 FROM embedded LIMIT 1").fetchone() is not None

    def forget_vectors(self) -> None:
        """Drop every kept vector (left by a c1 that embedded long files before committing them)."""
        with self.db:
            self.db.execute("DELETE FROM embedded")

    def chunk_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT id FROM chunks")}

    def chunk_hashes(self) -> dict[str, str | None]:
        """Every chunk id → its content hash (None where not recorded)."""
        if not self.has_hashes:
            return dict.fromkeys(self.chunk_ids())
        return {r[0]: r[1] for r in self.db.execute("SELECT id, hash FROM chunks")}

    def set_hashes(self, hashes: dict[str, str]) -> None:
        """Record hashes for chunks that had none (manifests from before chunk hashes)."""
        with self.db:
            self.db.executemany("UPDATE chunks SET hash=? WHERE id=?", [(h, i) for i, h in hashes.items()])

    # chunks whose vectors are still to be made ------------------------------------------------
    def without_vectors(self, limit: int | None = None) -> list[str]:
        """Ids of chunks that Chroma does not hold a vector for yet, in the order they were committed."""
        if not self.has_vector_flags:
            return []
        sql = "SELECT id FROM chunks WHERE vector = 0 ORDER BY rowid" + ("" if limit is None else f" LIMIT {int(limit)}")
        return [r[0] for r in self.db.execute(sql)]

    def lacking_vectors(self, ids: list[str]) -> set[str]:
        """Those of ``ids`` whose vectors Chroma does not hold yet."""
        if not self.has_vector_flags or not ids:
            return set()
        out: set[str] = set()
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            marks = ",".join("?" * len(part))
            out.update(r[0] for r in self.db.execute(f"SELECT id FROM chunks WHERE vector = 0 AND id IN ({marks})", part))
        return out

    def count_without_vectors(self) -> int:
        if not self.has_vector_flags:
            return 0
        return self.db.execute("SELECT COUNT(*) FROM chunks WHERE vector = 0").fetchone()[0]

    def set_vectors(self, ids: Iterable[str], present: bool = True, hashes: dict[str, str] | None = None) -> None:
        """Record that Chroma holds (or lacks) the vectors of these chunks; ``hashes``: what was embedded."""
        with self.db:
            self.db.executemany("UPDATE chunks SET vector=? WHERE id=?", [(int(present), i) for i in ids])
            if hashes:
                self.db.executemany("UPDATE chunks SET hash=? WHERE id=?", [(h, i) for i, h in hashes.items()])

    def chunks(self, ids: list[str]) -> list[Chunk]:
        """The chunks with these ids, in the order asked (unknown ids are left out)."""
        found: dict[str, Chunk] = {}
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            for r in self.db.execute(
                f'SELECT id, doc_id, n, start, "end", page, text FROM chunks WHERE id IN ({marks})', part
            ):
                found[r[0]] = Chunk(*r)
        return [found[i] for i in ids if i in found]

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self.db.execute(
            'SELECT id, doc_id, n, start, "end", page, text FROM chunks WHERE doc_id=? ORDER BY n', (doc_id,)
        )
        return [Chunk(*r) for r in rows]

    def iter_chunks(self, batch: int = 2000) -> Iterator[Chunk]:
        cur = self.db.execute('SELECT id, doc_id, n, start, "end", page, text FROM chunks')
        while rows := cur.fetchmany(batch):
            yield from (Chunk(*r) for r in rows)

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "files": one("SELECT COUNT(*) FROM files"),
            "documents": one("SELECT COUNT(*) FROM docs"),
            "chunks": one("SELECT COUNT(*) FROM chunks"),
        }
