"""`c1 index` and `c1 status` against a real Chroma server (`chroma run`) on a free local port."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import inspect_collection, read_manifest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chroma_executable() -> str:
    found = Path(sys.executable).with_name("chroma")
    if found.exists():
        return str(found)
    which = shutil.which("chroma")
    if not which:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    return which


@contextlib.contextmanager
def running_chroma(data: Path):
    """A `chroma run` server on a free port; killed (with its process group) on exit, whatever happens."""
    import httpx

    port = free_port()
    data.mkdir(parents=True, exist_ok=True)
    log = open(data / "server.log", "wb")
    proc = subprocess.Popen(
        [chroma_executable(), "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"chroma run exited with {proc.returncode}: {(data / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("chroma run did not answer its heartbeat within 60 s")
            time.sleep(0.1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory):
    with running_chroma(tmp_path_factory.mktemp("chroma-server")) as url:
        yield url


def server_collection(url: str, name: str = "c1-default"):
    import chromadb

    host, port = url.removeprefix("http://").split(":")
    client = chromadb.HttpClient(host=host, port=int(port), settings=chromadb.Settings(anonymized_telemetry=False))
    return client.get_collection(name, embedding_function=None)


@pytest.mark.slow
def test_index_into_a_chroma_server(chroma_server, c1_home, run_c1, enron_folder, small_corpus, tmp_path):
    corpus = enron_folder(4, smallest=True)
    shutil.copy(small_corpus.path / "hotpot" / "paragraphs.jsonl", corpus / "paragraphs.jsonl")

    result = run_c1("index", corpus, "--chroma-url", chroma_server, "--json")
    assert result.rc == 0, result.stderr
    r = result.json()
    assert r["added"] == 5 and r["skipped"] == []

    manifest = read_manifest(c1_home / "collections" / "default" / "manifest.sqlite")
    assert manifest["meta"]["chroma"] == chroma_server
    col = server_collection(chroma_server)
    got = col.get(include=["documents", "metadatas"])
    assert set(got["ids"]) == {c["id"] for c in manifest["chunks"]}
    assert len(got["ids"]) == r["total_chunks"]
    texts = {c["id"]: c["text"] for c in manifest["chunks"]}
    for cid, text, meta in zip(got["ids"], got["documents"], got["metadatas"]):
        assert text == texts[cid]
        assert cid == f"{meta['doc']}_{meta['n']}"
    assert {m["source_id"] for m in got["metadatas"] if "source_id" in m} == set(small_corpus.source_ids)
    assert not (c1_home / "chroma").exists(), "no embedded store when a server is used"
    inspect_collection(c1_home, chroma_url=chroma_server).assert_consistent()

    # Incremental against the server: nothing changed, then one file changed.
    again = run_c1("index", corpus, "--chroma-url", chroma_server, "--json").json()
    assert (again["added"], again["updated"], again["chunks"]) == (0, 0, 0)
    msg = sorted(corpus.rglob("*."))[0]
    with open(msg, "a") as f:
        f.write("\n\nUpdate: the Houston office moves to the new building in May.\n")
    changed = run_c1("index", corpus, "--chroma-url", chroma_server, "--json").json()
    assert (changed["added"], changed["updated"], changed["deleted"]) == (0, 1, 0)
    state = inspect_collection(c1_home, chroma_url=chroma_server)
    state.assert_consistent()
    assert any("Houston office moves" in t for t in server_collection(chroma_server).get(include=["documents"])["documents"])

    status = run_c1("status", "--chroma-url", chroma_server, "--json")
    assert status.rc == 0, status.stderr
    (row,) = status.json()["collections"]
    assert row["store"] == chroma_server
    assert row["consistent"] is True and row["chroma_chunks"] == len(state.manifest_ids)


@pytest.mark.slow
def test_unreachable_chroma_server_is_a_one_line_error(c1_home, run_c1, enron_folder):
    url = f"http://127.0.0.1:{free_port()}"
    corpus = enron_folder(1, smallest=True)
    run_c1("index", corpus, "--chroma-url", url).assert_one_line_error(2, "chroma", url)


@pytest.mark.slow
def test_status_when_the_server_is_down_shows_the_reason_and_the_other_collections(c1_home, run_c1, enron_folder,
                                                                                    tmp_path):
    corpus = enron_folder(1, smallest=True)
    assert run_c1("index", corpus, "--quiet", "-c", "local").rc == 0
    with running_chroma(tmp_path / "short-lived") as url:
        assert run_c1("index", corpus, "--chroma-url", url, "--quiet").rc == 0
    status = run_c1("status", "--json")
    assert status.rc == 1 and "Traceback" not in status.stderr
    rows = {r["collection"]: r for r in status.json()["collections"]}
    assert "cannot reach the Chroma server" in rows["default"]["error"] and url in rows["default"]["error"]
    assert rows["local"]["consistent"] is True and rows["local"]["documents"] == 1
    plain = run_c1("status")
    assert plain.rc == 1 and "Traceback" not in plain.stderr
    assert plain.stdout.splitlines() == [f"default\tBROKEN\t{rows['default']['error']}",
                                         "local\t1 documents\t1 chunks\tconsistent"]
    assert f"default: cannot reach the Chroma server at {url}" in " ".join(plain.stderr.split())


@pytest.mark.slow
def test_status_with_a_dead_chroma_url_leaves_embedded_collections_healthy(c1_home, run_c1, enron_folder):
    """`c1 status --chroma-url <dead>` marked every healthy embedded collection BROKEN."""
    corpus = enron_folder(1, smallest=True)
    assert run_c1("index", corpus, "--quiet").rc == 0
    url = f"http://127.0.0.1:{free_port()}"
    status = run_c1("status", "--chroma-url", url, "--json")
    assert status.rc == 0, status.stdout
    (row,) = status.json()["collections"]
    assert row["consistent"] is True and "error" not in row and row["store"] == str(c1_home / "chroma")
    plain = run_c1("status", "--chroma-url", url)
    assert plain.rc == 0 and "BROKEN" not in plain.stdout + plain.stderr


@pytest.mark.slow
def test_a_mistyped_chroma_url_does_not_bind_or_break_anything(c1_home, run_c1, enron_folder):
    corpus = enron_folder(1, smallest=True)
    assert run_c1("index", corpus, "--quiet").rc == 0
    url = f"http://127.0.0.1:{free_port()}"
    run_c1("index", corpus, "-c", "typo", "--chroma-url", url).assert_one_line_error(2, "chroma", url)
    status = run_c1("status", "--json")
    rows = {r["collection"]: r for r in status.json()["collections"]}
    assert rows["default"]["consistent"] is True
    assert "typo" not in rows, "a failed first run leaves no collection behind"
    assert not (c1_home / "collections" / "typo").exists()
    assert status.rc == 0, status.stdout
    fixed = run_c1("index", corpus, "-c", "typo", "--json")  # the embedded store, since nothing was stored there
    assert fixed.rc == 0, fixed.stderr
    assert fixed.json()["added"] == 1


@pytest.mark.slow
def test_rm_removes_the_vectors_from_the_server(chroma_server, c1_home, run_c1, enron_folder):
    corpus = enron_folder(2, smallest=True)
    assert run_c1("index", corpus, "--chroma-url", chroma_server, "-c", "gone", "--quiet").rc == 0
    assert server_collection(chroma_server, "c1-gone").count() > 0
    result = run_c1("rm", "-c", "gone", "--json")  # the manifest says which server
    assert result.rc == 0, result.stderr
    assert result.json() == {"collection": "gone", "removed": True, "documents": 2,
                             "chunks": result.json()["chunks"], "vectors": chroma_server}
    assert not (c1_home / "collections" / "gone").exists()
    with pytest.raises(Exception, match="does not exist"):
        server_collection(chroma_server, "c1-gone")


@pytest.mark.slow
def test_a_collection_stays_on_its_store(chroma_server, c1_home, run_c1, enron_folder):
    """The manifest says what is indexed; pointing a collection at another store would make it lie."""
    corpus = enron_folder(2, smallest=True)
    assert run_c1("index", corpus, "--quiet").rc == 0  # embedded
    run_c1("index", corpus, "--chroma-url", chroma_server).assert_one_line_error(2, "embedded store", chroma_server)
    elsewhere = run_c1("status", "--chroma-url", chroma_server, "--json")  # status looks where each one lives
    assert elsewhere.rc == 0 and elsewhere.json()["collections"][0]["store"] == str(c1_home / "chroma")

    on_server = run_c1("index", corpus, "--chroma-url", chroma_server, "--collection", "remote", "--json")
    assert on_server.rc == 0 and on_server.json()["added"] == 2
    # Without --chroma-url, a server collection is opened on its server.
    again = run_c1("index", corpus, "--collection", "remote", "--json")
    assert again.rc == 0, again.stderr
    assert (again.json()["unchanged"], again.json()["chunks"]) == (2, 0)
    rows = {r["collection"]: r for r in run_c1("status", "--json").json()["collections"]}
    assert rows["remote"]["store"] == chroma_server and rows["remote"]["consistent"] is True
    assert rows["default"]["store"] == str(c1_home / "chroma") and rows["default"]["consistent"] is True
