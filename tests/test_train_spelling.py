"""Training completions are spelled as gpt-oss generates them (issue 31, goal 2), checked token for
token against the official openai-harmony: render a completion, let the library parse it, render
the parsed messages again, compare the token ids. Prompts keep the spelling vLLM re-renders history in."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai_harmony")

from c1.model import harmony  # noqa: E402
from c1.tokens import harmony as load_harmony  # noqa: E402

H, ENC = load_harmony()


def _call(name: str, args: str, cid: str = "c1") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


REPLIES = [
    {"role": "assistant", "content": "", "tool_calls": [_call("search_corpus", '{"query": "Neil Peart"}')]},
    {"role": "assistant", "content": "", "reasoning": "Two hops: the band, then its drummer.",
     "tool_calls": [_call("grep_corpus", '{"pattern": "Peart", "doc": "rush_0"}')]},
    {"role": "assistant", "content": "Looking it up.", "reasoning": "search first",
     "tool_calls": [_call("read_document", json.dumps({"doc_id": "é-doc", "note": "line\nbreak"}, ensure_ascii=False))]},
    {"role": "assistant", "content": "", "reasoning": "these are noise",
     "tool_calls": [_call("prune_chunks", '{"chunk_ids": ["a_0", "b_1"]}')]},
    {"role": "assistant", "content": '<Document id="a"><Justification>j</Justification></Document>', "reasoning": "enough"},
    {"role": "assistant", "content": '<Document id="a"></Document>'},
]


@pytest.mark.parametrize("reply", REPLIES, ids=lambda r: (r.get("tool_calls") or [{"function": {"name": "final"}}])[0]["function"]["name"])
def test_render_parse_rerender_is_token_exact(reply):
    ids = harmony.completion_ids(reply)
    parsed = ENC.parse_messages_from_completion_tokens(ids, H.Role.ASSISTANT)
    assert harmony.output_ids(parsed) == ids
    calls = reply.get("tool_calls") or []
    channels = [m.channel for m in parsed]
    if reply.get("reasoning"):
        assert channels[0] == "analysis" and parsed[0].content[0].text == reply["reasoning"]  # written first
    if calls:
        fn = calls[0]["function"]
        m = parsed[-1]
        assert (m.channel, m.recipient, m.content_type) == ("commentary", f"functions.{fn['name']}", "<|constrain|>json")
        assert m.content[0].text == fn["arguments"] and ids[-1] == ENC.encode("<|call|>", allowed_special="all")[0]
        if reply.get("content"):
            assert channels[-2] == "commentary" and parsed[-2].recipient is None
    else:
        assert channels[-1] == "final" and ids[-1] == ENC.encode("<|return|>", allowed_special="all")[0]


def test_a_call_is_spelled_as_the_model_emits_it_not_as_history_renders_it():
    """The published model-output spelling, token for token: what BPE makes of that very text (before,
    the completion was the library's history spelling, ``assistant to=functions.X<|channel|>commentary json``)."""
    args = '{"query": "Who drummed for Rush?"}'
    ids = harmony.completion_ids({"role": "assistant", "content": "", "tool_calls": [_call("search_corpus", args)]})
    published = f"<|channel|>commentary to=functions.search_corpus <|constrain|>json<|message|>{args}<|call|>"
    assert ids == ENC.encode(published, allowed_special="all")
    history = ENC.encode("<|start|>assistant to=functions.search_corpus<|channel|>commentary json", allowed_special="all")
    text = ENC.decode(ids)
    assert "to=functions.search_corpus<|channel|>" not in text and ENC.decode(history) not in text


def test_sft_samples_teach_the_output_spelling_and_prompt_the_history_one():
    """A collected trajectory (two calls in one teacher turn, then the answer) → SFT samples whose
    completions are the served output spelling, each prompt the history spelling vLLM sends back."""
    from c1.train.render import HarmonyRenderer
    from c1.train.sft import build_samples

    two = {"role": "assistant", "content": "", "reasoning": "two lookups",
           "tool_calls": [{"id": "c1", "name": "search_corpus", "arguments": '{"query": "Rush"}'},
                          {"id": "c2", "name": "grep_corpus", "arguments": '{"pattern": "Peart"}'}]}
    record = {"task_id": "t", "run": 0, "tools": [], "scores": {"stop": "answer"},
              "steps": [{"n_messages": 2, "pruned": []}, {"n_messages": 5, "pruned": []}],
              "messages": [{"role": "system", "content": "Find documents."}, {"role": "user", "content": "Who drummed for Rush?"},
                           two,
                           {"role": "tool", "tool_call_id": "c1", "name": "search_corpus", "content": "Neil Peart"},
                           {"role": "tool", "tool_call_id": "c2", "name": "grep_corpus", "content": "Peart"},
                           {"role": "assistant", "content": '<Document id="a"></Document>', "reasoning": "found"}]}
    r = HarmonyRenderer(start_date="2026-01-01")
    samples, rep = build_samples([record], r, 100_000)
    assert rep.samples == 3 and rep.dropped == {}
    texts = []
    for sample in samples:
        cut = sample["labels"].count(-100)
        completion = sample["input_ids"][cut:]
        parsed = ENC.parse_messages_from_completion_tokens(completion, H.Role.ASSISTANT)
        assert harmony.output_ids(parsed) == completion
        texts.append((r.decode(sample["input_ids"][:cut]), r.decode(completion)))
    assert texts[0][1] == ('<|channel|>analysis<|message|>two lookups<|end|><|start|>assistant<|channel|>commentary '
                           'to=functions.search_corpus <|constrain|>json<|message|>{"query": "Rush"}<|call|>')
    assert texts[1][1] == ('<|channel|>commentary to=functions.grep_corpus <|constrain|>json<|message|>'
                           '{"pattern": "Peart"}<|call|>')
    assert "<|start|>assistant to=functions.search_corpus<|channel|>commentary json<|message|>" in texts[1][0]
    assert texts[2][1].startswith("<|channel|>analysis<|message|>found<|end|><|start|>assistant<|channel|>final")
    for prompt, _ in texts:
        assert "<|constrain|>" not in prompt  # history as vLLM renders it
