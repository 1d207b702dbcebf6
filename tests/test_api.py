"""The search API over real HTTP on loopback: results, SSE, concurrency limits, errors, auth."""

from __future__ import annotations

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from c1.config import Settings
from c1.errors import C1Error
from c1.service.http_api import check_bind, is_loopback, make_server
from c1.service.search_service import ApiError, validate_request
from llm_server import HotpotIndex, hotpot_index  # noqa: F401  (fixture)


class Running:
    def __init__(self, server):
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = server.url
        self.service = server.service

    def close(self):
        self.server.close()
        self.thread.join(5)


def start(index: HotpotIndex, **kw) -> Running:
    settings = Settings(home=index.home, policy="builtin", max_turns=4)
    kw.setdefault("port", 0)
    return Running(make_server(settings, **kw))


@pytest.fixture(scope="module")
def api(hotpot_index: HotpotIndex):
    srv = start(hotpot_index, max_concurrency=2, timeout_s=120, max_body=4096)
    yield srv
    srv.close()


def post(url: str, body, **kw) -> httpx.Response:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(url + "/v1/search", content=data, headers={"Content-Type": "application/json", **kw.pop("headers", {})},
                      timeout=kw.pop("timeout", 120), **kw)


def test_health(api):
    resp = httpx.get(api.url + "/health", timeout=10)
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "ok" and body["collections"] == ["default"]
    assert body["max_concurrency"] == 2 and body["busy"] == 0


@pytest.mark.slow
def test_search_returns_the_json_document(api, hotpot_index: HotpotIndex):
    q = hotpot_index.questions[1]
    resp = post(api.url, {"query": q["question"], "max_docs": 3})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert set(out) == {"query", "policy", "model", "budget", "documents", "stats"}
    assert out["query"] == q["question"] and out["policy"] == "builtin" and out["model"] is None
    assert 1 <= len(out["documents"]) <= 3
    assert {"id", "title", "path", "score", "justification", "chunks"} <= set(out["documents"][0])
    gold = {hotpot_index.doc_by_title[t] for t, _ in q["supporting_facts"]}
    assert gold & {d["id"] for d in out["documents"]}
    assert "built-in policy" in out["stats"]["policy_note"]


def _search_until_done(url: str, body: dict) -> tuple[httpx.Response, int]:
    """POST, honouring 429 + Retry-After; returns (final response, 429s seen)."""
    busy = 0
    while True:
        resp = post(url, body)
        if resp.status_code != 429:
            return resp, busy
        busy += 1
        assert resp.headers["Retry-After"] == "1"
        time.sleep(0.1)


@pytest.mark.slow
def test_concurrent_requests_are_bounded_and_consistent(api, hotpot_index: HotpotIndex):
    questions = [q["question"] for q in hotpot_index.questions]
    expected = {}
    for q in questions:  # one by one first
        resp = post(api.url, {"query": q})
        assert resp.status_code == 200
        expected[q] = [d["id"] for d in resp.json()["documents"]]
    api.service.peak = 0
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda q: (q, *_search_until_done(api.url, {"query": q})), questions * 2))
    for q, resp, _ in outcomes:
        assert resp.status_code == 200, resp.text
        assert [d["id"] for d in resp.json()["documents"]] == expected[q]  # the shared corpus reads safely
    assert api.service.peak == 2  # never more than max_concurrency at once
    assert sum(n for _, _, n in outcomes) > 0  # and the others were told to come back
    assert api.service.busy == 0


def test_full_slots_answer_429(api, hotpot_index: HotpotIndex):
    api.service.acquire()
    api.service.acquire()
    try:
        resp = post(api.url, {"query": hotpot_index.questions[0]["question"]})
        assert resp.status_code == 429 and resp.headers["Retry-After"] == "1"
        assert "2 of 2 agent-run slots are busy" in resp.json()["error"]["message"]
        assert httpx.get(api.url + "/health", timeout=10).json()["busy"] == 2  # health takes no slot
    finally:
        api.service.release()
        api.service.release()
    assert post(api.url, {"query": hotpot_index.questions[0]["question"]}).status_code == 200


def test_sse_stream(api, hotpot_index: HotpotIndex):
    q = hotpot_index.questions[2]["question"]
    events = []
    with httpx.stream("POST", api.url + "/v1/search", json={"query": q, "stream": True}, timeout=120) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        kind, data = None, []
        for line in resp.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif line == "" and kind:
                events.append((kind, json.loads("\n".join(data))))
                kind, data = None, []
    kinds = [k for k, _ in events]
    assert kinds[0] == "run_started" and kinds[-1] == "result" and kinds[-2] == "finished"
    assert {"turn_started", "tool_called", "tool_result"} <= set(kinds)
    for k, d in events[:-1]:
        assert d["event"] == k
    result = events[-1][1]
    assert result["query"] == q and result["documents"]
    assert [d["id"] for d in result["documents"]] == [d["id"] for d in events[-2][1]["documents"]][: len(result["documents"])]


@pytest.mark.parametrize("body, code, fragment", [
    (b"not json", 400, "not valid JSON"),
    (b"\xff\xfe", 400, "not valid JSON"),
    ([], 400, "must be a JSON object"),
    ({}, 400, "'query' is required"),
    ({"query": "   "}, 400, "'query' is required"),
    ({"query": 5}, 400, "'query' must be a string"),
    ({"query": "x", "max_docs": "3"}, 400, "'max_docs' must be an integer"),
    ({"query": "x", "max_docs": True}, 400, "'max_docs' must be an integer"),
    ({"query": "x", "parallel": 0}, 400, "between 1 and 32"),
    ({"query": "x", "stream": "yes"}, 400, "'stream' must be a boolean"),
    ({"query": "x", "policy": "magic"}, 400, "auto, llm or builtin"),
    ({"query": "x", "k": 3}, 400, "unknown field(s) k"),
    ({"query": "x", "collection": "../etc"}, 400, "not a collection name"),
    ({"query": "x", "collection": "nope"}, 404, "no collection 'nope'"),
    ({"query": "x", "policy": "llm"}, 503, "needs a model server"),
])
def test_bad_requests(api, body, code, fragment):
    resp = post(api.url, body)
    assert resp.status_code == code, resp.text
    err = resp.json()["error"]
    assert err["code"] == code and fragment in err["message"]


def test_routes_and_methods(api):
    assert httpx.get(api.url + "/v1/search", timeout=10).status_code == 405
    assert httpx.get(api.url + "/nope", timeout=10).status_code == 404
    assert httpx.post(api.url + "/health", content=b"{}", timeout=10).status_code == 405


def test_oversize_body_is_413(api):
    resp = post(api.url, {"query": "x" * 5000})
    assert resp.status_code == 413 and "limit is 4096" in resp.json()["error"]["message"]


def _raw(url: str, request: bytes) -> bytes:
    host, port = url.rsplit("/", 1)[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        chunks = []
        while data := s.recv(65536):
            chunks.append(data)
    return b"".join(chunks)


def test_body_needs_a_content_length(api):
    answer = _raw(api.url, b"POST /v1/search HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 411")
    answer = _raw(api.url, b"POST /v1/search HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 411")


def test_timeout_is_504_and_the_slot_comes_back(hotpot_index: HotpotIndex):
    srv = start(hotpot_index, max_concurrency=1, timeout_s=0.05)
    try:
        srv.service.corpus("default")  # opened before the clock starts, as after a first request
        resp = post(srv.url, {"query": hotpot_index.questions[3]["question"], "max_turns": 8})
        assert resp.status_code == 504 and "cancelled" in resp.json()["error"]["message"]
        deadline = time.monotonic() + 30
        while srv.service.busy and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.service.busy == 0
    finally:
        srv.close()


@pytest.mark.slow
def test_token_is_checked_on_every_request(hotpot_index: HotpotIndex):
    srv = start(hotpot_index, token="s3cret")
    try:
        assert httpx.get(srv.url + "/health", timeout=10).status_code == 401
        bad = httpx.get(srv.url + "/health", headers={"Authorization": "Bearer nope"}, timeout=10)
        assert bad.status_code == 401 and bad.headers["WWW-Authenticate"].startswith("Bearer")
        assert post(srv.url, {"query": "x"}).status_code == 401
        ok = httpx.get(srv.url + "/health", headers={"Authorization": "Bearer s3cret"}, timeout=10)
        assert ok.status_code == 200
        good = post(srv.url, {"query": hotpot_index.questions[0]["question"]}, headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 200
    finally:
        srv.close()


@pytest.mark.parametrize("host, loop", [("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True),
                                        ("[::1]", True), ("0.0.0.0", False), ("::", False), ("192.168.1.5", False),
                                        ("example.org", False)])
def test_loopback(host, loop):
    assert is_loopback(host) is loop


def test_binding_beyond_loopback_needs_a_token(hotpot_index: HotpotIndex):
    for host in ("0.0.0.0", "::", "10.0.0.1"):
        with pytest.raises(C1Error, match="without a token"):
            check_bind(host, None)
        with pytest.raises(C1Error, match="without a token"):
            make_server(Settings(home=hotpot_index.home), host=host, port=0)  # refused before binding
        check_bind(host, "t")  # allowed with a token
    check_bind("127.0.0.1", None)


def test_validate_request_keeps_known_fields():
    assert validate_request({"query": "q", "max_docs": 3, "stream": False, "collection": None}) == {
        "query": "q", "max_docs": 3, "stream": False}
    with pytest.raises(ApiError):
        validate_request({"query": "q" * 5000})


def test_serve_api_runs_until_sigterm(hotpot_index: HotpotIndex):
    """``serve_api`` as the CLI calls it: announces itself on stderr, serves, stops cleanly on SIGTERM."""
    import signal
    import subprocess
    import sys

    from llm_server import free_port

    port = free_port()
    code = ("import sys; from pathlib import Path; from c1.config import Settings; from c1.service.http_api import serve_api; "
            f"sys.exit(serve_api(Settings(home=Path({str(hotpot_index.home)!r}), policy='builtin'), port={port}))")
    proc = subprocess.Popen([sys.executable, "-c", code], env=hotpot_index.env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "built-in policy" in line, line
        line = proc.stderr.readline()
        assert f"search API on http://127.0.0.1:{port}" in line and "collections: default" in line, line
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()["status"] == "ok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert "search API stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_api_refuses_a_public_bind_without_token(hotpot_index: HotpotIndex):
    from c1.service.http_api import serve_api

    with pytest.raises(C1Error, match="refusing to serve the search API on 0.0.0.0 without a token"):
        serve_api(Settings(home=hotpot_index.home), host="0.0.0.0", port=0)


def test_the_cached_policy_choice_is_the_one_for_the_requests_budget(tmp_path):
    """The API caches policy choices for a few seconds; a request with another budget gets the policy
    `c1 search --budget` would run (the built-in policy prunes ruled-out documents under small budgets)."""
    from dataclasses import replace

    from c1.agent.policies.builtin import SMALL_BUDGET
    from c1.retrieval.evidence import FLOOR
    from c1.config import Settings
    from c1.service.search_service import SearchService

    settings = Settings(home=tmp_path, policy="builtin")
    service = SearchService(settings, max_concurrency=1)
    assert service.choice(settings).factory(0).prune_below == 0.0
    assert service.choice(replace(settings, budget=SMALL_BUDGET)).factory(0).prune_below == FLOOR


@pytest.mark.slow
def test_a_failing_model_server_is_502_with_its_reason(hotpot_index: HotpotIndex):
    """The model server lists its model but answers chat requests with HTTP 500: a bad gateway
    naming the server and its reason (JSON and SSE), never a 200 with no documents."""
    from model_servers import ScriptedServer, Step

    with ScriptedServer(default=Step(500, {"error": {"message": "engine died"}})) as model:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(model.base_url,), max_turns=3)
        srv = Running(make_server(settings, port=0, timeout_s=120))
        try:
            resp = post(srv.url, {"query": "who drummed for Rush?"})
            assert resp.status_code == 502, resp.text
            message = resp.json()["error"]["message"]
            assert "HTTP 500: engine died" in message and model.base_url in message
            with httpx.stream("POST", srv.url + "/v1/search", json={"query": "who drummed for Rush?", "stream": True},
                              timeout=120) as stream:
                text = "".join(stream.iter_text())
            last = json.loads(text.strip().split("\n\n")[-1].split("data: ", 1)[1])
            assert last["code"] == 502 and "engine died" in last["message"]
            assert srv.service.busy == 0
        finally:
            srv.close()


def test_a_budget_beyond_the_served_window_is_refused_naming_it(hotpot_index: HotpotIndex):
    """``c1 serve`` knows vLLM's window: a request asking for a larger budget is a 400 that names it
    (it used to reach vLLM and fail mid-run with its 400); within the window it runs."""
    srv = Running(make_server(Settings(home=hotpot_index.home, policy="builtin", max_turns=2), port=0,
                              max_budget=32768))
    try:
        too_big = post(srv.url, {"query": "who drummed for Rush?", "budget": 65536, "policy": "llm"})
        assert too_big.status_code == 400
        assert "32768" in too_big.json()["error"]["message"] and "65536" in too_big.json()["error"]["message"]
        assert srv.service.busy == 0
        ok = post(srv.url, {"query": "who drummed for Rush?", "budget": 32768})
        assert ok.status_code == 200, ok.text
    finally:
        srv.close()
