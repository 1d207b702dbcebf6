"""Reading a chat completion into a :class:`~c1.agent.policy.Reply` (the ``llm`` policy's replies):
its native tool calls and reasoning, and, from a server without native tool calls, a reply that is
all a call written as text (:func:`extract_tool_calls`)."""

from __future__ import annotations

import json
import re
import uuid

from c1.agent.context import ToolCall
from c1.agent.policy import Reply

_NAME_KEYS = ("name", "tool", "tool_name", "function_name", "recipient_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "params", "tool_input")
_THINK = re.compile(r"^\s*<think>(.*?)</think>", re.DOTALL)
_WRAPPER = re.compile(r"<(tool_call|tools|function_call|tool_use)>\s*(.*?)\s*(?:</\1>|\Z)"
                      r"|```[ \t]*[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)
_DOC_TAG = re.compile(r"<\s*document\b", re.IGNORECASE)
_EMPTY_CALL = re.compile(r"\s*(?:<(tool_call|tools|function_call|tool_use)>\s*</\1>\s*)+", re.IGNORECASE)
_CALL_START = re.compile(r"\s*(?:\{|\[|```|<(?:tool_call|tools|function_call|tool_use)>)", re.IGNORECASE)


def _args_text(value) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _calls_from(value, known: set[str]) -> list[tuple[str, str]] | None:
    """(name, arguments-json) for each call in a decoded JSON value, or None unless every element is
    a call to a known tool."""
    if isinstance(value, list):
        calls = [_calls_from(item, known) for item in value]
        return [c for group in calls for c in group] if calls and all(calls) else None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("tool_calls"), list):
        return _calls_from(value["tool_calls"], known)
    fn = value.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        args = next((fn[k] for k in _ARG_KEYS if k in fn), next((value[k] for k in _ARG_KEYS if k in value), None))
        return [(fn["name"], _args_text(args))] if fn["name"] in known else None
    name = fn if isinstance(fn, str) else next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is not None:
        if name not in known:
            return None
        arg_key = next((k for k in _ARG_KEYS if k in value), None)
        if arg_key is not None:
            return [(name, _args_text(value[arg_key]))]
        # arguments flattened beside the name: {"name": "search_corpus", "query": "..."}
        rest = {k: v for k, v in value.items() if k not in (*_NAME_KEYS, "function", "type", "id")}
        return [(name, _args_text(rest))]
    if len(value) == 1:  # {"search_corpus": {"query": "..."}}
        (key, inner), = value.items()
        if key in known and isinstance(inner, (dict, str)):
            return [(key, _args_text(inner))]
    return None


def _json_call(body: str, known: set[str]) -> list[tuple[str, str]] | None:
    """The calls of ``body`` when all of it is one JSON value made of calls to known tools."""
    body = body.strip()
    try:
        value, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError:
        return None
    return _calls_from(value, known) if not body[end:].strip() else None


def _python_call(body: str, params: dict[str, str]) -> list[tuple[str, str]] | None:
    """``search_corpus(query="x")`` / ``search_corpus("x")`` for a known tool, when it is all of ``body``."""
    if not params:
        return None
    names = "|".join(re.escape(n) for n in sorted(params, key=len, reverse=True))
    m = re.fullmatch(rf"\s*({names})\s*\(\s*(?:(\w+)\s*=\s*)?(\"(?:[^\"\\]|\\.)*\"|'[^']*'|\[[^\]]*\]|\{{.*\}})\s*\)\s*",
                     body, re.DOTALL)
    if not m:
        return None
    name, _, raw = m.groups()
    if raw.startswith("{"):
        return [(name, raw)]
    try:
        value = json.loads(raw if not raw.startswith("'") else json.dumps(raw[1:-1]))
    except json.JSONDecodeError:
        try:
            value = json.loads(raw.replace("'", '"'))
        except json.JSONDecodeError:
            value = raw
    return [(name, json.dumps({params[name]: value}, ensure_ascii=False))]


def extract_tool_calls(content: str, known: set[str] | dict[str, str] = frozenset()) -> tuple[list[ToolCall], str]:
    """Tool calls written as text → (calls, the text that is left).

    For servers without native tool calls only. A reply is a call only when *all* of it is one:
    a JSON call (bare, or a list of calls), one or more ``<tool_call>`` (``<tools>``…) blocks or
    code fences each holding JSON calls, or ``name(argument)`` — and only for the tools the model
    was given (``known``: their names, or a dict of name → parameter, which also enables the
    ``name(argument)`` form). Text that merely quotes JSON, prose that mentions a call, a ranked
    list with a ``{"name": …}`` object in it, and anything with a ``<Document`` tag are answers.
    An attempt at a call that cannot be decoded (a reply that starts like a call and names a known
    tool) yields one call whose arguments are the raw text, and empty call tags (``<tools></tools>``,
    which a small model writes when it means to call and names nothing) a call with no name: the
    tools answer with an error and the run goes on.
    """
    text = content or ""
    params = known if isinstance(known, dict) else {}
    known = set(known)
    body = text.strip()
    if not body or _DOC_TAG.search(body) or not known:
        return [], text
    found = _json_call(body, known) or _python_call(body, params)
    if not found:
        pos, parts = 0, []
        for m in _WRAPPER.finditer(body):
            if body[pos:m.start()].strip():
                parts = None
                break
            inner = m.group(2) if m.group(1) else m.group(3)
            got = _json_call(inner, known)
            if got is None:
                parts = None
                break
            parts += got
            pos = m.end()
        if parts and not body[pos:].strip():
            found = parts
    if found:
        return [ToolCall(_new_id(), n, a) for n, a in found], ""
    if _EMPTY_CALL.fullmatch(body):  # "<tools></tools>": a call with nothing in it, not an answer
        return [ToolCall(_new_id(), "", "")], ""
    if _CALL_START.match(body):
        broken = _broken_call(body, known)
        if broken:
            return [broken], ""
    return [], text


def _broken_call(text: str, known: set[str]) -> ToolCall | None:
    """A known tool named as a JSON value (``"name": "search_corpus"``) in a call that did not decode."""
    names = "|".join(re.escape(n) for n in sorted(known, key=len, reverse=True))
    m = re.search(rf"[\"']?(?:{'|'.join(_NAME_KEYS)}|function)[\"']?\s*:\s*[\"']({names})[\"']", text)
    if not m:
        return None
    start = text.rfind("{", 0, m.start())
    start = start if start >= 0 else m.start()
    args = re.compile(rf"[\"']?(?:{'|'.join(_ARG_KEYS)})[\"']?\s*:\s*").search(text, m.end())
    if args:  # the usual breakage is at the end (a missing closing brace): the arguments may be whole
        try:
            value, _ = json.JSONDecoder().raw_decode(text, args.end())
            if isinstance(value, dict):
                return ToolCall(_new_id(), m.group(1), json.dumps(value, ensure_ascii=False))
        except json.JSONDecodeError:
            pass
    raw = re.sub(r"\s*(?:```|</tool_call>|</tools>)\s*$", "", text[start:].strip())
    return ToolCall(_new_id(), m.group(1), raw)


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:10]}"


def parse_reply(data: dict, known: set[str] | dict[str, str] = frozenset(), text_calls: bool = True) -> Reply:
    """A chat completion → :class:`Reply`: its native tool calls; without any, and when
    ``text_calls`` (a server that writes calls as text), a reply that is all a call."""
    choice = (data.get("choices") or [{}])[0] or {}
    msg = choice.get("message") or {}
    content = msg.get("content") or ""
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    reasoning = msg.get("reasoning") or msg.get("reasoning_content") or None
    think = _THINK.match(content)
    if think:
        reasoning = (reasoning + "\n" if reasoning else "") + think.group(1).strip()
        content = content[think.end():]
    calls = []
    for i, c in enumerate(msg.get("tool_calls") or []):
        fn = c.get("function") or {}
        if not fn.get("name"):
            continue
        calls.append(ToolCall(c.get("id") or _new_id(), str(fn["name"]), _args_text(fn.get("arguments"))))
    text = content
    if not calls and text_calls:
        calls, text = extract_tool_calls(content, known)
    usage = data.get("usage") or {}
    return Reply(text=text.strip() if calls else content.strip(), tool_calls=calls, reasoning=reasoning,
                 prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"),
                 truncated=choice.get("finish_reason") == "length")
