"""The collections an eval searches: named from the dataset and a content hash, built with the
normal indexer under the normal home (``eval-<dataset>-<hash>``; one per question in the
per-question setting), and marked when complete, so a second run reuses them without touching the
embedder."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable

from c1.config import Settings
from c1.errors import C1Error
from c1.eval.datasets import Passage


def collection_name(dataset: str, fingerprint: str, settings: Settings, embedder_name: str, per_question: bool) -> str:
    """``eval-<dataset>-<hash>`` (``eval-<dataset>-q<hash>`` per question): the hash covers the
    corpus content, the embedder, the chunking and what is indexed with each chunk (its header),
    so any change gives a fresh collection."""
    from c1.index.headers import HEADER_VERSION

    h = hashlib.blake2b(f"{fingerprint}\0{embedder_name}\0{settings.chunk_tokens}\0{settings.chunk_overlap}"
                        f"\0{HEADER_VERSION}".encode(), digest_size=8).hexdigest()
    return f"eval-{dataset}-{'q' if per_question else ''}{h}"


MARKER = "eval-ready.json"


def ensure_collection(settings: Settings, embedder, name: str, passages: list[Passage] | tuple[Passage, ...],
                      files: list[str] | tuple[str, ...] = (), progress: Callable | None = None) -> tuple[Settings, bool]:
    """Settings for collection ``name``, indexing it first unless a complete one exists.

    Returns (settings, built); ``progress`` gets the indexer's progress. Passages are written to ``<home>/eval/corpora/<name>.jsonl`` and
    indexed with the normal indexer (their ``id`` becomes each document's ``source_id``).
    """
    s = dataclasses.replace(settings, collection=name)
    marker = s.collection_dir / MARKER
    if marker.is_file():
        return s, False
    from c1.index.indexer import Indexer

    paths = list(files)
    if passages:
        corpora = settings.home / "eval" / "corpora"
        corpora.mkdir(parents=True, exist_ok=True)
        path = corpora / f"{name}.jsonl"
        tmp = path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            for p in passages:
                f.write(json.dumps({"id": p.id, "title": p.title, "text": p.text}, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
        paths.append(str(path))
    if not paths:
        raise C1Error(f"collection {name}: the corpus is empty")
    report = Indexer(s, embedder, progress=progress).run(paths)
    if report.skipped and report.total_chunks == 0:
        raise C1Error(f"collection {name}: nothing could be indexed ({report.skipped[0]['reason']})")
    marker.write_text(json.dumps({"documents": report.documents, "chunks": report.total_chunks,
                                  "skipped": report.skipped[:20]}, ensure_ascii=False))
    return s, True
