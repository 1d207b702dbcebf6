"""A long file: progress moves while it is read and embedded, and a run killed in the middle of it keeps the
chunks already embedded (the next run takes them instead of embedding them again)."""

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


def test_progress_moves_inside_a_long_file(c1_home, long_pdf, monkeypatch):
    from c1.config import load_settings
    from c1.corpus import indexer
    from c1.corpus.embedders import make_embedder

    monkeypatch.setattr(indexer, "BATCH_CHUNKS", ROUND)
    seen = []
    report = indexer.Indexer(load_settings(), make_embedder(),
                             progress=lambda p: seen.append((p.files_done, p.chunks_done, p.page, p.pages))).run(
        [str(long_pdf.parent)])
    assert report.chunks > 2 * ROUND
    pages = [(page, total) for done, _, page, total in seen if done == 0 and page]
    assert [page for page, _ in pages] == list(range(1, 15)) and {total for _, total in pages} == {14}, \
        "every page shown as it is read"
    inside = sorted({chunks for done, chunks, _, _ in seen if done == 0 and chunks})
    assert inside[:3] == [ROUND, 2 * ROUND, 3 * ROUND], "chunks counted round by round before the file is done"
    assert seen[-1][:2] == (1, report.chunks)


def kept_rows(home) -> int:
    db = sqlite3.connect(f"file:{home / 'collections' / 'default' / 'manifest.sqlite'}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM embedded").fetchone()[0]
    finally:
        db.close()


@pytest.mark.slow
def test_a_run_killed_in_a_long_file_keeps_what_it_embedded(c1_home, run_c1, c1_popen, long_pdf, new_c1_env):
    marker = c1_home.parent / "kept"
    proc = c1_popen("index", long_pdf.parent, "--json", "--quiet", batch_chunks=ROUND,
                    pause_after="c1.corpus.manifest.Manifest.keep_vectors", marker=marker)
    wait_for(marker.exists, proc, "the first round of the file to be kept")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert kept_rows(c1_home) == ROUND and inspect_collection(c1_home).manifest_ids == set()

    again = run_c1("index", long_pdf.parent, "--json")
    assert again.rc == 0, again.stderr
    report = again.json()
    assert report["reused"] == ROUND and report["added"] == 1 and report["repaired"] is True
    state = inspect_collection(c1_home)
    state.assert_consistent()
    assert kept_rows(c1_home) == 0, "kept vectors are dropped once the file is committed"

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
    assert report["chunks"] == len(ids)
