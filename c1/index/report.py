"""What an index run tells: :class:`Progress` as it goes (the progress line), :class:`IndexReport`
at the end (``c1 index``'s summary and ``--json``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field


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
    """Chunks written by this run (the chunks of the files added and updated)."""
    embedded: int = 0
    """Chunks embedded by this run (those it wrote, and those an earlier run left without a vector)."""
    without_vectors: int = 0
    """Chunks of the collection still without a vector when the run ended (found by keywords only)."""
    total_chunks: int = 0
    seconds: float = 0.0
    lexical_seconds: float = 0.0
    """From the start of the run until every file was searchable by keywords."""
    embed_seconds: float = 0.0
    repaired: bool = False

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
    """Chunks embedded so far, round by round."""
    chunks_written: int = 0
    """Chunks of the files committed so far (searchable by keywords), batch by batch."""
    chunks_total: int = 0
    """Chunks to embed in this run (known once every file is read)."""
    phase: str = "reading"
    """"reading" (files → keywords) or "embedding" (chunks → vectors)."""
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
