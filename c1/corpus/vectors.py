"""The vector store: a Chroma collection, embedded (PersistentClient) or remote (HttpClient).

c1 computes embeddings itself (Chroma's default embedding function downloads a model at run
time) and records which embedder it used in the collection's metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from c1.errors import C1Error

if TYPE_CHECKING:
    import numpy as np

BATCH = 4000  # under Chroma's reported maximum batch size (5,461)


def _client(home: Path, url: str | None):
    import chromadb

    settings = chromadb.Settings(anonymized_telemetry=False)
    if url:
        parsed = urlparse(url if "://" in url else f"http://{url}")
        if not parsed.hostname:
            raise C1Error(f"--chroma-url {url!r} is not a URL like http://127.0.0.1:8000")
        try:
            return chromadb.HttpClient(
                host=parsed.hostname,
                port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                ssl=parsed.scheme == "https",
                settings=settings,
            )
        except Exception as exc:  # chromadb raises ValueError/ConnectionError variants
            raise C1Error(f"cannot reach the Chroma server at {url}: {exc}") from None
    home.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(home / "chroma"), settings=settings)


class VectorStore:
    def __init__(self, home: Path, collection: str, url: str | None, embedder_name: str | None, create: bool):
        self.client = _client(home, url)
        self.name = f"c1-{collection}"
        self.where = url or str(home / "chroma")
        try:
            if create:
                self.col = self.client.get_or_create_collection(
                    self.name,
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"c1_embedder": embedder_name or "unknown"},
                )
            else:
                self.col = self.client.get_collection(self.name, embedding_function=None)
        except C1Error:
            raise
        except Exception as exc:
            if not create:
                raise C1Error(f"collection {collection!r} has no vectors in {self.where}: run `c1 index` first") from None
            raise C1Error(f"Chroma at {self.where}: {exc}") from None

    @property
    def embedder_name(self) -> str | None:
        return (self.col.metadata or {}).get("c1_embedder")

    def upsert(self, ids: list[str], vectors: "np.ndarray", texts: list[str], metas: list[dict]) -> None:
        for s in range(0, len(ids), BATCH):
            e = s + BATCH
            self.col.upsert(ids=ids[s:e], embeddings=vectors[s:e], documents=texts[s:e], metadatas=metas[s:e])

    def delete(self, ids: list[str]) -> None:
        for s in range(0, len(ids), BATCH):
            self.col.delete(ids=ids[s : s + BATCH])

    def all_ids(self) -> set[str]:
        out: set[str] = set()
        offset = 0
        while True:
            page = self.col.get(include=[], limit=BATCH, offset=offset)["ids"]
            out.update(page)
            if len(page) < BATCH:
                return out
            offset += BATCH

    def count(self) -> int:
        return self.col.count()

    def query(self, vector: "np.ndarray", k: int) -> list[tuple[str, float]]:
        n = min(k, self.count())
        if n <= 0:
            return []
        res = self.col.query(query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"])
        return [(i, 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0])]

    def vectors(self, ids: list[str]) -> dict[str, "np.ndarray"]:
        if not ids:
            return {}
        got = self.col.get(ids=ids, include=["embeddings"])
        return dict(zip(got["ids"], got["embeddings"]))
