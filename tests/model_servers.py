"""The one stand-in for a model server in the tests: a real HTTP server on 127.0.0.1 (nothing mocked),
and what it answers. Also read by bench/embed_pipeline.py.

- :class:`FakeServer`: a free loopback port, served in a thread; every request is recorded
  (``requests``: method, path, headers, body) and answered by :meth:`FakeServer.answer` with a
  :class:`Step` (a status and body, or a dropped connection, after a delay). ``GET /v1/models``
  lists ``models``. A test with answers of its own subclasses it and overrides ``answer``
  (test_model_path's counting server, test_train_synth's algorithmic teacher).
- :class:`ScriptedServer`: OpenAI-style chat answers from a script (fail N times, drop the
  connection, stall, then answer), for the HTTP client's retries and error lines without a model.
- :class:`ModelServer`: ``POST /v1/embeddings`` (OpenAI shape): each text's vector is a fixed
  function of the text (:func:`text_vector`); every request waits ``latency`` seconds first (a
  model's time on a GPU, without the GPU), and the server counts how many requests it holds at once
  (``peak``). A text containing ``fail_marker`` makes its request answer 500. ``POST /rerank`` (also
  ``/v1/rerank``): scores by running c1's in-process ONNX cross-encoder, and answers as vLLM /
  llama.cpp / Jina do (``{"results": [{"index", "relevance_score"}]}``, best first) or, with
  ``rerank_shape="tei"``, as text-embeddings-inference does (``[{"index", "score"}]``, reading ``texts``).
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Step:
    """One answer: ``status`` with ``body`` (a dict or list is sent as JSON), or ``drop`` the
    connection without answering, after ``delay`` seconds."""

    status: int = 200
    body: object = None
    drop: bool = False
    delay: float = 0.0
    headers: dict = field(default_factory=dict)


def completion(content: str | None = None, tool_calls: list | None = None, reasoning: str | None = None,
               reasoning_key: str = "reasoning", prompt_tokens: int = 100, completion_tokens: int = 10) -> dict:
    """An OpenAI chat completion body: ``content``, native ``tool_calls`` [(name, arguments)], a reasoning field."""
    message: dict = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(tool_calls)
        ]
    if reasoning is not None:
        message[reasoning_key] = reasoning
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


class FakeServer:
    """A real HTTP/1.1 server on a free port of 127.0.0.1, serving between ``with`` and its end (or from
    :meth:`start`). ``models``: the ids (or whole entries) ``GET /v1/models`` lists; None: no such route."""

    def __init__(self, models: list | tuple | None = ("fake",)):
        self.models = None if models is None else list(models)
        self.requests: list[tuple[str, str, dict, object]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        """The most requests answered at once (the answer's own time counts, not the writing of it)."""
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``…/v1``)."""
        return self.url + "/v1"

    def posts(self) -> list:
        """The bodies of the POSTs received, in order."""
        with self.lock:
            return [body for method, _, _, body in self.requests if method == "POST"]

    def answer(self, method: str, path: str, body: object) -> Step:
        if method == "GET" and path.rstrip("/") == "/v1/models" and self.models is not None:
            entries = [m if isinstance(m, dict) else {"id": m, "object": "model"} for m in self.models]
            return Step(body={"object": "list", "data": entries})
        return Step(404, {"error": {"message": f"no route {path}"}})

    def start(self) -> "FakeServer":
        self.thread.start()
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self._handle("GET")

        def do_POST(self):
            self._handle("POST")

        def _handle(self, method: str) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            with server.lock:
                server.requests.append((method, self.path, dict(self.headers), body))
                server.in_flight += 1
                server.peak = max(server.peak, server.in_flight)
            try:
                step = server.answer(method, self.path, body)
            finally:
                with server.lock:
                    server.in_flight -= 1
            self._reply(step)

        def _reply(self, step: Step) -> None:
            if step.delay:
                time.sleep(step.delay)
            if step.drop:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            data = step.body if isinstance(step.body, (bytes, str)) else json.dumps(step.body)
            data = data.encode() if isinstance(data, str) else data
            self.send_response(step.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in step.headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    return Handler


class ScriptedServer(FakeServer):
    """Each POST to ``/v1/chat/completions`` consumes the next step of ``script`` (then repeats
    ``default``); ``/v1/models`` lists ``models`` (None: 404). A reply whose ``finish_reason`` is
    ``length`` reports as many completion tokens as the request's ``max_tokens``, as a server does
    that cut it there."""

    def __init__(self, script: list[Step] | None = None, default: Step | None = None,
                 models: list | tuple | None = ("scripted",)):
        super().__init__(models)
        self.script = list(script or [])
        self.default = default or Step(body=completion("done"))

    def answer(self, method: str, path: str, body: object) -> Step:
        if method != "POST":
            return super().answer(method, path, body)
        with self.lock:
            step = self.script.pop(0) if self.script else self.default
        choices = step.body.get("choices") if isinstance(step.body, dict) else None
        if choices and choices[0].get("finish_reason") == "length" and isinstance(body, dict) and body.get("max_tokens"):
            usage = {**step.body.get("usage", {}), "completion_tokens": body["max_tokens"]}
            step = replace(step, body={**step.body, "usage": usage})
        return step


def text_vector(text: str, dim: int = 32) -> list[float]:
    import numpy as np

    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32).tolist()


class ModelServer(FakeServer):
    """Embeddings and rerank (the module's docstring)."""

    def __init__(self, latency: float = 0.0, dim: int = 32, fail_marker: str | None = None,
                 rerank_shape: str = "jina", reranker=None):
        super().__init__()
        self.latency = latency
        self.dim = dim
        self.fail_marker = fail_marker
        self.rerank_shape = rerank_shape
        self.reranker = reranker

    def answer(self, method: str, path: str, body: object) -> Step:
        if method == "POST" and path == "/v1/embeddings":
            if self.latency:
                time.sleep(self.latency)
            texts = body["input"]
            if self.fail_marker and any(self.fail_marker in t for t in texts):
                return Step(500, {"error": {"message": "model crashed on this batch"}})
            rows = [{"object": "embedding", "index": i, "embedding": text_vector(t, self.dim)} for i, t in enumerate(texts)]
            return Step(body={"object": "list", "model": body.get("model"), "data": rows[::-1]})  # any order: index says
        if method == "POST" and path in ("/rerank", "/v1/rerank"):
            texts = body["texts"] if self.rerank_shape == "tei" else body["documents"]
            scores = self.reranker.score(body["query"], texts)
            order = sorted(range(len(texts)), key=lambda i: -scores[i])
            if self.rerank_shape == "tei":
                return Step(body=[{"index": i, "score": scores[i]} for i in order])
            return Step(body={"model": body.get("model"),
                              "results": [{"index": i, "relevance_score": scores[i]} for i in order]})
        return super().answer(method, path, body)
