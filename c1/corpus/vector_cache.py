"""Vectors of a long file kept while it is embedded, so that an interrupted run loses none of that work.

A long file's chunks are embedded in rounds (``BATCH_CHUNKS`` at a time, progress after each).
The vectors of each round are also written to the manifest (``embedded``), filed under a hash of
exactly what was embedded; a run killed before the file's documents are committed leaves them
there, and the next run — which re-indexes the file from its source, as after any crash — takes
them instead of embedding the same text again. They are a cache, not state: nothing else reads
them, a changed file simply misses them, and they are dropped once the file is committed.

Why the rounds do not start before the whole file is read (measured on the three SEC filings):
what is embedded for a chunk carries its section heading, and a heading-like line that later pages
repeat (an exhibit's "A-2" footer) stops being a heading; chunks embedded from the pages read so
far came out different for 148 of the 3M 10-K's 532 chunks, and embedding them twice cost more
than the 2-3 s that PDFium takes to read the file. Pages still reach the indexer as they are read,
for its progress line.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from c1.corpus.embedders import Embedder


def input_key(embedder_name: str, text: str) -> str:
    """What a kept vector is filed under: the embedder and the exact text it embedded."""
    return hashlib.blake2b(f"{embedder_name}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class Vectors:
    """Vectors by :func:`input_key`: the kept ones (an interrupted run's), the others embedded on demand."""

    def __init__(self, embedder: Embedder, kept: dict[str, bytes] | None = None):
        import numpy as np

        self.embedder = embedder
        self.found: dict[str, np.ndarray] = {k: np.frombuffer(v, dtype=np.float32) for k, v in (kept or {}).items()}
        self.kept = set(self.found)
        self.reused: set[str] = set()
        """Kept vectors taken."""

    def embed(self, texts: list[str]) -> tuple[np.ndarray, list[str], dict[str, np.ndarray]]:
        """The vectors of ``texts`` in order, their keys, and the vectors embedded now (by key)."""
        import numpy as np

        keys = [input_key(self.embedder.name, t) for t in texts]
        self.reused.update(k for k in keys if k in self.kept)
        missing = {k: t for k, t in zip(keys, texts) if k not in self.found}
        new: dict[str, np.ndarray] = {}
        if missing:
            new = dict(zip(missing, self.embedder.embed(list(missing.values()))))
            self.found.update(new)
        out = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        for row, k in enumerate(keys):
            out[row] = self.found[k]
        return out, keys, new
