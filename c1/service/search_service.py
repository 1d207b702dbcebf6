"""The search service behind the long-lived front ends: the resident process (c1/daemon), the search API
over HTTP (c1/service/http_api.py) and MCP (c1/commands/mcp.py). They carry requests and answers; what a search or a
status is, and which collections stay open, is decided here once.

- :class:`Corpora`: each collection's :class:`~c1.retrieval.corpus.Corpus` opened once and shared by every
  request. Its reads are safe concurrently: SQLite in serialized mode with ``check_same_thread=False``
  (each query its own cursor), tantivy and Chroma searchers, the ONNX session; a test compares 8
  concurrent searches with the same searches run one by one.
- :func:`search_here`: one search as ``c1 search`` runs it in its own process; the resident process runs
  the very same function for the command, so both print the same.
- :class:`StatusRows`: ``c1 status`` rows, kept while nothing under the collection changed.
- :class:`SearchService`: a request of the API or MCP (:func:`validate_request`), with bounded agent-run
  slots, a short-lived policy cache, a worker thread per search and a deadline (:class:`SearchJob`).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

from c1.config import MAX_QUERY_CHARS, Settings, bounds, check_together, collection_name_problem, is_eval_collection
from c1.errors import C1Error

DEFAULT_MAX_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
"""The search API's (c1/service/http_api.py), here beside its other defaults so that the CLI reads them without
importing an HTTP server. Not 8000 (``chroma run``) nor 8001 (vLLM in ``c1 serve``)."""
DEFAULT_MAX_BODY = 64 * 1024

FIELDS = {
    "query": str, "collection": str, "max_docs": int, "parallel": int, "budget": int,
    "max_turns": int, "policy": str, "stream": bool,
}
LIMITS = {name: bounds(name) for name in ("max_docs", "parallel", "budget", "max_turns")}  # the CLI's (c1.config)
POLICY_CACHE_S = 30.0


class ApiError(Exception):
    def __init__(self, code: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.headers = headers or {}


class Cancelled(Exception):
    """Raised inside a search (at its next event) once its client is gone or its time is up."""


def validate_request(body) -> dict:
    """The JSON body of ``POST /v1/search`` → checked fields (ApiError 400 otherwise)."""
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}")
    out = {}
    for key, value in body.items():
        if value is None and key != "query":
            continue
        kind = FIELDS[key]
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ApiError(400, f"{key!r} must be an integer")
        if kind is not int and not isinstance(value, kind):
            raise ApiError(400, f"{key!r} must be a {'string' if kind is str else 'boolean'}")
        if key in LIMITS and not LIMITS[key][0] <= value <= LIMITS[key][1]:
            raise ApiError(400, f"{key!r} must be between {LIMITS[key][0]} and {LIMITS[key][1]}")
        out[key] = value
    query = out.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ApiError(400, "'query' is required: a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ApiError(400, f"'query' is longer than {MAX_QUERY_CHARS} characters")
    if "policy" in out:
        from c1.agent.policies import NAMES, names_text

        if out["policy"] not in NAMES:
            raise ApiError(400, f"'policy' must be {names_text()}")
    if "collection" in out and collection_name_problem(out["collection"]):
        raise ApiError(400, "'collection' is not a collection name")
    return out


class Corpora:
    """The open corpora of a long-lived process, one per collection and the settings that open it (store,
    embedder, re-ranker). ``max_open``: how many stay open (least recently used dropped first, not closed: a
    search may still use it); None: all. ``share_embedders``: one embedder per embedding setting for all
    collections (the resident process); else each corpus loads the one its collection records."""

    def __init__(self, max_open: int | None = None, share_embedders: bool = False):
        self.max_open = max_open
        self.share_embedders = share_embedders
        self._open: OrderedDict[tuple, object] = OrderedDict()
        self._embedders: dict[tuple, object] = {}
        self._lock = threading.Lock()
        self._opening = threading.Lock()

    @staticmethod
    def key(settings: Settings) -> tuple:
        return (settings.collection, settings.chroma_url, settings.embed_url, settings.embed_model,
                settings.embed_api_key, settings.rerank)

    def cached(self, settings: Settings):
        """The collection's corpus if it is open, else None."""
        key = self.key(settings)
        with self._lock:
            corpus = self._open.get(key)
            if corpus is not None:
                self._open.move_to_end(key)
            return corpus

    def get(self, settings: Settings, *, refresh: bool = False):
        """The collection's corpus, opened on first use. ``refresh``: a re-index is seen now, and a corpus that
        cannot be refreshed (the collection was removed or emptied) is opened anew, for the error an
        in-process search gives; otherwise the search refreshes it (:func:`c1.agent.search.run_search`)."""
        corpus = self.cached(settings)
        if corpus is not None:
            if not refresh:
                return corpus
            try:
                corpus.refresh()
                return corpus
            except C1Error:  # removed, emptied: open it anew below
                with self._lock:
                    self._open.pop(self.key(settings), None)
        from c1.retrieval.corpus import Corpus

        with self._opening:  # one opening at a time: two first requests share one corpus
            corpus = self.cached(settings)  # opened meanwhile by another request
            if corpus is not None:
                return corpus
            if refresh:
                from c1.store.vectors import fresh_clients

                fresh_clients()  # Chroma's cached client may have loaded this collection's index before a re-index
            corpus = Corpus(replace(settings), self.embedder(settings) if self.share_embedders else None)
            with self._lock:
                self._open[self.key(settings)] = corpus
                while self.max_open is not None and len(self._open) > self.max_open:
                    self._open.popitem(last=False)  # not closed: a search may still use it; the collector does
            return corpus

    def embedder(self, settings: Settings):
        """The shared embedder for these settings: the collection's own built-in one, or the server's."""
        from c1.store.embedders import builtin_for, make_embedder

        builtin = None if settings.embed_url else builtin_for(settings)  # the collection's own
        key = (settings.embed_url, settings.embed_model, settings.embed_api_key, builtin)
        with self._lock:
            if key not in self._embedders:
                self._embedders[key] = make_embedder(*key)
            return self._embedders[key]

    def close(self) -> None:
        with self._lock:
            for corpus in self._open.values():
                corpus.close()
            self._open.clear()


def search_here(settings: Settings, query: str, on_open, on_event=None, corpus=None):
    """One search in this process: open the collection (unless given ``corpus``), choose the policy,
    tell ``on_open(policy note, policy warning, corpus warnings)``, run, and return the SearchResult. The
    resident process runs the very same function, so both give the same result."""
    from c1.retrieval.corpus import Corpus
    from c1.agent.policies import choose_policy
    from c1.agent.search import search_with
    from c1.service.models import load_models_aside

    own = corpus is None
    if own:
        corpus = Corpus(settings, load_models_aside(settings))  # its error is the one line printed
    try:
        choice = choose_policy(settings)
        on_open(choice.note, choice.warning, list(corpus.warnings))
        return search_with(corpus, settings, query, choice, on_event or (lambda e: None))
    finally:
        if own:
            corpus.close()


class StatusRows:
    """``c1 status`` rows (:func:`c1.store.status.status_row`), each kept while nothing under the
    collection's folder or the embedded Chroma store changed (:func:`store_mark`): the status of an unchanged
    home costs a few ``stat`` calls instead of reading every chunk's hash back from Chroma."""

    def __init__(self):
        self._kept: dict[tuple, tuple[tuple, dict]] = {}

    def rows(self, settings: Settings, names: list[str]) -> list[dict]:
        from c1.store.status import status_row

        rows = []
        for name in names:
            key = (name, settings.chroma_url)
            mark = store_mark(settings, name)
            kept = self._kept.get(key)
            if kept is not None and mark is not None and kept[0] == mark:
                rows.append(kept[1])
                continue
            row = status_row(settings, name)
            rows.append(row)
            embedded = row.get("store") in (None, str(Path(settings.home) / "chroma"))
            if mark is not None and "error" not in row and embedded and not row.get("interrupted") \
                    and not row.get("writer"):  # a writer killed later changes no file: its row must be read again
                self._kept[key] = (mark, row)
            else:
                self._kept.pop(key, None)
        return rows


READERS_TOUCH = ("-shm", ".lock")
"""Files that readers change too (SQLite's shared-memory index, tantivy's and c1's lock files): not marks."""


def store_mark(settings, name: str) -> tuple | None:
    """What changes whenever a collection's stored state can: every file under its folder and under the
    embedded Chroma store (size, time, inode), and the manifest's generation and dirty flag. None when the
    manifest cannot be read (no caching)."""
    import sqlite3

    folder = settings.home / "collections" / name
    parts: list[tuple] = []
    for root in (folder, settings.home / "chroma"):
        for where, dirs, files in os.walk(root):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(READERS_TOUCH):
                    continue
                try:
                    st = os.stat(os.path.join(where, f))
                except OSError:
                    continue
                parts.append((where, f, st.st_ino, st.st_size, st.st_mtime_ns))
    from c1.store.readonly import is_writable

    mode = "mode=ro" if is_writable(folder) else "immutable=1"  # a read-only home: its log is among the parts
    try:
        db = sqlite3.connect(f"file:{folder / 'manifest.sqlite'}?{mode}", uri=True, timeout=1)
        try:
            meta = tuple(db.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'dirty') ORDER BY key"))
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return tuple(parts), meta


class SearchService:
    """What the HTTP API and MCP call: open corpora once, choose policies, run searches. Thread-safe."""

    def __init__(self, settings: Settings, max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
                 timeout_s: float = DEFAULT_TIMEOUT_S, max_budget: int | None = None):
        """``max_budget``: the largest context budget the model server can hold (``c1 serve`` knows
        vLLM's ``--max-model-len``); a request asking for more is refused, naming that window."""
        if max_concurrency < 1:
            raise C1Error("--max-concurrency must be at least 1")
        self.max_budget = max_budget
        self.settings = settings
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self._busy = 0
        self.searches = 0
        self.peak = 0
        """The most agent runs that were ever in progress at once."""
        self._busy_lock = threading.Lock()
        self.corpora = Corpora()
        self._status = StatusRows()
        self._choices: dict[tuple, tuple[float, object]] = {}
        self._choices_lock = threading.Lock()
        self.tool_names: dict = {}
        if getattr(settings, "tool_names", None):
            from c1.agent.policies.llm import parse_tool_names

            self.tool_names = parse_tool_names(settings.tool_names)

    # collections ------------------------------------------------------------------------
    def collections(self, evals: bool = False) -> list[str]:
        """The home's collections (``c1 eval``'s only with ``evals``: /health lists the user's)."""
        root = self.settings.home / "collections"
        if not root.is_dir():
            return []
        return sorted(p.name for p in root.iterdir() if (p / "manifest.sqlite").exists()
                      and (evals or not is_eval_collection(p.name)))

    def corpus(self, name: str):
        settings = replace(self.settings, collection=name)
        corpus = self.corpora.cached(settings)
        if corpus is not None:
            return corpus
        if name not in self.collections(evals=True):
            raise ApiError(404, f"no collection {name!r} under this server's index home")
        try:
            return self.corpora.get(settings)
        except C1Error as exc:
            raise ApiError(404, str(exc)) from None

    def close(self) -> None:
        self.corpora.close()

    def status(self) -> dict:
        """The home's collections as ``c1 status --json`` shows them (MCP's ``status``)."""
        from c1.store.status import collection_names

        names = collection_names(self.settings.home)
        return {"home": str(self.settings.home), "default_collection": self.settings.collection,
                "collections": self._status.rows(self.settings, names)}

    # policies ---------------------------------------------------------------------------
    def choice(self, settings: Settings):
        """``choose_policy`` cached for a few seconds (``auto`` probes the model server)."""
        from c1.agent.policies import choose_policy

        key = (settings.policy, settings.base_urls, settings.model, settings.max_docs, settings.soft_threshold, settings.budget)
        now = time.monotonic()
        with self._choices_lock:
            hit = self._choices.get(key)
            if hit and now - hit[0] < POLICY_CACHE_S:
                return hit[1]
        try:
            made = choose_policy(settings)
        except C1Error as exc:
            from c1.agent.policies.llm import BudgetBeyondWindow

            # a budget the model's window cannot hold is the request's fault; anything else the server's
            raise ApiError(400 if isinstance(exc, BudgetBeyondWindow) else 503, str(exc)) from None
        with self._choices_lock:
            self._choices[key] = (now, made)
        return made

    def model(self) -> str | None:
        """The model searches ask the server for: ``--model``, else what the default policy chose
        (known once it has been chosen; /health never probes)."""
        if self.settings.model:
            return self.settings.model
        with self._choices_lock:
            chosen = [made for _, made in self._choices.values() if made.model]
        return chosen[0].model if chosen else None

    # searching --------------------------------------------------------------------------
    @property
    def busy(self) -> int:
        """Agent runs in progress (slots taken)."""
        return self._busy

    def acquire(self, runs: int = 1) -> None:
        if runs > self.max_concurrency:
            raise ApiError(400, f"'parallel' is {runs} but this server runs at most {self.max_concurrency} agent runs at once")
        with self._busy_lock:
            if self._busy + runs > self.max_concurrency:
                raise ApiError(429, f"{self._busy} of {self.max_concurrency} agent-run slots are busy; retry shortly",
                               {"Retry-After": "1"})
            self._busy += runs
            self.searches += 1
            self.peak = max(self.peak, self._busy)

    def release(self, runs: int = 1) -> None:
        with self._busy_lock:
            self._busy -= runs
            self.searches -= 1

    def prepare(self, fields: dict):
        """Settings, corpus and policy for a request: fails fast (before any slot is used)."""
        overrides = {k: fields[k] for k in ("collection", "max_docs", "parallel", "budget", "max_turns", "policy")
                     if k in fields}
        if self.max_budget is not None and overrides.get("budget", 0) > self.max_budget \
                and overrides.get("policy", self.settings.policy) != "builtin":
            raise ApiError(400, f"'budget' is {overrides['budget']} but the model server holds at most "
                                f"{self.max_budget} tokens of context (its window, less the reply's room); "
                                f"ask for {self.max_budget} or less")
        try:
            settings = check_together(replace(self.settings, **overrides))  # a budget with the server's hard cutoff
        except C1Error as exc:
            raise ApiError(400, str(exc)) from None
        corpus = self.corpus(settings.collection)
        return settings, corpus, self.choice(settings), self.tool_names

    def start(self, fields: dict, on_event=None, on_done=None) -> "SearchJob":
        """Take a slot and start the search in a worker thread (the slot is freed when it ends)."""
        settings, corpus, choice, names = self.prepare(fields)
        runs = max(1, settings.parallel)
        self.acquire(runs)
        job = SearchJob(self, settings, corpus, choice, names, fields["query"], on_event, on_done)
        try:
            job.thread.start()
        except BaseException:
            self.release(runs)
            raise
        return job


class SearchJob:
    def __init__(self, service: SearchService, settings: Settings, corpus, choice, tool_names: dict, query: str,
                 on_event=None, on_done=None):
        self.service = service
        self.settings = settings
        self.corpus = corpus
        self.choice = choice
        self.tool_names = tool_names
        self.query = query
        self.on_event = on_event
        self.on_done = on_done
        self.cancelled = threading.Event()
        self.done = threading.Event()
        self.result: dict | None = None
        self.error: str | None = None
        self.error_code = 500
        self.thread = threading.Thread(target=self._run, name="c1-api-search", daemon=True)

    def _event(self, event) -> None:
        if self.cancelled.is_set():
            raise Cancelled()
        if self.on_event is not None:
            self.on_event(event)

    def _run(self) -> None:
        from c1.agent.policy import ModelServerError
        from c1.agent.search import search_with

        try:
            result = search_with(self.corpus, self.settings, self.query, self.choice, self._event, self.tool_names,
                                 stop=self.cancelled)
            self.result = result.to_json()
        except Cancelled:
            self.error = "cancelled"
        except ModelServerError as exc:  # the model server failed: a bad gateway, with its reason
            self.error, self.error_code = str(exc), 502
        except C1Error as exc:
            self.error = str(exc)
        except Exception as exc:  # a bug or a broken store: reported, never a dead server
            self.error = f"search failed: {type(exc).__name__}: {exc}"
        finally:  # run_search returns only once every run has stopped
            self.done.set()
            self.service.release(max(1, self.settings.parallel))
            if self.on_done is not None:
                self.on_done()

    def wait(self, timeout: float) -> bool:
        if self.done.wait(timeout):
            return True
        self.cancelled.set()
        return False
