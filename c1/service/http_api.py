"""The search API: the agent over HTTP (``c1 serve --api-only``, or beside vLLM in ``c1 serve``).

Endpoints
- ``POST /v1/search`` with a JSON object ``{"query": str, "collection"?: str, "max_docs"?: int,
  "parallel"?: int, "budget"?: int, "max_turns"?: int, "policy"?: "auto"|"llm"|"builtin",
  "stream"?: bool}`` → the ``c1 search --json`` document. With ``"stream": true`` the answer is
  ``text/event-stream``: one ``event: <kind>`` / ``data: <json>`` per loop event, then
  ``event: result`` with the document (or ``event: error`` if the search failed or timed out).
- ``GET /health`` → ``{"status": "ok", "collections": [...], "busy": n, "max_concurrency": m, ...}``.

Errors are JSON ``{"error": {"code": N, "message": "..."}}``: 400 malformed JSON, missing query,
unknown key or bad type; 401 missing or wrong bearer token; 404 unknown collection or path;
405 wrong method; 411 no Content-Length; 413 body over ``max_body``; 429 all search slots busy;
503 the model server is not usable (``--policy llm``); 504 the search passed ``timeout_s``.

Choices
- The standard library's ``ThreadingHTTPServer``: no new dependency and no event loop to bridge
  (the agent is synchronous and thread-based; an ASGI stack would push every search into a
  thread pool anyway). Server-sent events are plain writes on the socket.
- Concurrency is bounded in agent runs: ``max_concurrency`` slots, and a search takes as many as
  its ``parallel`` runs (4 slots hold 4 single-run searches or one ``parallel: 4`` search; a
  request with more runs than slots is refused with 400). A request that finds too few slots free
  is answered ``429`` at once, with ``Retry-After: 1``, rather than queued: a queue would hold a
  thread and a socket per waiting client with no bound, and a retrying client gets the same
  throughput. ``/health`` never takes a slot.
- A search runs in a worker thread; the handler waits ``timeout_s`` for it and answers ``504``
  when it is late. A late or abandoned search is cancelled: all its runs stop at their next turn,
  and its slots are freed only once every run has stopped (:func:`c1.agent.search.run_search`),
  so the slot count never understates the work in progress.
- The searches, their slots and the open collections are :class:`c1.service.search_service.SearchService`'s, shared
  with MCP; this module is the HTTP around it.
- Listening on anything but loopback requires a bearer token (refused at start otherwise); when
  a token is set, every request, ``/health`` included, must carry ``Authorization: Bearer``.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import queue
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from c1 import __version__
from c1.config import Settings
from c1.errors import C1Error
from c1.service.search_service import (
    DEFAULT_HOST,
    DEFAULT_MAX_BODY,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_PORT,
    DEFAULT_TIMEOUT_S,
    ApiError,
    SearchService,
    validate_request,
)


def is_loopback(host: str) -> bool:
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a bearer token."""
    if not is_loopback(host) and not token:
        raise C1Error(f"refusing to serve the search API on {host} without a token: pass --token "
                      "(or $C1_SERVE_TOKEN), or bind 127.0.0.1")


# --- HTTP -------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: "ApiServer"
    protocol_version = "HTTP/1.1"
    server_version = f"c1/{__version__}"
    timeout = 30  # seconds of socket silence (a slow or stuck client) before the connection is dropped

    # plumbing ---------------------------------------------------------------------------
    def log_message(self, fmt: str, *args) -> None:
        if self.server.verbose:
            sys.stderr.write(f"c1 api: {self.address_string()} {fmt % args}\n")

    def _send_json(self, code: int, obj, headers: dict | None = None) -> None:
        body = (json.dumps(obj, ensure_ascii=False) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _send_error(self, exc: ApiError) -> None:
        self._send_json(exc.code, {"error": {"code": exc.code, "message": exc.message}}, exc.headers)

    def _dispatch(self, method: str) -> None:
        try:
            self._authorize()
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            routes = {"/health": ("GET", self._health), "/v1/search": ("POST", self._search)}
            if path not in routes:
                raise ApiError(404, f"no such endpoint {path}; try POST /v1/search or GET /health")
            want, fn = routes[path]
            if method != want:
                raise ApiError(405, f"{path} takes {want}", {"Allow": want})
            fn()
        except ApiError as exc:
            self.close_connection = True  # the body may not have been read
            self._send_error(exc)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # never a dropped connection without an answer
            self.close_connection = True
            self._send_error(ApiError(500, f"internal error: {type(exc).__name__}: {exc}"))

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _authorize(self) -> None:
        token = self.server.token
        if not token:
            return
        given = self.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            self.close_connection = True
            raise ApiError(401, "a valid 'Authorization: Bearer <token>' header is required",
                           {"WWW-Authenticate": 'Bearer realm="c1"'})

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raise ApiError(411, "send the body with a Content-Length, not chunked")
        length = self.headers.get("Content-Length")
        if length is None:
            raise ApiError(411, "Content-Length is required")
        try:
            n = int(length)
        except ValueError:
            raise ApiError(400, "Content-Length is not a number") from None
        if n < 0:
            raise ApiError(400, "Content-Length is negative")
        if n > self.server.max_body:
            raise ApiError(413, f"the body is {n} bytes; the limit is {self.server.max_body}")
        raw = self.rfile.read(n)
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ApiError(400, f"the body is not valid JSON: {exc}") from None

    # endpoints --------------------------------------------------------------------------
    def _health(self) -> None:
        svc = self.server.service
        self._send_json(200, {
            "status": "ok", "version": __version__, "collections": svc.collections(),
            "default_collection": svc.settings.collection, "policy": svc.settings.policy,
            "model": svc.model(), "model_servers": list(svc.settings.base_urls),
            "busy": svc.busy, "searches": svc.searches, "max_concurrency": svc.max_concurrency,
            "timeout_s": svc.timeout_s,
        })

    def _search(self) -> None:
        fields = validate_request(self._body())
        svc = self.server.service
        if fields.get("stream"):
            self._stream(svc, fields)
            return
        job = svc.start(fields)
        if not job.wait(svc.timeout_s):
            raise ApiError(504, f"the search took longer than {svc.timeout_s:g} s and was cancelled")
        if job.result is None:
            raise ApiError(job.error_code, job.error or "search failed")
        self._send_json(200, job.result)

    def _stream(self, svc: SearchService, fields: dict) -> None:
        events: queue.Queue = queue.Queue()
        done = object()
        job = svc.start(fields, on_event=events.put, on_done=lambda: events.put(done))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        deadline = time.monotonic() + svc.timeout_s
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    job.cancelled.set()
                    self._sse("error", {"code": 504, "message": f"the search took longer than {svc.timeout_s:g} s "
                                        "and was cancelled"})
                    return
                try:
                    event = events.get(timeout=min(left, 10.0))
                except queue.Empty:
                    self.wfile.write(b": keep-alive\n\n")  # also notices a client that left
                    self.wfile.flush()
                    continue
                if event is done:
                    break
                self._sse(event.kind, event.to_json())
            if job.result is not None:
                self._sse("result", {"event": "result", **job.result})
            else:
                self._sse("error", {"code": job.error_code, "message": job.error or "search failed"})
        except (BrokenPipeError, ConnectionResetError):
            job.cancelled.set()
            raise
        except Exception as exc:  # headers are out: report in the stream
            job.cancelled.set()
            self._sse("error", {"code": 500, "message": f"internal error: {type(exc).__name__}: {exc}"})

    def _sse(self, kind: str, data: dict) -> None:
        self.wfile.write(f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())
        self.wfile.flush()


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, service: SearchService, host: str, port: int, token: str | None, max_body: int,
                 verbose: bool = False):
        check_bind(host, token)
        self.service = service
        self.token = token or None
        self.max_body = max_body
        self.verbose = verbose
        if ":" in host.strip("[]"):
            self.address_family = __import__("socket").AF_INET6
        try:
            super().__init__((host.strip("[]"), port), _Handler)
        except OSError as exc:
            raise C1Error(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self.service.close()


def make_server(settings: Settings, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
                max_concurrency: int = DEFAULT_MAX_CONCURRENCY, timeout_s: float = DEFAULT_TIMEOUT_S,
                max_body: int = DEFAULT_MAX_BODY, verbose: bool = False, max_budget: int | None = None) -> ApiServer:
    """A bound server, not yet serving: ``threading.Thread(target=srv.serve_forever).start()``.
    ``max_budget``: the served model's window for the context (requests asking for more get 400)."""
    check_bind(host, token)
    if timeout_s <= 0:
        raise C1Error("--timeout must be positive")
    if max_body < 256:
        raise C1Error("--max-body must be at least 256 bytes")
    return ApiServer(SearchService(settings, max_concurrency, timeout_s, max_budget), host, port, token, max_body, verbose)


def serve_api(settings: Settings, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
              max_concurrency: int = DEFAULT_MAX_CONCURRENCY, timeout_s: float = DEFAULT_TIMEOUT_S,
              max_body: int = DEFAULT_MAX_BODY, verbose: bool = False) -> int:
    """Serve until Ctrl-C (exit code 130, as every command) or SIGTERM/SIGHUP (0); returns the exit code
    (``c1 serve --api-only``)."""
    server = make_server(settings, host, port, token, max_concurrency, timeout_s, max_body, verbose)
    try:
        note = server.service.choice(settings).note  # fails fast with --policy llm and no usable server
    except ApiError as exc:
        server.server_close()
        raise C1Error(exc.message) from None
    collections = server.service.collections()
    sys.stderr.write(f"c1: {note}\n")
    sys.stderr.write(
        f"c1: search API on {server.url} (POST /v1/search, GET /health); collections: "
        f"{', '.join(collections) or 'none yet'}; {max_concurrency} concurrent searches"
        f"{'; bearer token required' if token else ''}\n")
    sys.stderr.flush()
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, on_signal)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    code = 0
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        code = 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.close()
        sys.stderr.write("c1: search API stopped\n")
    return code
