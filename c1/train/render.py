"""Prompts and completions as token ids, rendered the way the serving side renders them.

A policy sends ``Context.openai_messages()`` and the tool schemas to a chat server; the server
turns them into tokens. Training must see the same tokens, so this module renders the same chat
messages the same way:

- gpt-oss (**harmony**, :class:`HarmonyRenderer`), following vLLM's chat-completions path: a
  system message (model identity, reasoning effort, conversation start date), a developer
  message holding the leading system prompt as instructions and the tools as a ``functions``
  namespace; assistant tool calls as ``commentary`` messages to ``functions.NAME`` with a JSON
  content type, reasoning on the ``analysis`` channel, answers on ``final``; tool results from
  ``functions.NAME`` to the assistant; analysis before the last final answer dropped. Uses the
  offline ``openai_harmony`` module (package ``oss-harmony``). vLLM dates the system message
  with today's date unless ``VLLM_SYSTEM_START_DATE`` is set: pin the same date in both places
  (``start_date``) for token-exact prompts.
- any other model (:class:`ChatTemplateRenderer`): the tokenizer's own chat template with
  ``tools=``, as vLLM and llama.cpp apply it; tool-call arguments are passed as objects (vLLM
  decodes them before templating); tool calls in the output are read like the ``llm`` policy reads
  them (``<tool_call>`` tags, JSON in the text).

Every renderer answers ``sample(messages, tools, reply)`` → (prompt ids, completion ids): the
completion is the assistant turn as the model itself would have generated it, stop token included.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Protocol

from c1.agent.policy import Reply


class Renderer(Protocol):
    kind: str
    stop_ids: list[int]
    native_tools: bool

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]: ...

    def sample(self, messages: list[dict], tools: list[dict], reply: dict) -> tuple[list[int], list[int]]: ...

    def parse(self, ids: list[int], known: dict[str, str]) -> Reply: ...

    def count(self, text: str) -> int: ...

    def decode(self, ids: list[int]) -> str: ...


def _text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


# --- harmony (gpt-oss) --------------------------------------------------------------------------
class HarmonyRenderer:
    kind = "harmony"
    native_tools = True

    def __init__(self, reasoning_effort: str | None = None, start_date: str | None = None):
        import openai_harmony as h

        self.h = h
        self.enc = h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)
        self.reasoning_effort = reasoning_effort
        self.start_date = start_date or _dt.date.today().isoformat()
        self.stop_ids = list(self.enc.stop_tokens_for_assistant_actions())  # <|return|>, <|call|>
        self._start_assistant = self.enc.encode("<|start|>assistant", allowed_special="all")
        self._end = self.enc.encode("<|end|>", allowed_special="all")[0]
        self._return = self.enc.encode("<|return|>", allowed_special="all")[0]

    # chat messages → harmony messages ------------------------------------------------------
    def _preamble(self, instructions: str | None, tools: list[dict]) -> list:
        h = self.h
        sys_content = h.SystemContent.new()
        if self.reasoning_effort:
            sys_content = sys_content.with_reasoning_effort(h.ReasoningEffort[self.reasoning_effort.upper()])
        sys_content = sys_content.with_conversation_start_date(self.start_date)
        out = [h.Message.from_role_and_content(h.Role.SYSTEM, sys_content)]
        if instructions or tools:
            dev = h.DeveloperContent.new()
            if instructions:
                dev = dev.with_instructions(instructions)
            fns = [t["function"] for t in tools or [] if t.get("type") == "function"]
            if fns:
                dev = dev.with_function_tools([h.ToolDescription.new(f["name"], f.get("description") or "", f.get("parameters"))
                                               for f in fns])
            out.append(h.Message.from_role_and_content(h.Role.DEVELOPER, dev))
        return out

    def _assistant(self, msg: dict, generation_order: bool) -> list:
        h = self.h
        A = h.Role.ASSISTANT
        out = []
        content = _text(msg.get("content"))
        reasoning = msg.get("reasoning") or msg.get("reasoning_content")
        calls = msg.get("tool_calls") or []
        if calls:
            preamble = [h.Message.from_role_and_content(A, content).with_channel("commentary")] if content else []
            thought = [h.Message.from_role_and_content(A, reasoning).with_channel("analysis")] if reasoning else []
            # vLLM re-renders history as commentary, analysis, calls; a model generates analysis first
            out += (thought + preamble) if generation_order else (preamble + thought)
            for c in calls:
                fn = c.get("function") or c
                out.append(h.Message.from_role_and_content(A, fn.get("arguments") or "").with_channel("commentary")
                           .with_recipient(f"functions.{fn.get('name', '')}").with_content_type("json"))
            return out
        if reasoning:
            out.append(h.Message.from_role_and_content(A, reasoning).with_channel("analysis"))
        if content:
            out.append(h.Message.from_role_and_content(A, content).with_channel("final"))
        return out

    def convert(self, messages: list[dict], tools: list[dict]) -> list:
        h = self.h
        msgs = list(messages)
        instructions = None
        if msgs and msgs[0].get("role") in ("system", "developer"):
            instructions = _text(msgs[0].get("content"))
            msgs = msgs[1:]
        names = {c.get("id"): (c.get("function") or {}).get("name", "") for m in msgs for c in m.get("tool_calls") or []}
        out = self._preamble(instructions, tools)
        for m in msgs:
            role = m.get("role")
            if role == "assistant":
                out += self._assistant(m, generation_order=False)
            elif role == "tool":
                name = m.get("name") or names.get(m.get("tool_call_id"), "")
                out.append(h.Message.from_author_and_content(h.Author.new(h.Role.TOOL, f"functions.{name}"), _text(m.get("content")))
                           .with_channel("commentary").with_recipient("assistant"))
            elif role in ("system", "developer"):
                out.append(h.Message.from_role_and_content(h.Role.DEVELOPER, h.DeveloperContent.new().with_instructions(_text(m.get("content")))))
            else:
                out.append(h.Message.from_role_and_content(h.Role.USER, _text(m.get("content"))))
        last_final = max((i for i, m in enumerate(out) if m.author.role == h.Role.ASSISTANT and m.channel == "final"), default=-1)
        return [m for i, m in enumerate(out) if not (i < last_final and m.channel == "analysis")]

    # the renderer interface -------------------------------------------------------------------
    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        conv = self.h.Conversation.from_messages(self.convert(messages, tools))
        return list(self.enc.render_conversation_for_completion(conv, self.h.Role.ASSISTANT))

    def completion_ids(self, reply: dict) -> list[int]:
        ids: list[int] = []
        for m in self._assistant(reply, generation_order=True):
            ids += self.enc.render(m)
        if ids and ids[-1] == self._end:  # a final answer ends the turn with <|return|>
            ids[-1] = self._return
        n = len(self._start_assistant)
        if ids[:n] != self._start_assistant:
            raise ValueError("harmony rendering did not start with <|start|>assistant")
        return ids[n:]  # the prompt already ends with <|start|>assistant

    def sample(self, messages: list[dict], tools: list[dict], reply: dict) -> tuple[list[int], list[int]]:
        return self.prompt_ids(messages, tools), self.completion_ids(reply)

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
            d = {"role": m["role"], "content": _text(m.get("content"))}
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

    def parse(self, ids: list[int], known: dict[str, str]) -> Reply:
        from c1.agent.policies.llm import parse_reply

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
