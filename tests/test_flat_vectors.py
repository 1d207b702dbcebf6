"""The vector snapshot (c1/store/flat.py): a reader searches it as it would search Chroma, never once it is
stale, and a fresh process that reads it does not import chromadb."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from c1.config import Settings
from c1.retrieval.corpus import Corpus
from c1.store import flat
from c1.store.vectors import VectorStore, fresh_clients
from conftest import write_jsonl, hotpot_paragraphs

pytestmark = pytest.mark.slow  # every test indexes a folder with `c1 index` in a subprocess

QUESTIONS = ["Which magazine was started first?", "Who directed the film?", "Where was the scientist born?",
             "the river that flows through the capital", "a band formed in the 1990s"]


def _index(c1_home, run_c1, shared_data, tmp_path) -> tuple[Settings, object]:
    docs = tmp_path / "corpus"
    docs.mkdir()
    write_jsonl(docs / "paragraphs.jsonl", hotpot_paragraphs(shared_data, 4))
    assert run_c1("index", docs, "--quiet").rc == 0
    settings = Settings(home=c1_home)
    assert flat.fresh(settings), "c1 index writes the snapshot of what it embedded"
    return settings, docs


@pytest.fixture
def indexed(c1_home, run_c1, shared_data, tmp_path):
    settings, docs = _index(c1_home, run_c1, shared_data, tmp_path)
    flat.snapshot_path(settings).unlink()  # the tests below start from Chroma alone, as an older index
    return settings, docs


def test_c1_index_writes_the_snapshot_so_that_every_process_answers_alike(c1_home, run_c1, shared_data, tmp_path):
    settings, docs = _index(c1_home, run_c1, shared_data, tmp_path)
    code = ("import json, sys; from pathlib import Path; from c1.config import Settings; "
            "from c1.service.search_service import search_here; "
            "r = search_here(Settings(home=Path(sys.argv[1])), sys.argv[2], lambda *a: None); "
            "print(json.dumps([[(d['id'], d['score']) for d in r.documents], 'chromadb' in sys.modules]))")
    answers = [subprocess.run([sys.executable, "-c", code, str(settings.home), q], capture_output=True, text=True,
                              check=True).stdout for q in QUESTIONS[:2] for _ in range(2)]
    assert answers[0] == answers[1] and answers[2] == answers[3], "the same answer in every process"
    assert json.loads(answers[0])[1] is False, "no chromadb for a first search"
    (docs / "note.md").write_text("# Quarry lease\n\nThe quarry lease at Halvorsen Ridge ends in 2031.\n")
    before = flat.snapshot_path(settings).read_bytes()
    assert run_c1("index", docs, "--quiet").rc == 0
    assert flat.fresh(settings) and flat.snapshot_path(settings).read_bytes() != before, "written anew"


def _open(settings):
    corpus = Corpus(settings)
    return corpus, corpus.store.vectors


def test_a_snapshot_answers_as_chroma_does(indexed):
    settings, _ = indexed
    chroma, store = _open(settings)
    try:
        assert isinstance(store, VectorStore) and not flat.fresh(settings)
        assert chroma.snapshot_vectors() is True
        assert chroma.snapshot_vectors() is False, "once per state of the store"
        assert flat.fresh(settings)
        snap, vectors = _open(settings)
        try:
            assert isinstance(vectors, flat.FlatVectors) and vectors.count() == store.count()
            for q in QUESTIONS:
                v = chroma.embed_query(q)
                want, got = chroma.dense(v, 10), snap.dense(v, 10)
                assert [i for i, _ in got] == [i for i, _ in want], q
                assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
            ids = [i for i, _ in want]
            kept, stored = vectors.vectors(ids + ["no-such-chunk"]), store.vectors(ids)
            assert set(kept) == set(ids) and all(np.allclose(kept[i], stored[i]) for i in ids)
            assert snap.dense(v, 10_000)[-1][1] <= snap.dense(v, 10_000)[0][1] and len(snap.dense(v, 10_000)) == store.count()
            assert snap.snapshot_vectors() is False, "a snapshot's reader writes none"
        finally:
            snap.close()
    finally:
        chroma.close()


def test_a_write_to_the_store_makes_the_snapshot_stale(indexed, run_c1):
    settings, docs = indexed
    corpus, _ = _open(settings)
    assert corpus.snapshot_vectors()
    corpus.close()
    old = flat.snapshot_path(settings).read_bytes()
    (docs / "note.md").write_text("# Quarry lease\n\nThe quarry lease at Halvorsen Ridge ends in 2031.\n")
    assert run_c1("index", docs, "--quiet").rc == 0
    flat.snapshot_path(settings).write_bytes(old)  # the snapshot of the store before that write
    assert not flat.fresh(settings)
    fresh_clients()  # as a long-lived reader does: Chroma's cached client keeps the index it read
    corpus, vectors = _open(settings)
    try:
        assert isinstance(vectors, VectorStore), "a stale snapshot is never read"
        top = corpus.dense(corpus.embed_query("When does the quarry lease at Halvorsen Ridge end?"), 1)
        assert "Halvorsen" in corpus.chunks([top[0][0]])[0].text
    finally:
        corpus.close()


def test_a_damaged_or_foreign_snapshot_is_ignored(indexed):
    settings, _ = indexed
    corpus, _ = _open(settings)
    assert corpus.snapshot_vectors()
    corpus.close()
    path = flat.snapshot_path(settings)
    path.write_bytes(path.read_bytes()[:5000])  # cut
    corpus, vectors = _open(settings)
    assert isinstance(vectors, VectorStore) and corpus.dense(corpus.embed_query(QUESTIONS[0]), 3)
    assert corpus.snapshot_vectors() and isinstance(_open(settings)[1], flat.FlatVectors), "rewritten whole"
    corpus.close()
    other = Settings(home=settings.home, collection="other")
    other.collection_dir.mkdir(parents=True)
    (other.collection_dir / flat.SNAPSHOT).write_bytes(path.read_bytes())  # another collection's stamp
    assert flat.load(other, flat.vector_mark(other), "unknown") is None


def test_no_snapshot_above_the_size_limit(indexed, monkeypatch):
    settings, _ = indexed
    corpus, store = _open(settings)
    try:
        monkeypatch.setattr(flat, "FLAT_MAX", store.count() - 1)
        assert corpus.snapshot_vectors() is False and not flat.snapshot_path(settings).exists()
    finally:
        corpus.close()


def test_a_fresh_process_searches_the_snapshot_without_importing_chromadb(indexed):
    settings, _ = indexed
    code = ("import json, sys; from pathlib import Path; from c1.config import Settings; "
            "from c1.service.search_service import search_here; "
            "r = search_here(Settings(home=Path(sys.argv[1])), sys.argv[2], lambda *a: None); "
            "print(json.dumps([[d['id'] for d in r.documents], 'chromadb' in sys.modules]))")

    def search() -> tuple[list[str], bool]:
        out = subprocess.run([sys.executable, "-c", code, str(settings.home), QUESTIONS[0]], capture_output=True,
                             text=True, check=True).stdout
        return tuple(json.loads(out))

    with_chroma = search()
    assert with_chroma[1] is True
    corpus, _ = _open(settings)
    assert corpus.snapshot_vectors()
    corpus.close()
    from_snapshot = search()
    assert from_snapshot == (with_chroma[0], False)
