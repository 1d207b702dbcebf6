"""The teacher: any OpenAI-compatible chat server (vLLM, llama.cpp, a hosted API), asked for JSON.

It reuses the ``llm`` policy's HTTP client (retries on connection errors, 429 and 5xx, with
backoff) and adds what bulk generation needs:
- a rate limit (requests per minute, shared by all threads) and a concurrency limit;
- token usage summed over every call (prompt and completion), for the report;
- JSON answers: ``response_format`` with the JSON schema in the shape the server accepts (vLLM
  and OpenAI: ``json_schema``; llama-cpp-python: ``json_object`` with a ``schema``), else the first
  JSON object in the text (fenced or bare); a reply that holds no JSON object, or one cut off at
  ``max_tokens`` (``finish_reason`` ``length``: its JSON is unfinished, and what parses inside it
  is a fragment), is a :class:`TeacherError` for that one request, not for the run.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field

from c1.errors import C1Error


class TeacherError(Exception):
    """One request failed (unreachable, refused, no JSON): the item is skipped and reported."""


@dataclass
class Usage:
    requests: int = 0
    failures: int = 0
    cut_off: int = 0
    """Replies refused because the server cut them off at max_tokens (counted in ``failures`` too)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def to_json(self) -> dict:
        return {"requests": self.requests, "failures": self.failures, "cut_off": self.cut_off,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


class RateLimiter:
    """At most ``per_minute`` acquisitions in any 60-second window (evenly spaced), thread-safe."""

    def __init__(self, per_minute: float | None):
        self.interval = 60.0 / per_minute if per_minute else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def acquire(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next)
            self._next = at + self.interval
        if at > now:
            time.sleep(at - now)


_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def first_json_object(text: str) -> dict | None:
    """The first top-level JSON object in ``text`` (inside a ``` fence if there is one), or None.
    An object that does not parse is skipped whole: an object nested in it is a fragment, never
    the answer (a cut-off ``{"question": …, "hops": [{…}, {…`` yields None, not the first hop)."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCED.finditer(text)] + [text]
    dec = json.JSONDecoder()
    for cand in candidates:
        i = cand.find("{")
        while i >= 0:
            try:
                value, _ = dec.raw_decode(cand, i)
                if isinstance(value, dict):
                    return value
            except json.JSONDecodeError:
                pass
            end = _object_end(cand, i)
            if end < 0:  # unterminated: the rest of the text is inside it
                break
            i = cand.find("{", end)
    return None


def _object_end(text: str, start: int) -> int:
    """The index after the ``}`` that closes the brace at ``start`` (strings skipped), or -1."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


@dataclass
class Teacher:
    base_url: str
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.7
    max_tokens: int = 1024
    rpm: float | None = None
    """Requests per minute (None: unlimited)."""
    concurrency: int = 4
    timeout: float = 600.0
    schema_mode: str = "auto"
    """How the JSON schema is sent: ``json_schema`` (OpenAI and vLLM: ``response_format`` of that
    type), ``json_object`` (llama-cpp-python: ``{"type": "json_object", "schema": ...}``), ``text``
    (no response_format; the JSON is read from the text), or ``auto``: json_schema first, and after
    a refusal that names the response format, the next one for the rest of the run."""
    reasoning_effort: str | None = None
    retries: int = 3
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self):
        from c1.agent.policies.llm import ChatClient

        self.client = ChatClient(self.base_url, self.api_key, timeout=self.timeout, retries=self.retries)
        self.limiter = RateLimiter(self.rpm)
        self._slots = threading.Semaphore(max(1, self.concurrency))
        self._lock = threading.Lock()
        self.auto_format = self.schema_mode == "auto"

    def resolve_model(self) -> str:
        """The model to use: the one given, else the first the server lists. Raises C1Error when the
        server does not answer (the run cannot start)."""
        from c1.agent.policy import PolicyError

        try:
            models = self.client.models(timeout=15)
        except PolicyError as exc:
            raise C1Error(f"teacher: {exc}") from None
        if self.model is None:
            if not models:
                raise C1Error(f"teacher at {self.client.base_url} lists no model: pass --teacher-model")
            self.model = models[0]
        elif self.model not in models:
            raise C1Error(f"teacher model {self.model!r} is not served at {self.client.base_url} "
                          f"(it serves: {', '.join(models[:5]) or 'none'})")
        return self.model

    def close(self) -> None:
        self.client.close()

    def _format(self, schema: dict | None, name: str) -> dict | None:
        if schema is None or self.schema_mode == "text":
            return None
        if self.schema_mode == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}

    def _downgrade(self, exc: Exception) -> bool:
        """After the server refused our ``response_format``: the next, plainer one (auto mode only)."""
        text = str(exc).lower()
        if self.auto_format and ("response_format" in text or "json_schema" in text or "json_object" in text):
            with self._lock:
                if self.schema_mode in ("auto", "json_schema"):
                    self.schema_mode = "json_object"  # llama-cpp-python: {"type": "json_object", "schema": ...}
                elif self.schema_mode == "json_object":
                    self.schema_mode = "text"
                else:
                    return False
            return True
        return False

    def json(self, system: str, user: str, schema: dict | None = None, name: str = "answer",
             max_tokens: int | None = None) -> dict:
        """One chat completion whose answer is a JSON object."""
        from c1.agent.policy import PolicyError

        body: dict = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_tokens": max_tokens or self.max_tokens,
        }
        if self.reasoning_effort:
            body["reasoning_effort"] = self.reasoning_effort
        while True:
            fmt = self._format(schema, name)
            payload = {**body, "response_format": fmt} if fmt else body
            try:
                with self._slots:  # never held across a retry with another format
                    self.limiter.acquire()
                    data = self.client.chat(payload)
                break
            except PolicyError as exc:
                if fmt is not None and self._downgrade(exc):
                    continue
                with self._lock:
                    self.usage.failures += 1
                raise TeacherError(str(exc)) from None
        usage = data.get("usage") or {}
        with self._lock:
            self.usage.requests += 1
            self.usage.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.usage.completion_tokens += int(usage.get("completion_tokens") or 0)
        choice = data["choices"][0] or {}
        msg = choice.get("message") or {}
        text = msg.get("content") or ""
        if choice.get("finish_reason") == "length":
            with self._lock:
                self.usage.failures += 1
                self.usage.cut_off += 1
            raise TeacherError(f"the teacher's reply was cut off at max_tokens ({body['max_tokens']}): "
                               "raise --max-tokens")
        value = first_json_object(text)
        if value is None:
            with self._lock:
                self.usage.failures += 1
            raise TeacherError(f"the teacher's reply holds no JSON object: {' '.join(text.split())[:120]!r}")
        return value
