"""The ``llm`` policy: the next assistant message comes from an OpenAI-compatible chat server.

- Chat completions with ``tools=`` (the four harness tools, possibly renamed) and
  ``tool_choice="auto"``. vLLM serving gpt-oss answers with ``tool_calls`` and ``reasoning``
  (older versions: ``reasoning_content``); earlier reasoning goes back on the assistant messages
  in the ``reasoning`` field (the Context puts it there).
- Servers without native tool calls (llama.cpp's Python server, many others) write the call as
  JSON in ``content``: fenced or bare, in ``<tool_call>`` or ``<tools>`` tags, one object or a
  list, shaped ``{"name", "arguments"}``, ``{"function": {...}}``, ``{"tool", "parameters"}``...
  (:func:`~c1.agent.policies.llm_reply.extract_tool_calls`) — but only when the whole reply is the call and names tools the
  model was given, so that an answer quoting a document's JSON or mentioning a call in prose stays
  an answer. Text is never read as a call from a server known to return native tool calls
  (vLLM, by its model list; any server once it has returned one). An attempted call that cannot be
  parsed still becomes a call, with its raw text as arguments, so that the tools answer with an
  error observation and the run goes on instead of ending on a broken "answer".
- Plain ``httpx`` rather than the ``openai`` SDK: one endpoint, one payload, and full control of
  timeouts and retries (connection errors, 429 and 5xx, with exponential backoff; a read timeout
  is not retried: a generation that took that long would only take as long again).
- Several ``--base-url`` replicas: run ``i`` of ``--parallel`` talks to replica ``i mod n``.
- Selection (:func:`choose`) asks every replica for ``GET /models``: ``--policy llm`` fails with
  one line when a server is down or does not serve the model; ``--policy auto`` probes with a short
  timeout and falls back to the built-in policy, saying why, when no server answers. A server that
  answers but does not serve the requested model is a configuration error in both modes.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import httpx

from c1.agent import prompts
from c1.agent.policies.llm_reply import parse_reply
from c1.agent.policy import AgentState, ModelServerError, PolicyError, Reply
from c1.agent.tools import PARAMS, tool_names
from c1.config import Settings
from c1.errors import C1Error

DEFAULT_TIMEOUT = 300.0
"""Seconds to wait for one chat completion (a long reasoning turn on a big model); the environment
variable ``C1_MODEL_TIMEOUT`` overrides it (a small model on a slow CPU)."""
PROBE_TIMEOUT = 2.0
"""Seconds ``--policy auto`` waits for ``GET /models`` before falling back to the built-in policy."""
CHECK_TIMEOUT = 10.0
"""Seconds ``--policy llm`` waits for ``GET /models``."""


# --- settings helpers -------------------------------------------------------------------------


def normalize_base_url(url: str) -> str:
    """``http://host:port`` → ``http://host:port/v1``; other paths are kept; no trailing slash."""
    raw = url.strip()
    if "://" not in raw:
        raw = "http://" + raw
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise C1Error(f"--base-url {url!r} is not a URL like http://127.0.0.1:8000/v1")
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def parse_tool_names(spec: str | dict | None) -> dict[str, str]:
    """``"search_corpus=SearchTool,grep_corpus=GrepTool"`` (or a dict) → harness name → model name."""
    if not spec:
        return {}
    if isinstance(spec, dict):
        pairs = list(spec.items())
    else:
        pairs = []
        for item in str(spec).split(","):
            if not item.strip():
                continue
            if "=" not in item:
                raise C1Error(f"--tool-names: {item.strip()!r} is not NAME=NEWNAME (e.g. search_corpus=SearchTool)")
            key, value = item.split("=", 1)
            pairs.append((key.strip(), value.strip()))
    out: dict[str, str] = {}
    for key, value in pairs:
        if key not in PARAMS:
            raise C1Error(f"--tool-names: unknown tool {key!r}; the tools are {', '.join(PARAMS)}")
        if not re.fullmatch(r"[A-Za-z_][\w.-]{0,63}", str(value)):
            raise C1Error(f"--tool-names: {value!r} is not a valid tool name (letters, digits, _ . -)")
        out[key] = str(value)
    if len(set(tool_names(out).values())) != len(PARAMS):
        raise C1Error("--tool-names: two tools would have the same name")
    return out


def api_key(settings) -> str | None:
    return settings.api_key or os.environ.get("C1_API_KEY") or os.environ.get("OPENAI_API_KEY") or None


# --- the HTTP client --------------------------------------------------------------------------


def _short(text: str, chars: int = 200) -> str:
    """``text`` on one line, cut to ``chars`` for an error message."""
    return " ".join(str(text).split())[:chars]


def _server_message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return _short(resp.text) or resp.reason_phrase
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        err = err.get("message") or err.get("detail") or err
    if isinstance(body, dict) and "detail" in body and not isinstance(err, str):
        err = body["detail"]
    return _short(err if isinstance(err, str) else json.dumps(err))


def _transport_reason(exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        text = str(exc).lower()
        return "connection refused" if "refused" in text else f"cannot connect ({_short(exc, 80)})"
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    return f"{type(exc).__name__}: {_short(exc, 80) or 'connection closed'}"


class BudgetBeyondWindow(C1Error):
    """The context budget asked for is larger than the served model's window (vLLM's ``max_model_len``)."""


class NoModelList(ModelServerError):
    """The server answers but does not list its models (no ``GET /models``)."""


class ChatClient:
    """One model server. Thread-safe (one ``httpx.Client``); shared by the runs that use it."""

    RETRY_STATUS = frozenset({429, 500, 502, 503, 504})

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = 3, backoff: float = 0.5, connect_timeout: float = 5.0):
        self.base_url = normalize_base_url(base_url)
        self.retries = retries
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(
            base_url=self.base_url, headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(connect_timeout, timeout)),
        )
        self.timeout = timeout
        self.windows: dict[str, int] = {}
        """Model id → its context window, when the server says (vLLM lists ``max_model_len``)."""
        self.native_tools: bool | None = None
        """Whether the server returns native tool calls (vLLM says so in its model list; any server once
        it has returned one). Until then calls written as text are read (:func:`~c1.agent.policies.llm_reply.extract_tool_calls`)."""

    def close(self) -> None:
        self.http.close()

    def models(self, timeout: float | None = None) -> list[str]:
        """Model ids the server lists. Raises :class:`PolicyError` when it cannot say
        (:class:`NoModelList` when it answers but has no ``/models`` endpoint)."""
        try:
            resp = self._request("GET", "/models", None, timeout=timeout, retries=0)
        except PolicyError as exc:
            if getattr(exc, "status", None) in (404, 405):
                raise NoModelList(str(exc)) from None
            raise
        try:
            data = resp.json()
            models = [str(m["id"]) for m in data.get("data", [])]
            self.windows = {str(m["id"]): int(m["max_model_len"]) for m in data.get("data", [])
                            if isinstance(m, dict) and isinstance(m.get("max_model_len"), int)}
            if any(isinstance(m, dict) and m.get("owned_by") == "vllm" for m in data.get("data", [])):
                self.native_tools = True  # vLLM runs with --enable-auto-tool-choice (c1 serve)
            return models
        except (ValueError, TypeError, KeyError, AttributeError):
            raise ModelServerError(f"model server {self.base_url}: /models did not answer a model list") from None

    def chat(self, payload: dict) -> dict:
        resp = self._request("POST", "/chat/completions", payload)
        try:
            data = resp.json()
        except ValueError:
            raise ModelServerError(f"model server {self.base_url}: the reply is not JSON: {_short(resp.text, 120)!r}") from None
        if not isinstance(data, dict) or not data.get("choices"):
            raise ModelServerError(f"model server {self.base_url}: the reply has no choices: {_short(json.dumps(data), 160)}")
        return data

    def _request(self, method: str, path: str, payload: dict | None, timeout: float | None = None,
                 retries: int | None = None) -> httpx.Response:
        retries = self.retries if retries is None else retries
        kwargs: dict = {"json": payload} if payload is not None else {}
        if timeout is not None:
            kwargs["timeout"] = httpx.Timeout(timeout)
        last, last_resp, status = "", None, None
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last_resp))
                last_resp = None
            try:
                resp = self.http.request(method, path, **kwargs)
            except httpx.ReadTimeout:
                raise ModelServerError(
                    f"model server {self.base_url}: no reply within {timeout or self.timeout:g} s") from None
            except httpx.TransportError as exc:
                last, status = _transport_reason(exc), None
                continue
            if resp.status_code in self.RETRY_STATUS:
                last, status = f"HTTP {resp.status_code}: {_server_message(resp)}", resp.status_code
                last_resp = resp
                continue
            if resp.status_code >= 400:
                hint = ""
                if resp.status_code == 401 or resp.status_code == 403:
                    hint = " (check --api-key / C1_API_KEY)"
                elif resp.status_code == 404 and path == "/chat/completions":
                    hint = " (check --model and --base-url)"
                raise ModelServerError(f"model server {self.base_url}: HTTP {resp.status_code}: {_server_message(resp)}{hint}",
                                       resp.status_code)
            return resp
        tries = f" after {retries + 1} attempts" if retries else ""
        what = "failed" if status is not None else "unreachable"
        raise ModelServerError(f"model server {self.base_url} {what}{tries}: {last}", status)

    def _delay(self, attempt: int, resp: httpx.Response | None) -> float:
        if resp is not None:
            try:
                after = float(resp.headers.get("retry-after", ""))
                if 0 <= after <= 30:
                    return after
            except ValueError:
                pass
        return self.backoff * (2 ** (attempt - 1)) * (1 + 0.1 * random.random())


_clients: dict[tuple, ChatClient] = {}
_clients_lock = threading.Lock()


def client_for(base_url: str, key: str | None, timeout: float = DEFAULT_TIMEOUT) -> ChatClient:
    """A shared client per (server, key, timeout): the API server chooses a policy per request."""
    ident = (normalize_base_url(base_url), key, timeout)
    with _clients_lock:
        if ident not in _clients:
            _clients[ident] = ChatClient(base_url, key, timeout)
        return _clients[ident]


# --- the policy -------------------------------------------------------------------------------


@dataclass
class LLMPolicy:
    client: ChatClient
    model: str
    tool_names: dict = field(default_factory=dict)
    """Harness name → the name the model sees (``ToolConfig.names``)."""
    temperature: float | None = None
    reasoning_effort: str | None = None
    seed: int | None = None
    max_tokens: int | None = None
    max_docs: int | None = None
    soft: float = Settings.soft_threshold
    name: str = "llm"

    def system_prompt(self, budget: int) -> str:
        return prompts.system_prompt(budget, self.tool_names, self.soft, self.max_docs)

    def payload(self, state: AgentState) -> dict:
        body: dict = {
            "model": self.model,
            "messages": state.context.openai_messages(),
            "tools": state.tools,
            "tool_choice": "auto",
        }
        for key in ("temperature", "seed", "reasoning_effort"):
            value = getattr(self, key)
            if value is not None:
                body[key] = value
        caps = [n for n in (self.max_tokens, state.max_reply_tokens) if n is not None]
        if caps:  # the reply may not outgrow the context budget
            body["max_tokens"] = min(caps)
        return body

    def next(self, state: AgentState) -> Reply:
        data = self.client.chat(self.payload(state))
        message = ((data.get("choices") or [{}])[0] or {}).get("message") or {}
        if message.get("tool_calls"):
            self.client.native_tools = True  # from now on, text is never read as a call
        seen = {state.tool_names[k]: p for k, p in PARAMS.items() if k in state.tool_names} or \
            {tool_names(self.tool_names)[k]: p for k, p in PARAMS.items()}
        return parse_reply(data, seen, text_calls=not self.client.native_tools)


# --- choosing it ------------------------------------------------------------------------------


def _probe(client: ChatClient, timeout: float, model: str | None) -> tuple[list[str] | None, str | None]:
    try:
        return client.models(timeout=timeout), None
    except NoModelList as exc:
        if model:  # cannot check the name: trust --model
            return [model], None
        return None, f"{exc} (it does not list its models: pass --model)"
    except PolicyError as exc:
        return None, str(exc)


def choose(settings, fallback: Callable, *, tool_names: dict | None = None, max_tokens: int | None = None,
           timeout: float = DEFAULT_TIMEOUT, probe_timeout: float | None = None):
    """The :class:`~c1.agent.policies.PolicyChoice` for ``settings`` (policy ``llm`` or ``auto``)."""
    from c1.agent.policies.choice import PolicyChoice

    mode = settings.policy
    if timeout == DEFAULT_TIMEOUT and os.environ.get("C1_MODEL_TIMEOUT"):
        try:
            timeout = float(os.environ["C1_MODEL_TIMEOUT"])
        except ValueError:
            raise C1Error(f"C1_MODEL_TIMEOUT={os.environ['C1_MODEL_TIMEOUT']!r} is not a number of seconds") from None
    if max_tokens is None:
        max_tokens = getattr(settings, "max_tokens", None)
    names = parse_tool_names(tool_names if tool_names is not None else getattr(settings, "tool_names", None))
    key = api_key(settings)
    urls = list(dict.fromkeys(normalize_base_url(u) for u in settings.base_urls))
    clients = [client_for(u, key, timeout) for u in urls]
    wait = probe_timeout if probe_timeout is not None else (PROBE_TIMEOUT if mode == "auto" else CHECK_TIMEOUT)
    with ThreadPoolExecutor(max_workers=min(8, len(clients))) as pool:
        probes = list(pool.map(lambda c: _probe(c, wait, settings.model), clients))
    up = [(c, models) for c, (models, _) in zip(clients, probes) if models is not None]
    down = [(c, why) for c, (_, why) in zip(clients, probes) if why is not None]
    if down and (mode == "llm" or not up):
        if mode == "llm":
            raise C1Error(f"{down[0][1]} (is the server running? check --base-url)")
        return fallback(settings, f"{down[0][1]}" + (f" (and {len(down) - 1} more)" if len(down) > 1 else ""))
    model = settings.model
    if model is None:
        model = next((m[0] for _, m in up if m), None)
        if model is None:
            raise C1Error(f"model server {up[0][0].base_url} lists no model: pass --model")
    for c, models in up:
        if model not in models:
            listed = ", ".join(models[:5]) + (" ..." if len(models) > 5 else "") or "none"
            raise C1Error(f"model {model!r} is not served at {c.base_url} (it serves: {listed}); check --model")
    serving = [c for c, _ in up]
    for c in serving:  # every request stays under the budget: the window must hold it
        window = c.windows.get(model)
        if window is not None and settings.budget > window:
            raise BudgetBeyondWindow(f"the context budget ({settings.budget} tokens) is larger than the window of {model!r} at "
                          f"{c.base_url} ({window} tokens): pass --budget {window} or less")
    note = f"using the llm policy: model {model} at {serving[0].base_url}"
    if len(serving) > 1:
        note += f" and {len(serving) - 1} more replica(s), round-robin"
    warning = None
    if down:
        note += f"; skipping {', '.join(c.base_url for c, _ in down)} (not answering)"
        warning = f"model server {down[0][0].base_url} is not answering ({down[0][1]}); using the others"

    def factory(i: int) -> LLMPolicy:
        return LLMPolicy(serving[i % len(serving)], model, names, settings.temperature, settings.reasoning_effort,
                         None if settings.seed is None else settings.seed + i, max_tokens, settings.max_docs,
                         settings.soft_threshold)

    return PolicyChoice("llm", factory, note, warning, model)
