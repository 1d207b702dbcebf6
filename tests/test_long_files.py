"""A long file: progress moves while it is read and embedded, and a run killed while embedding it keeps the
chunks already embedded (the next run embeds only the others)."""

from __future__ import annotations

import signal
import sqlite3

import numpy as np
import pytest

from conftest import chroma_collection, copy_file, inspect_collection, wait_for

PDF = "sec/AMCOR_2023Q4_EARNINGS.pdf"  # 14 pages, 26 chunks
ROUND = 8
"""Chunks per embedding round in these tests (BATCH_CHUNKS): a few rounds for this one file."""


@pytest.fixture
def long_pdf(shared_data, tmp_path):
    return copy_file(shared_data / PDF, tmp_path / "docs" / "amcor.pdf")


@pytest.mark.slow
def test_progress_moves_inside_a_long_file(c1_home, long_pdf, monkeypatch):
    from c1.config import load_settings
    from c1.index import indexer
    from c1.store.embedders import make_embedder

    monkeypatch.setattr(indexer, "BATCH_CHUNKS", ROUND)
    seen = []
    report = indexer.Indexer(load_settings(), make_embedder(),
                             progress=lambda p: seen.append((p.files_done, p.chunks_done, p.page, p.pages, p.phase,
                                                             p.chunks_total))).run([str(long_pdf.parent)])
    assert report.chunks > 2 * ROUND and report.embedded == report.chunks
    pages = [(page, total) for done, _, page, total, phase, _ in seen if done == 0 and page]
    assert [page for page, _ in pages] == list(range(1, 15)) and {total for _, total in pages} == {14}, \
        "every page shown as it is read"
    reading = [s for s in seen if s[4] == "reading"]
    embedding = [s for s in seen if s[4] == "embedding"]
    assert reading and embedding and seen.index(embedding[0]) > seen.index(reading[-1]), "keywords first, then vectors"
    assert {s[0] for s in embedding} == {1} and {s[5] for s in embedding} == {report.chunks}
    inside = sorted({s[1] for s in embedding if s[1]})
    assert inside[:3] == [ROUND, 2 * ROUND, 3 * ROUND], "chunks counted round by round"
    assert seen[-1][:2] == (1, report.chunks)


def vector_flags(home) -> tuple[int, int]:
    """(chunks with their vector, chunks without) in the manifest."""
    db = sqlite3.connect(f"file:{home / 'collections' / 'default' / 'manifest.sqlite'}?mode=ro", uri=True)
    try:
        return tuple(db.execute("SELECT COALESCE(SUM(vector = 1), 0), COALESCE(SUM(vector = 0), 0) FROM chunks").fetchone())
    finally:
        db.close()


@pytest.mark.slow
def test_a_run_killed_in_a_long_file_keeps_what_it_embedded(c1_home, run_c1, c1_popen, long_pdf, new_c1_env):
    marker = c1_home.parent / "kept"
    proc = c1_popen("index", long_pdf.parent, "--json", "--quiet", batch_chunks=ROUND,
                    pause_after="c1.store.manifest.Manifest.set_vectors", marker=marker)
    wait_for(marker.exists, proc, "the first embedding round of the file to be recorded")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    with_vectors, without = vector_flags(c1_home)
    assert with_vectors == ROUND and without > ROUND, "the file is committed; one round has its vectors"
    assert len(chroma_collection(c1_home).col.get(include=[])["ids"]) == ROUND

    again = run_c1("index", long_pdf.parent, "--json")
    assert again.rc == 0, again.stderr
    report = again.json()
    assert report["embedded"] == without and report["chunks"] == 0 and report["unchanged"] == 1
    assert report["repaired"] is True
    state = inspect_collection(c1_home)
    state.assert_consistent()
    assert vector_flags(c1_home) == (with_vectors + without, 0)

    # The same index as a run that was never interrupted: chunks, hashes and vectors.
    fresh = new_c1_env("uninterrupted")
    assert fresh.run("index", long_pdf.parent, "--quiet").rc == 0
    other = inspect_collection(fresh.home)
    assert [(c["id"], c["hash"]) for c in sorted(state.chunks, key=lambda c: c["id"])] == \
        [(c["id"], c["hash"]) for c in sorted(other.chunks, key=lambda c: c["id"])]
    ids = sorted(state.manifest_ids)
    mine = chroma_collection(c1_home).vectors(ids)
    theirs = chroma_collection(fresh.home).vectors(ids)
    assert all(np.array_equal(np.asarray(mine[i]), np.asarray(theirs[i])) for i in ids)
    assert with_vectors + without == len(ids)
