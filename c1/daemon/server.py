"""The resident process of one index home (``python -m c1.daemon --home H --idle S``).

It listens first and loads afterwards (chromadb, the ONNX session, in a thread), so the command
that started it can send its request at once; a request waits for the warm-up's imports (never two
threads importing numpy at once), not for its ONNX session. Each connection is one request in its own thread;
searches share one :class:`~c1.retrieval.corpus.Corpus` per collection and one embedder
(:class:`c1.service.search_service.Corpora`, as in the search API) and run
:func:`c1.service.search_service.search_here`, as the command would in its own process. Before each search
the corpus is refreshed: a re-index, a removal or a re-creation of the collection is seen as a long-lived
reader sees it. ``status`` rows are kept while nothing under the collection's folder or the embedded Chroma
store changed (:class:`c1.service.search_service.StatusRows`). This module is the socket and the process's
lifetime around them.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from c1.daemon import protocol
from c1.errors import C1Error
from c1.service.models import LOAD_IMPORTS, load_models
from c1.service.search_service import Corpora, StatusRows, search_here

MAX_CORPORA = 4
"""Collections kept open at once (least recently used dropped first)."""
DRAIN_S = 60.0
"""On exit, how long requests in flight may still run."""
WARM_IMPORTS = (
    *LOAD_IMPORTS, "tantivy", "chromadb",
    "c1.config", "c1.index.indexer", "c1.retrieval.corpus", "c1.agent.search", "c1.agent.policies",
    "c1.agent.policies.builtin", "c1.retrieval.passages", "c1.model.harmony", "c1.service.search_service",
    "c1.store.status",
)
"""What the warm-up thread imports before any request may import anything. Two threads importing
numpy (or chromadb, which imports it) at once can leave one with ``ImportError: ... partially
initialized module``: so requests wait until these are in ``sys.modules`` (:attr:`Resident.imported`).
The first ones (:data:`c1.service.models.LOAD_IMPORTS`) are what the models need: once they are imported, a
second thread loads the models (:func:`c1.service.models.load_models`, which imports nothing) while this one
imports chromadb and the rest."""


class Resident:
    def __init__(self, home: str, idle: float, sock: socket.socket, sock_path: Path):
        self.home = home
        self.idle = idle
        self.sock = sock
        self.sock_path = sock_path
        self.bound = os.stat(sock_path).st_ino
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self._served = 0
        """Requests answered (searches and status, errors included; not those that failed)."""
        self._last = time.monotonic()
        self._asking = 0
        """Requests of users' commands in progress (``warm`` requests aside)."""
        self.corpora = Corpora(max_open=MAX_CORPORA, share_embedders=True)
        self.status_rows = StatusRows()
        self.imported = threading.Event()
        """Set once the warm-up thread has imported :data:`WARM_IMPORTS` (or failed to): until then a
        request imports nothing (one importer at a time)."""
        self.loaded = threading.Event()
        """Set once the models are loaded (or failed to): tests and ``warm`` wait for it."""
        self._warmed: set[tuple] = set()
        """Collections a ``warm`` request has run a first search on (:meth:`_warm_collection`)."""

    # lifetime ---------------------------------------------------------------------------
    def serve(self) -> None:
        threading.Thread(target=self._warm, name="c1-daemon-warm", daemon=True).start()
        self.sock.settimeout(1.0)
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                self._check()
                continue
            except OSError:
                break
            conn.settimeout(None)
            threading.Thread(target=self._handle, args=(conn,), name="c1-daemon-request", daemon=True).start()
        self._unlink()
        deadline = time.monotonic() + DRAIN_S
        while self._active and time.monotonic() < deadline:
            time.sleep(0.05)

    def _check(self) -> None:
        """Stop when idle for long enough, or when the socket path is no longer this process's."""
        if self.stopping.is_set():
            return
        with self._lock:
            idle = self._active == 0 and time.monotonic() - self._last > self.idle
        try:
            replaced = os.stat(self.sock_path).st_ino != self.bound
        except FileNotFoundError:
            replaced = True
        if idle or replaced or not os.path.isdir(self.home):
            log(f"exiting: {'idle' if idle else 'socket replaced' if replaced else 'home removed'}")
            self.stopping.set()

    def retire(self) -> None:
        """Stop taking requests: remove the socket now (a new process may take its place at once)."""
        self._unlink()
        self.stopping.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _unlink(self) -> None:
        try:
            if os.stat(self.sock_path).st_ino == self.bound:
                os.unlink(self.sock_path)
        except FileNotFoundError:
            pass

    def _warm(self) -> None:
        """Load what every search needs while the first request is on its way: the imports (requests wait
        for them) and, from the moment the models' own imports are done, the models in a second thread."""
        self._started = time.monotonic()
        try:
            self._import()
        finally:
            self.imported.set()
            log(f"warm-up: imported in {time.monotonic() - self._started:.2f} s")

    def _import(self) -> None:
        import importlib

        missing = False
        for name in WARM_IMPORTS:
            if name == "chromadb" and self._reads_snapshot():
                continue  # imported (one thread at a time) by the first request that opens Chroma, if any
            try:
                importlib.import_module(name)
            except Exception as exc:  # an optional library missing: the request that needs it reports it
                missing = missing or name in LOAD_IMPORTS
                log(f"warm-up: cannot import {name}: {type(exc).__name__}: {exc}")
            if name == LOAD_IMPORTS[-1]:
                if missing:  # the loads would import it again, beside this thread: not
                    self.loaded.set()
                else:
                    threading.Thread(target=self._load, name="c1-daemon-load", daemon=True).start()

    def _reads_snapshot(self) -> bool:
        """Whether the home's default collection will be searched from its vector snapshot (c1/store/flat.py)."""
        try:
            from c1.config import load_settings
            from c1.store.flat import fresh

            return fresh(load_settings().with_flags(home=self.home))
        except Exception:  # noqa: BLE001 - a config error is the request's to report
            return False

    def _snapshot(self, corpus) -> None:
        """After an answer: the vector snapshot a fresh process of this home searches without Chroma."""
        try:
            if corpus.snapshot_vectors():
                log(f"wrote the vector snapshot of {corpus.settings.collection!r}")
        except Exception as exc:  # noqa: BLE001 - only a cache: searches read Chroma instead
            log(f"no vector snapshot of {corpus.settings.collection!r}: {type(exc).__name__}: {exc}")

    def _load(self) -> None:
        """The models of a search of this home's default collection (:func:`c1.service.models.load_models`)."""
        try:
            from c1.config import load_settings

            settings = load_settings().with_flags(home=self.home)  # the config file and C1_* of the command that started it
            problems = load_models(settings, self.corpora.embedder(settings))
            for problem in problems:  # the request that needs it reports the error
                log(f"warm-up failed: {problem}")
            log(f"warm-up: models loaded {time.monotonic() - self._started:.2f} s after the start")
        except Exception as exc:
            log(f"warm-up failed: {type(exc).__name__}: {exc}")
        finally:
            self.loaded.set()

    # requests ---------------------------------------------------------------------------
    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                line = conn.makefile("rb").readline()
                if not line:
                    return
                request = protocol.loads(line)

                def send(message: dict) -> None:
                    if message["type"] in ANSWERS:  # counted before it leaves: the command may ask for it next
                        with self._lock:
                            self._served += 1
                    conn.sendall(protocol.dumps(message))

                if request.get("op") in ("ping", "stop"):  # control: whatever the caller's build
                    self._dispatch(request, send)
                    return
                if request.get("build") != protocol.build_id():
                    log("a client of another build asked: exiting")
                    self.retire()
                    send({"type": "refused", "reason": "build", "message": "another build of c1 is running"})
                    return
                if request.get("home") != self.home:
                    send({"type": "refused", "reason": "home", "message": f"this process serves {self.home}"})
                    return
                if request.get("op") == "warm":
                    send({"type": "accepted"})  # the sender goes on at once (`c1 index`)
                asking = int(request.get("op") != "warm")
                with self._lock:
                    self._active += 1
                    self._asking += asking
                try:
                    self.imported.wait()  # no import of numpy or chromadb in two threads at once
                    self._dispatch(request, send)
                finally:
                    with self._lock:
                        self._active -= 1
                        self._asking -= asking
                        self._last = time.monotonic()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the command went away (Ctrl-C, a closed pipe): nothing to answer
            except Exception as exc:  # a bug: logged; the command works in-process instead
                log(f"request failed: {type(exc).__name__}: {exc}\n{traceback.format_exc()}")
                try:
                    conn.sendall(protocol.dumps({"type": "failed", "message": f"{type(exc).__name__}: {exc}"}))
                except OSError:
                    pass

    def _dispatch(self, request: dict, send) -> None:
        op = request.get("op")
        if op == "ping":
            send({"type": "pong", "pid": os.getpid(), "build": protocol.build_id(), "home": self.home,
                  "served": self._served})
        elif op == "stop":
            log("asked to stop")
            self.retire()
            send({"type": "stopped", "pid": os.getpid()})
        elif op == "search":
            self._search(request, send)
        elif op == "status":
            self._status_rows(request, send)
        elif op == "warm":
            self._warm_collection(request, send)
        else:
            send({"type": "failed", "message": f"unknown request {op!r}"})

    def _search(self, request: dict, send) -> None:
        settings = protocol.settings_from_json(request["settings"])

        def on_open(note: str, warning: str | None, warnings: list[str]) -> None:
            send({"type": "opened", "note": note, "warning": warning, "warnings": warnings})

        on_event = (lambda e: send({"type": "event", "event": e.to_json()})) if request.get("events") else None
        try:
            corpus = self.corpora.get(settings, refresh=True)
            result = search_here(settings, request["query"], on_open, on_event, corpus=corpus)
        except C1Error as exc:
            send({"type": "error", "message": str(exc), "code": exc.code})
            return
        reply = {"type": "result", "result": result.to_json()}
        if request.get("trajectories"):
            reply["trajectories"] = result.trajectories
        if request.get("plain") and result.documents:
            from c1.terminal.plain import plain_text

            reply["plain"] = plain_text(result.documents, result.query, *request["plain"])
        send(reply)
        threading.Thread(target=self._snapshot, args=(corpus,), name="c1-daemon-snapshot", daemon=True).start()

    def _warm_collection(self, request: dict, send) -> None:
        """``c1 index`` asks: as it starts, with no settings (being started is all: the collection may be
        half made yet); once it has committed (and, watching, now and then), open the collection or see what
        was written since and, the first time, run one search on it, so that the user's first search finds
        every cache a search fills already filled — not while a user's request is being answered (it would
        only compete with it; that request fills them). Nothing a search returns depends on it. The sender
        does not wait (it had ``accepted`` before the imports)."""
        if request.get("settings") is None:  # only started (the process warms up as it starts)
            send({"type": "warmed", "opened": False})
            return
        settings = protocol.settings_from_json(request["settings"])
        try:
            corpus = self.corpora.get(settings, refresh=True)
        except C1Error as exc:  # not searchable yet (the first commit is to come): the next ``warm`` opens it
            send({"type": "warmed", "opened": False, "message": str(exc)})
            return
        self.loaded.wait(120)
        key = (Corpora.key(settings), id(corpus))
        with self._lock:
            first = key not in self._warmed and self._asking == 0
            if first:
                self._warmed.add(key)
        if first:
            started = time.monotonic()
            search_here(settings, "warm up", lambda *said: None, corpus=corpus)
            log(f"warm-up: a first search of {settings.collection!r} took {time.monotonic() - started:.2f} s")
            # before the reply (the sender has gone on, its socket may be closed); the first time only: a
            # watch asks after every commit, and a user's search writes the snapshot of what it changed
            self._snapshot(corpus)
        send({"type": "warmed", "opened": True})

    def _status_rows(self, request: dict, send) -> None:
        settings = protocol.settings_from_json(request["settings"])
        send({"type": "rows", "rows": self.status_rows.rows(settings, request["names"])})


ANSWERS = ("result", "error", "rows", "failed")
"""The replies that end a command's request: ``served`` counts them (``ping``). ``c1 index``'s ``warm`` is
answered ``accepted`` and ``warmed``, which are not counted."""


def log(message: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} c1 daemon [{os.getpid()}]: {message}\n")
    sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m c1.daemon", description="The resident c1 process of a home.")
    parser.add_argument("--home", required=True)
    parser.add_argument("--idle", type=float, default=300.0)
    args = parser.parse_args(argv)
    home = protocol.real_home(Path(args.home))
    where = protocol.paths(home)
    if where is None:
        log("no private runtime folder")
        return 2
    sock_path = where[0]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(sock_path))
    except OSError as exc:
        log(f"cannot listen on {sock_path}: {exc}")
        return 1
    sock.listen(64)
    log(f"serving {home} on {sock_path} (build {protocol.build_id()}, idle {args.idle:g} s)")
    resident = Resident(home, args.idle, sock, sock_path)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # stopped as by `stop`: the finally below runs
        signal.signal(sig, lambda signum, frame: resident.retire())
    try:
        resident.serve()
    finally:
        sock.close()
        resident._unlink()
        readonly = sys.modules.get("c1.store.readonly")
        if readonly is not None:
            readonly.cleanup()
        log("stopped")
        sys.stderr.flush()
    os._exit(0)  # without finalising under ONNX and Chroma threads (it can abort the process)
