"""Repair: the checks and fixes that bring Chroma and the lexical index back in line with the
manifest, which is the source of truth (the order of writes that makes this enough is told in
:mod:`c1.index.indexer`), and the cleanup after a first run that stored nothing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from c1.index.headers import stored_contexts
from c1.store.manifest import Manifest

if TYPE_CHECKING:
    from c1.store.collection import Store


def reconcile_vectors(store: "Store", rebuild: bool = False) -> None:
    """Chroma against the manifest: its orphans and stale vectors are deleted, every chunk whose vector
    is missing is flagged for phase 2, one whose vector a run wrote but did not unflag is unflagged.
    ``rebuild``: Chroma is emptied first, so every chunk is flagged."""
    manifest = store.manifest
    expected = manifest.chunk_hashes()
    if rebuild or not expected:
        if rebuild or store.vectors.count():
            store.vectors.reset()
        present: dict[str, str | None] = {}
    else:
        present = store.vectors.hashes()
    stale = {i for i, h in expected.items() if i in present and h and present[i] and h != present[i]}
    store.vectors.delete(sorted((set(present) - set(expected)) | stale))
    held = {i for i in present if i in expected and i not in stale}
    flagged = set(manifest.without_vectors())
    manifest.set_vectors(sorted(set(expected) - held - flagged), False)
    manifest.set_vectors(sorted(held & flagged), True)  # written to Chroma by a run stopped before unflagging


def refill_lexical(store: "Store") -> None:
    """The lexical index emptied and refilled from the manifest's chunks."""
    manifest = store.manifest
    store.lexical.clear()
    for d in manifest.all_docs():
        doc_chunks = manifest.doc_chunks(d.doc_id)
        headers = stored_contexts(d, doc_chunks)
        for c in doc_chunks:
            store.lexical.add(c.id, c.doc_id, headers[c.id].identity, headers[c.id].lexical_text(c.text))
    store.lexical.commit()


def out_of_sync(store: "Store") -> bool:
    """Cheap check at the start of a run: the lexical index holds as many chunks as the manifest, Chroma at
    least as many as have their vector and at most all of them."""
    n = store.manifest.counts()["chunks"]
    if store.lexical_damaged or store.lexical.count() != n:
        return True
    return not n - store.manifest.count_without_vectors() <= store.vectors.count() <= n


def forget_failed_first_run(cdir: Path, store: "Store | None") -> None:
    """A first run that failed before storing any chunk leaves no collection behind (it would be listed by
    ``c1 status`` as an empty, inconsistent one): its Chroma collection and its folder are removed."""
    import shutil

    manifest_path = cdir / "manifest.sqlite"
    if store is not None:
        try:
            kept = store.manifest.counts()["chunks"] > 0
            if not kept:
                from c1.store.vectors import drop_collection

                drop_collection(store.vectors.client, store.vectors.collection)
        except Exception:
            kept = False  # the store is failing (that may be why the run failed): the folder still goes
        finally:
            try:
                store.close()
            except Exception:
                pass
        if kept:
            return
    elif manifest_path.exists():
        try:
            m = Manifest(manifest_path, readonly=True)
            try:
                if m.counts()["chunks"]:
                    return
            finally:
                m.close()
        except Exception:
            pass
    shutil.rmtree(cdir, ignore_errors=True)
