"""The ``llm`` policy: parsing tool calls, the HTTP client (retries, timeouts, one-line errors),
selection (``auto``/``llm``, replicas, model names), the loop against a scripted server over real
HTTP, and — marked ``llm`` — the loop against a real llama.cpp server running a real small model."""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace

import pytest

from c1.agent import events as ev
from c1.agent.context import ToolCall
from c1.agent.policies import choose_policy
from c1.agent.policies.llm import ChatClient, LLMPolicy, normalize_base_url, parse_tool_names
from c1.agent.policies.llm_reply import extract_tool_calls, parse_reply
from c1.agent.policy import ModelServerError, PolicyError
from c1.agent.tools import ToolConfig
from c1.config import Settings
from c1.errors import C1Error
from llm_server import HotpotIndex, closed_port_url, hotpot_index, llama_server  # noqa: F401  (fixtures)
from model_servers import FakeServer, ScriptedServer, Step, completion

KNOWN = {"search_corpus": "query", "grep_corpus": "pattern", "read_document": "doc_id", "prune_chunks": "chunk_ids"}


def calls_of(text: str, known=KNOWN) -> list[tuple[str, dict | str]]:
    calls, _ = extract_tool_calls(text, known)
    out = []
    for c in calls:
        try:
            out.append((c.name, json.loads(c.arguments)))
        except json.JSONDecodeError:
            out.append((c.name, c.arguments))
    return out


# --- tool calls written as text -------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ('```json\n{"name": "search_corpus", "arguments": {"query": "Rush drummer"}}\n```',
     [("search_corpus", {"query": "Rush drummer"})]),
    ('```\n{"name": "search_corpus", "arguments": {"query": "a"}}\n```', [("search_corpus", {"query": "a"})]),
    ('{"name": "grep_corpus", "arguments": {"pattern": "19\\\\d\\\\d"}}', [("grep_corpus", {"pattern": "19\\d\\d"})]),
    ('{"name": "read_document", "arguments": "{\\"doc_id\\": \\"ab12cd34\\"}"}',
     [("read_document", {"doc_id": "ab12cd34"})]),
    ('<tools>\n{"name": "search_corpus", "arguments": {"query": "Rush"}}\n</tools>', [("search_corpus", {"query": "Rush"})]),
    ('{"function": {"name": "search_corpus", "arguments": {"query": "x"}}}', [("search_corpus", {"query": "x"})]),
    ('{"type": "function", "function": {"name": "search_corpus", "arguments": "{\\"query\\": \\"y\\"}"}}',
     [("search_corpus", {"query": "y"})]),
    ('{"tool": "prune_chunks", "parameters": {"chunk_ids": ["a_0", "b_1"]}}',
     [("prune_chunks", {"chunk_ids": ["a_0", "b_1"]})]),
    ('[{"name": "search_corpus", "arguments": {"query": "a"}}, {"tool": "grep_corpus", "parameters": {"pattern": "b"}}]',
     [("search_corpus", {"query": "a"}), ("grep_corpus", {"pattern": "b"})]),
    ('```json\n[{"name": "search_corpus", "arguments": {"query": "a"}},\n {"name": "search_corpus", '
     '"arguments": {"query": "b"}}]\n```', [("search_corpus", {"query": "a"}), ("search_corpus", {"query": "b"})]),
    ('<tool_call>\n{"name": "search_corpus", "arguments": {"query": "Neil Peart"}}\n</tool_call>',
     [("search_corpus", {"query": "Neil Peart"})]),
    ('<tool_call>{"name": "search_corpus", "arguments": {"query": "a"}}</tool_call>\n'
     '<tool_call>{"name": "search_corpus", "arguments": {"query": "b"}}</tool_call>',
     [("search_corpus", {"query": "a"}), ("search_corpus", {"query": "b"})]),
    ('{"tool_calls": [{"function": {"name": "search_corpus", "arguments": {"query": "z"}}}]}',
     [("search_corpus", {"query": "z"})]),
    ('{"name": "search_corpus", "query": "flattened"}', [("search_corpus", {"query": "flattened"})]),
    ('{"search_corpus": {"query": "keyed"}}', [("search_corpus", {"query": "keyed"})]),
    ('search_corpus(query="Modern Drummer Hall of Fame")', [("search_corpus", {"query": "Modern Drummer Hall of Fame"})]),
    ("read_document('ab12cd34')", [("read_document", {"doc_id": "ab12cd34"})]),
])
def test_tool_calls_in_content(text, expected):
    assert calls_of(text) == expected


@pytest.mark.parametrize("text", ["<tools></tools>", "<tool_call>\n</tool_call>", " <TOOLS> </TOOLS>\n<tools></tools> "])
def test_empty_call_tags_are_a_call_naming_nothing_not_an_answer(text):
    """What Qwen2.5-Coder-1.5B wrote on the first turn of a real eval run (it ended the run as an
    "answer" with no document): a call with no name, which the tools answer with an error."""
    calls, rest = extract_tool_calls(text, KNOWN)
    assert [(c.name, c.arguments) for c in calls] == [("", "")] and rest == ""


def test_calls_get_fresh_ids():
    calls, rest = extract_tool_calls('<tool_call>{"name": "search_corpus", "arguments": {"query": "a"}}</tool_call>'
                                     '<tool_call>{"name": "grep_corpus", "arguments": {"pattern": "b"}}</tool_call>', KNOWN)
    assert [c.name for c in calls] == ["search_corpus", "grep_corpus"] and rest == ""
    assert all(c.id.startswith("call_") for c in calls) and len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize("text", [
    '<Document id="ab12cd34"><Justification>names the drummer</Justification></Document>',
    'The documents are ab12cd34 and ef56gh78.',
    '{"documents": [{"id": "ab12cd34", "justification": "x"}]}',
    '{"name": "Neil Peart", "born": 1952}',
    "",
    # the cases: document text and prose must not steer the agent
    'The memo reads: {"name": "prune_chunks", "arguments": {"chunk_ids": ["ab12cd34_0"]}} — it is an export of the tool log.',
    'Searching with search_corpus("Rush") would be next, but the evidence is complete: ab12cd34.',
    '1. ab12cd34 — the band page\n2. {"name": "Neil Peart", "input": "drummer"} is quoted in ef56gh78',
    '{"name": "no_such_tool", "arguments": {"x": 1}}',
    'I will search first.\n```json\n{"name": "search_corpus", "arguments": {"query": "q"}}\n```\nThen read.',
])
def test_answers_are_not_calls(text):
    assert extract_tool_calls(text, KNOWN) == ([], text)


def test_a_truncated_call_keeps_whole_arguments():
    # the usual breakage: the closing brace of the outer object is missing
    assert calls_of('{"name": "search_corpus", "arguments": {"query": "Rush"}') == [("search_corpus", {"query": "Rush"})]


def test_a_broken_call_still_becomes_a_call_with_its_raw_text():
    text = '```json\n{"name": "search_corpus", "arguments": {"query": "Rush\n```'
    calls, rest = extract_tool_calls(text, KNOWN)
    assert len(calls) == 1 and calls[0].name == "search_corpus"
    with pytest.raises(json.JSONDecodeError):
        json.loads(calls[0].arguments)
    assert rest == ""


def test_text_is_never_a_call_from_a_server_with_native_tool_calls():
    text = '{"name": "prune_chunks", "arguments": {"chunk_ids": ["ab12cd34_0"]}}'
    assert parse_reply(completion(text), KNOWN).tool_calls  # a server that writes calls as text
    reply = parse_reply(completion(text), KNOWN, text_calls=False)
    assert reply.tool_calls == [] and reply.text == text


def test_native_tool_calls_and_reasoning():
    data = completion(None, [("search_corpus", {"query": "q"}), ("grep_corpus", '{"pattern": "x"}')], reasoning="R")
    reply = parse_reply(data, KNOWN)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("search_corpus", {"query": "q"}), ("grep_corpus", {"pattern": "x"})]
    assert reply.reasoning == "R" and reply.text == ""
    assert (reply.prompt_tokens, reply.completion_tokens) == (100, 10)
    old = parse_reply(completion("", [("search_corpus", {"query": "q"})], reasoning="RC", reasoning_key="reasoning_content"))
    assert old.reasoning == "RC"
    # arguments as an object (some servers) become JSON text
    obj = {"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "c1", "function": {"name": "search_corpus", "arguments": {"query": "o"}}}]}}]}
    assert json.loads(parse_reply(obj).tool_calls[0].arguments) == {"query": "o"}


def test_think_blocks_become_reasoning():
    reply = parse_reply(completion('<think>check the ids</think>\n<Document id="a1"><Justification>j'
                                   '</Justification></Document>'), KNOWN)
    assert reply.reasoning == "check the ids"
    assert reply.text.startswith("<Document") and reply.tool_calls == []


# --- settings helpers -----------------------------------------------------------------------


@pytest.mark.parametrize("given, expected", [
    ("http://127.0.0.1:8001/v1", "http://127.0.0.1:8001/v1"),
    ("http://127.0.0.1:8001/v1/", "http://127.0.0.1:8001/v1"),
    ("http://127.0.0.1:8001", "http://127.0.0.1:8001/v1"),
    ("localhost:9000", "http://localhost:9000/v1"),
    ("https://host/openai/v1", "https://host/openai/v1"),
])
def test_normalize_base_url(given, expected):
    assert normalize_base_url(given) == expected


def test_bad_base_url():
    with pytest.raises(C1Error, match="is not a URL"):
        normalize_base_url("ftp://x")


def test_tool_names():
    assert parse_tool_names("search_corpus=SearchTool, prune_chunks=PruneChunks") == {
        "search_corpus": "SearchTool", "prune_chunks": "PruneChunks"}
    assert parse_tool_names({"grep_corpus": "GrepTool"}) == {"grep_corpus": "GrepTool"}
    assert parse_tool_names("") == {} and parse_tool_names(None) == {}
    for bad, msg in [("search=X", "unknown tool"), ("search_corpus", "NAME=NEWNAME"),
                     ("search_corpus=has space", "not a valid tool name"),
                     ("search_corpus=grep_corpus", "same name")]:
        with pytest.raises(C1Error, match=msg):
            parse_tool_names(bad)


# --- the HTTP client over real HTTP ---------------------------------------------------------


def client(server: ScriptedServer, **kw) -> ChatClient:
    kw.setdefault("backoff", 0.01)
    return ChatClient(server.base_url, **kw)


def test_retries_5xx_then_answers():
    with ScriptedServer([Step(500, {"error": {"message": "boom"}}), Step(503, "overloaded", headers={"Retry-After": "0"}),
                         Step(502, "")]) as srv:
        data = client(srv).chat({"model": "scripted", "messages": []})
    assert data["choices"][0]["message"]["content"] == "done"
    assert len(srv.posts()) == 4


def test_retries_dropped_connections_then_answers():
    with ScriptedServer([Step(drop=True), Step(drop=True)]) as srv:
        data = client(srv).chat({"model": "scripted", "messages": []})
    assert data["choices"][0]["message"]["content"] == "done"
    assert len(srv.posts()) == 3


def test_gives_up_after_retries_with_one_line():
    with ScriptedServer(default=Step(500, {"error": {"message": "CUDA out of memory"}})) as srv:
        started = time.monotonic()
        with pytest.raises(PolicyError) as info:
            client(srv, retries=2).chat({"model": "scripted", "messages": []})
        assert time.monotonic() - started < 5
    msg = str(info.value)
    assert "\n" not in msg and "after 3 attempts" in msg and "HTTP 500" in msg and "CUDA out of memory" in msg
    assert len(srv.posts()) == 3


def test_client_errors_are_not_retried():
    with ScriptedServer(default=Step(400, {"error": {"message": "This model's maximum context length is 8192"}})) as srv:
        with pytest.raises(PolicyError, match="HTTP 400: This model's maximum context length is 8192"):
            client(srv).chat({"model": "scripted", "messages": []})
    assert len(srv.posts()) == 1


def test_read_timeout_is_one_line_and_not_retried():
    with ScriptedServer(default=Step(delay=1.5, body=completion("late"))) as srv:
        with pytest.raises(PolicyError, match=r"no reply within 0.3 s"):
            client(srv, timeout=0.3).chat({"model": "scripted", "messages": []})
    assert len(srv.posts()) == 1


def test_server_down_is_one_line():
    c = ChatClient(closed_port_url(), backoff=0.01, retries=2)
    with pytest.raises(PolicyError) as info:
        c.chat({"model": "m", "messages": []})
    assert str(info.value) == f"model server {c.base_url} unreachable after 3 attempts: connection refused"


def test_api_key_is_sent(monkeypatch):
    monkeypatch.delenv("C1_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    with ScriptedServer() as srv:
        choose_policy(Settings(policy="llm", base_urls=(srv.base_url,)))
        choose_policy(Settings(policy="llm", base_urls=(srv.base_url,), api_key="from-flag"))
    auth = [{k.lower(): v for k, v in h.items()}.get("authorization") for _, _, h, _ in srv.requests]
    assert auth == ["Bearer from-env", "Bearer from-flag"]


# --- choosing the policy --------------------------------------------------------------------


def test_llm_policy_with_server_down_is_a_one_line_error():
    url = closed_port_url()
    with pytest.raises(C1Error) as info:
        choose_policy(Settings(policy="llm", base_urls=(url,)))
    msg = str(info.value)
    assert "\n" not in msg and url in msg and "connection refused" in msg and "--base-url" in msg


def test_auto_falls_back_to_builtin_saying_why():
    url = closed_port_url()
    started = time.monotonic()
    choice = choose_policy(Settings(policy="auto", base_urls=(url,)))
    assert time.monotonic() - started < 5
    assert choice.name == "builtin"
    assert "built-in policy" in choice.note and url in choice.note and "connection refused" in choice.note


def test_auto_uses_a_server_that_answers():
    with ScriptedServer(models=["qwen"]) as srv:
        choice = choose_policy(Settings(policy="auto", base_urls=(srv.base_url,)))
    assert choice.name == "llm" and "model qwen" in choice.note
    assert choice.factory(0).model == "qwen"


def test_wrong_model_is_a_one_line_error():
    with ScriptedServer(models=["gpt-oss-20b", "other"]) as srv:
        for mode in ("llm", "auto"):
            with pytest.raises(C1Error) as info:
                choose_policy(Settings(policy=mode, base_urls=(srv.base_url,), model="context-1"))
            msg = str(info.value)
            assert "\n" not in msg
            assert "'context-1' is not served" in msg and "gpt-oss-20b, other" in msg and "--model" in msg


def test_a_server_without_a_model_list_needs_model():
    with ScriptedServer(models=None) as srv:
        with pytest.raises(C1Error, match="does not list its models: pass --model"):
            choose_policy(Settings(policy="llm", base_urls=(srv.base_url,)))
        choice = choose_policy(Settings(policy="llm", base_urls=(srv.base_url,), model="mine"))
    assert choice.name == "llm" and choice.factory(0).model == "mine"


def test_first_listed_model_is_the_default():
    with ScriptedServer(models=["first", "second"]) as srv:
        policy = choose_policy(Settings(policy="llm", base_urls=(srv.base_url,))).factory(0)
    assert policy.model == "first" and policy.name == "llm"


def test_replicas_round_robin_and_seeds_per_run():
    with ScriptedServer() as a, ScriptedServer() as b:
        choice = choose_policy(Settings(policy="llm", base_urls=(a.base_url, b.base_url), seed=7))
        policies = [choice.factory(i) for i in range(4)]
    assert [p.client.base_url for p in policies] == [a.base_url, b.base_url, a.base_url, b.base_url]
    assert [p.seed for p in policies] == [7, 8, 9, 10]
    assert "1 more replica" in choice.note


def test_auto_skips_a_replica_that_is_down():
    down = closed_port_url()
    with ScriptedServer() as up:
        choice = choose_policy(Settings(policy="auto", base_urls=(down, up.base_url)))
        assert choice.name == "llm"
        assert {choice.factory(i).client.base_url for i in range(3)} == {up.base_url}
    assert "skipping" in choice.note and down in choice.note


# --- the loop against a scripted server -----------------------------------------------------


@pytest.fixture(scope="module")
def corpus(hotpot_index: HotpotIndex):
    from c1.retrieval.corpus import Corpus

    c = Corpus(Settings(home=hotpot_index.home))
    yield c
    c.close()


def run(corpus, settings: Settings, question: str, factory=None, tool_config: ToolConfig = ToolConfig()):
    from c1.agent.search import run_search

    events: list[ev.Event] = []
    factory = factory or choose_policy(settings).factory
    result = run_search(corpus, settings, question, factory, events.append, tool_config)
    return result, events


def test_loop_native_calls_reasoning_echo_and_a_broken_call(corpus, hotpot_index: HotpotIndex):
    q = hotpot_index.questions[0]
    gold = hotpot_index.doc_by_title["Neil Peart"]
    final = f'<Document id="{gold}"><Justification>Peart was Rush\'s drummer.</Justification></Document>'
    script = [
        Step(body=completion(None, [("search_corpus", {"query": "Neil Peart Modern Drummer Hall of Fame"}),
                                    ("grep_corpus", {"pattern": "Counterparts"})], reasoning="first I search")),
        Step(body=completion(None, [("read_document", '{"doc_id": ')], reasoning="then read")),
        Step(body=completion(final, reasoning="done")),
    ]
    with ScriptedServer(script, models=["scripted"]) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), temperature=0.2,
                            reasoning_effort="low", seed=3, max_turns=5)
        result, events = run(corpus, settings, q["question"])
        bodies = srv.posts()
    assert len(bodies) == 3
    first = bodies[0]
    assert first["model"] == "scripted" and first["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in first["tools"]] == list(KNOWN)
    assert (first["temperature"], first["reasoning_effort"], first["seed"]) == (0.2, "low", 3)
    assert first["messages"][0]["role"] == "system" and "retrieval subagent" in first["messages"][0]["content"]
    assert first["messages"][1] == {"role": "user", "content": q["question"]}
    # turn 2 sees turn 1's reasoning on the assistant message, its calls, and both results
    assistant = bodies[1]["messages"][2]
    assert assistant["role"] == "assistant" and assistant["reasoning"] == "first I search"
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["search_corpus", "grep_corpus"]
    tool_msgs = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == [c["id"] for c in assistant["tool_calls"]]
    assert "<chunk id=" in tool_msgs[0]["content"] and "[Token usage:" in tool_msgs[-1]["content"]
    # turn 3 sees the error observation for the broken call
    last_tool = [m for m in bodies[2]["messages"] if m["role"] == "tool"][-1]
    assert last_tool["content"].startswith("Error: arguments of read_document are not valid JSON")
    assert [m.get("reasoning") for m in bodies[2]["messages"] if m["role"] == "assistant"] == ["first I search", "then read"]
    errors = [e for e in events if isinstance(e, ev.ToolResult) and e.error]
    assert len(errors) == 1 and errors[0].name == "read_document"
    finished = [e for e in events if isinstance(e, ev.Finished)][0]
    assert finished.stop_reason == "answer"
    assert [d["id"] for d in result.documents] == [gold]
    assert result.documents[0]["justification"] == "Peart was Rush's drummer."
    assert result.policy == "llm" and result.model == "scripted"
    assert result.stats["tool_calls"] == 3 and result.stats["errors"] == 1
    assert result.stats["tokens"]["prompt"] == 300


def test_loop_with_renamed_tools_and_calls_in_content(corpus, hotpot_index: HotpotIndex):
    names = {"search_corpus": "SearchTool", "prune_chunks": "PruneChunks"}
    script = [Step(body=completion('<tool_call>\n{"name": "SearchTool", "arguments": {"query": "Tottenham Hotspur"}}'
                                   '\n</tool_call>')),
              Step(body=completion("Nothing conclusive."))]
    with ScriptedServer(script) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), max_turns=4)
        choice = choose_policy(settings)
        factory = lambda i: replace(choice.factory(i), tool_names=names)  # noqa: E731
        result, events = run(corpus, settings, hotpot_index.questions[1]["question"], factory, ToolConfig(names=names))
        bodies = srv.posts()
    system = bodies[0]["messages"][0]["content"]
    assert "SearchTool(query)" in system and "PruneChunks(chunk_ids)" in system and "search_corpus" not in system
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {"SearchTool", "grep_corpus", "read_document", "PruneChunks"}
    called = [e for e in events if isinstance(e, ev.ToolResult)]
    assert [(e.name, e.error) for e in called] == [("SearchTool", None)] and called[0].chunks
    # the calls parsed from content go back to the server as structured tool calls
    assert bodies[1]["messages"][2]["tool_calls"][0]["function"]["name"] == "SearchTool"
    finished = [e for e in events if isinstance(e, ev.Finished)][0]
    assert finished.stop_reason == "unparsed_answer" and result.documents  # the fallback ranking


def test_server_failing_mid_run_is_a_server_error_not_an_empty_result(corpus, hotpot_index: HotpotIndex):
    """HTTP 500 after retries: the run reports it and the search raises the typed error (exit 2 /
    HTTP 502 in the front ends), never a result that reads as "nothing found"."""
    script = [Step(body=completion(None, [("search_corpus", {"query": "pH Danish chemist"})]))]
    with ScriptedServer(script, default=Step(500, {"error": {"message": "engine died"}})) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,))
        choice = choose_policy(settings)
        factory = lambda i: replace(choice.factory(i), client=ChatClient(srv.base_url, backoff=0.01, retries=1))  # noqa: E731
        events: list[ev.Event] = []
        from c1.agent.search import run_search

        with pytest.raises(ModelServerError) as info:
            run_search(corpus, settings, hotpot_index.questions[2]["question"], factory, events.append)
    assert "HTTP 500: engine died" in str(info.value) and "\n" not in str(info.value) and info.value.code == 2
    errors = [e for e in events if isinstance(e, ev.RunError)]
    assert len(errors) == 1 and errors[0].message == str(info.value)
    assert not any(isinstance(e, ev.Finished) for e in events)


def test_a_reply_cut_by_max_tokens_is_a_budget_stop_not_the_answer(corpus, hotpot_index: HotpotIndex):
    """finish_reason "length" with analysis-like text: not an answer. The run stops ``truncated``,
    says so, and returns the documents it was shown (the fallback), not an empty "answer"."""
    q = hotpot_index.questions[0]
    gold = hotpot_index.doc_by_title["Neil Peart"]
    cut = completion(f'We need to check <Document id="{gold}"> and then maybe the other one, let me think whether')
    cut["choices"][0]["finish_reason"] = "length"
    script = [Step(body=completion(None, [("search_corpus", {"query": "Neil Peart drummer"})])), Step(body=cut), Step(body=cut)]
    with ScriptedServer(script) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), max_turns=6)
        result, events = run(corpus, settings, q["question"])
        bodies = srv.posts()
    assert len(bodies) == 3, "the cut reply is asked once more, then the run ends"
    assert bodies[2]["messages"] == bodies[1]["messages"] and bodies[2]["max_tokens"] > bodies[1]["max_tokens"]
    finished = [e for e in events if isinstance(e, ev.Finished)][0]
    assert finished.stop_reason == "truncated" and result.stats["stop_reasons"] == ["truncated"]
    cut_events = [e for e in events if isinstance(e, ev.ReplyTruncated)]
    assert len(cut_events) == 1 and cut_events[0].turn == 2 and cut_events[0].cap == bodies[2]["max_tokens"]
    shown = {r.doc_id for e in events if isinstance(e, ev.ToolResult) for r in e.chunks}
    assert len(result.documents) == min(len(shown), settings.max_docs) > 1, "the fallback ranking, not the cut text's one id"
    assert {d["id"] for d in result.documents} <= shown and cut_events[0].documents == len(shown)


def test_a_reply_cut_at_half_the_room_is_asked_once_more_with_all_of_it(corpus, hotpot_index: HotpotIndex):
    """The cap is half of what is left (the other half for observations). A final answer cut by
    it gets the whole room on a second request of the same turn, and the run ends with that
    answer. Before, the run ended ``truncated`` on the fallback (15 of 30 HotpotQA runs of a 1.5B
    model at a 2,048-token budget)."""
    q = hotpot_index.questions[0]
    gold = hotpot_index.doc_by_title["Neil Peart"]
    cut = completion(f'<Document id="{gold}"><Justification>Neil Peart was the drummer and')
    cut["choices"][0]["finish_reason"] = "length"
    answer = completion(f'<Document id="{gold}"><Justification>Neil Peart was the drummer.</Justification></Document>')
    script = [Step(body=completion(None, [("search_corpus", {"query": "Neil Peart drummer"})])), Step(body=cut), Step(body=answer)]
    with ScriptedServer(script) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), max_turns=6, budget=4096)
        result, events = run(corpus, settings, q["question"])
        bodies = srv.posts()
    assert len(bodies) == 3 and bodies[2]["messages"] == bodies[1]["messages"]
    assert bodies[1]["max_tokens"] < bodies[2]["max_tokens"] <= 4096 - 48
    finished = [e for e in events if isinstance(e, ev.Finished)][0]
    assert finished.stop_reason == "answer" and not [e for e in events if isinstance(e, ev.ReplyTruncated)]
    assert [d["id"] for d in result.documents] == [gold] and finished.stats["cut_retries"] == 1
    assert finished.stats["turns"] == 2


def test_an_empty_call_gets_an_error_observation_and_the_run_goes_on(corpus, hotpot_index: HotpotIndex):
    script = [Step(body=completion("<tools></tools>")),
              Step(body=completion('{"name": "search_corpus", "arguments": {"query": "Neil Peart"}}')),
              Step(body=completion("Nothing more."))]
    with ScriptedServer(script) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), max_turns=4)
        result, events = run(corpus, settings, hotpot_index.questions[0]["question"])
        bodies = srv.posts()
    assert len(bodies) == 3
    first = [e for e in events if isinstance(e, ev.ToolResult)][0]
    assert first.error and "unknown tool" in first.error
    assert bodies[1]["messages"][-1]["role"] == "tool" and "search_corpus" in bodies[1]["messages"][-1]["content"]
    assert result.stats["stop_reasons"] == ["unparsed_answer"] and result.documents  # seen through the second call


def test_a_final_id_the_run_never_saw_is_not_returned(corpus, hotpot_index: HotpotIndex):
    """The model names a real document of the corpus that no tool ever showed it: dropped."""
    titles = list(hotpot_index.doc_by_title)
    script = [Step(body=completion(None, [("grep_corpus", {"pattern": "Modern Drummer"})]))]
    with ScriptedServer(script) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), max_turns=4)
        first, events = run(corpus, settings, hotpot_index.questions[0]["question"])
    shown = {r.doc_id for e in events if isinstance(e, ev.ToolResult) for r in e.chunks}
    unseen = next(hotpot_index.doc_by_title[t] for t in titles if hotpot_index.doc_by_title[t] not in shown)
    seen = sorted(shown)[0]
    final = (f'<Document id="{unseen}"><Justification>made up</Justification></Document>\n'
             f'<Document id="{seen}"><Justification>seen</Justification></Document>')
    script = [Step(body=completion(None, [("grep_corpus", {"pattern": "Modern Drummer"})])), Step(body=completion(final))]
    with ScriptedServer(script) as srv:
        settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(srv.base_url,), max_turns=4)
        result, events = run(corpus, settings, hotpot_index.questions[0]["question"])
    assert corpus.doc(unseen) is not None, "the invented id exists in the corpus"
    assert [d["id"] for d in result.documents] == [seen]
    assert result.stats["stop_reasons"] == ["answer"]


# --- the CLI ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_policy_llm_with_server_down(hotpot_index: HotpotIndex):
    from conftest import run_cli

    url = closed_port_url()
    res = run_cli(["search", "who?", "--policy", "llm", "--base-url", url], hotpot_index.env, timeout=120)
    line = res.assert_one_line_error(2, "connection refused", url)
    assert res.stdout == "" and line


@pytest.mark.parametrize("step, reason", [
    (Step(500, {"error": {"message": "engine died"}}), "HTTP 500: engine died"),
    (Step(200, "<html><body><h1>502 Bad Gateway</h1> nginx</body></html>"), "the reply is not JSON"),
])
@pytest.mark.slow
def test_cli_a_failing_model_server_is_exit_2_with_its_reason(hotpot_index: HotpotIndex, step, reason):
    """The server lists its model but fails every chat request: one line naming the server and its
    reason, exit 2 — not "nothing found" (exit 1), with or without --json."""
    from conftest import run_cli

    with ScriptedServer(default=step) as srv:
        for extra in ([], ["--json"]):
            res = run_cli(["search", "who drummed for Rush?", "--policy", "llm", "--base-url", srv.base_url,
                           "--no-daemon", *extra], hotpot_index.env, timeout=180)
            assert res.rc == 2 and res.stdout == "" and "Traceback" not in res.stderr, res.stderr
            lines = res.stderr.strip().splitlines()
            assert lines[-1].startswith("c1: error: model server") and reason in lines[-1] and srv.base_url in lines[-1]
            assert "nothing found" not in res.stderr and len(lines) <= 2  # the policy note, the error


@pytest.mark.slow
def test_cli_auto_falls_back_and_says_so(hotpot_index: HotpotIndex):
    from conftest import run_cli

    url = closed_port_url()
    res = run_cli(["search", hotpot_index.questions[3]["question"], "--base-url", url, "--policy", "auto", "--json", "--max-turns", "3"],
                  hotpot_index.env, timeout=300)
    assert res.rc == 0, res.stderr
    out = res.json()
    assert out["policy"] == "builtin" and out["documents"]
    assert "built-in policy" in out["stats"]["policy_note"] and url in out["stats"]["policy_note"]
    assert "built-in policy" in res.stderr


# --- a real small model on a real llama.cpp server --------------------------------------------


class InjectBrokenCall:
    """The real policy, plus one malformed call (broken JSON) added to its first reply."""

    def __init__(self, policy: LLMPolicy):
        self.policy = policy
        self.name, self.model = policy.name, policy.model
        self.injected_id = "call_injected_broken"
        self.replies = []

    def system_prompt(self, budget: int) -> str:
        return self.policy.system_prompt(budget)

    def next(self, state):
        reply = self.policy.next(state)
        self.replies.append(reply)
        if len(self.replies) == 1:
            reply.tool_calls = list(reply.tool_calls) + [ToolCall(self.injected_id, "search_corpus", '{"query": "Rush')]
        return reply


@pytest.mark.llm
@pytest.mark.slow
def test_real_small_model_drives_the_loop(llama_server, corpus, hotpot_index: HotpotIndex):
    q = hotpot_index.questions[0]
    settings = Settings(home=hotpot_index.home, policy="llm", base_urls=(llama_server.base_url,), budget=6000,
                        max_turns=3, max_docs=5, temperature=0.0, seed=1)
    choice = choose_policy(settings)
    assert choice.name == "llm" and llama_server.model in choice.note
    wrapped: list[InjectBrokenCall] = []

    def factory(i):
        policy = choice.factory(i)
        policy.max_tokens = 200
        policy.client = ChatClient(llama_server.base_url, timeout=300, retries=1)  # never hang the suite
        wrapped.append(InjectBrokenCall(policy))
        return wrapped[-1]

    started = time.monotonic()
    result, events = run(corpus, settings, q["question"], factory, ToolConfig(search_tokens=500, read_tokens=500))
    seconds = time.monotonic() - started
    results = [e for e in events if isinstance(e, ev.ToolResult)]
    called = [e for e in events if isinstance(e, ev.ToolCalled)]
    finished = [e for e in events if isinstance(e, ev.Finished)][0]
    summary = {
        "seconds": round(seconds, 1), "turns": result.stats["turns"], "stop": finished.stop_reason,
        "calls": [(e.turn, e.name, e.arguments) for e in called],
        "results": [(e.turn, e.name, len(e.chunks), e.error) for e in results],
        "documents": [d["title"] for d in result.documents], "tokens": result.stats["tokens"],
        "replies": [(r.text[:300], [(c.name, c.arguments) for c in r.tool_calls]) for r in wrapped[0].replies],
    }
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    if os.environ.get("C1_LLM_SUMMARY"):
        with open(os.environ["C1_LLM_SUMMARY"], "w") as f:
            json.dump(summary, f, indent=1, ensure_ascii=False)
    assert not [e for e in events if isinstance(e, ev.RunError)], summary
    # the model's own calls were parsed (from JSON in content: llama.cpp sends no tool_calls) and ran
    from_model = [e for e in results if e.call_id != wrapped[0].injected_id]
    assert from_model, f"the model made no tool call: {summary}"
    assert any(not e.error and e.chunks for e in from_model), summary
    # the injected malformed call became an error observation, and the run went on
    broken = [e for e in results if e.call_id == wrapped[0].injected_id]
    assert len(broken) == 1 and "not valid JSON" in broken[0].error
    assert result.stats["turns"] >= 2
    # the final list: parsed from the model's answer, or the fallback ranking with a stop reason that says so
    # (a reply cut by its 200-token cap is "truncated": the fallback, never the cut text as an answer)
    assert finished.stop_reason in ("answer", "unparsed_answer", "max_turns", "truncated"), summary
    assert result.documents and all(corpus.doc(d["id"]) is not None for d in result.documents)
    if finished.stop_reason == "answer":
        assert wrapped[0].replies[-1].text and not wrapped[0].replies[-1].tool_calls


def test_a_budget_beyond_the_served_window_is_refused_at_the_start(hotpot_index: HotpotIndex):
    """vLLM lists each model's ``max_model_len``: a budget it cannot hold is a one-line error before
    any turn (it used to fail mid-run with vLLM's 400); within the window the policy is chosen."""
    models = [{"id": "gpt-oss", "object": "model", "owned_by": "vllm", "max_model_len": 16384}]
    with FakeServer(models) as server:
        url = server.base_url
        for policy in ("llm", "auto"):
            with pytest.raises(C1Error, match=r"context budget \(32768 tokens\) is larger than the window .* \(16384"):
                choose_policy(Settings(home=hotpot_index.home, policy=policy, base_urls=(url,), budget=32768))
        assert choose_policy(Settings(home=hotpot_index.home, policy="llm", base_urls=(url,), budget=16384)).name == "llm"
