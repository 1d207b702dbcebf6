"""Chat messages → harmony messages and tokens, as vLLM's chat-completions path renders them for
gpt-oss: the one place where c1 spells harmony.

A system message (model identity, reasoning effort, conversation start date); a developer message
holding the leading system prompt as instructions and the tools as a ``functions`` namespace;
assistant tool calls as ``commentary`` messages to ``functions.NAME`` with a JSON content type,
reasoning on the ``analysis`` channel, answers on ``final``; tool results from ``functions.NAME``
to the assistant. Shared by the context's token count (:mod:`c1.agent.context`), SFT's samples and
RL's prompts (:mod:`c1.train.render`), so all three count and render exactly what the server is sent.

**Two spellings, each where it is served.** History — every prompt — is rendered by the official
``openai-harmony`` library, as vLLM renders it when a client sends the conversation back
(``<|start|>assistant to=functions.X<|channel|>commentary json<|message|>…<|call|>``). A
completion — what a training sample teaches — is spelled as gpt-oss *generates* it, the recipient
after the channel and the content type constrained
(``<|channel|>commentary to=functions.X <|constrain|>json<|message|>…<|call|>``,
:func:`completion_ids`): training on the history spelling would teach tokens the model never
emits when served. Both parse to the same messages (:func:`output_ids` re-renders the library's
parse of a completion token for token). The cost: turn k+1's prompt re-renders call k in the
history spelling, so a harmony trajectory does not pack into one sequence
(:func:`c1.train.cispo.pack_turns` starts a new one at each turn).

**One call per completion.** ``<|call|>`` ends a gpt-oss generation: it is in the model's
``generation_config.json`` ``eos_token_id`` (200012 beside ``<|return|>`` and ``<|endoftext|>``),
vLLM adds those ids to every request's stop tokens, its chat template emits one function call per
generation, and c1's RL sampler stops there too. A reply with several calls is therefore several
generations, each call answered before the next is generated (:func:`split_calls`): that is how a
teacher's multi-call turn is taught, how the trained model is sampled in RL, and what it does when
served. (Chat-template models — Qwen's ``<tool_call>`` blocks — keep several calls in one reply.)
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from c1.tokens import count_tokens, harmony


def text_of(content) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def preamble(instructions: str | None, tools: list[dict], reasoning_effort: str | None = None,
             start_date: str | None = None) -> list:
    """The system message and (with instructions or tools) the developer message."""
    h = harmony()[0]
    sys_content = h.SystemContent.new()
    if reasoning_effort:
        sys_content = sys_content.with_reasoning_effort(h.ReasoningEffort[reasoning_effort.upper()])
    if start_date:
        sys_content = sys_content.with_conversation_start_date(start_date)
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


class Frame(NamedTuple):
    """One harmony message, before the library makes it: its author (a role, or a tool's name), channel,
    recipient, content type and text. The library's message (:func:`_harmony`) and its count
    (:func:`_frame_tokens`) are both made from it."""

    role: str  # user, assistant, developer (text: its instructions) or tool
    text: str
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    name: str | None = None  # a tool's author name, functions.NAME


def assistant(msg: dict, generation_order: bool = False) -> list:
    """One chat assistant message → its harmony messages. ``generation_order``: analysis first, as a
    model generates; otherwise as vLLM re-renders history (commentary preamble, analysis, calls)."""
    return [_harmony(f) for f in _assistant_frames(msg, generation_order)]


def _assistant_frames(msg: dict, generation_order: bool = False) -> list[Frame]:
    out = []
    content = text_of(msg.get("content"))
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    calls = msg.get("tool_calls") or []
    if calls:
        preamble_msg = [Frame("assistant", content, "commentary")] if content else []
        thought = [Frame("assistant", reasoning, "analysis")] if reasoning else []
        out += (thought + preamble_msg) if generation_order else (preamble_msg + thought)
        for c in calls:
            fn = c.get("function") or c
            out.append(Frame("assistant", fn.get("arguments") or "", "commentary", f"functions.{fn.get('name', '')}", "json"))
        return out
    if reasoning:
        out.append(Frame("assistant", reasoning, "analysis"))
    if content:
        out.append(Frame("assistant", content, "final"))
    return out


def split_calls(messages: list[dict]) -> list[dict]:
    """Each assistant message with several tool calls → one message per call, each followed by the
    tool message that answers it: the history a gpt-oss model has when it makes those calls one
    generation at a time. The reasoning and any preamble stay with the first call; tool messages
    that answer no call of the message keep their place after the last."""
    out: list[dict] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = m.get("tool_calls") or [] if m.get("role") == "assistant" else []
        if len(calls) < 2:
            out.append(m)
            i += 1
            continue
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            j += 1
        results = messages[i + 1:j]
        by_id = {r.get("tool_call_id"): r for r in results}
        for k, c in enumerate(calls):
            out.append(one_call(m, k))
            if c.get("id") in by_id:
                out.append(by_id.pop(c.get("id")))
        out += [r for r in results if r.get("tool_call_id") in by_id]
        i = j
    return out


def one_call(msg: dict, k: int) -> dict:
    """Call ``k`` of an assistant message as a message of its own (reasoning and preamble on call 0)."""
    part = {"role": "assistant", "content": msg.get("content") if k == 0 else "", "tool_calls": [msg["tool_calls"][k]]}
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    if k == 0 and reasoning:
        part["reasoning"] = reasoning
    return part


def prompt_ids(messages: list[dict], tools: list[dict], reasoning_effort: str | None = None,
               start_date: str | None = None) -> list[int]:
    """The request as token ids, ending with ``<|start|>assistant`` (what vLLM feeds the model)."""
    h, enc = harmony()
    conv = h.Conversation.from_messages(convert(messages, tools, reasoning_effort, start_date))
    return list(enc.render_conversation_for_completion(conv, h.Role.ASSISTANT))


def completion_ids(reply: dict) -> list[int]:
    """An assistant turn as the model generates it after the prompt's ``<|start|>assistant``: its
    messages in generation order (analysis first, wherever the reply has one), in the model's
    output spelling (:func:`output_ids`); a call ends with ``<|call|>``, a final answer with
    ``<|return|>``."""
    return output_ids(assistant(reply, generation_order=True))


def output_ids(messages: list) -> list[int]:
    """Harmony assistant messages (from :func:`assistant`, or the library's parse of a completion)
    as gpt-oss generates them, without the leading ``<|start|>assistant`` that the prompt ends with.
    A message to a recipient: ``<|channel|>CH to=RECIPIENT <|constrain|>TYPE<|message|>…<|call|>``;
    any other: as the library renders it (the two spellings agree there); the last ``<|end|>`` is
    ``<|return|>``."""
    enc = harmony()[1]
    ids: list[int] = []
    for m in messages:
        ids += _output_message(m) if m.recipient else enc.render(m)
    end, ret = _special("<|end|>"), _special("<|return|>")
    if ids and ids[-1] == end:  # the turn's last message ends it: <|return|> (a call already ends in <|call|>)
        ids[-1] = ret
    start = _start_assistant()
    if ids[:len(start)] != start:
        raise ValueError("harmony rendering did not start with <|start|>assistant")
    return ids[len(start):]


def _output_message(m) -> list[int]:
    enc = harmony()[1]
    ids = _start_assistant() + [_special("<|channel|>")]
    ids += enc.encode(f"{m.channel or 'commentary'} to={m.recipient}" + (" " if m.content_type else ""), allowed_special=set())
    if m.content_type:
        ids += [_special("<|constrain|>")] + enc.encode(m.content_type.removeprefix("<|constrain|>"), allowed_special=set())
    ids += [_special("<|message|>")]
    ids += enc.encode("".join(getattr(c, "text", "") for c in m.content), allowed_special=set())
    return ids + [_special("<|call|>")]


def stop_ids() -> list[int]:
    """The tokens that end a gpt-oss generation: ``<|return|>`` and ``<|call|>``."""
    return list(harmony()[1].stop_tokens_for_assistant_actions())


def _special(text: str) -> int:
    return harmony()[1].encode(text, allowed_special="all")[0]


def _start_assistant() -> list[int]:
    return harmony()[1].encode("<|start|>assistant", allowed_special="all")


def message(msg: dict, tool_name: str = "") -> list:
    """Any chat message after the leading system prompt → its harmony messages."""
    return [_harmony(f) for f in _frames(msg, tool_name)]


def _frames(msg: dict, tool_name: str = "") -> list[Frame]:
    role = msg.get("role")
    if role == "assistant":
        return _assistant_frames(msg)
    if role == "tool":
        name = msg.get("name") or tool_name
        return [Frame("tool", text_of(msg.get("content")), "commentary", "assistant", name=f"functions.{name}")]
    if role in ("system", "developer"):
        return [Frame("developer", text_of(msg.get("content")))]
    return [Frame("user", text_of(msg.get("content")))]


def _harmony(f: Frame):
    h = harmony()[0]
    if f.role == "developer":
        m = h.Message.from_role_and_content(h.Role.DEVELOPER, h.DeveloperContent.new().with_instructions(f.text))
    elif f.name:
        m = h.Message.from_author_and_content(h.Author.new(h.Role.TOOL, f.name), f.text)
    else:
        m = h.Message.from_role_and_content(h.Role(f.role), f.text)
    if f.channel:
        m = m.with_channel(f.channel)
    if f.recipient:
        m = m.with_recipient(f.recipient)
    return m.with_content_type(f.content_type) if f.content_type else m


def _frame_tokens(f: Frame) -> int:
    """Tokens of the library's render of ``f``, counted without it: ``<|start|>``, the author and any recipient
    as one text, then ``<|channel|>`` and the channel with any content type as one, ``<|message|>``, the text,
    and the token that ends it (tests/test_token_counts.py holds this equal to the render)."""
    author = (f.name or f.role) + (f" to={f.recipient}" if f.recipient else "")
    text = f"# Instructions\n\n{f.text}" if f.role == "developer" else f.text
    channel = 1 + count_tokens(f.channel + (f" {f.content_type}" if f.content_type else "")) if f.channel else 0
    return 3 + count_tokens(author) + channel + count_tokens(text)


def convert(messages: list[dict], tools: list[dict], reasoning_effort: str | None = None,
            start_date: str | None = None) -> list:
    """A whole chat request → harmony messages (analysis before the last final answer dropped)."""
    h = harmony()[0]
    msgs = list(messages)
    instructions = None
    if msgs and msgs[0].get("role") in ("system", "developer"):
        instructions = text_of(msgs[0].get("content"))
        msgs = msgs[1:]
    names = {c.get("id"): (c.get("function") or {}).get("name", "") for m in msgs for c in m.get("tool_calls") or []}
    out = preamble(instructions, tools, reasoning_effort, start_date)
    for m in msgs:
        out += message(m, names.get(m.get("tool_call_id"), ""))
    last_final = max((i for i, m in enumerate(out) if m.author.role == h.Role.ASSISTANT and m.channel == "final"), default=-1)
    return [m for i, m in enumerate(out) if not (i < last_final and m.channel == "analysis")]


def count_preamble(instructions: str | None, tools: list[dict], start_date: str | None = None) -> int:
    """Tokens of the system and developer messages, plus the ``<|start|>assistant`` that every
    completion prompt ends with; kept on disk as well (:func:`_kept`), so that a search in a process of
    its own loads neither the library nor its encoder (0.44 s). A date's value does not change the count
    (its digits and dashes are tokens of their own, whatever they are: the tests ask it), so the count is
    kept by the rest."""
    def count() -> int:
        h, enc = harmony()
        conv = h.Conversation.from_messages(preamble(instructions, tools, start_date=start_date))
        return len(enc.render_conversation_for_completion(conv, h.Role.ASSISTANT))

    date = "YYYY-MM-DD" if start_date and _DATE.fullmatch(start_date) else start_date
    return _remembered(["preamble", instructions, tools, start_date],
                       lambda: _kept(["preamble", instructions, tools, date], count))


_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _kept(what: list, count) -> int:
    """``count()``, kept in the cache folder (``$XDG_CACHE_HOME/c1/counts``) by ``what`` and the library's
    version; worked out where not kept, and kept where the folder can be written."""
    import hashlib
    import importlib.metadata

    from c1.cache_files import cache_path, write_whole

    try:
        version = importlib.metadata.version("openai-harmony")
    except importlib.metadata.PackageNotFoundError:
        return count()  # harmony() says what is missing
    key = json.dumps([*what, version], sort_keys=True, ensure_ascii=False)
    path = cache_path("counts", hashlib.sha256(key.encode()).hexdigest()[:32])
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        pass
    got = count()
    write_whole(path, str(got).encode())  # a read-only cache: counted again next time
    return got


def count_message(msg: dict, tool_name: str = "") -> int:
    """Tokens of one chat message (not the leading system prompt) as harmony renders it."""
    return _remembered(["message", msg, tool_name], lambda: sum(map(_frame_tokens, _frames(msg, tool_name))))


_COUNTS: dict[str, int] = {}
COUNTS_KEPT = 1024
"""Counts remembered by what was counted, as JSON (a model's long replies among them)."""


def _remembered(what: list, count) -> int:
    """``count()``, remembered by ``what`` (its JSON): every run of every search counts the same preamble, and
    the runs of ``--parallel`` and a question asked again make the same calls."""
    key = json.dumps(what, sort_keys=True, ensure_ascii=False)
    got = _COUNTS.get(key)
    if got is None:
        if len(_COUNTS) >= COUNTS_KEPT:
            _COUNTS.clear()
        got = _COUNTS[key] = count()
    return got
