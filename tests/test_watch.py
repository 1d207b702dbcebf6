"""`c1 index PATH... --watch`: real file operations under a real watcher process, real stores.

Covers: editor-style atomic saves, temporary and backup files ignored, `mv` inside, out of and
into the watched folders, `rm -r`, a file given as a root, a burst of 500 new files (a few
batches, not 500 runs), a file still being written, Ctrl-C (exit 130, consistent) and kill -9
(repaired by the next run) during a batch, the lock while watching, `c1 search` and `c1 status`
meanwhile, and the search API (`c1 serve --api-only`) and `c1 mcp` seeing changes without a
restart. The pure parts (the batcher, the walk rules for changed paths, the manifest's prefix
query) are tested directly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import c1_argv, hotpot_paragraphs, inspect_collection, read_manifest
from llm_server import free_port

DEBOUNCE = "0.3"
GLACIER = "# Glacier memo\n\nThe Zanzibar glacier survey found quartzite moraines near the northern ridge.\n"
FERRY = "# Ferry memo\n\nThe Oyster Bay ferry timetable changes to hourly crossings in the winter months.\n"
ORCHARD = "# Orchard notes\n\nThe Kestrel Hill orchard grafts russet apples onto quince rootstock.\n"


# --- a watcher process --------------------------------------------------------------------------


class Watcher:
    """``c1 index ... --watch --json`` running; its JSON lines read as they come (stdout and stderr go to
    files, so nothing blocks on a full pipe)."""

    def __init__(self, root: Path, *args, batch_chunks: int | None = None):
        self.out_path, self.err_path = root / "watch.out", root / "watch.err"
        self.proc = subprocess.Popen(c1_argv("index", *args, "--watch", "--json", batch_chunks=batch_chunks),
                                     stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"))
        self.seen = 0

    @property
    def stderr(self) -> str:
        return self.err_path.read_text()

    def events(self) -> list[dict]:
        lines = self.out_path.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def next(self, event: str = "batch", timeout: float = 120) -> dict:
        """The next line of that kind not yet returned."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.events()
            while self.seen < len(got):
                self.seen += 1
                if got[self.seen - 1]["event"] == event:
                    return got[self.seen - 1]
            if self.proc.poll() is not None:
                pytest.fail(f"the watcher ended (exit {self.proc.returncode}) before a {event!r} line:\n{self.stderr}")
            time.sleep(0.05)
        pytest.fail(f"no {event!r} line within {timeout}s:\n{self.stderr}")

    def changes(self, until: set[tuple[str, str]], timeout: float = 120) -> set[tuple[str, str]]:
        """(change, path) of the batches that come, until all of ``until`` were seen."""
        seen: set[tuple[str, str]] = set()
        while not until <= seen:
            seen |= {(c["change"], c["path"]) for c in self.next("batch", timeout)["changes"]}
        return seen

    def quiet_for(self, seconds: float) -> None:
        """No batch line arrives for ``seconds``."""
        time.sleep(seconds)
        extra = [e for e in self.events()[self.seen:] if e["event"] == "batch"]
        assert not extra, f"unexpected batches: {extra}"

    def stop(self, sig=signal.SIGINT, timeout: float = 120) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)


@pytest.fixture
def watch(c1_home, tmp_path):
    started: list[Watcher] = []

    def start(*args, batch_chunks: int | None = None) -> Watcher:
        w = Watcher(tmp_path, *args, batch_chunks=batch_chunks)
        started.append(w)
        w.next("index")
        return w

    yield start
    for w in started:
        w.kill()


def atomic_save(path: Path, text: str) -> None:
    """What editors do: write a temporary file beside it, then rename it over the old one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def indexed_paths(home: Path) -> set[str]:
    return set(read_manifest(home / "collections" / "default" / "manifest.sqlite")["files"])


# --- editing, moving, deleting ------------------------------------------------------------------


@pytest.mark.slow
def test_editor_saves_moves_and_deletes(c1_home, watch, tmp_path, run_c1):
    docs, elsewhere = tmp_path / "docs", tmp_path / "elsewhere"
    (docs / "trips").mkdir(parents=True)
    (elsewhere / "archive").mkdir(parents=True)
    (docs / "glacier.md").write_text(GLACIER)
    (docs / "trips" / "ferry.md").write_text(FERRY)
    single = tmp_path / "orchard.md"  # a file given as a root
    single.write_text(ORCHARD)
    w = watch(docs, single, "--debounce", DEBOUNCE)
    assert "watching" in w.stderr

    # an atomic save and an editor's side files: one update, nothing else
    atomic_save(docs / "glacier.md", GLACIER + "\nA second survey in March mapped the crevasses.\n")
    (docs / ".glacier.md.swp").write_bytes(b"\x00vim swap")
    (docs / "glacier.md~").write_text(GLACIER)
    (docs / ".#glacier.md").write_text("user@host.1234")
    (docs / "#glacier.md#").write_text(GLACIER)
    (docs / "4913").write_text("")
    batch = w.next()
    assert [(c["change"], c["path"]) for c in batch["changes"]] == [("updated", str(docs / "glacier.md"))]
    assert batch["changes"][0]["chunks"] == 1 and batch["updated"] == 1 and batch["total_chunks"] == 3
    atomic_save(single, ORCHARD.replace("russet", "pippin"))
    assert w.changes({("updated", str(single))}) == {("updated", str(single))}

    # mv across folders inside the watched folder; a folder moved out, one moved in; rm -r
    (docs / "trips" / "ferry.md").rename(docs / "ferry.md")
    assert w.changes({("deleted", str(docs / "trips" / "ferry.md")), ("added", str(docs / "ferry.md"))}) == {
        ("deleted", str(docs / "trips" / "ferry.md")), ("added", str(docs / "ferry.md"))}
    (elsewhere / "archive" / "old.md").write_text(FERRY.replace("Oyster Bay", "Puffin Cove"))
    shutil.move(elsewhere / "archive", docs / "archive")  # into the watched folder: its files are walked
    assert w.changes({("added", str(docs / "archive" / "old.md"))}) == {("added", str(docs / "archive" / "old.md"))}
    shutil.move(docs / "archive", elsewhere / "archive2")  # out of it
    assert w.changes({("deleted", str(docs / "archive" / "old.md"))}) == {("deleted", str(docs / "archive" / "old.md"))}
    (docs / "trips" / "deep").mkdir()
    (docs / "trips" / "deep" / "a.md").write_text(GLACIER.replace("Zanzibar", "Baltoro"))
    (docs / "trips" / "b.md").write_text(FERRY.replace("Oyster", "Heron"))
    w.changes({("added", str(docs / "trips" / "deep" / "a.md")), ("added", str(docs / "trips" / "b.md"))})
    shutil.rmtree(docs / "trips")
    gone = {("deleted", str(docs / "trips" / "deep" / "a.md")), ("deleted", str(docs / "trips" / "b.md"))}
    assert w.changes(gone) == gone
    single.rename(elsewhere / "orchard.md")  # the file root moved away
    assert w.changes({("deleted", str(single))}) == {("deleted", str(single))}
    w.quiet_for(1.5)  # nothing left over: no batch for the ignored files

    assert indexed_paths(c1_home) == {str(docs / "glacier.md"), str(docs / "ferry.md")}
    state = inspect_collection(c1_home)
    state.assert_consistent()
    assert any("crevasses" in c["text"] for c in state.chunks)
    assert f"updated {docs / 'glacier.md'} (1 chunk)" in w.stderr
    assert f"deleted {docs / 'trips' / 'b.md'}" in w.stderr
    assert w.stop(signal.SIGINT) == 130
    last = w.events()[-1]
    assert last == {"event": "stopped", "signal": "SIGINT", "batches": last["batches"]} and last["batches"] >= 8
    assert "Traceback" not in w.stderr and "stopped watching" in w.stderr
    status = run_c1("status", "--json")
    assert status.rc == 0 and status.json()["collections"][0]["consistent"] is True


@pytest.mark.slow
def test_a_watched_folder_removed_is_said_once(c1_home, watch, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "glacier.md").write_text(GLACIER)
    (b / "ferry.md").write_text(FERRY)
    w = watch(a, b, "--debounce", DEBOUNCE)
    shutil.rmtree(a)
    batch = w.next()
    assert [(c["change"], c["path"]) for c in batch["changes"]] == [("deleted", str(a / "glacier.md"))]
    assert [x["path"] for x in batch["warnings"]] == [str(a)] and "no longer watched" in batch["warnings"][0]["warning"]
    (b / "orchard.md").write_text(ORCHARD)  # the other folder is still watched
    batch = w.next()
    assert [(c["change"], c["path"]) for c in batch["changes"]] == [("added", str(b / "orchard.md"))]
    assert batch["warnings"] == []
    assert w.stop() == 130
    assert w.stderr.count("no longer watched") == 1


@pytest.mark.slow
def test_a_burst_of_500_files_is_a_few_batches(c1_home, watch, tmp_path, shared_data):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "seed.md").write_text(GLACIER)
    paragraphs = hotpot_paragraphs(shared_data, 60)[:500]
    assert len(paragraphs) == 500
    w = watch(docs, "--debounce", "0.5")
    for i, p in enumerate(paragraphs):
        (docs / f"p{i:03d}.txt").write_text(f"{p['title']}\n\n{p['text']}\n")
    added, batches = 0, 0
    while added < 500:
        batch = w.next(timeout=600)
        batches += 1
        added += batch["added"]
    assert added == 500 and batches <= 3, f"{batches} batches for a burst of 500 files"
    listed = [line for line in w.stderr.splitlines() if line.split()[1:2] == ["added"]]
    assert len(listed) == 20 * batches and w.stderr.count("… and ") == batches  # the rest counted in one line
    inspect_collection(c1_home).assert_consistent()
    assert len(indexed_paths(c1_home)) == 501


@pytest.mark.slow
def test_a_file_still_being_written_waits_until_it_is_complete(c1_home, watch, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    w = watch(docs, "--debounce", "1.0")
    pieces = [f"Part {i}: the ferry timetable for the Oyster Bay crossing number {i}.\n" for i in range(8)]
    with open(docs / "log.md", "w") as f:
        for piece in pieces:  # 8 writes 0.4 s apart: never quiet for the 1 s debounce until closed
            f.write(piece)
            f.flush()
            time.sleep(0.4)
    done = time.time()
    batch = w.next()
    assert [(c["change"], c["path"]) for c in batch["changes"]] == [("added", str(docs / "log.md"))]
    assert done - 0.05 <= _epoch(batch["time"]), "indexed before the file was complete"
    text = " ".join(c["text"] for c in inspect_collection(c1_home).chunks)
    assert "crossing number 7" in text
    w.quiet_for(1.5)


def _epoch(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


# --- stopping and crashing ------------------------------------------------------------------------


def _write_notes(folder: Path, n: int) -> None:
    for i in range(n):
        (folder / f"note{i:02d}.md").write_text(f"# Note {i}\n\nNote number {i} about the Kestrel Hill orchard.\n")


def _dirty(home: Path) -> bool:
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{home / 'collections' / 'default' / 'manifest.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='dirty'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return False
    return bool(row) and row[0] == "1"


def _wait_dirty(home: Path, w: Watcher, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not _dirty(home):
        assert time.monotonic() < deadline, "no batch started"
        assert w.proc.poll() is None, w.stderr
        time.sleep(0.01)


@pytest.mark.slow
def test_ctrl_c_during_a_batch_exits_130_consistent(c1_home, watch, tmp_path, run_c1):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    w = watch(docs, "--debounce", "0.2", batch_chunks=1)  # one file per commit: a batch takes seconds
    _write_notes(docs, 40)
    _wait_dirty(c1_home, w)
    assert w.stop(signal.SIGINT, timeout=60) == 130
    assert "Traceback" not in w.stderr and "stopping after the files in hand" in w.stderr
    status = run_c1("status", "--json")
    assert status.rc == 0, status.stdout
    inspect_collection(c1_home).assert_consistent()
    done = len(indexed_paths(c1_home)) - 1
    assert done < 40, "Ctrl-C stops taking new files"
    r = run_c1("index", docs, "--json").json()
    assert r["repaired"] is False and r["added"] == 40 - done and r["unchanged"] == done + 1


@pytest.mark.slow
def test_kill_9_during_a_batch_is_repaired_by_the_next_run(c1_home, watch, tmp_path, run_c1):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    w = watch(docs, "--debounce", "0.2", batch_chunks=1)
    _write_notes(docs, 40)
    _wait_dirty(c1_home, w)
    time.sleep(0.3)
    w.proc.send_signal(signal.SIGKILL)
    assert w.proc.wait(30) == -signal.SIGKILL
    status = run_c1("status", "--json").json()["collections"][0]
    assert status["interrupted"] is True and status["consistent"] is False
    result = run_c1("index", docs, "--json")
    assert result.rc == 0, result.stderr
    assert result.json()["repaired"] is True
    inspect_collection(c1_home).assert_consistent()
    assert len(indexed_paths(c1_home)) == 41


def _start_chroma(data: Path, port: int) -> subprocess.Popen:
    from test_chroma_server import chroma_executable

    proc = subprocess.Popen([chroma_executable(), "run", "--path", str(data), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, "chroma run did not start"
        time.sleep(0.1)


def _kill_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


@pytest.mark.slow
def test_a_batch_that_fails_is_tried_again(c1_home, watch, tmp_path):
    """The Chroma server goes away in the middle of a watch: the batch fails, is said, and is indexed once
    the server is back, the collection repaired and consistent."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    chroma = _start_chroma(tmp_path / "chroma", port)
    try:
        w = watch(docs, "--chroma-url", url, "--debounce", DEBOUNCE)
        _kill_group(chroma)
        (docs / "ferry.md").write_text(FERRY)
        failed = w.next("error")
        assert "Chroma" in failed["error"] and failed["retry_in"] >= 1
        assert "trying again in" in w.stderr
        chroma = _start_chroma(tmp_path / "chroma", port)
        batch = w.next(timeout=180)
        assert [(c["change"], c["path"]) for c in batch["changes"]] == [("added", str(docs / "ferry.md"))]
        assert w.stop() == 130
        inspect_collection(c1_home, chroma_url=url).assert_consistent()
        assert indexed_paths(c1_home) == {str(docs / "glacier.md"), str(docs / "ferry.md")}
    finally:
        _kill_group(chroma)


# --- other commands meanwhile --------------------------------------------------------------------


@pytest.mark.slow
def test_while_watching_index_is_refused_and_search_works(c1_home, watch, tmp_path, run_c1):
    docs, other = tmp_path / "docs", tmp_path / "other"
    docs.mkdir()
    other.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    (other / "orchard.md").write_text(ORCHARD)
    w = watch(docs, "--debounce", DEBOUNCE)
    refused = run_c1("index", other)
    line = refused.assert_one_line_error(2, "kept fresh by `c1 index --watch", f"pid {w.proc.pid}", "stop it")
    assert str(docs) in line
    assert run_c1("rm", "-c", "default").rc == 2

    (docs / "ferry.md").write_text(FERRY)
    w.changes({("added", str(docs / "ferry.md"))})
    found = run_c1("search", "Oyster Bay ferry timetable", "-k", "1", "--json")
    assert found.rc == 0, found.stderr
    assert found.json()["documents"][0]["path"] == str(docs / "ferry.md")
    status = run_c1("status", "--json")
    assert status.rc == 0 and status.json()["collections"][0]["consistent"] is True

    assert w.stop(signal.SIGTERM) == 0  # as `c1 serve`: SIGTERM is a clean stop
    assert w.events()[-1]["signal"] == "SIGTERM"
    assert run_c1("index", other, "--quiet").rc == 0  # the lock is free again


def test_usage_errors(invoke_c1, tmp_path):
    (tmp_path / "a.md").write_text(GLACIER)
    invoke_c1("index", tmp_path, "--watch", "--strict").assert_one_line_error(2, "--strict", "--watch")
    invoke_c1("index", tmp_path / "nope", "--watch").assert_one_line_error(2, "no such file or directory")
    invoke_c1("index", tmp_path, "--debounce", "1").assert_one_line_error(2, "--debounce goes with --watch")
    bad = invoke_c1("index", tmp_path, "--watch", "--debounce", "-1")  # Typer's usage error, as for every range
    assert bad.rc == 2 and "--debounce" in bad.stderr and "Traceback" not in bad.stderr


# --- long-lived readers: the search API and MCP -----------------------------------------------


def _api_search(url: str, query: str) -> list[str]:
    r = httpx.post(url + "/v1/search", json={"query": query, "max_docs": 3}, timeout=120)
    assert r.status_code == 200, r.text
    return [d["path"] for d in r.json()["documents"]]


@pytest.mark.slow
def test_the_search_api_sees_changes_without_a_restart(c1_home, watch, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    w = watch(docs, "--debounce", DEBOUNCE)
    port = free_port()
    api = subprocess.Popen(c1_argv("serve", "--api-only", "--api-port", port, "--policy", "builtin"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert "search API on" in api.stderr.readline() + api.stderr.readline()
        url = f"http://127.0.0.1:{port}"
        assert _api_search(url, "Zanzibar glacier quartzite")[0] == str(docs / "glacier.md")

        (docs / "ferry.md").write_text(FERRY)
        w.changes({("added", str(docs / "ferry.md"))})
        assert _api_search(url, "Oyster Bay ferry timetable hourly crossings")[0] == str(docs / "ferry.md")

        atomic_save(docs / "ferry.md", FERRY.replace("Oyster Bay", "Puffin Cove"))
        w.changes({("updated", str(docs / "ferry.md"))})
        assert _api_search(url, "Puffin Cove ferry timetable")[0] == str(docs / "ferry.md")

        (docs / "ferry.md").unlink()
        w.changes({("deleted", str(docs / "ferry.md"))})
        assert str(docs / "ferry.md") not in _api_search(url, "Puffin Cove ferry timetable")
    finally:
        api.send_signal(signal.SIGTERM)
        assert api.wait(60) == 0


@pytest.mark.slow
@pytest.mark.parametrize("snapshot", [False, True], ids=["chroma", "snapshot"])
def test_a_reader_mid_search_survives_a_write_its_chroma_client_has_not_seen(c1_home, run_c1, tmp_path, snapshot):
    """A search that starts before a batch and ends after it: the manifest and the lexical index already
    show the new chunks, the reader's embedded Chroma client (its index in memory) does not, nor the
    vector snapshot it read (``snapshot``: the snapshot `c1 index` wrote is kept)."""
    from c1.retrieval.corpus import Corpus
    from c1.config import load_settings
    from c1.store import flat

    (tmp_path / "glacier.md").write_text(GLACIER)
    assert run_c1("index", tmp_path, "--quiet").rc == 0
    if not snapshot:
        flat.snapshot_path(load_settings()).unlink()
    corpus = Corpus(load_settings())
    assert isinstance(corpus.store.vectors, flat.FlatVectors) == snapshot
    try:
        assert corpus.hybrid("Zanzibar glacier survey", 3)[0].doc.path == str(tmp_path / "glacier.md")
        (tmp_path / "ferry.md").write_text(FERRY)
        assert run_c1("index", tmp_path, "--quiet").rc == 0  # another process, as a watcher is
        doc = next(d for d in corpus.store.manifest.all_docs() if d.path == str(tmp_path / "ferry.md"))
        ranked = corpus.rank_chunks(corpus.doc_chunks(doc.doc_id), "Oyster Bay ferry timetable")
        assert ranked[0][0].doc_id == doc.doc_id and ranked[0][1] > 0.5
    finally:
        corpus.close()


@pytest.mark.slow
def test_mcp_sees_changes_without_a_restart(c1_home, watch, tmp_path):
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'c1[mcp]')")
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "glacier.md").write_text(GLACIER)
    w = watch(docs, "--debounce", DEBOUNCE)
    params = StdioServerParameters(command=sys.executable, args=["-m", "c1", "mcp", "--policy", "builtin"],
                                   env=dict(os.environ))

    async def session():
        async with Client(params, read_timeout_seconds=300) as client:
            async def top(query: str) -> list[str]:
                res = await client.call_tool("search", {"query": query, "max_docs": 2})
                assert not res.is_error, res.content
                return [d["path"] for d in json.loads(res.content[0].text)["documents"]]

            before = await top("Kestrel Hill orchard russet quince")
            (docs / "orchard.md").write_text(ORCHARD)
            await anyio.to_thread.run_sync(lambda: w.changes({("added", str(docs / "orchard.md"))}))
            after = await top("Kestrel Hill orchard russet quince")
            return before, after

    before, after = anyio.run(session)
    assert str(docs / "orchard.md") not in before
    assert after[0] == str(docs / "orchard.md")


# --- the pure parts ------------------------------------------------------------------------------


def test_the_batcher_waits_for_quiet_and_for_bursts_to_end():
    from c1.index.watch import Batcher

    b = Batcher(debounce=0.5, max_hold=60)
    assert b.due_in(0.0) is None
    b.add(["/d/a.md", "/d/.a.md.tmp"], now=0.0)  # an atomic save: two paths at once
    assert b.take(0.4) == [] and b.due_in(0.4) == pytest.approx(0.1)
    assert b.take(0.5) == ["/d/.a.md.tmp", "/d/a.md"] and len(b) == 0

    for i in range(500):  # a burst over 1.5 s: one batch after it ends
        b.add([f"/d/p{i}"], now=10 + i * 0.003)
    assert b.take(11.0) == []
    assert len(b.take(12.0)) == 500

    b.add(["/d/log"], now=20.0)  # a file still being written holds back only itself...
    b.add(["/d/x"], now=20.1)
    for t in range(1, 25):
        b.add(["/d/log"], now=20 + t * 0.25)
    assert b.take(20.9) == []  # x settled, but the burst is young: wait for it
    assert b.due_in(20.9) == pytest.approx(1.2)  # ... until x has waited max_wait (log is written until 26)
    assert b.take(22.1) == ["/d/x"]  # x waited max_wait (2 s): it goes, log stays
    assert b.take(26.5) == ["/d/log"]  # quiet at last

    b = Batcher(debounce=0.5, max_hold=5)
    for t in range(25):  # written without pause: indexed as it stands after max_hold
        b.add(["/d/log"], now=t * 0.2)
    assert b.take(5.0) == ["/d/log"]


def test_changed_paths_follow_the_walk_rules(tmp_path):
    from c1.index.walk import scan, scan_changed

    root = tmp_path / "docs"
    for rel in ("a.md", "sub/b.txt", "sub/c.zip", ".hidden/d.md", "__pycache__/e.md", ".f.md", "g.md~",
                "#h.md#", "mail/cur/1", "mail/new/2", "mail/tmp/3", "mail/.Sent/cur/4", "mail/.Sent/new/x",
                "mail/.Sent/tmp/y", "moved/deep/i.md"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("From: a@b.c\nSubject: s\n\nbody\n" if "mail" in rel else "some text\n")
    everything = {s.path for s in scan([str(root)], max_bytes=1 << 20).sources}

    def found(*rels: str) -> set[str]:
        return {s.path for s in scan_changed([str(root)], [str(root / r) for r in rels], max_bytes=1 << 20).sources}

    assert found(*[str(p.relative_to(root)) for p in root.rglob("*")]) == everything, "path by path, as a walk"
    assert found("moved") == {str(root / "moved/deep/i.md")}, "a folder is walked whole"
    assert found(".hidden/d.md", "__pycache__/e.md", ".f.md", "g.md~", "#h.md#", "sub/c.zip", "mail/tmp/3",
                 "mail/.Sent/tmp/y", "gone.md") == set()
    assert found("mail/cur/1", "mail/.Sent/new/x") == {str(root / "mail/cur/1"), str(root / "mail/.Sent/new/x")}
    (tmp_path / "outside.md").write_text("some text\n")
    assert found(str(tmp_path / "outside.md")) == set()
    changed = scan_changed([str(root)], [str(root / "sub")], max_bytes=1 << 20)
    assert changed.unsupported == {".zip": 1}


def test_files_under_is_a_prefix_of_whole_names(tmp_path):
    from c1.store.manifest import FileRecord, Manifest

    m = Manifest(tmp_path / "m.sqlite")
    paths = ["/a/b", "/a/b/c.md", "/a/b/d/e.md", "/a/bc.md", "/a/b0.md", "/a/b.md", "/z.md"]
    m.replace_files([FileRecord(p, "h", 1, 1, "text") for p in paths], [], [])
    assert set(m.files_under(["/a/b"])) == {"/a/b", "/a/b/c.md", "/a/b/d/e.md"}
    assert set(m.files_under(["/a/b/"])) == {"/a/b/c.md", "/a/b/d/e.md"}
    assert set(m.files_under(["/a/b/c.md", "/z.md", "/nope"])) == {"/a/b/c.md", "/z.md"}
    assert set(m.files_under(["/"])) == set(paths)
    m.close()


@pytest.mark.slow
def test_status_tells_a_batch_in_progress_from_an_interrupted_run(c1_home, run_c1, tmp_path):
    import sqlite3

    from c1.store.status import collection_status
    from c1.config import load_settings
    from c1.store.lock import CollectionLock, lock_holder

    (tmp_path / "glacier.md").write_text(GLACIER)
    assert run_c1("index", tmp_path, "--quiet").rc == 0
    settings = load_settings()
    db = sqlite3.connect(settings.collection_dir / "manifest.sqlite")
    with db:
        db.execute("UPDATE meta SET value='1' WHERE key='dirty'")  # what a batch in progress looks like
    db.close()
    with CollectionLock(settings.collection_dir, f"c1 index --watch {tmp_path}"):
        assert lock_holder(settings.collection_dir) == {"pid": os.getpid(), "doing": f"c1 index --watch {tmp_path}"}
        row = collection_status(settings)
        assert row["interrupted"] is False and row["writer"]["pid"] == os.getpid()
        assert row["writer"]["doing"] == f"c1 index --watch {tmp_path}"
        assert row["being_indexed"] == f"being indexed (pid {os.getpid()})"
        assert row["problems"] == [] and row["consistent"] is True
    assert lock_holder(settings.collection_dir) is None
    row = collection_status(settings)
    assert row["interrupted"] is True and row["writer"] is None
    assert row["problems"] == ["an index run was interrupted", "`c1 index` repairs it"]
