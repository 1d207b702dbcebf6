"""``c1 status``: what is indexed, with which embedder, where, and whether the stores agree."""

from __future__ import annotations

from c1.config import Settings
from c1.console import emit_json, err
from c1.errors import C1Error


def collection_status(settings: Settings) -> dict:
    from c1.corpus.indexer import open_store

    store = open_store(settings, None, create=False)
    try:
        counts = store.manifest.counts()
        expected = store.manifest.chunk_ids()
        chroma_ids = store.vectors.all_ids()
        lexical_ids = store.lexical.all_ids()
        chroma, lexical = len(chroma_ids), len(lexical_ids)
        same = chroma_ids == expected and set(lexical_ids) == expected and lexical == len(expected)
        return {
            "collection": settings.collection,
            "files": counts["files"],
            "documents": counts["documents"],
            "chunks": counts["chunks"],
            "embedder": store.manifest.get_meta("embedder"),
            "store": store.vectors.where,
            "path": str(settings.collection_dir),
            "chroma_chunks": chroma,
            "lexical_chunks": lexical,
            "consistent": same and store.manifest.get_meta("dirty") != "1",
            "interrupted": store.manifest.get_meta("dirty") == "1",
        }
    finally:
        store.close()


def run_status(settings: Settings, *, only: str | None, json_out: bool) -> int:
    root = settings.home / "collections"
    names = [only] if only else sorted(p.name for p in root.iterdir() if (p / "manifest.sqlite").exists()) if root.exists() else []
    if not names:
        raise C1Error(f"no collections under {settings.home}: run `c1 index PATH` first")
    from dataclasses import replace

    rows = [collection_status(replace(settings, collection=n)) for n in names]
    if json_out:
        emit_json({"home": str(settings.home), "collections": rows})
        return 0
    from rich.table import Table

    table = Table(title=f"c1 collections in {settings.home}")
    for col in ("collection", "documents", "chunks", "embedder", "store", "consistent"):
        table.add_column(col)
    for r in rows:
        ok = "yes" if r["consistent"] else f"NO (chroma {r['chroma_chunks']}, lexical {r['lexical_chunks']})"
        table.add_row(r["collection"], str(r["documents"]), str(r["chunks"]), r["embedder"] or "?", r["store"], ok)
    err().print(table)
    for r in rows:
        print(f"{r['collection']}\t{r['documents']} documents\t{r['chunks']} chunks\t{'consistent' if r['consistent'] else 'INCONSISTENT'}")
    return 0
