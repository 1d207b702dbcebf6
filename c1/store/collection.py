"""Opening a collection: its manifest, vector store and lexical index, checked against what the
manifest recorded (the embedder, the Chroma store), for the writer and for the readers alike."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from c1.config import Settings
from c1.errors import C1Error
from c1.store import flat
from c1.store.embedders import Embedder
from c1.store.manifest import Manifest, ManifestDamaged


@dataclass
class Store:
    manifest: Manifest
    vectors: "object"
    lexical: "object | None"
    """None for a reader when the lexical index cannot be opened (``lexical_problem`` says why)."""
    readonly: bool = False
    lexical_problem: str | None = None
    lexical_damaged: bool = False
    """A writer found the lexical index unreadable and started a new one: it must be refilled."""
    notes: list[tuple[str, str]] = field(default_factory=list)
    """(path, what happened) for repairs made while opening, e.g. a damaged store moved aside."""
    vectors_passed_on: bool = False
    """Its vector store was handed to a newer Store of the same reader (open_store's ``vectors``): not closed here."""

    def close(self) -> None:
        try:
            if self.lexical is not None and not self.readonly:
                self.lexical.close()
        finally:
            self.manifest.close()
            close = None if self.vectors_passed_on else getattr(self.vectors, "close", None)
            if close is not None:
                close()


def _store_id(chroma_url: str | None) -> str:
    """"embedded", or the server URL in one spelling (scheme added, trailing slash dropped)."""
    if not chroma_url or chroma_url == "embedded":
        return "embedded"
    url = chroma_url if "://" in chroma_url else f"http://{chroma_url}"
    return url.rstrip("/")


def _describe_store(where: str) -> str:
    return "the embedded store" if where == "embedded" else f"the Chroma server at {where}"


def open_manifest(settings: Settings, create: bool) -> tuple[Manifest, bool]:
    """The collection's manifest and whether it was opened read-only (a reader in a home it cannot write)."""
    from c1.store.readonly import is_writable

    cdir = settings.collection_dir
    path = cdir / "manifest.sqlite"
    if not create and not path.exists():
        raise C1Error(f"no index named {settings.collection!r} under {settings.home}: run `c1 index PATH` first")
    readonly = not create and not is_writable(cdir)
    try:
        return Manifest(path, readonly=not create, immutable=readonly), readonly
    except ManifestDamaged as exc:
        raise ManifestDamaged(
            f"collection {settings.collection!r}: {exc}; it is the collection's source of truth: remove the "
            f"collection with `c1 rm -c {settings.collection}` and index its files again"
        ) from None


def open_store(settings: Settings, embedder: Embedder | None, create: bool, rebuild: bool = False,
               vectors=None, flat_mark: tuple | None = None) -> Store:
    """Open the three parts of a collection; refuse an embedder or a Chroma store other than the
    recorded ones (the manifest would claim chunks that the other store does not hold). Without
    ``--chroma-url``, a collection indexed into a Chroma server is opened on that server.

    A reader (``create=False``) never writes: in a home it cannot write, Chroma and the lexical index
    are read from private copies. A writer replaces an unreadable lexical index by an empty one (the
    run refills it) and, with ``rebuild``, moves an unreadable embedded Chroma store aside.

    ``flat_mark``: a reader's :func:`c1.store.flat.vector_mark` of the store, taken before opening; where
    the collection's snapshot was written at that mark, its vectors are read from it, not from Chroma."""
    manifest, readonly = open_manifest(settings, create)
    try:
        return _open_parts(settings, manifest, embedder, create, rebuild, readonly, vectors, flat_mark)
    except BaseException:
        manifest.close()
        raise


def _open_parts(settings: Settings, manifest: Manifest, embedder: Embedder | None, create: bool, rebuild: bool,
                readonly: bool, kept=None, flat_mark: tuple | None = None) -> Store:
    from c1.store.vectors import StoreUnavailable, VectorStore, move_aside

    cdir = settings.collection_dir
    recorded = manifest.get_meta("embedder")
    recorded_where = manifest.get_meta("chroma")
    if embedder is not None and manifest.counts()["chunks"] == 0:
        recorded = recorded_where = None  # nothing stored yet (a first run that failed): rebind
    if recorded_where and recorded_where != "embedded" and not settings.chroma_url:
        settings = replace(settings, chroma_url=recorded_where)  # the collection's own server
    where = _store_id(settings.chroma_url)
    if recorded_where and _store_id(recorded_where) != where:
        raise C1Error(
            f"collection {settings.collection!r} keeps its vectors in {_describe_store(recorded_where)}, "
            f"not {_describe_store(where)}: use the same --chroma-url, or another --collection"
        )
    switch = bool(create and rebuild and embedder is not None and recorded and recorded != embedder.name)
    if embedder is not None and recorded and recorded != embedder.name and not switch:
        raise C1Error(
            f"collection {settings.collection!r} was indexed with embedder {recorded!r}, not {embedder.name!r}: "
            "use the same --embed-url/--embed-model, or another --collection"
        )
    notes: list[tuple[str, str]] = []
    name = embedder.name if embedder else recorded
    reuse = (kept is not None and not create and kept.collection == settings.collection
             and kept.embedder_label == (name or "unknown") and not settings.chroma_url)
    try:
        if reuse:  # a reader's, whose store no writer changed since (c1.retrieval.corpus.Corpus.refresh)
            vectors = kept
        elif not create and where == "embedded" and (snapshot := flat.load(settings, flat_mark, name or "unknown")) is not None:
            vectors = snapshot
        else:
            vectors = VectorStore(settings.home, settings.collection, settings.chroma_url, name, create,
                                  readonly=readonly)
    except StoreUnavailable as exc:
        if not (create and rebuild and where == "embedded"):
            raise
        moved = move_aside(settings.home)
        notes.append((str(moved), f"the embedded Chroma store could not be opened ({exc.reason}): moved it to {moved} "
                                  "and rebuilt this collection's vectors; the other collections of this home need "
                                  "`c1 index -c NAME` too"))
        vectors = VectorStore(settings.home, settings.collection, settings.chroma_url, name, create)
    if switch:  # --rebuild with another embedder: its vectors go before the new name is recorded (never mixed)
        vectors.reset()
        recorded = None
    if create and embedder is not None and not recorded:  # bound once the store has opened
        manifest.set_meta("embedder", embedder.name)
        manifest.set_meta("chroma", where)
    lexical, problem, damaged = _open_lexical(cdir / "lexical", create, readonly)
    if damaged:
        notes.append((str(cdir / "lexical"), f"{problem}; rebuilt it from the manifest"))
    return Store(manifest, vectors, lexical, readonly, problem, damaged, notes)


def _open_lexical(path: Path, create: bool, readonly: bool):
    """(index or None, what is wrong with it, whether a writer replaced a damaged one)."""
    import shutil

    from c1.store.lexical import LexicalIndex

    if not create and not (path / "meta.json").exists():
        return None, f"the lexical index {path} is missing", False
    try:
        lexical = LexicalIndex(path, readonly=readonly)
        lexical.count()  # opens every segment: a cut or emptied file fails here
        if create and lexical.outdated:  # a reader reads it as it is; the writer refills it
            return lexical, (f"the lexical index {path} was written by an older c1 (numbers and Chinese or "
                             "Japanese text are read otherwise now)"), True
        return lexical, None, False
    except (ValueError, OSError) as exc:
        problem = f"the lexical index {path} is damaged ({str(exc).splitlines()[0][:160]})"
    if not create:
        return None, problem, False
    shutil.rmtree(path, ignore_errors=True)
    return LexicalIndex(path), problem, True
