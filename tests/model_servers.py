"""Small real HTTP servers on 127.0.0.1 for the embedder and reranker clients (tests and bench/embed_pipeline.py).

- ``POST /v1/embeddings`` (OpenAI shape): each text's vector is a fixed function of the text (seeded
  from its hash), so a client's rows can be checked against :func:`text_vector`; every request waits
  ``latency`` seconds first (a model's time on a GPU, without the GPU), and the server counts how
  many requests it holds at once. A text containing ``fail_marker`` makes its request answer 500.
- ``POST /rerank`` (also ``/v1/rerank``): scores by running c1's in-process ONNX cross-encoder, and
  answers as vLLM / llama.cpp / Jina do (``{"results": [{"index", "relevance_score"}]}``, best first) or,
  with ``rerank_shape="tei"``, as text-embeddings-inference does (``[{"index", "score"}]``, reading ``texts``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def text_vector(text: str, dim: int = 32) -> list[float]:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32).tolist()


class ModelServer:
    def __init__(self, latency: float = 0.0, dim: int = 32, fail_marker: str | None = None,
                 rerank_shape: str = "jina", reranker=None):
        self.latency = latency
        self.dim = dim
        self.fail_marker = fail_marker
        self.rerank_shape = rerank_shape
        self.reranker = reranker
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server._lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                try:
                    code, answer = server.answer(self.path, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, path: str, body: dict) -> tuple[int, object]:
        if path == "/v1/embeddings":
            if self.latency:
                time.sleep(self.latency)
            texts = body["input"]
            if self.fail_marker and any(self.fail_marker in t for t in texts):
                return 500, {"error": {"message": "model crashed on this batch"}}
            rows = [{"object": "embedding", "index": i, "embedding": text_vector(t, self.dim)} for i, t in enumerate(texts)]
            return 200, {"object": "list", "model": body.get("model"), "data": rows[::-1]}  # any order: index says
        if path in ("/rerank", "/v1/rerank"):
            texts = body["texts"] if self.rerank_shape == "tei" else body["documents"]
            scores = self.reranker.score(body["query"], texts)
            order = sorted(range(len(texts)), key=lambda i: -scores[i])
            if self.rerank_shape == "tei":
                return 200, [{"index": i, "score": scores[i]} for i in order]
            return 200, {"model": body.get("model"), "results": [{"index": i, "relevance_score": scores[i]} for i in order]}
        return 404, {"error": f"no route {path}"}

    def __enter__(self) -> "ModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
