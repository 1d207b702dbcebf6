"""Readers: long-lived ones (`c1 serve`, `c1 mcp`) see a re-index; read-only homes; pipes closed early."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import c1_argv, invoke_cli, readonly_view, run_cli

GLACIER = "# Glacier memo\n\nThe Zanzibar glacier survey found quartzite moraines near the northern ridge.\n"
FERRY = "# Ferry memo\n\nThe Oyster Bay ferry timetable changes to hourly crossings in the winter months.\n"


def write_notes(folder: Path) -> Path:
    folder.mkdir()
    (folder / "glacier.md").write_text(GLACIER)
    return folder


@pytest.fixture
def notes(tmp_path) -> Path:
    return write_notes(tmp_path / "notes")


@pytest.fixture(scope="module")
def indexed(new_c1_env):
    """A home with the glacier note indexed, shared by the tests that only read it."""
    env = new_c1_env("readers")
    env.notes = write_notes(env.root / "notes")
    assert env.run("index", env.notes, "--quiet").rc == 0
    return env


# --- long-lived readers -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_long_lived_reader_sees_a_reindex(c1_home, run_c1, notes):
    """The search service (shared by `c1 serve` and `c1 mcp`) keeps each collection open; a re-index by
    another process must reach grep's text, dense search (Chroma caches vectors per client) and lookups."""
    from c1.config import load_settings
    from c1.service.search_service import SearchService

    assert run_c1("index", notes, "--quiet").rc == 0
    service = SearchService(load_settings(), max_concurrency=1)
    try:
        job = service.start({"query": "glacier survey"})
        assert job.wait(120) and job.result, job.error
        corpus = service.corpus("default")
        assert any("Zanzibar" in text for _, text in corpus.all_chunks)

        (notes / "glacier.md").write_text(GLACIER.replace("Zanzibar", "Patagonia"))
        (notes / "ferry.md").write_text(FERRY)
        assert run_c1("index", notes, "--quiet").rc == 0  # another process

        job = service.start({"query": "Oyster Bay ferry timetable"})
        assert job.wait(120) and job.result, job.error
        assert job.result["documents"][0]["path"] == str(notes / "ferry.md")
        corpus = service.corpus("default")
        texts = [text for _, text in corpus.all_chunks]
        assert any("Patagonia" in t for t in texts) and not any("Zanzibar" in t for t in texts)
        dense = corpus.dense(corpus.embed_query("hourly ferry crossings in winter"), 2)
        ferry_doc = job.result["documents"][0]["id"]
        assert dense[0][0].startswith(ferry_doc + "_"), "dense search sees the new vectors"

        assert run_c1("rm", "-c", "default", "--quiet").rc == 0
        job = service.start({"query": "ferry"})
        assert job.wait(60) and job.result is None and "was removed" in job.error
        assert run_c1("index", notes, "--quiet").rc == 0
        job = service.start({"query": "Patagonia glacier"})
        assert job.wait(120) and job.result, job.error
        assert job.result["documents"][0]["path"] == str(notes / "glacier.md")
    finally:
        service.close()


@pytest.mark.slow
def test_the_corpus_caches_are_bounded(c1_home, run_c1, notes, monkeypatch):
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings

    for i in range(5):
        (notes / f"extra{i}.md").write_text(f"# Extra {i}\n\nNote number {i} about the ridge survey.\n")
    assert run_c1("index", notes, "--quiet").rc == 0
    monkeypatch.setattr(Corpus, "DOC_CACHE", 2)
    monkeypatch.setattr(Corpus, "GREP_CACHE_CHARS", 10)
    corpus = Corpus(load_settings())
    try:
        ids = {cid.rsplit("_", 1)[0] for cid, _ in corpus.all_chunks}
        assert len(ids) == 6
        for doc_id in ids:
            assert corpus.doc(doc_id) is not None
        assert len(corpus._docs) == 2
        assert corpus._grep is None, "past GREP_CACHE_CHARS the text is streamed, not kept"
        assert len(list(corpus.all_chunks)) == 6
    finally:
        corpus.close()


# --- read-only homes ---------------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def readonly_home(indexed, tmp_path):
    """The indexed home as a read-only file system."""
    with readonly_view(indexed.home, tmp_path / "readonly") as view:
        yield view


@pytest.mark.slow
def test_status_and_search_work_in_a_read_only_home(readonly_home, indexed, tmp_path):
    env = {**indexed.env, "C1_HOME": str(readonly_home), "TMPDIR": str(tmp_path)}
    notes = indexed.notes

    def run_c1(*args, env):
        return run_cli(args, env)

    before = _snapshot(readonly_home)
    status = run_c1("status", "--json", env=env)
    assert status.rc == 0, status.stderr
    (row,) = status.json()["collections"]
    assert row["consistent"] is True and row["chunks"] == row["chroma_chunks"] == row["lexical_chunks"] == 1
    search = run_c1("search", "quartzite moraines", "--json", env=env)
    assert search.rc == 0, search.stderr
    assert search.json()["documents"][0]["path"] == str(notes / "glacier.md")
    assert "Traceback" not in search.stderr

    run_c1("index", notes, env=env).assert_one_line_error(2, "cannot write the index in",
                                                          str(readonly_home / "collections" / "default"))
    run_c1("index", notes, "-c", "new", env=env).assert_one_line_error(2, "cannot write the index in")
    run_c1("rm", "-c", "default", env=env).assert_one_line_error(2, "cannot write the index in")
    assert _snapshot(readonly_home) == before, "nothing written"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("c1-readonly-")], "private copies removed at exit"


@pytest.mark.slow
def test_a_read_only_copy_reads_the_write_ahead_log(run_c1, c1_home, notes, tmp_path):
    """A home copied while a process holds its manifest open (the resident process, `c1 watch`, `c1 serve`)
    keeps its last changes in manifest.sqlite-wal. Read-only, SQLite's immutable open ignored that log: the
    copy served the previous text of a note, and counted the documents of the run before."""
    assert run_c1("index", notes, "--quiet").rc == 0
    holder = sqlite3.connect(c1_home / "collections" / "default" / "manifest.sqlite")
    holder.execute("SELECT COUNT(*) FROM meta").fetchone()
    try:
        (notes / "glacier.md").write_text(GLACIER.replace("Zanzibar", "Patagonia"))
        (notes / "ferry.md").write_text(FERRY)
        assert run_c1("index", notes, "--quiet").rc == 0
        shutil.copytree(c1_home, tmp_path / "copy")  # as `cp -a` does, while the holder is open
    finally:
        holder.close()
    assert (tmp_path / "copy" / "collections" / "default" / "manifest.sqlite-wal").stat().st_size > 0
    writable = run_c1("status", "--json").json()["collections"][0]
    temp = tmp_path / "temp"
    temp.mkdir()
    with readonly_view(tmp_path / "copy", tmp_path / "ro") as view:
        env = {"C1_HOME": str(view), "TMPDIR": str(temp)}
        status = run_c1("status", "--json", env=env)
        assert status.rc == 0, status.stderr
        (row,) = status.json()["collections"]
        assert row["documents"] == writable["documents"] == 2 and row["chunks"] == writable["chunks"]
        assert row["consistent"], row
        found = run_c1("search", "glacier survey moraines", "--json", env=env)
        assert found.rc == 0, found.stderr
        top = found.json()["documents"][0]
        assert top["path"] == str(notes / "glacier.md")
        text = " ".join(c["text"] for c in top["chunks"])
        assert "Patagonia" in text and "Zanzibar" not in text, text
    assert not [p for p in temp.iterdir() if p.name.startswith("c1-readonly-")], "private copies removed at exit"


# --- pipes closed early --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [[], ["--json"], ["--jsonl"]])
@pytest.mark.slow
def test_a_closed_stdout_ends_the_search_quietly(indexed, mode):
    """`c1 search ... | head -1` (the reader gone before c1 writes): exit 0 and nothing on stderr but the
    policy note, as ripgrep does."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(c1_argv("search", "glacier survey", *mode), stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=indexed.env)
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr.lower(), proc.stderr


@pytest.mark.slow
def test_search_into_head(indexed):
    command = " ".join(f"'{a}'" for a in c1_argv("search", "glacier survey", "--jsonl", "--parallel", "2"))
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", f"{command} | head -1"], capture_output=True, text=True,
                          timeout=300, env=indexed.env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith('{"event": "run_started"') and proc.stdout.count("\n") == 1
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr.lower(), proc.stderr


@pytest.mark.slow
def test_an_unwritable_trajectory_path_is_refused_before_the_search(indexed, tmp_path):
    result = invoke_cli("search", "glacier", "--save-trajectory", tmp_path / "no" / "such" / "run.json", env=indexed.env)
    result.assert_one_line_error(2, "--save-trajectory", "does not exist")  # one line: no search, no policy note
    assert result.stdout == ""
    invoke_cli("search", "glacier", "--save-trajectory", tmp_path, env=indexed.env).assert_one_line_error(2, "is a directory")


def test_copies_left_by_a_killed_process_are_removed_by_the_next(tmp_path, monkeypatch):
    """A process killed outright (SIGKILL) cannot remove its read-only copies: the next one that copies does,
    and leaves those of live processes alone."""
    import tempfile

    from c1.store import readonly

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"c1-readonly-{gone.pid}-abc"
    alive = tmp_path / f"c1-readonly-{os.getppid()}-def"
    for folder in (dead, alive):
        (folder / "chroma").mkdir(parents=True)
    readonly.sweep()
    assert not dead.exists() and alive.exists()
