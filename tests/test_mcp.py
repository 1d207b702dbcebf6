"""``c1 mcp``: a real MCP client session (the SDK's stdio client spawning ``python -m c1 mcp``)
calling ``status`` and ``search`` against a small real index; stdout carries protocol only."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import anyio
import pytest

from llm_server import HotpotIndex, hotpot_index  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow  # c1 mcp as a subprocess speaking stdio

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'c1[mcp]')")

MCP_ARGV = [sys.executable, "-m", "c1", "mcp"]


def server_params(index: HotpotIndex, *extra: str):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=MCP_ARGV[0], args=[*MCP_ARGV[1:], "--home", str(index.home), *extra],
                                 env=index.env)


def test_status_and_search_over_stdio(hotpot_index: HotpotIndex):
    from mcp import Client

    q = hotpot_index.questions[0]
    gold = {hotpot_index.doc_by_title[t] for t, _ in q["supporting_facts"]}

    async def session():
        async with Client(server_params(hotpot_index, "--policy", "builtin"), read_timeout_seconds=300) as client:
            tools = await client.list_tools()
            status = await client.call_tool("status", {})
            search = await client.call_tool("search", {"query": q["question"], "max_docs": 4, "parallel": 2})
            bad = await client.call_tool("search", {"query": "x", "collection": "nope"})
            return tools, status, search, bad

    tools, status, search, bad = anyio.run(session)

    names = {t.name for t in tools.tools}
    assert names == {"search", "status"}
    schema = next(t for t in tools.tools if t.name == "search").input_schema
    assert schema["required"] == ["query"] and {"collection", "max_docs", "parallel"} <= set(schema["properties"])

    assert not status.is_error
    st = status.structured_content or json.loads(status.content[0].text)
    assert [c["collection"] for c in st["collections"]] == ["default"]
    assert st["collections"][0]["documents"] == len(hotpot_index.doc_by_title) and st["collections"][0]["consistent"]

    assert not search.is_error, search.content
    out = search.structured_content or json.loads(search.content[0].text)
    assert out["query"] == q["question"] and out["policy"] == "builtin"
    assert 1 <= len(out["documents"]) <= 4 and out["stats"]["runs"] == 2
    assert gold & {d["id"] for d in out["documents"]}
    assert json.loads(search.content[0].text)["documents"] == out["documents"]  # the text block holds the same JSON

    assert bad.is_error and "no collection 'nope'" in bad.content[0].text


def _rpc(proc: subprocess.Popen, msg: dict) -> None:
    proc.stdin.write(json.dumps(msg) + "\n")
    proc.stdin.flush()


def test_stdout_carries_protocol_messages_only(hotpot_index: HotpotIndex):
    proc = subprocess.Popen([*MCP_ARGV, "--home", str(hotpot_index.home), "--policy", "builtin"], env=hotpot_index.env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    lines = []
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}})
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": hotpot_index.questions[2]["question"]}}})
        while line := proc.stdout.readline():  # every line until the search's reply
            lines.append(line)
            if json.loads(line).get("id") == 2:
                break
        proc.stdin.close()  # end of session: the server exits
        rest, err = proc.stdout.read(), proc.stderr.read()
        lines += rest.splitlines()
        proc.wait(30)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    messages = [json.loads(line) for line in lines if line.strip()]  # every line is JSON ...
    assert all(m.get("jsonrpc") == "2.0" for m in messages)  # ... and JSON-RPC
    assert messages[0]["id"] == 1 and messages[0]["result"]["serverInfo"]["name"] == "c1"
    reply = next(m for m in messages if m.get("id") == 2)
    assert not reply["result"].get("isError"), reply
    assert json.loads(reply["result"]["content"][0]["text"])["documents"]
    assert proc.returncode == 0, err[-2000:]
