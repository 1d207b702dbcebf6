"""Shared fixtures: the real data in ../shared/data, an isolated c1 home, the real CLI in a subprocess.

Tests run the real components (embedder, Chroma, tantivy) on real files. Nothing here is mocked.

- ``shared_data``: the data folder (``$C1_SHARED_DATA``, else ``../shared/data`` beside the clone);
  tests that need it are skipped, with the reason, when it is absent.
- ``c1_home``: a fresh ``C1_HOME`` with config and data dirs isolated (no user config, no stray
  ``C1_*`` variables) — in this process (monkeypatch) and in every subprocess started from it.
- ``run_c1``: ``run_c1("index", path, "--json")`` → ``CliResult(rc, stdout, stderr)``.
- ``invoke_c1``: the same, in this process (Typer's runner): for one-line errors and other checks
  where a real process adds nothing (keep real processes for signals, pipes, crashes and anything
  that another process then reads: Chroma's embedded client caches what it has read).
- ``c1_popen``: the same command line as a running :class:`subprocess.Popen` (crash tests).
- ``new_c1_env``: an isolated environment for module- or session-scoped fixtures.
- ``inspect_store``: read a collection's manifest, Chroma and tantivy state from outside.
- ``small_corpus``: a session-wide folder of real files (Enron mail, PDFs, HotpotQA paragraphs).
- ``enron_folder``: ``enron_folder(n)`` copies ``n`` Enron messages into a tmp folder.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]


# --- the shared data --------------------------------------------------------------------------


def shared_data_dir() -> Path:
    explicit = os.environ.get("C1_SHARED_DATA")
    return Path(explicit) if explicit else Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "enron").is_dir():
        pytest.skip(f"shared test data not found at {path} (set C1_SHARED_DATA or put shared/ beside the clone)")
    return path


def enron_messages(shared: Path) -> list[Path]:
    """All Enron messages (``user/folder[/sub...]/N.``), in a stable order."""
    return sorted(p for p in (shared / "enron" / "maildir").rglob("*") if p.is_file())


def copy_file(src: Path, dst: Path) -> Path:
    """Copy contents only: the shared files are read-only, copies must be editable."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def copy_enron(shared: Path, dest: Path, n: int, smallest: bool = False) -> list[Path]:
    """Copy ``n`` messages, keeping their ``user/folder/N.`` layout (the smallest ones: fast to embed)."""
    root = shared / "enron" / "maildir"
    messages = enron_messages(shared)
    if smallest:
        messages.sort(key=lambda p: (p.stat().st_size, p))
    return [copy_file(p, dest / p.relative_to(root)) for p in messages[:n]]


# --- an isolated environment ------------------------------------------------------------------


def isolated_env(root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: os.environ) without C1_* settings, with home/config/data under ``root``."""
    env = {k: v for k, v in (base if base is not None else os.environ).items()
           if not k.startswith("C1_") or k == "C1_SHARED_DATA"}
    env.update(
        C1_DAEMON="0",  # no resident process per test home (tests/test_daemon.py turns it on where it is tested)
        C1_HOME=str(root / "home"),
        XDG_CONFIG_HOME=str(root / "xdg-config"),
        XDG_DATA_HOME=str(root / "xdg-data"),
        PYTHONUNBUFFERED="1",
    )
    return env


class CliResult(NamedTuple):
    rc: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        """The single JSON object that ``--json`` prints on stdout."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}:\n{self.stdout}\n{self.stderr}"
        return json.loads(lines[0])

    def assert_one_line_error(self, rc: int = 2, *fragments: str) -> str:
        """Exit ``rc``, no traceback, exactly one non-empty line on stderr holding ``fragments``."""
        assert self.rc == rc, f"exit {self.rc}, expected {rc}\nstdout: {self.stdout}\nstderr: {self.stderr}"
        assert "Traceback" not in self.stderr, self.stderr
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected a one-line error, got:\n{self.stderr}"
        for fragment in fragments:
            assert fragment.lower() in lines[0].lower(), f"{fragment!r} not in {lines[0]!r}"
        return lines[0]


_INSTRUMENTED = """
import importlib, os, sys, time
import c1.index.indexer as ix
batch, target, marker = sys.argv.pop(1), sys.argv.pop(1), sys.argv.pop(1)
if batch != "-":
    ix.BATCH_CHUNKS = int(batch)
if target != "-":
    module, owner, name = target.rsplit(".", 2)
    cls = getattr(importlib.import_module(module), owner)
    original = getattr(cls, name)

    def paused(*args, **kwargs):
        out = original(*args, **kwargs)
        if not paused.done:
            paused.done = True
            open(marker, "w").close()
            deadline = time.monotonic() + 600
            while os.path.exists(marker) and time.monotonic() < deadline:
                time.sleep(0.02)
        return out

    paused.done = False

    setattr(cls, name, paused)
sys.argv[0] = "c1"
from c1.cli import main
main()
"""


def wait_for(predicate, proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    """Wait until ``predicate()`` holds; fail if ``proc`` ends first or the time runs out."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if proc.poll() is not None:
            pytest.fail(f"c1 ended (exit {proc.returncode}) before {what}:\n{proc.stderr.read()}")
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def c1_argv(*args, batch_chunks: int | None = None, pause_after: str | None = None,
            marker: Path | None = None) -> list[str]:
    """The real CLI. ``batch_chunks`` makes the indexer commit every few chunks (crash tests: many
    commits from a small corpus). ``pause_after`` ("c1.store.manifest.Manifest.replace_files"): right
    after the first call of that method returns, the process creates ``marker`` and waits until the
    test removes it — so that a signal, or a second command, lands in the middle of the run whatever
    the machine's speed."""
    if batch_chunks is None and pause_after is None:
        return [sys.executable, "-m", "c1", *map(str, args)]
    return [sys.executable, "-c", _INSTRUMENTED, str(batch_chunks or "-"), pause_after or "-", str(marker or "-"),
            *map(str, args)]


def invoke_cli(*args, env: dict[str, str] | None = None) -> CliResult:
    """The CLI in this process: exit code, stdout and stderr as a subprocess would give them."""
    from typer.testing import CliRunner

    from c1.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args], env=env, catch_exceptions=False)
    return CliResult(result.exit_code, result.stdout, result.stderr)


def run_cli(args, env: dict[str, str], timeout: float = 600, cwd: Path | None = None) -> CliResult:
    proc = subprocess.run(c1_argv(*args), env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@dataclass
class C1Env:
    """An isolated c1 environment for fixtures wider than one test (module, session)."""

    root: Path
    env: dict[str, str]

    @property
    def home(self) -> Path:
        return Path(self.env["C1_HOME"])

    def run(self, *args, env: dict[str, str] | None = None, timeout: float = 600) -> CliResult:
        return run_cli(args, {**self.env, **(env or {})}, timeout=timeout)


@pytest.fixture(scope="session", autouse=True)
def daemon_runtime(tmp_path_factory: pytest.TempPathFactory):
    """Resident processes (c1/daemon) started during the run listen in a folder of this session
    (``$XDG_RUNTIME_DIR``, inherited by every c1 the tests start) and are stopped at its end."""
    root = tmp_path_factory.mktemp("runtime")
    root.chmod(0o700)
    before = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(root)
    yield root / "c1"
    stop_daemons(root / "c1")
    if before is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = before


def stop_daemons(folder: Path) -> None:
    """Ask every resident process listening in ``folder`` to stop."""
    import socket

    for path in folder.glob("*.sock") if folder.is_dir() else ():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            try:
                sock.connect(str(path))
                sock.sendall(b'{"op": "stop"}\n')
                sock.recv(4096)
            except OSError:
                pass


@contextmanager
def readonly_view(src: Path, view: Path):
    """``src`` seen read-only at ``view``: a read-only bind mount as root (root ignores file modes),
    a copy made read-only with chmod otherwise."""
    view.mkdir()
    if os.geteuid() == 0:
        mounted = subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(view)], capture_output=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot make a read-only bind mount here: {mounted.stderr.decode().strip()}")
        try:
            yield view
        finally:
            _umount(view)
    else:
        shutil.rmtree(view)
        shutil.copytree(src, view)
        subprocess.run(["chmod", "-R", "a-w", str(view)], check=True)
        try:
            yield view
        finally:
            subprocess.run(["chmod", "-R", "u+w", str(view)], check=True)


def _umount(view: Path, timeout: float = 30) -> None:
    """Unmount, waiting for processes that are still exiting (their threads release the mount last)."""
    import time

    deadline = time.monotonic() + timeout
    while subprocess.run(["umount", str(view)], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, f"{view} stays busy"
        time.sleep(0.1)


@pytest.fixture(scope="session")
def new_c1_env(tmp_path_factory: pytest.TempPathFactory):
    """``new_c1_env()`` → a fresh :class:`C1Env` (its own home, config and data dirs)."""

    def make(name: str = "c1env") -> C1Env:
        root = tmp_path_factory.mktemp(name)
        return C1Env(root, isolated_env(root))

    return make


@pytest.fixture
def c1_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty C1_HOME; no user config file and no C1_* variables leak in."""
    env = isolated_env(tmp_path)
    for key in list(os.environ):
        if key not in env:
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Path(env["C1_HOME"])


@pytest.fixture
def run_c1(c1_home: Path):
    """Run the real CLI in a subprocess with the isolated environment (plus ``env`` overrides)."""

    def run(*args, env: dict[str, str] | None = None, timeout: float = 600, cwd: Path | None = None) -> CliResult:
        return run_cli(args, {**os.environ, **(env or {})}, timeout=timeout, cwd=cwd)

    return run


@pytest.fixture
def invoke_c1(c1_home: Path):
    """:func:`invoke_cli` in the isolated environment of ``c1_home``."""
    return invoke_cli


@pytest.fixture
def c1_popen(c1_home: Path):
    """Start the real CLI without waiting; every process still running at teardown is killed."""
    procs: list[subprocess.Popen] = []

    def start(*args, env: dict[str, str] | None = None, batch_chunks: int | None = None,
              pause_after: str | None = None, marker: Path | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(
            c1_argv(*args, batch_chunks=batch_chunks, pause_after=pause_after, marker=marker),
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


# --- reading a collection from outside -------------------------------------------------------


@dataclass
class StoreState:
    manifest_ids: set[str]
    chroma_ids: set[str]
    lexical_ids: list[str]
    files: dict[str, str | None]
    """path → content hash (None: to be retried)."""
    docs: list[dict]
    chunks: list[dict]
    pending: list[str]
    meta: dict[str, str]

    def assert_consistent(self) -> None:
        """Manifest, Chroma and tantivy hold exactly the same chunks, once each."""
        lexical = set(self.lexical_ids)
        assert len(self.lexical_ids) == len(lexical), "duplicate chunk ids in the lexical index"
        assert self.chroma_ids == self.manifest_ids, (
            f"Chroma vs manifest: orphans {sorted(self.chroma_ids - self.manifest_ids)[:5]}, "
            f"missing {sorted(self.manifest_ids - self.chroma_ids)[:5]}"
        )
        assert lexical == self.manifest_ids, (
            f"tantivy vs manifest: orphans {sorted(lexical - self.manifest_ids)[:5]}, "
            f"missing {sorted(self.manifest_ids - lexical)[:5]}"
        )
        expected = {f"{d['doc_id']}_{n}" for d in self.docs for n in range(d["n_chunks"])}
        assert expected == self.manifest_ids, "manifest chunks do not match the documents' chunk counts"
        assert self.pending == [], f"files still pending: {self.pending[:5]}"
        assert self.meta.get("dirty") != "1", "collection still marked dirty"


def read_manifest(path: Path) -> dict:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return {
            "files": {r["path"]: r["hash"] for r in db.execute("SELECT path, hash FROM files")},
            "docs": [dict(r) for r in db.execute("SELECT * FROM docs")],
            "chunks": [dict(r) for r in db.execute("SELECT * FROM chunks")],
            "pending": [r[0] for r in db.execute("SELECT path FROM pending")],
            "meta": {r[0]: r[1] for r in db.execute("SELECT key, value FROM meta")},
        }
    finally:
        db.close()


def chroma_collection(home: Path, collection: str = "default", chroma_url: str | None = None):
    """The collection's Chroma handle, with no cached client state from earlier reads."""
    from chromadb.api.client import SharedSystemClient

    from c1.store.vectors import VectorStore

    SharedSystemClient.clear_system_cache()
    return VectorStore(home, collection, chroma_url, None, create=False)


def inspect_collection(home: Path, collection: str = "default", chroma_url: str | None = None) -> StoreState:
    from c1.store.lexical import LexicalIndex

    cdir = home / "collections" / collection
    m = read_manifest(cdir / "manifest.sqlite")
    vectors = chroma_collection(home, collection, chroma_url)
    return StoreState(
        manifest_ids={c["id"] for c in m["chunks"]},
        chroma_ids=vectors.all_ids(),
        lexical_ids=LexicalIndex(cdir / "lexical").all_ids(),
        files=m["files"], docs=m["docs"], chunks=m["chunks"], pending=m["pending"], meta=m["meta"],
    )


@pytest.fixture
def inspect_store():
    return inspect_collection


# --- corpora ----------------------------------------------------------------------------------

SMALL_PDFS = (
    "pypdf_sample_files/001-trivial/minimal-document.pdf",
    "pypdf_sample_files/004-pdflatex-4-pages/pdflatex-4-pages.pdf",  # 4 pages: page metadata
    "pypdf_sample_files/011-google-doc-document/google-doc-document.pdf",
)
SMALL_ENRON = 10
SMALL_HOTPOT_RECORDS = 3


@dataclass(frozen=True)
class SmallCorpus:
    path: Path
    files: int
    """Files the walker finds (each a Source in the manifest)."""
    documents: int
    source_ids: frozenset[str]
    """The ``id`` of each HotpotQA paragraph in ``hotpot/paragraphs.jsonl``."""


def hotpot_records(shared: Path, records: int, start: int = 0) -> list[dict]:
    """HotpotQA records ``start`` … ``start + records - 1`` of the shared file."""
    with open(shared / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl", encoding="utf-8") as f:
        lines = f.read().splitlines()
    return [json.loads(line) for line in lines[start : start + records]]


def hotpot_paragraphs(shared: Path, records: int, start: int = 0) -> list[dict]:
    """``{"id", "title", "text"}`` for the paragraphs of those records (title = Wikipedia page, unique)."""
    out, seen = [], set()
    for record in hotpot_records(shared, records, start):
        for title, sentences in record["context"]:
            if title not in seen:
                seen.add(title)
                out.append({"id": title, "title": title, "text": "".join(sentences).strip()})
    return out


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def indexed_hotpot(make_env, name: str, records: int = 3, start: int = 0) -> C1Env:
    """A new :class:`C1Env` (from ``new_c1_env``) with HotpotQA records' paragraphs indexed from
    ``env.corpus / "paragraphs.jsonl"``."""
    shared = shared_data_dir()
    if not (shared / "hotpotqa").is_dir():
        pytest.skip(f"shared test data not found at {shared} (set C1_SHARED_DATA)")
    env = make_env(name)
    env.corpus = env.root / "corpus"
    env.corpus.mkdir()
    write_jsonl(env.corpus / "paragraphs.jsonl", hotpot_paragraphs(shared, records, start))
    indexed = env.run("index", env.corpus, "--quiet")
    assert indexed.rc == 0, indexed.stderr
    return env


def write_small_corpus(shared: Path, dest: Path) -> SmallCorpus:
    enron_root = shared / "enron" / "maildir"
    by_folder: dict[Path, Path] = {}
    for msg in enron_messages(shared):  # one message per mailbox folder: varied senders and shapes
        by_folder.setdefault(msg.parent, msg)
    for msg in list(by_folder.values())[:SMALL_ENRON]:
        copy_file(msg, dest / "enron" / msg.relative_to(enron_root))
    for rel in SMALL_PDFS:
        copy_file(shared / "pdf" / rel, dest / "pdf" / Path(rel).name)
    paragraphs = hotpot_paragraphs(shared, SMALL_HOTPOT_RECORDS)
    (dest / "hotpot").mkdir(parents=True)
    with open(dest / "hotpot" / "paragraphs.jsonl", "w", encoding="utf-8") as f:
        for p in paragraphs:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    return SmallCorpus(
        path=dest,
        files=SMALL_ENRON + len(SMALL_PDFS) + 1,
        documents=SMALL_ENRON + len(SMALL_PDFS) + len(paragraphs),
        source_ids=frozenset(p["id"] for p in paragraphs),
    )


@pytest.fixture(scope="session")
def small_corpus(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> SmallCorpus:
    """Read-only: copy it (``shutil.copytree``) before changing anything in it."""
    return write_small_corpus(shared_data, tmp_path_factory.mktemp("small-corpus"))


@pytest.fixture
def enron_folder(shared_data: Path, tmp_path: Path):
    def make(n: int, name: str = "mail", smallest: bool = False) -> Path:
        dest = tmp_path / name
        copy_enron(shared_data, dest, n, smallest=smallest)
        return dest

    return make
