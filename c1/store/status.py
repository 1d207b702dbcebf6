"""A collection's status: what is indexed, with which embedder, where, and whether the stores agree.

Every collection folder of a home is listed, each checked in the store its manifest records (an
embedded collection in the embedded store whatever ``--chroma-url`` says). One that cannot be opened
(damaged manifest, a Chroma server that does not answer, a folder left by an older c1) gets a row with
its reason; it never hides the others. Agreement means: the same chunk ids in the manifest, Chroma and
the lexical index, the same content hash in the manifest and Chroma, and no interrupted run.
``c1 status`` shows these rows (c1/commands/status.py); the search service keeps them (c1/service/search_service.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from c1.config import Settings, collection_name_problem, is_eval_collection
from c1.errors import C1Error


def collection_names(home: Path, evals: bool = False) -> list[str]:
    """Every folder under ``home/collections``, valid name or not, sorted; ``c1 eval``'s collections only
    with ``evals`` (they are many, and not the user's)."""
    root = home / "collections"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (evals or not is_eval_collection(p.name)))


def collection_status(settings: Settings) -> dict:
    """One collection's counts and agreement; raises C1Error when it cannot be opened."""
    from c1.store.collection import open_manifest, open_store
    from c1.store.lock import lock_holder

    manifest, _ = open_manifest(settings, create=False)
    try:
        counts = manifest.counts()
        recorded = manifest.get_meta("embedder")
        store_id = manifest.get_meta("chroma")
    finally:
        manifest.close()
    if store_id in (None, "embedded"):  # looked at where it lives: --chroma-url names the server collections' store
        settings = replace(settings, chroma_url=None)
    row = {
        "collection": settings.collection,
        "files": counts["files"],
        "documents": counts["documents"],
        "chunks": counts["chunks"],
        "embedder": recorded,
        "path": str(settings.collection_dir),
    }
    if counts["chunks"] == 0 and not recorded:  # created, never filled: no store to look at
        return {**row, "store": None, "chroma_chunks": 0, "lexical_chunks": 0, "stale_chunks": 0,
                "consistent": True, "interrupted": False, "writer": None, "problems": []}
    store = open_store(settings, None, create=False)
    try:
        expected = store.manifest.chunk_hashes()
        without = set(store.manifest.without_vectors())  # committed, searchable by keywords, not embedded yet
        chroma = store.vectors.hashes()
        problems = []
        if store.lexical is None:
            lexical_ids: list[str] = []
            problems.append(store.lexical_problem)
        else:
            lexical_ids = store.lexical.all_ids()
        stale = sum(1 for i, h in expected.items() if h and chroma.get(i) and chroma[i] != h)
        if not set(expected) - without <= set(chroma) <= set(expected):
            problems.append(f"Chroma holds {len(chroma)} chunks, the manifest {len(expected)}"
                            + (f" ({len(without)} still to embed)" if without else ""))
        if stale:
            problems.append(f"{stale} chunk(s) in Chroma differ from the manifest")
        if store.lexical is not None and (set(lexical_ids) != set(expected) or len(lexical_ids) != len(expected)):
            problems.append(f"the lexical index holds {len(lexical_ids)} chunks, the manifest {len(expected)}")
        interrupted = store.manifest.get_meta("dirty") == "1"
        embedding = store.manifest.get_meta("embedding") == "1" and bool(without)
        writer = lock_holder(settings.collection_dir) if interrupted or embedding or problems else None
        if writer is not None:  # a run in progress, not an interrupted one: what it has written is searchable
            interrupted = False
            problems = []
            row["being_indexed"] = f"being indexed (pid {writer.get('pid', '?')})"
        elif interrupted or embedding:
            interrupted = True
            problems.append("an index run was interrupted" + (" while embedding" if embedding and not problems else ""))
        if problems and writer is None:
            problems.append("`c1 index` repairs it")
        return {
            **row,
            "store": store.vectors.where,
            "chroma_chunks": len(chroma),
            "lexical_chunks": len(lexical_ids),
            "stale_chunks": stale,
            "without_vectors": len(without),
            "consistent": not problems,
            "interrupted": interrupted,
            "writer": writer,
            "problems": problems,
        }
    finally:
        store.close()


def status_row(settings: Settings, name: str) -> dict:
    """:func:`collection_status`, or a row with ``error`` when the collection cannot be opened."""
    path = settings.home / "collections" / name
    bad_name = collection_name_problem(name)
    if bad_name:
        return {"collection": name, "path": str(path), "consistent": False,
                "error": f"{bad_name} (a folder left by an older c1): delete the folder {path}"}
    try:
        return collection_status(replace(settings, collection=name))
    except C1Error as exc:
        return {"collection": name, "path": str(path), "consistent": False, "error": str(exc)}
    except Exception as exc:  # a store failing in a way not foreseen: reported in its row, the others still shown
        return {"collection": name, "path": str(path), "consistent": False,
                "error": f"{type(exc).__name__}: {exc}"}
