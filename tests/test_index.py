"""`c1 index` end to end on real files, with the real embedder, Chroma and tantivy.

Covers: counts and the JSON report, metadata that survives into the stores, chunk ids, exact
spans, incremental re-runs (nothing changed; one file changed, one deleted, one added), bad input,
usage errors, one writer per collection, embedder mismatch, and crash safety (kill -9, Ctrl-C and
failures injected at chosen points of the write sequence).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from c1.store.embedders import DEFAULT_EMBEDDER

from conftest import chroma_collection, copy_file, enron_messages, inspect_collection, invoke_cli, read_manifest, wait_for

CHUNK_ID = re.compile(r"^[a-z2-7]{8}_\d+$")
REPORT_KEYS = {"collection", "added", "updated", "deleted", "unchanged", "skipped", "chunks", "seconds",
               "chunks_per_second", "documents", "total_chunks", "repaired", "warnings", "unsupported"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def docs_by_key(paths: list[Path]) -> dict:
    """Load the files again, as the indexer does: key → Document."""
    from c1.index.loaders import load
    from c1.index.walk import walk

    sources, _ = walk([str(p) for p in paths], max_bytes=1 << 30)
    return {d.key: d for s in sources for d in load(s)}


# --- one indexed corpus, shared by the read-only tests of this module -------------------------


@pytest.fixture(scope="module")
def indexed(new_c1_env, small_corpus):
    env = new_c1_env("indexed")
    result = env.run("index", small_corpus.path, "--json")
    assert result.rc == 0, result.stderr
    env.report = result.json()
    env.stderr = result.stderr
    return env


@pytest.mark.slow
def test_report_counts(indexed, small_corpus):
    r = indexed.report
    assert REPORT_KEYS <= set(r)
    assert r["collection"] == "default"
    assert (r["added"], r["updated"], r["deleted"], r["unchanged"]) == (small_corpus.files, 0, 0, 0)
    assert r["skipped"] == [] and r["repaired"] is False
    assert r["documents"] == small_corpus.documents
    assert r["chunks"] == r["total_chunks"] >= small_corpus.documents
    assert r["seconds"] > 0 and r["chunks_per_second"] > 0
    assert r["chunks_per_second"] == pytest.approx(r["chunks"] / r["seconds"], rel=0.02)
    assert "Traceback" not in indexed.stderr


@pytest.mark.slow
def test_stores_agree(indexed, small_corpus):
    state = inspect_collection(indexed.home)
    state.assert_consistent()
    assert len(state.manifest_ids) == indexed.report["total_chunks"]
    assert len(state.files) == small_corpus.files
    assert all(state.files.values()), "every file has its content hash"
    assert state.meta["embedder"] == DEFAULT_EMBEDDER


@pytest.mark.slow
def test_chunk_ids_are_short_and_stable(indexed):
    state = inspect_collection(indexed.home)
    assert all(CHUNK_ID.match(i) for i in state.manifest_ids), sorted(state.manifest_ids)[:5]
    per_doc = Counter(c["doc_id"] for c in state.chunks)
    for d in state.docs:
        assert re.fullmatch(r"[a-z2-7]{8}", d["doc_id"])
        assert sorted(c["n"] for c in state.chunks if c["doc_id"] == d["doc_id"]) == list(range(d["n_chunks"]))
        assert per_doc[d["doc_id"]] == d["n_chunks"]
    assert len({d["key"] for d in state.docs}) == len(state.docs)


@pytest.mark.slow
def test_source_id_survives_into_manifest_and_chroma(indexed, small_corpus):
    state = inspect_collection(indexed.home)
    jsonl = str(small_corpus.path / "hotpot" / "paragraphs.jsonl")
    by_doc = {d["doc_id"]: d for d in state.docs}
    assert {d["source_id"] for d in state.docs if d["path"] == jsonl} == set(small_corpus.source_ids)
    assert all(d["source_id"] is None for d in state.docs if d["path"] != jsonl)

    got = chroma_collection(indexed.home).col.get(include=["metadatas"])
    metas = dict(zip(got["ids"], got["metadatas"]))
    assert set(metas) == state.manifest_ids
    for cid, meta in metas.items():
        doc = by_doc[meta["doc"]]
        assert cid == f"{meta['doc']}_{meta['n']}"
        assert meta["path"] == doc["path"] and meta["title"] == (doc["title"] or "")
        if doc["source_id"] is None:
            assert "source_id" not in meta
        else:
            assert meta["source_id"] == doc["source_id"]
    # Mail metadata travels too.
    mail = [m for m in metas.values() if "/enron/" in m["path"]]
    assert mail and all(m.get("from") and m.get("message_id") for m in mail)


@pytest.mark.slow
def test_spans_slice_the_document_text_exactly(indexed, small_corpus):
    state = inspect_collection(indexed.home)
    docs = docs_by_key([small_corpus.path])
    by_doc = {d["doc_id"]: d for d in state.docs}
    assert set(docs) == {d["key"] for d in state.docs}
    got = chroma_collection(indexed.home).col.get(include=["documents", "metadatas"])
    chroma = {i: (t, m) for i, t, m in zip(got["ids"], got["documents"], got["metadatas"])}
    pages_seen = set()
    for c in state.chunks:
        doc = docs[by_doc[c["doc_id"]]["key"]]
        assert doc.text[c["start"] : c["end"]] == c["text"], c["id"]
        assert c["text"].strip()
        assert c["page"] == doc.page_at(c["start"])
        text, meta = chroma[c["id"]]
        assert text == c["text"]
        assert (meta["start"], meta["end"], meta.get("page")) == (c["start"], c["end"], c["page"])
        if doc.path.endswith("pdflatex-4-pages.pdf"):
            pages_seen.add(c["page"])
    assert len(pages_seen) >= 3, f"a 4-page PDF should spread its chunks over pages, got {pages_seen}"


@pytest.mark.slow
def test_rerun_without_changes_embeds_nothing(indexed, small_corpus):
    """Speed is bench/index_speed.py's to measure; here: a re-run reads no file again and embeds nothing."""
    before = inspect_collection(indexed.home)
    result = indexed.run("index", small_corpus.path, "--json")
    r = result.json()
    assert result.rc == 0
    assert (r["added"], r["updated"], r["deleted"], r["chunks"]) == (0, 0, 0, 0)
    assert r["unchanged"] == small_corpus.files
    assert r["embed_seconds"] == 0
    after = inspect_collection(indexed.home)
    after.assert_consistent()
    assert after.manifest_ids == before.manifest_ids


@pytest.mark.slow
def test_status_json(indexed, small_corpus):
    result = invoke_cli("status", "--json", env=indexed.env)
    assert result.rc == 0, result.stderr
    out = result.json()
    assert out["home"] == str(indexed.home)
    (row,) = out["collections"]
    assert row["collection"] == "default"
    assert row["consistent"] is True and row["interrupted"] is False
    assert row["documents"] == small_corpus.documents
    assert row["chunks"] == row["chroma_chunks"] == row["lexical_chunks"] == indexed.report["total_chunks"]
    assert row["embedder"] == DEFAULT_EMBEDDER
    plain = invoke_cli("status", env=indexed.env)
    assert plain.rc == 0 and "consistent" in plain.stdout


@pytest.mark.slow
def test_status_of_unknown_collection(indexed):
    invoke_cli("status", "--collection", "nope", env=indexed.env).assert_one_line_error(2, "nope")


@pytest.mark.slow
def test_embedder_mismatch_is_refused_before_connecting(indexed, small_corpus):
    """A collection keeps its embedder: another one is refused before any connection is made."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        port = server.getsockname()[1]
        result = indexed.run("index", small_corpus.path, "--embed-url", f"http://127.0.0.1:{port}/",
                             "--embed-model", "x")
        try:
            server.accept()
            connected = True
        except BlockingIOError:
            connected = False
    line = result.assert_one_line_error(2, "embedder")
    assert DEFAULT_EMBEDDER in line and "openai:x" in line
    assert not connected, "c1 contacted the embedding server before refusing"
    assert result.stdout == ""
    inspect_collection(indexed.home).assert_consistent()


# --- incremental updates -----------------------------------------------------------------------


@pytest.mark.slow
def test_changed_deleted_added_are_counted_exactly(c1_home, invoke_c1, small_corpus, shared_data, tmp_path):
    from c1.store.lexical import LexicalIndex

    corpus = tmp_path / "corpus"
    shutil.copytree(small_corpus.path, corpus)
    first = invoke_c1("index", corpus, "--json").json()
    before = inspect_collection(c1_home)
    before_docs = {d["key"]: d["doc_id"] for d in before.docs}

    changed_mail = sorted((corpus / "enron").rglob("*."))[0]
    with open(changed_mail, "a", encoding="utf-8") as f:
        f.write("\n\nP.S. The pipeline inspection moved to Thursday; bring the right-of-way maps.\n")
    jsonl = corpus / "hotpot" / "paragraphs.jsonl"
    lines = jsonl.read_text(encoding="utf-8").splitlines(keepends=True)
    dropped = json.loads(lines[-1])["id"]
    jsonl.write_text("".join(lines[:-1]), encoding="utf-8")
    deleted_pdf = corpus / "pdf" / "minimal-document.pdf"
    deleted_key = str(deleted_pdf)
    deleted_pdf.unlink()
    touched_only = corpus / "pdf" / "google-doc-document.pdf"  # new mtime, same bytes: unchanged
    st = touched_only.stat()
    os.utime(touched_only, ns=(st.st_atime_ns, st.st_mtime_ns + 10**10))
    new_msg = enron_messages(shared_data)[-1]
    added = copy_file(new_msg, corpus / "enron" / "zz-new" / "inbox" / new_msg.name)

    result = invoke_c1("index", corpus, "--json")
    r = result.json()
    assert result.rc == 0, result.stderr
    assert (r["added"], r["updated"], r["deleted"]) == (1, 2, 1), r
    assert r["unchanged"] == first["added"] - 3
    assert r["skipped"] == [] and r["repaired"] is False

    after = inspect_collection(c1_home)
    after.assert_consistent()
    touched = {str(changed_mail), str(jsonl), str(added)}
    touched_ids = {f"{d['doc_id']}_{n}" for d in after.docs if d["path"] in touched for n in range(d["n_chunks"])}
    assert r["chunks"] == len(touched_ids), "exactly the chunks of changed and added files were embedded"
    # Untouched documents keep their ids and chunks.
    for d in after.docs:
        if d["path"] not in touched:
            assert before_docs[d["key"]] == d["doc_id"]
    gone = {before_docs[deleted_key], before_docs[f"{jsonl}#{dropped}"]}
    assert gone.isdisjoint(d["doc_id"] for d in after.docs)
    assert not [i for i in after.manifest_ids if i.rsplit("_", 1)[0] in gone]
    assert deleted_key not in after.files and deleted_key not in {d["path"] for d in after.docs}
    assert dropped not in {d["source_id"] for d in after.docs}
    assert str(added) in after.files
    # The new text is searchable.
    hits = LexicalIndex(c1_home / "collections" / "default" / "lexical").search("pipeline inspection Thursday maps", 3)
    changed_doc = next(d["doc_id"] for d in after.docs if d["path"] == str(changed_mail))
    assert hits and hits[0][0].startswith(changed_doc + "_")

    # Removing a whole folder deletes its files.
    shutil.rmtree(corpus / "pdf")
    r3 = invoke_c1("index", corpus, "--json").json()
    assert (r3["deleted"], r3["added"], r3["updated"], r3["chunks"]) == (2, 0, 0, 0)
    inspect_collection(c1_home).assert_consistent()


@pytest.mark.slow
def test_indexing_a_second_path_leaves_the_first_alone(c1_home, invoke_c1, enron_folder, tmp_path):
    first = enron_folder(3, "a")
    second = tmp_path / "b"
    second.mkdir()
    (second / "memo.md").write_text("# Memo\n\nThe west desk closes early on Friday.\n")
    invoke_c1("index", first, "--json")
    r = invoke_c1("index", second, "--json").json()
    assert (r["added"], r["deleted"]) == (1, 0)
    state = inspect_collection(c1_home)
    state.assert_consistent()
    assert len(state.files) == 4


# --- bad input and usage errors ------------------------------------------------------------------


@pytest.fixture
def bad_folder(tmp_path, shared_data) -> tuple[Path, dict[str, str]]:
    """A folder of real bad input, and for each bad path a word its reason must contain."""
    d = tmp_path / "bad"
    d.mkdir()
    (d / "good.txt").write_text("Gas prices at the Henry Hub rose sharply in December.\n\nTraders expect more.\n")
    (d / "latin1.txt").write_bytes("Caf\u00e9 r\u00e9sum\u00e9: the na\u00efve trader's notes.\n".encode("cp1252"))
    (d / "one-bad-byte.txt").write_bytes("東京のガス市場についての報告書です。\n".encode() * 20 + b"\xff end\n")
    for name in ("archive.zip", "tool.py", "Makefile"):  # not indexed, but counted
        (d / name).write_bytes(b"PK\x03\x04" if name.endswith(".zip") else b"x = 1\n")
    (d / "empty.txt").write_bytes(b"")
    (d / "program.txt").write_bytes(Path(sys.executable).resolve().read_bytes()[:65536])
    (d / "sjis.txt").write_bytes(("東京のガス市場についての報告書です。" * 20).encode("shift_jis"))
    (d / "bad.jsonl").write_text("this is not json\n{also not\n[1, 2]\n")
    copy_file(shared_data / "pdf/pdfplumber_tests/empty.pdf", d / "empty.pdf")
    copy_file(shared_data / "pdf/pypdf_sample_files/017-unreadable-meta-data/unreadablemetadata.pdf", d / "damaged.pdf")
    copy_file(shared_data / "pdf/pdfplumber_tests/password-example.pdf", d / "locked.pdf")
    os.symlink(".", d / "loop")
    reasons = {
        "empty.txt": "empty", "program.txt": "binary", "sjis.txt": "utf-8", "bad.jsonl": "jsonl",
        "empty.pdf": "empty", "damaged.pdf": "damaged", "locked.pdf": "encrypted", "loop": "loop",
    }
    return d, {str(d / name): word for name, word in reasons.items()}


@pytest.mark.slow
def test_bad_input_is_skipped_listed_and_counted(c1_home, run_c1, bad_folder):
    folder, expected = bad_folder
    result = run_c1("index", folder, "--json")
    assert result.rc == 0, result.stderr
    assert "Traceback" not in result.stderr
    r = result.json()
    skipped = {s["path"]: s["reason"] for s in r["skipped"]}
    assert set(skipped) == set(expected), skipped
    for path, word in expected.items():
        assert word in skipped[path].lower(), (path, skipped[path])
        assert "\n" not in skipped[path]
    # good.txt, latin1.txt read as Windows-1252 and one-bad-byte.txt with U+FFFD, with warnings
    assert r["added"] == 3
    assert {w["path"]: w["warning"] for w in r["warnings"] if w["path"].startswith(str(folder))} == {
        str(folder / "latin1.txt"): "not valid UTF-8: read as Windows-1252 text",
        str(folder / "one-bad-byte.txt"): "not valid UTF-8 in 1 place: replaced by U+FFFD",
    }
    # most of what was read is the Japanese report: the collection is said to be mostly not English
    others = [w["warning"] for w in r["warnings"] if not w["path"].startswith(str(folder))]
    assert len(others) == 1 and "is not English" in others[0], others
    assert r["unsupported"] == {"(no extension)": 1, ".py": 1, ".zip": 1}
    assert "ignored 3 files of unsupported types: (no extension) 1, .py 1, .zip 1" in result.stderr
    assert "8 file(s) skipped" in result.stderr
    for path in expected:
        assert path in result.stderr
    state = inspect_collection(c1_home)
    state.assert_consistent()
    assert {d["path"] for d in state.docs} == {str(folder / name) for name in ("good.txt", "latin1.txt", "one-bad-byte.txt")}

    strict = run_c1("index", folder, "--json", "--strict")
    assert strict.rc == 1, strict.stderr
    assert "Traceback" not in strict.stderr
    assert {s["path"] for s in strict.json()["skipped"]} == set(expected)
    inspect_collection(c1_home).assert_consistent()


@pytest.mark.slow
def test_strict_and_quiet_still_says_the_skipped_files(c1_home, run_c1, tmp_path):
    """`--strict -q` exited 1 and printed nothing: the exit code says files were skipped, stderr says which."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "note.md").write_text("# Note\n\nThe shed key is under the blue pot.\n")
    (folder / "empty.txt").write_bytes(b"")
    result = run_c1("index", folder, "--strict", "-q")
    assert result.rc == 1 and result.stdout == ""
    assert "1 file(s) skipped" in result.stderr and f"{folder / 'empty.txt'}: empty file" in result.stderr
    assert "added" not in result.stderr, "quiet: no summary, only what --strict fails on"
    assert run_c1("index", folder, "-q").stderr == "", "without --strict, -q is silent"


def test_strict_with_clean_input_exits_0(c1_home, invoke_c1, enron_folder):
    result = invoke_c1("index", enron_folder(2), "--strict", "--quiet")
    assert result.rc == 0 and result.stderr == "", result.stderr


def test_nonexistent_path_is_a_one_line_error(c1_home, invoke_c1, tmp_path):
    invoke_c1("index", tmp_path / "nope").assert_one_line_error(2, "nope", "no such file")
    (tmp_path / "real.txt").write_text("A real file.\n")
    result = invoke_c1("index", tmp_path / "real.txt", tmp_path / "missing", "--json")
    result.assert_one_line_error(2, "missing")
    assert result.stdout == ""
    assert not (c1_home / "collections").exists(), "nothing may be indexed when a path is wrong"


def test_dangling_symlink_path_is_a_one_line_error(c1_home, invoke_c1, tmp_path):
    os.symlink(tmp_path / "gone", tmp_path / "link")
    invoke_c1("index", tmp_path / "link").assert_one_line_error(2, "link")


@pytest.mark.slow
def test_second_concurrent_index_fails_fast(c1_home, run_c1, c1_popen, enron_folder):
    folder = enron_folder(40, smallest=True)
    marker = c1_home.parent / "committed"
    first = c1_popen("index", folder, "--json", "--quiet", batch_chunks=4, pause_after=COMMIT, marker=marker)
    wait_for(marker.exists, first, "the first run to commit a batch")  # it waits there until the marker goes
    started = time.monotonic()
    second = run_c1("index", folder, "--json")
    elapsed = time.monotonic() - started
    second.assert_one_line_error(2, "another", "c1 index")
    assert elapsed < 30, elapsed
    marker.unlink()
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert json.loads(out)["added"] == 40
    inspect_collection(c1_home).assert_consistent()


@pytest.mark.slow
def test_failed_first_run_does_not_bind_the_collection_to_its_embedder(c1_home, invoke_c1, enron_folder):
    """An embedding server that is down on the very first run must not lock the collection to it."""
    folder = enron_folder(2)
    down = invoke_c1("index", folder, "--embed-url", f"http://127.0.0.1:{free_port()}", "--embed-model", "x")
    down.assert_one_line_error(2, "embedding server")
    result = invoke_c1("index", folder, "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["added"] == 2
    state = inspect_collection(c1_home)
    state.assert_consistent()
    assert state.meta["embedder"] == DEFAULT_EMBEDDER


@pytest.mark.slow
def test_keywords_only_then_a_run_that_embeds(c1_home, invoke_c1, run_c1, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "gate.md").write_text("# Gate\n\nThe gate code of the north depot is 4417.\n")
    (docs / "ferry.md").write_text("# Ferry\n\nThe last ferry to Vashon leaves at 23:10.\n")
    first = invoke_c1("index", docs, "--keywords-only", "--json")
    assert first.rc == 0, first.stderr
    r = first.json()
    assert (r["added"], r["chunks"], r["embedded"], r["without_vectors"]) == (2, 2, 0, 2)
    assert chroma_collection(c1_home).count() == 0
    status = run_c1("status")
    assert status.rc == 0 and "2 chunks by keywords only" in status.stdout, status.stdout + status.stderr
    found = run_c1("search", "gate code north depot", "--json")
    assert found.rc == 0, found.stderr
    assert found.json()["documents"][0]["path"].endswith("gate.md")
    assert "not fully embedded" in found.stderr and "0 of 2 chunks have vectors" in found.stderr
    assert found.json()["stats"]["embedding"] == {"chunks": 2, "embedded": 0, "share": 0.0, "indexing": False}
    second = invoke_c1("index", docs, "--json").json()
    assert (second["unchanged"], second["chunks"], second["embedded"], second["without_vectors"]) == (2, 0, 2, 0)
    assert second["repaired"] is False
    inspect_collection(c1_home).assert_consistent()
    assert "embedding" not in run_c1("search", "last ferry Vashon", "--json").json()["stats"]


@pytest.mark.slow
def test_a_chunk_without_its_vector_yet_keeps_its_bm25_place(c1_home, invoke_c1, tmp_path):
    """While a collection is being embedded, BM25's clear first was put below chunks that both sides found,
    only because those had vectors: the dense side could not find a chunk without one. Its missing vote now
    stands in at its BM25 rank, so the order is what it will be once embedded, not an artefact of when."""
    from c1.config import load_settings
    from c1.eval.baselines import retrieve
    from c1.retrieval.corpus import Corpus

    old = tmp_path / "old"
    old.mkdir()
    for i, place in enumerate(("harbour", "airport", "station", "warehouse", "market", "school")):
        (old / f"{place}.md").write_text(f"# The {place}\n\nThe north {place} is near the depot; its gate opens "
                                         f"at {6 + i}:00 and a code is needed after dark.\n")
    assert invoke_c1("index", old, "--quiet").rc == 0
    new = tmp_path / "new"
    new.mkdir()
    (new / "codes.md").write_text("# Codes\n\nThe gate code of the north depot is 4417.\n")
    assert invoke_c1("index", new, "--quiet", "--keywords-only").rc == 0
    corpus = Corpus(load_settings())
    try:
        assert corpus.embedding is not None and corpus.embedding["embedded"] == 6
        got = [os.path.basename(d["path"]) for d in retrieve(corpus, "hybrid", "gate code north depot", 3)]
        lexical = [c for c, _ in corpus.bm25("gate code north depot", 3)]
        assert corpus.doc(corpus.chunks(lexical[:1])[0].doc_id).path.endswith("codes.md")  # BM25's first
        assert got[0] == "codes.md", got
    finally:
        corpus.close()


@pytest.mark.parametrize("flag", ["--embed-url", "--chroma-url"])
@pytest.mark.slow
def test_a_failed_first_run_leaves_no_collection_behind(c1_home, invoke_c1, enron_folder, flag):
    """A dead server on the very first run: one line, exit 2, and no empty collection for `c1 status` to flag."""
    folder = enron_folder(2)
    extra = ["--embed-model", "x"] if flag == "--embed-url" else []
    down = invoke_c1("index", folder, flag, f"http://127.0.0.1:{free_port()}", *extra)
    down.assert_one_line_error(2, "embedding server" if flag == "--embed-url" else "Chroma server")
    assert not (c1_home / "collections" / "default").exists()
    invoke_c1("status").assert_one_line_error(2, "no collections")
    assert invoke_c1("index", folder, "--json").json()["added"] == 2
    inspect_collection(c1_home).assert_consistent()


# --- crash safety -------------------------------------------------------------------------------


COMMIT = "c1.store.manifest.Manifest.replace_files"
"""The manifest transaction that commits a batch of files (crash tests pause right after the first)."""


def assert_fully_indexed(home: Path, folder: Path, n_files: int) -> None:
    """Every file of ``folder`` indexed exactly once, and the three stores agree."""
    state = inspect_collection(home)
    state.assert_consistent()
    assert len(state.files) == n_files and all(state.files.values())
    assert all(p.startswith(str(folder)) for p in state.files)
    per_file = Counter(d["path"] for d in state.docs)
    assert set(per_file) == set(state.files) and set(per_file.values()) == {1}, "one document per message"


@pytest.mark.slow
def test_kill_9_mid_run_is_repaired(c1_home, run_c1, c1_popen, enron_folder):
    n = 60
    folder = enron_folder(n, smallest=True)
    manifest = c1_home / "collections" / "default" / "manifest.sqlite"
    marker = c1_home.parent / "committed"
    proc = c1_popen("index", folder, "--json", "--quiet", batch_chunks=8, pause_after=COMMIT, marker=marker)
    wait_for(marker.exists, proc, "the first batch to be committed")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    status = run_c1("status", "--json").json()["collections"][0]
    assert status["interrupted"] is True and status["consistent"] is False
    committed = len(read_manifest(manifest)["files"])
    assert 0 < committed < n

    result = run_c1("index", folder, "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["repaired"] is True
    assert r["unchanged"] == committed and r["added"] == n - committed
    assert r["updated"] == r["deleted"] == 0 and r["skipped"] == []
    assert "repaired" in result.stderr
    assert_fully_indexed(c1_home, folder, n)
    status = run_c1("status", "--json").json()["collections"][0]
    assert status["consistent"] is True and status["interrupted"] is False


@pytest.mark.slow
def test_ctrl_c_exits_130_and_the_next_run_completes(c1_home, run_c1, c1_popen, enron_folder):
    n = 40
    folder = enron_folder(n, smallest=True)
    marker = c1_home.parent / "committed"
    proc = c1_popen("index", folder, "--json", "--quiet", batch_chunks=8, pause_after=COMMIT, marker=marker)
    wait_for(marker.exists, proc, "the first batch to be committed")  # and the run waits: the signal lands mid-run
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "interrupted" in lines[0], err
    assert "Traceback" not in err
    kept = read_manifest(c1_home / "collections" / "default" / "manifest.sqlite")
    assert 0 < len(kept["files"]) < n
    said = " ".join(lines[0].split())  # it said only "interrupted": now what was kept, and that the next run goes on
    indexed = [p for p, h in kept["files"].items() if h]
    assert f"what was indexed is kept ({len(indexed)} files, {len(kept['chunks'])} chunks" in said, said
    assert "run the same `c1 index` again to go on from there" in said

    result = run_c1("index", folder, "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["repaired"] is True
    assert r["added"] + r["unchanged"] == n and r["added"] > 0 and r["unchanged"] > 0
    assert_fully_indexed(c1_home, folder, n)


class InjectedCrash(Exception):
    pass


@pytest.fixture(scope="module")
def embedder():
    from c1.store.embedders import make_embedder

    return make_embedder()


CRASH_POINTS = [
    # (what fails, on which call, during which run)
    ("c1.store.manifest.Manifest.replace_files", 2, "first"),  # Chroma and tantivy ahead of the manifest
    ("c1.store.vectors.VectorStore.upsert", 2, "first"),  # batch marked pending, nothing written
    ("c1.store.lexical.LexicalIndex.add", 7, "first"),  # Chroma written, tantivy half written
    ("c1.store.manifest.Manifest.remove_files", 1, "update"),  # a deleted file gone from Chroma only
    ("c1.store.manifest.Manifest.replace_files", 1, "update"),  # changed file's new chunks not recorded
]


@pytest.mark.parametrize("target,nth,run", CRASH_POINTS, ids=[f"{t.rsplit('.', 2)[-2]}.{t.rsplit('.', 1)[-1]}#{n}-{r}" for t, n, r in CRASH_POINTS])
@pytest.mark.slow
def test_injected_crash_is_repaired_by_the_next_run(c1_home, enron_folder, embedder, monkeypatch, target, nth, run):
    from c1.store.status import collection_status
    from c1.config import load_settings
    from c1.index.indexer import Indexer

    monkeypatch.setattr("c1.index.indexer.BATCH_CHUNKS", 4)  # several batches from a few files
    folder = enron_folder(10, smallest=True)
    settings = load_settings()
    if run == "update":
        Indexer(settings, embedder).run([str(folder)])
        files = sorted(p for p in folder.rglob("*.") if p.is_file())
        with open(files[0], "a") as f:
            f.write("\n\nAddendum: the meeting is cancelled.\n")
        files[1].unlink()
        expected_files = 9
    else:
        expected_files = 10

    owner, name = target.rsplit(".", 1)
    module, cls = owner.rsplit(".", 1)
    klass = getattr(__import__(module, fromlist=[cls]), cls)
    original = getattr(klass, name)
    calls = {"n": 0}

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth:
            raise InjectedCrash(f"{name} call {nth}")
        return original(self, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(klass, name, failing)
        with pytest.raises(InjectedCrash):
            Indexer(settings, embedder).run([str(folder)])
    status = collection_status(settings)
    assert status["interrupted"] is True and status["consistent"] is False

    report = Indexer(settings, embedder).run([str(folder)])
    assert report.repaired is True
    assert report.skipped == []
    assert_fully_indexed(c1_home, folder, expected_files)
    if run == "update":
        assert any("Addendum: the meeting is cancelled." in c["text"] for c in inspect_collection(c1_home).chunks)
    again = Indexer(settings, embedder).run([str(folder)])
    assert (again.added, again.updated, again.deleted, again.chunks, again.repaired) == (0, 0, 0, 0, False)
    assert again.unchanged == expected_files
    assert collection_status(settings)["consistent"] is True


# --- the same files under other names -----------------------------------------------------------


@pytest.mark.slow
def test_a_folder_indexed_through_a_symlink_is_the_same_folder(run_c1, tmp_path):
    """`c1 index ~/link-to-notes` after `c1 index ~/notes` added every note again as new documents."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Boiler\n\nThe boiler is serviced every October by the landlord.\n")
    (notes / "b.md").write_text("# Bikes\n\nThe bike shed key hangs behind the kitchen door.\n")
    (tmp_path / "link").symlink_to(notes)
    assert run_c1("index", notes, "--quiet").rc == 0
    again = run_c1("index", tmp_path / "link", "--json").json()
    assert (again["added"], again["unchanged"], again["documents"]) == (0, 2, 2)
    (notes / "b.md").unlink()
    gone = run_c1("index", tmp_path / "link", "--json").json()
    assert (gone["deleted"], gone["documents"]) == (1, 1), "a file deleted is seen through the link too"
    found = run_c1("search", "boiler serviced", "--json").json()["documents"]
    assert found[0]["path"] == str(notes / "a.md")


@pytest.mark.slow
def test_byte_identical_copies_are_one_result_listing_their_paths(run_c1, tmp_path):
    """Two copies of one note were two results, and the copy could outrank the original."""
    notes = tmp_path / "notes"
    (notes / "old").mkdir(parents=True)
    text = "# Boiler\n\nThe boiler is serviced every October by the landlord, Mrs Ferreira.\n"
    original = notes / "old" / "boiler.md"
    original.write_text(text)
    os.utime(original, (1_600_000_000, 1_600_000_000))
    copy = notes / "a copy of boiler.md"  # sorts first, and is newer
    copy.write_text(text)
    (notes / "shed.md").write_text("# Bikes\n\nThe bike shed key hangs behind the kitchen door.\n")
    report = run_c1("index", notes, "--json").json()
    assert report["documents"] == 3, "every copy is indexed (removing one keeps the other)"
    found = run_c1("search", "when is the boiler serviced", "--json")
    assert found.rc == 0, found.stderr
    docs = found.json()["documents"]
    boilers = [d for d in docs if "boiler" in d["path"]]
    assert len(boilers) == 1, docs
    (top,) = boilers
    assert top["path"] == str(original) and top["paths"] == [str(original), str(copy)]
    assert all(c["id"].startswith(top["id"] + "_") for c in top["chunks"])
    plain = run_c1("search", "when is the boiler serviced")
    assert plain.stdout.count("boiler.md") == 2 and str(copy) in plain.stdout, plain.stdout
    copy.unlink()
    assert run_c1("index", notes, "--quiet").rc == 0
    (alone,) = [d for d in run_c1("search", "when is the boiler serviced", "--json").json()["documents"]
                if "boiler" in d["path"]]
    assert alone["path"] == str(original) and "paths" not in alone


@pytest.mark.slow
def test_eval_collections_are_kept_apart_from_the_users(run_c1, c1_home, tmp_path):
    """`c1 eval`'s collections (dozens: one per dataset, embedder and question) were listed with the user's in
    `c1 status`, /health and MCP."""
    from c1.config import load_settings
    from c1.eval.collection import collection_name
    from c1.service.search_service import SearchService

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Boiler\n\nThe boiler is serviced every October.\n")
    name = collection_name("hotpotqa", "0123abcd", load_settings(), "all-MiniLM-L6-v2", True)
    assert run_c1("index", notes, "-q").rc == 0 and run_c1("index", notes, "-c", name, "-q").rc == 0
    status = run_c1("status", "--json")
    assert status.rc == 0 and [r["collection"] for r in status.json()["collections"]] == ["default"]
    assert status.json()["eval_collections_hidden"] == 1
    plain = run_c1("status")
    assert plain.stdout.splitlines() == ["default\t1 documents\t1 chunks\tconsistent"]
    assert "c1 status --eval" in plain.stderr
    both = run_c1("status", "--eval", "--json").json()["collections"]
    assert sorted(r["collection"] for r in both) == sorted(["default", name])
    assert run_c1("status", "-c", name, "--json").json()["collections"][0]["collection"] == name
    service = SearchService(load_settings(), max_concurrency=1)
    try:
        assert [r["collection"] for r in service.status()["collections"]] == ["default"]  # MCP's status
        assert service.collections() == ["default"]
        assert service.corpus(name) is not None, "named, it is still searched"
    finally:
        service.close()


@pytest.mark.slow
def test_the_progress_lines_at_80_columns(c1_home, tmp_path, monkeypatch, shared_data):
    """The progress line at 80 columns read "indexing ━━ 0… files 0 chunks · 0.0/s 0… ETA -…", with no file
    name, no chunk total, and "ETA 3:33:35" two files in (an ETA by files). Rendered here from the states a
    real run reports: the file in hand, the share of the bytes read and then of the chunks embedded, a time left."""
    import dataclasses

    from rich.cells import cell_len

    import c1.index.indexer as ix
    from c1.commands.index_view import progress_lines
    from c1.config import load_settings
    from c1.store.embedders import make_embedder

    folder = tmp_path / "mixed [2019] folder"
    folder.mkdir()
    rows = (shared_data / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl").read_text().splitlines()[:12]
    paragraphs = [" ".join(p[1]) for r in map(json.loads, rows) for p in r["context"]]
    long_name = "the quarterly report of the northern region (final, reviewed by legal) v2.txt"
    (folder / long_name).write_text("\n\n".join(paragraphs))
    for i in range(3):
        (folder / f"note {i}.md").write_text(f"# Note {i}\n\n{paragraphs[i]}\n")
    monkeypatch.setattr(ix, "BATCH_CHUNKS", 8)
    states = []
    ix.Indexer(load_settings(), make_embedder(), progress=lambda p: states.append(dataclasses.replace(p))).run([str(folder)])
    reading = [s for s in states if s.phase == "reading" and s.files_done]
    embedding = [s for s in states if s.phase == "embedding" and s.chunks_done]
    assert reading and len(embedding) >= 3, "files are read (keywords first), then embedded over several rounds"
    for s in states:
        lines = progress_lines(s, 30.0, 80)
        assert all(cell_len(line) <= 80 for line in lines), lines
    shares = []
    for s in reading:
        first = progress_lines(s, 30.0, 80)[0]
        assert first.startswith("indexing ") and f"{s.files_done}/{s.files_total} files" in first, first
        shares.append(int(re.search(r"(\d+)%", first).group(1)))
    assert shares == sorted(shares) and shares[-1] == 100, "the share of the bytes read grows to the whole"
    shares = []
    for s in embedding:
        first, second = progress_lines(s, 30.0, 80)
        assert first.startswith("embedding ") and f"{s.chunks_done:,}/{s.chunks_total:,} chunks" in first, first
        assert "searchable by keywords" in second
        assert re.search(r" \d+:\d\d left$", first), first
        shares.append(int(re.search(r"(\d+)%", first).group(1)))
    assert shares == sorted(shares) and shares[-1] == 100 and shares[0] < 100, shares
    in_hand = next(s for s in states if s.current.endswith(long_name))
    assert progress_lines(in_hand, 30.0, 80)[1].lstrip().startswith("the quarterly report"), "the file in hand, named"
EMBED_ROUND = "c1.store.manifest.Manifest.set_vectors"
"""What records an embedding round (phase 2): every file is searchable by keywords before its first call."""


@pytest.mark.slow
def test_keywords_first_then_vectors_and_a_kill_while_embedding(c1_home, run_c1, c1_popen, enron_folder):
    """While `c1 index` embeds, every file is already found by keywords, status says it is being indexed
    (exit 0) and a search says how far embedding is; killed then, the next run embeds only what is left."""
    n = 30
    folder = enron_folder(n, smallest=True)
    marker = c1_home.parent / "embedding"
    proc = c1_popen("index", folder, "--json", "--quiet", batch_chunks=8, pause_after=EMBED_ROUND, marker=marker)
    wait_for(marker.exists, proc, "the first embedding round to be recorded")
    manifest = read_manifest(c1_home / "collections" / "default" / "manifest.sqlite")
    assert len(manifest["files"]) == n, "every file committed before embedding starts"
    without = sum(1 for c in manifest["chunks"] if c["vector"] == 0)
    assert 0 < without == len(manifest["chunks"]) - 8

    status = run_c1("status", "--json")
    assert status.rc == 0, status.stdout + status.stderr
    row = status.json()["collections"][0]
    assert row["being_indexed"] == f"being indexed (pid {proc.pid})" and row["consistent"] is True
    assert row["without_vectors"] == without
    assert f"being indexed (pid {proc.pid})" in run_c1("status").stdout

    last = sorted(folder.rglob("*."))[-1]  # committed last: embedded last, found by keywords already
    subject = next(line for line in last.read_text(errors="replace").splitlines() if line.startswith("Subject:"))
    words = " ".join(subject.split()[1:6]) or "enron"
    found = run_c1("search", words, "--json", "-k", "20")
    assert found.rc in (0, 1), found.stderr
    assert "still being embedded" in found.stderr and f"pid {proc.pid}" in found.stderr
    emb = found.json()["stats"]["embedding"]
    assert (emb["chunks"], emb["embedded"], emb["indexing"]) == (len(manifest["chunks"]), 8, True)

    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    row = run_c1("status", "--json").json()["collections"][0]
    assert row["interrupted"] is True and row["consistent"] is False and row["without_vectors"] == without
    assert any("while embedding" in p for p in row["problems"])
    after_kill = run_c1("search", words, "--json")
    assert "not fully embedded" in after_kill.stderr and "`c1 index`" in after_kill.stderr

    result = run_c1("index", folder, "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert (r["added"], r["updated"], r["unchanged"], r["chunks"]) == (0, 0, n, 0), r
    assert r["embedded"] == without and r["without_vectors"] == 0 and r["repaired"] is True
    assert_fully_indexed(c1_home, folder, n)
    row = run_c1("status", "--json").json()["collections"][0]
    assert row["consistent"] is True and row["interrupted"] is False and row["without_vectors"] == 0
    done = run_c1("search", words, "--json")
    assert "embedded" not in done.stderr and "embedding" not in done.json()["stats"]
