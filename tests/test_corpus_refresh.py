"""A re-opened collection closes the store it replaces (Corpus.refresh), but never under a call
that is still reading it."""

from __future__ import annotations

import sqlite3

import pytest

from c1.retrieval.corpus import Corpus
from c1.config import Settings

pytestmark = pytest.mark.slow  # a real index written and read again by two Corpus objects


def _closed(store) -> bool:
    try:
        store.manifest.db.execute("SELECT 1")
        return False
    except sqlite3.ProgrammingError:
        return True


def _one_note_indexed(c1_home, run_c1, tmp_path):
    """A folder with one note, indexed, and a long-lived reader of it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Ridge survey\n\nThe ridge survey is due on Friday.\n")
    assert run_c1("index", docs, "--quiet").rc == 0
    return docs, Corpus(Settings(home=c1_home))


def test_refresh_closes_the_store_it_replaces_once_no_call_reads_it(c1_home, run_c1, tmp_path):
    docs, corpus = _one_note_indexed(c1_home, run_c1, tmp_path)
    try:
        first = corpus.store
        assert corpus.refresh() is False and corpus.store is first  # nothing changed: the same store
        (docs / "b.md").write_text("# Boiler\n\nThe boiler was serviced in March.\n")
        assert run_c1("index", docs, "--quiet").rc == 0
        assert corpus.refresh() is True
        assert corpus.store is not first and _closed(first), "the replaced store is closed, not left to the collector"
        # a call still reading the current store keeps it open through a re-open; its end closes it
        second = corpus.store
        (docs / "c.md").write_text("# Orchard\n\nThe orchard was planted in 1990.\n")
        assert run_c1("index", docs, "--quiet").rc == 0
        with corpus._held() as store:
            assert store is second
            assert corpus.refresh() is True
            assert not _closed(second) and store.manifest.generation() >= 0  # still readable
        assert _closed(second) and not _closed(corpus.store)
        assert len(_doc_ids(corpus)) == 3
        assert corpus.bm25("orchard planted", 3), "the new store answers"
    finally:
        corpus.close()
    assert _closed(corpus.store)


def _doc_ids(corpus):
    return [d for d, in corpus.store.manifest.db.execute("SELECT doc_id FROM docs")]


def test_a_keyword_commit_reuses_the_vector_store_and_its_search_finds_the_new_file(c1_home, run_c1, tmp_path):
    """While `c1 index` writes keywords (manifest and lexical index; the Chroma store untouched), a refresh
    keeps its Chroma client (no new client, no HNSW index read again) and still finds the newly committed
    file; once vectors are written, the Chroma store changed: a new client, which finds the new file by vector."""
    docs, corpus = _one_note_indexed(c1_home, run_c1, tmp_path)
    try:
        first = corpus.store
        vectors = first.vectors
        (docs / "b.md").write_text("# Boiler\n\nThe boiler was serviced in March by the caretaker.\n")
        assert run_c1("index", docs, "--quiet", "--keywords-only").rc == 0
        assert corpus.refresh() is True and corpus.store is not first
        assert corpus.store.vectors is vectors, "only keywords changed: the same Chroma client"
        assert _closed(first) and corpus.store.vectors.count() >= 1, "the old store closed, its vectors kept open"
        hits = [chunk for chunk, _ in corpus.bm25("boiler serviced caretaker", 3)]
        assert hits and corpus.chunks(hits[:1])[0].text.count("boiler"), "the new file is found at once"
        assert corpus.embedding and corpus.embedding["embedded"] == 1  # its chunk has no vector yet: said

        assert run_c1("index", docs, "--quiet").rc == 0  # embeds b.md: the Chroma store changes
        assert corpus.refresh() is True
        assert corpus.store.vectors is not vectors, "vectors written: a new client"
        assert corpus.embedding is None
        near = corpus.dense(corpus.embed_query("boiler serviced caretaker"), 1)
        assert near and "boiler" in corpus.chunks([near[0][0]])[0].text.lower()
    finally:
        corpus.close()


def test_chunks_remembered_are_those_of_the_state_read(c1_home, run_c1, tmp_path):
    """Corpus.chunks and doc_chunks remember what the manifest gave (four runs asked one SQLite connection
    for the same candidates at once); a file edited and indexed again is read anew after the refresh."""
    docs, corpus = _one_note_indexed(c1_home, run_c1, tmp_path)
    try:
        (doc_id,) = _doc_ids(corpus)
        before = corpus.doc_chunks(doc_id)
        assert "Friday" in before[0].text
        ids = [c.id for c in before]
        assert corpus.chunks(ids + ids[:1] + ["nope_0"]) == before + before[:1], "in the order asked, unknown left out"
        with sqlite3.connect(corpus.store.manifest.path) as other:  # changed under it, no new generation
            other.execute("UPDATE chunks SET text = 'changed under it' WHERE doc_id = ?", (doc_id,))
        assert corpus.store.manifest.chunks(ids)[0].text == "changed under it"
        assert corpus.chunks(ids)[0].text == before[0].text and corpus.doc_chunks(doc_id) == before, "remembered"
        (docs / "a.md").write_text("# Ridge survey\n\nThe ridge survey moved to Monday.\n")
        assert run_c1("index", docs, "--quiet").rc == 0
        assert corpus.refresh() is True
        (doc_id,) = _doc_ids(corpus)
        assert "Monday" in corpus.doc_chunks(doc_id)[0].text
        assert "Monday" in corpus.chunks([c.id for c in corpus.doc_chunks(doc_id)])[0].text
    finally:
        corpus.close()
