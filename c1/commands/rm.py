"""``c1 rm -c NAME``: remove a collection: its folder (manifest, lexical index) and its vectors.

The vectors go first, from the store the manifest records (the embedded store or a ``chroma run``
server): if that store cannot be reached nothing is removed, so the folder that says where the
vectors are is never lost before them. A collection whose folder was deleted by hand still has
its vectors removed.
"""

from __future__ import annotations

import shutil

from c1.config import Settings
from c1.terminal.console import emit_json, err, escape
from c1.errors import C1Error


def run_rm(settings: Settings, *, json_out: bool, quiet: bool) -> int:
    from c1.store.collection import open_manifest
    from c1.store.lock import CollectionLock
    from c1.store.manifest import ManifestDamaged
    from c1.store.vectors import remove_vectors

    name = settings.collection
    cdir = settings.collection_dir
    counts = {"documents": 0, "chunks": 0}
    url = settings.chroma_url
    if (cdir / "manifest.sqlite").exists():
        try:
            manifest, _ = open_manifest(settings, create=False)
            try:
                counts = {k: v for k, v in manifest.counts().items() if k in counts}
                recorded = manifest.get_meta("chroma")
            finally:
                manifest.close()
            if not url and recorded and recorded != "embedded":
                url = recorded
        except ManifestDamaged:
            pass  # the vectors are looked for where --chroma-url (or the embedded store) says
    if cdir.is_dir():
        with CollectionLock(cdir):
            had_vectors = remove_vectors(settings.home, name, url)
            shutil.rmtree(cdir)
    else:
        had_vectors = remove_vectors(settings.home, name, url)
        if not had_vectors:
            raise C1Error(f"no collection {name!r} under {settings.home}" + (f" nor in the Chroma server at {url}" if url else ""))
    where = url or str(settings.home / "chroma")
    if json_out:
        emit_json({"collection": name, "removed": True, **counts, "vectors": where if had_vectors else None})
    if not quiet:
        err().print(f"removed collection [bold]{escape(name)}[/]: {counts['documents']} documents, {counts['chunks']} chunks"
                    + (f"; its vectors in {escape(where)}" if had_vectors else ""), soft_wrap=True)
    return 0
