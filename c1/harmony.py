"""Chat messages → harmony messages, as vLLM's chat-completions path renders them for gpt-oss.

A system message (model identity, reasoning effort, conversation start date); a developer message
holding the leading system prompt as instructions and the tools as a ``functions`` namespace;
assistant tool calls as ``commentary`` messages to ``functions.NAME`` with a JSON content type,
reasoning on the ``analysis`` channel, answers on ``final``; tool results from ``functions.NAME``
to the assistant. Shared by the context's token count (:mod:`c1.agent.context`) and training's
renderer (:mod:`c1.train.render`), so both count and render exactly what the server is sent.
"""

from __future__ import annotations

from c1.tokens import harmony


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


def assistant(msg: dict, generation_order: bool = False) -> list:
    """One chat assistant message → its harmony messages. ``generation_order``: analysis first, as a
    model generates; otherwise as vLLM re-renders history (commentary preamble, analysis, calls)."""
    h = harmony()[0]
    A = h.Role.ASSISTANT
    out = []
    content = text_of(msg.get("content"))
    reasoning = msg.get("reasoning") or msg.get("reasoning_content")
    calls = msg.get("tool_calls") or []
    if calls:
        preamble_msg = [h.Message.from_role_and_content(A, content).with_channel("commentary")] if content else []
        thought = [h.Message.from_role_and_content(A, reasoning).with_channel("analysis")] if reasoning else []
        out += (thought + preamble_msg) if generation_order else (preamble_msg + thought)
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


def message(msg: dict, tool_name: str = "") -> list:
    """Any chat message after the leading system prompt → its harmony messages."""
    h = harmony()[0]
    role = msg.get("role")
    if role == "assistant":
        return assistant(msg)
    if role == "tool":
        name = msg.get("name") or tool_name
        return [h.Message.from_author_and_content(h.Author.new(h.Role.TOOL, f"functions.{name}"), text_of(msg.get("content")))
                .with_channel("commentary").with_recipient("assistant")]
    if role in ("system", "developer"):
        return [h.Message.from_role_and_content(h.Role.DEVELOPER, h.DeveloperContent.new().with_instructions(text_of(msg.get("content"))))]
    return [h.Message.from_role_and_content(h.Role.USER, text_of(msg.get("content")))]


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
    completion prompt ends with."""
    h, enc = harmony()
    conv = h.Conversation.from_messages(preamble(instructions, tools, start_date=start_date))
    return len(enc.render_conversation_for_completion(conv, h.Role.ASSISTANT))


def count_message(msg: dict, tool_name: str = "") -> int:
    """Tokens of one chat message (not the leading system prompt) as harmony renders it."""
    enc = harmony()[1]
    return sum(len(enc.render(m)) for m in message(msg, tool_name))
