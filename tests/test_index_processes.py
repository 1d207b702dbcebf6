"""Reading files in several processes (c1/index/readers.py): the same index as one reader, smallest files
first, and crash safety as with one reader — a kill -9 or a Ctrl-C while the reader processes read leaves
no process behind and an index the next run completes. Real PDFs from ../shared/data, real CLI processes."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import copy_file, inspect_collection, read_manifest, wait_for

PDFS = [  # real PDFs of many shapes: tables, rotated pages, a password, an empty file, a malformed one
    "issue-461-example.pdf", "table-curves-example.pdf", "annotations.pdf",
    "nics-background-checks-2015-11-rotated.pdf", "scotus-transcript-p1.pdf", "issue-33-lorem-ipsum.pdf",
    "senate-expenditures.pdf", "password-example.pdf", "malformed-from-issue-932.pdf", "empty.pdf",
    "la-precinct-bulletin-2014-p1.pdf", "hello_structure.pdf",
]
COMMIT = "c1.store.manifest.Manifest.replace_files"


@pytest.fixture
def pdf_folder(shared_data: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "pdfs"
    for name in PDFS:
        copy_file(shared_data / "pdf" / "pdfplumber_tests" / name, dest / name)
    (dest / "notes.md").write_text("# Notes\n\nThe senate expenditures and the precinct bulletin were read.\n")
    return dest


def stored(home: Path) -> dict:
    """What an index holds (files, documents, chunks with their text, hash and vector flag; the lexical index's
    ids), independent of the order the files were committed in."""
    state = inspect_collection(home)
    assert sorted(state.lexical_ids) == sorted(state.manifest_ids) and not state.pending
    return {
        "files": state.files,
        "docs": sorted(tuple(sorted(d.items())) for d in state.docs),
        "chunks": sorted(tuple(sorted(c.items())) for c in state.chunks),
        "lexical": sorted(state.lexical_ids),
    }


def children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_reader_count_rules(monkeypatch):
    from c1.index import readers

    monkeypatch.setattr(readers, "available_cpus", lambda: 4)
    assert readers.reader_count(["pdf"]) == 0, "one costly file: read here, no process to start"
    assert readers.reader_count(["text"] * 50) == 0, "plain text is cheaper to read than a process is to start"
    assert readers.reader_count(["pdf", "text", "pdf"]) == 2
    assert readers.reader_count(["pdf"] * 9) == 4, "no more processes than cores"
    monkeypatch.setattr(readers, "available_cpus", lambda: 1)
    assert readers.reader_count(["pdf"] * 9) == 0
    assert readers.reader_count(["text"] * 9, 3) == 3 and readers.reader_count(["text"] * 2, 3) == 2
    assert readers.reader_count(["pdf"] * 9, 1) == 0 and readers.reader_count(["pdf"] * 9, 0) == 0


@pytest.mark.parametrize("value", ["two", "-1", "1000"])
@pytest.mark.slow
def test_a_bad_c1_readers_is_a_one_line_error(value, c1_home, run_c1, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nSome words.\n")
    result = run_c1("index", tmp_path / "docs", env={"C1_READERS": value})
    assert result.rc == 2 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "C1_READERS" in lines[0] and repr(value) in lines[0], result.stderr
    assert run_c1("index", tmp_path / "docs", "--json", env={"C1_READERS": "2"}).json()["added"] == 1


def test_smallest_files_first():
    from c1.index import readers
    from c1.store.manifest import FileRecord

    recs = [FileRecord(p, "h", size, 0, "pdf") for p, size in [("/c", 30), ("/a", 10), ("/b", 30), ("/d", 5)]]
    ordered = readers.smallest_first([(None, r, True) for r in recs])
    assert [item[1].path for item in ordered] == ["/d", "/a", "/b", "/c"]


@pytest.mark.slow
def test_several_reader_processes_give_the_same_index_as_one(pdf_folder, new_c1_env, monkeypatch):
    runs = {}
    for readers in ("0", "3"):
        env = new_c1_env(f"readers{readers}")
        result = env.run("index", pdf_folder, "--keywords-only", "--json", env={"C1_READERS": readers})
        assert result.rc == 0, result.stderr
        report = result.json()
        runs[readers] = (env, report)
    (one, a), (three, b) = runs["0"], runs["3"]
    assert a["added"] == b["added"] == len(PDFS) + 1 - len(a["skipped"]) and a["added"] >= 10
    assert sorted(map(str, a["skipped"])) == sorted(map(str, b["skipped"])) and len(a["skipped"]) >= 2
    assert sorted(map(str, a["warnings"])) == sorted(map(str, b["warnings"]))
    assert (a["documents"], a["total_chunks"]) == (b["documents"], b["total_chunks"])
    assert stored(one.home) == stored(three.home)
    found = [env.run("search", "senate expenditures", "--json", "--no-daemon", "-k", "3") for env in (one, three)]
    assert found[0].rc == found[1].rc == 0
    assert [d["id"] for d in found[0].json()["documents"]] == [d["id"] for d in found[1].json()["documents"]]


def test_reader_processes_are_used_and_pages_are_shown(pdf_folder, c1_home, monkeypatch):
    from c1.config import load_settings
    from c1.index import indexer, readers
    from c1.store.embedders import make_embedder

    monkeypatch.setenv("C1_READERS", "2")
    started = []
    original = readers.Pool.__init__

    def counting(self, n):
        started.append(n)
        original(self, n)

    monkeypatch.setattr(readers.Pool, "__init__", counting)
    seen = []
    report = indexer.Indexer(load_settings(), make_embedder(), embed=False,
                             progress=lambda p: seen.append((p.files_done, p.current, p.page, p.pages))
                             ).run([str(pdf_folder)])
    assert started == [2]
    assert report.added >= 10 and report.without_vectors == report.total_chunks > 0
    # a reader reports each page as it reads it (the indexer shows those that arrive while the file is in
    # hand: these small PDFs are read faster than the events cross, so that part is not timed here)
    import queue

    from c1.index.walk import Source

    events: queue.Queue = queue.Queue()
    monkeypatch.setattr(readers, "_pages", events)
    multi = max(pdf_folder.glob("*.pdf"), key=lambda p: p.stat().st_size)
    docs, _, skip = readers.read(Source(str(multi), "pdf"))
    got = [events.get_nowait() for _ in range(events.qsize())]
    assert skip is None and docs
    assert got and all(path == str(multi) for path, _, _ in got), got
    assert [number for _, number, _ in got] == sorted(number for _, number, _ in got), "in page order"


def test_files_are_read_once_each_smallest_first(pdf_folder):
    from c1.index import loading
    from c1.store.manifest import FileRecord
    from c1.index.walk import scan

    sources = scan([str(pdf_folder)], max_bytes=1 << 30).sources
    todo = [(s, FileRecord(s.path, "h", os.stat(s.path).st_size, 0, s.kind), True) for s in sources]
    loaded = [item for item in loading.load_in_processes(todo, 2) if isinstance(item, loading.Loaded)]
    assert sorted(item.rec.path for item in loaded) == sorted(s.path for s in sources), "every file once"
    by_size = sorted(todo, key=lambda t: t[1].size)
    assert loaded[0].rec.path in {t[1].path for t in by_size[:3]}, "a small file first"
    assert by_size[-1][1].path in {item.rec.path for item in loaded[-3:]}, "the largest among the last"
    skipped = {Path(item.rec.path).name: item.skip for item in loaded if item.skip}
    assert set(skipped) >= {"password-example.pdf", "empty.pdf"} and "encrypted" in skipped["password-example.pdf"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kill -9", "ctrl-c"])
def test_a_stop_while_reader_processes_read_leaves_none_and_the_next_run_completes(
        how, pdf_folder, c1_home, run_c1, c1_popen):
    for name in ("empty.pdf", "password-example.pdf", "malformed-from-issue-932.pdf"):
        (pdf_folder / name).unlink()  # read first (smallest): a first commit without chunks would keep no collection
    files = len(PDFS) + 1 - 3
    marker = c1_home.parent / "committed"
    proc = c1_popen("index", pdf_folder, "--json", "--quiet", "--keywords-only", batch_chunks=1, pause_after=COMMIT,
                    marker=marker, env={"C1_READERS": "2"})
    wait_for(marker.exists, proc, "the first batch to be committed")
    deadline = time.monotonic() + 30
    while len(children_of(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    readers = [p for p in children_of(proc.pid)
               if b"multiprocessing" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(readers) >= 2, "reader processes at work"
    for pid in readers:  # Ctrl-C reaches the whole process group: it is the indexer's, the readers ignore it
        status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                      if ":\t" in line)
        assert int(status["SigIgn"], 16) & (1 << (signal.SIGINT - 1)), status["SigIgn"]
    if how == "kill -9":
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL
    else:
        proc.send_signal(signal.SIGINT)
        marker.unlink()  # the run goes on from the paused commit and stops taking files
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "interrupted" in err
    deadline = time.monotonic() + 20
    while any(alive(p) for p in readers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(p) for p in readers), "no reader process outlives the indexer"
    kept = read_manifest(c1_home / "collections" / "default" / "manifest.sqlite")
    assert 0 < len(kept["files"]) < files, "stopped part way"

    result = run_c1("index", pdf_folder, "--json", "--keywords-only", env={"C1_READERS": "2"})
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["added"] + r["unchanged"] == files - len(r["skipped"]) and r["added"] > 0 and r["unchanged"] > 0
    state = inspect_collection(c1_home)
    assert sorted(state.lexical_ids) == sorted(state.manifest_ids) and not state.pending
    assert state.meta["dirty"] == "0" and {p for p, h in state.files.items() if not h} == {s["path"] for s in r["skipped"]}
    assert len({d["path"] for d in state.docs}) == r["added"] + r["unchanged"]


@pytest.mark.slow
def test_a_reader_process_that_dies_leaves_its_files_to_the_indexer(pdf_folder, c1_home, monkeypatch, new_c1_env):
    """A crash inside a reader (here: SIGKILL from outside, as a native library's crash would end it) breaks the
    pool; the files it had not handed back are read by the indexer itself, and the index is the same as ever."""
    from c1.config import load_settings
    from c1.index import indexer
    from c1.store.embedders import make_embedder

    monkeypatch.setenv("C1_READERS", "2")
    monkeypatch.setattr(indexer, "BATCH_CHUNKS", 1)  # a commit per file: the kill lands after the first
    killed = []

    def progress(p):
        if p.files_done >= 1 and not killed:
            mine = [pid for pid in children_of(os.getpid())
                    if b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()
                    and b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()]
            for pid in mine:
                os.kill(pid, signal.SIGKILL)
            killed.extend(mine)

    report = indexer.Indexer(load_settings(), make_embedder(), embed=False, progress=progress).run([str(pdf_folder)])
    assert killed, "the reader processes were running"
    assert report.added == len(PDFS) + 1 - len(report.skipped) and report.added >= 10
    one = new_c1_env("one-reader")
    assert one.run("index", pdf_folder, "--keywords-only", "--quiet", env={"C1_READERS": "0"}).rc == 0
    assert stored(c1_home) == stored(one.home)


def _signals(pid: int) -> tuple[int, int]:
    """(blocked, ignored) signal masks of a process."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
    return int(status["SigBlk"], 16), int(status["SigIgn"], 16)


@pytest.mark.slow
def test_a_ctrl_c_while_the_reader_processes_start_prints_no_traceback(pdf_folder, c1_home):
    """A terminal's Ctrl-C reaches the whole process group, maybe while a reader process is still starting
    (importing, before its initializer ran): it is blocked there from the first instruction, so no reader
    prints a KeyboardInterrupt traceback; the indexer stops as on any Ctrl-C (exit 130)."""
    import subprocess

    from conftest import c1_argv

    bit = 1 << (signal.SIGINT - 1)
    proc = subprocess.Popen(c1_argv("index", pdf_folder, "--quiet", "--keywords-only"),
                            env={**os.environ, "C1_READERS": "2"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        seen: dict[int, tuple[int, int]] = {}
        while not seen and time.monotonic() < deadline and proc.poll() is None:
            for pid in children_of(proc.pid):
                try:
                    if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        seen[pid] = _signals(pid)
                except OSError:
                    pass
        assert seen, "a reader process started"
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: at once, while it starts
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    for pid, (blocked, ignored) in seen.items():
        assert (blocked | ignored) & bit, f"reader {pid} could take SIGINT while it started"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode in (130, 0), err  # 0: it finished before the signal came (a fast machine)
