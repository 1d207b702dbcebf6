"""Prompts and completions as token ids, rendered the way the serving side renders them.

A policy sends ``Context.openai_messages()`` and the tool schemas to a chat server; the server
turns them into tokens. Training must see the same tokens, so this module renders the same chat
messages the same way:

- gpt-oss (**harmony**, :class:`HarmonyRenderer`), following vLLM's chat-completions path
  (:mod:`c1.model.harmony`, shared with the context's token count: history in the spelling vLLM
  re-renders it in, completions in the spelling gpt-oss generates, one call per completion), with the official ``openai-harmony`` package and the
  vocabulary c1 ships (:mod:`c1.tokens`). vLLM dates the system message with today's date unless
  ``VLLM_SYSTEM_START_DATE`` is set: pin the same date in both places (``start_date``) for
  token-exact prompts.
- any other model (:class:`ChatTemplateRenderer`): the tokenizer's own chat template with
  ``tools=``, as vLLM and llama.cpp apply it; tool-call arguments are passed as objects (vLLM
  decodes them before templating); tool calls in the output are read like the ``llm`` policy reads
  them (``<tool_call>`` tags, JSON in the text).

Every renderer answers ``samples(messages, tools, reply, results)`` → [(prompt ids, completion ids)]:
one pair per generation the model makes for that turn, each completion ending with a stop token the
sampler honours (harmony: one per tool call, ``<|call|>``; a chat template: the whole turn, its
end-of-turn token). ``sample`` is the single-generation case.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Protocol

from c1.model import harmony
from c1.agent.policy import Reply


class Renderer(Protocol):
    kind: str
    stop_ids: list[int]
    native_tools: bool

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]: ...

    def sample(self, messages: list[dict], tools: list[dict], reply: dict) -> tuple[list[int], list[int]]: ...

    def samples(self, messages: list[dict], tools: list[dict], reply: dict,
                results: list[dict] = ()) -> list[tuple[list[int], list[int]]]: ...

    def parse(self, ids: list[int], known: dict[str, str]) -> Reply: ...

    def count(self, text: str) -> int: ...

    def decode(self, ids: list[int]) -> str: ...


# --- harmony (gpt-oss) --------------------------------------------------------------------------
class HarmonyRenderer:
    kind = "harmony"
    native_tools = True

    def __init__(self, reasoning_effort: str | None = None, start_date: str | None = None):
        from c1.tokens import harmony as load_harmony

        self.h, self.enc = load_harmony()
        self.reasoning_effort = reasoning_effort
        self.start_date = start_date or _dt.date.today().isoformat()
        self.stop_ids = harmony.stop_ids()  # <|return|>, <|call|>

    def convert(self, messages: list[dict], tools: list[dict]) -> list:
        return harmony.convert(harmony.split_calls(messages), tools, self.reasoning_effort, self.start_date)

    # the renderer interface -------------------------------------------------------------------
    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        """History with several calls in one message rendered one call per generation
        (:func:`c1.model.harmony.split_calls`), as the model would have made them."""
        return harmony.prompt_ids(harmony.split_calls(messages), tools, self.reasoning_effort, self.start_date)

    def completion_ids(self, reply: dict) -> list[int]:
        """One generation: at most one tool call (:func:`c1.model.harmony.completion_ids`)."""
        if len(reply.get("tool_calls") or []) > 1:
            raise ValueError("a gpt-oss generation carries one tool call: render the turn with samples()")
        return harmony.completion_ids(reply)

    def sample(self, messages: list[dict], tools: list[dict], reply: dict) -> tuple[list[int], list[int]]:
        return self.prompt_ids(messages, tools), self.completion_ids(reply)

    def samples(self, messages: list[dict], tools: list[dict], reply: dict,
                results: list[dict] = ()) -> list[tuple[list[int], list[int]]]:
        """A turn with N calls → N generations: call k prompted with calls 1..k-1 and their results
        (``results``: the tool messages that answered the turn's calls)."""
        calls = reply.get("tool_calls") or []
        if len(calls) < 2:
            return [self.sample(messages, tools, reply)]
        by_id = {r.get("tool_call_id"): r for r in results}
        history, out = list(messages), []
        for k, call in enumerate(calls):
            part = harmony.one_call(reply, k)
            out.append(self.sample(history, tools, part))
            if k + 1 < len(calls):
                if call.get("id") not in by_id:
                    raise ValueError(f"no tool result for call {call.get('id')!r}: its next call cannot be prompted")
                history += [part, by_id[call.get("id")]]
        return out

    def parse(self, ids: list[int], known: dict[str, str]) -> Reply:
        from c1.agent.context import ToolCall

        body = list(ids)
        try:
            msgs = self.enc.parse_messages_from_completion_tokens(body, self.h.Role.ASSISTANT)
        except Exception:  # HarmonyError: malformed or cut off output → plain text
            return Reply(text=self.decode([t for t in body if t not in self.stop_ids]), completion_tokens=len(ids))
        text, reasoning, calls = [], [], []
        for m in msgs:
            content = "".join(getattr(c, "text", "") for c in m.content)
            if m.recipient and m.recipient.startswith("functions."):
                calls.append(ToolCall("", m.recipient.removeprefix("functions."), content))
            elif m.channel == "analysis":
                reasoning.append(content)
            else:
                text.append(content)
        return Reply(text="\n".join(text).strip(), tool_calls=calls, reasoning="\n".join(reasoning) or None,
                     completion_tokens=len(ids))

    def count(self, text: str) -> int:
        return len(self.enc.encode(text, allowed_special="all"))

    def decode(self, ids: list[int]) -> str:
        return self.enc.decode(list(ids))


# --- a tokenizer's chat template -----------------------------------------------------------------
_END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "</s>", "<|endoftext|>")


class ChatTemplateRenderer:
    kind = "chat_template"

    def __init__(self, tokenizer):
        self.tok = tokenizer
        template = getattr(tokenizer, "chat_template", None) or ""
        if not template:
            raise ValueError("the tokenizer has no chat template: pass a model whose tokenizer has one")
        self.native_tools = "tools" in template
        stops = set()
        if tokenizer.eos_token_id is not None:
            stops.add(int(tokenizer.eos_token_id))
        vocab = tokenizer.get_vocab()
        for s in _END_OF_TURN:
            if s in vocab:
                stops.add(int(vocab[s]))
        self.stop_ids = sorted(stops)

    @staticmethod
    def hf_messages(messages: list[dict]) -> list[dict]:
        out = []
        for m in messages:
            d = {"role": m["role"], "content": harmony.text_of(m.get("content"))}
            if m.get("tool_calls"):
                calls = []
                for c in m["tool_calls"]:
                    fn = c.get("function") or c
                    args = fn.get("arguments")
                    try:
                        args = json.loads(args) if isinstance(args, str) else args
                    except json.JSONDecodeError:
                        pass
                    calls.append({"id": c.get("id"), "type": "function", "function": {"name": fn.get("name"), "arguments": args}})
                d["tool_calls"] = calls
            if m.get("reasoning"):
                d["reasoning_content"] = m["reasoning"]
            for key in ("tool_call_id", "name"):
                if m.get(key):
                    d[key] = m[key]
            out.append(d)
        return out

    def _render(self, messages: list[dict], tools: list[dict], generation: bool) -> str:
        return self.tok.apply_chat_template(self.hf_messages(messages), tools=tools or None,
                                            add_generation_prompt=generation, tokenize=False)

    def _ids(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        return self._ids(self._render(messages, tools, True))

    def sample(self, messages: list[dict], tools: list[dict], reply: dict) -> tuple[list[int], list[int]]:
        prompt = self._render(messages, tools, True)
        full = self._render(list(messages) + [reply], tools, False)
        if not full.startswith(prompt):
            raise ValueError("the chat template does not render the assistant turn as a continuation of the prompt")
        completion = self._ids(full[len(prompt):])
        last = max((i for i, t in enumerate(completion) if t in self.stop_ids), default=None)
        if last is not None:
            completion = completion[: last + 1]  # cut what the template adds after the end of the turn
        return self._ids(prompt), completion

    def samples(self, messages: list[dict], tools: list[dict], reply: dict,
                results: list[dict] = ()) -> list[tuple[list[int], list[int]]]:
        """One generation whatever the number of calls: the template's tool-call blocks end together
        at the end-of-turn token."""
        return [self.sample(messages, tools, reply)]

    def parse(self, ids: list[int], known: dict[str, str]) -> Reply:
        from c1.agent.policies.llm_reply import parse_reply

        body = [t for t in ids if t not in self.stop_ids]
        text = self.tok.decode(body, skip_special_tokens=False)
        reply = parse_reply({"choices": [{"message": {"content": text}}]}, known)
        reply.completion_tokens = len(ids)
        return reply

    def count(self, text: str) -> int:
        return len(self._ids(text))

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)


def make_renderer(tokenizer=None, model_type: str | None = None, kind: str = "auto",
                  reasoning_effort: str | None = None, start_date: str | None = None) -> Renderer:
    """``harmony`` for gpt-oss (or when asked), else the tokenizer's chat template."""
    if kind == "harmony" or (kind == "auto" and model_type == "gpt_oss"):
        return HarmonyRenderer(reasoning_effort, start_date)
    if kind not in ("auto", "chat_template"):
        raise ValueError(f"renderer must be auto, harmony or chat_template, not {kind!r}")
    return ChatTemplateRenderer(tokenizer)
