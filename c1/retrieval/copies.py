"""Byte-identical copies of a file found by a search are one result that lists every path.

Each copy is indexed (the manifest tracks every file, so that removing one copy keeps the others
searchable), but a search that finds several copies of one document shows it once: at the best rank
any copy reached, under the oldest copy (the earliest modification time, then the first path:
``cp`` gives the copy a newer time), with ``paths`` listing every copy, that one first.
"""

from __future__ import annotations


def collapse(manifest, ranked: list[tuple[str, float]]) -> tuple[list[tuple[str, float]], dict[str, dict]]:
    """``ranked`` (doc id, score) without the later copies of a document ranked before; and, for each
    document kept that has copies, ``{"id": the oldest copy's id, "paths": every copy's path}``."""
    groups = manifest.copies(doc_id for doc_id, _ in ranked)
    out: list[tuple[str, float]] = []
    copies: dict[str, dict] = {}
    taken: set[str] = set()
    for doc_id, score in ranked:
        group = groups.get(doc_id, [(doc_id, "", 0)])
        ids = {d for d, _, _ in group}
        if ids & taken:
            continue
        taken |= ids
        out.append((doc_id, score))
        if len(group) > 1:
            copies[doc_id] = {"id": group[0][0], "paths": [p for _, p, _ in group]}
    return out, copies


def present(corpus, document: dict, copy: dict | None) -> dict:
    """A result document built from the copy the search saw (its chunks, as it saw them), shown as the
    oldest copy (its id, title and path) with every copy's ``paths``; the copies' chunks are the same."""
    if copy is None:
        return document
    seen, first = document["id"], copy["id"]
    rec = corpus.doc(first) if first != seen else None
    if rec is not None:
        document.update(id=first, title=rec.title, path=rec.path, source_id=rec.source_id)
        for chunk in document.get("chunks", []):
            if chunk["id"].startswith(seen + "_"):
                chunk["id"] = first + chunk["id"][len(seen):]
    document["paths"] = copy["paths"]
    return document
