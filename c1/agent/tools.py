"""The four tools of the harness contract, over a Corpus and the run's Context.

Every failure a model can cause (bad JSON, unknown tool, missing argument, invalid or runaway
regex, unknown document) becomes an error observation; the run goes on.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from c1.agent.context import Block, Context, Shown
from c1.agent.corpus import Corpus
from c1.agent.events import ChunkRef
from c1.corpus.manifest import Chunk, DocRecord

SEARCH, GREP, READ, PRUNE = "search_corpus", "grep_corpus", "read_document", "prune_chunks"
PARAMS = {SEARCH: "query", GREP: "pattern", READ: "doc_id", PRUNE: "chunk_ids"}
"""Each tool's one argument."""


@dataclass(frozen=True)
class ToolConfig:
    search_tokens: int = 2000
    """Per-call budget of a search: whole chunks are returned until it is spent."""
    read_tokens: int = 3000
    grep_max: int = 5
    grep_seconds: float = 1.0
    names: dict = field(default_factory=dict)
    """Renames for the model: e.g. {"search_corpus": "SearchTool"}."""


@dataclass
class Observation:
    text: str | list[Block]
    refs: list[ChunkRef] = field(default_factory=list)
    error: str | None = None
    pruned: list[Shown] = field(default_factory=list)
    note: str | None = None


def _schema(name: str, description: str, param: str, kind: dict, param_doc: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {param: {**kind, "description": param_doc}},
                "required": [param],
            },
        },
    }


class Tools:
    def __init__(self, corpus: Corpus, context: Context, question: str, config: ToolConfig = ToolConfig()):
        self.corpus = corpus
        self.context = context
        self.config = config
        self.current_query = question
        self.turn = 0
        self._spent = 0
        self._lock = threading.Lock()
        self._to_model = {k: config.names.get(k, k) for k in (SEARCH, GREP, READ, PRUNE)}
        self._from_model = {v: k for k, v in self._to_model.items()}

    # schemas ----------------------------------------------------------------------------
    def schemas(self) -> list[dict]:
        n = self._to_model
        return [
            _schema(n[SEARCH], "Hybrid search (BM25 + dense, fused and re-ranked) over the corpus. Returns whole chunks "
                    "not shown before in this run, best first.", "query", {"type": "string"}, "What to look for."),
            _schema(n[GREP], f"Regular-expression search over chunk text; returns up to {self.config.grep_max} chunks "
                    "not shown before. Case-insensitive unless the pattern has capitals.", "pattern", {"type": "string"},
                    "A Python regular expression."),
            _schema(n[READ], "Read a document: its chunks ranked against the current query, cut to the remaining budget.",
                    "doc_id", {"type": "string"}, "The document id (the part of a chunk id before the underscore)."),
            _schema(n[PRUNE], "Remove chunks you no longer need from the context to free tokens.", "chunk_ids",
                    {"type": "array", "items": {"type": "string"}}, "Ids of chunks to remove."),
        ]

    def model_name(self, tool: str) -> str:
        return self._to_model[tool]

    def harness_name(self, name: str) -> str | None:
        """The harness name of a tool as the model called it (None for an unknown tool)."""
        return self._from_model.get(name)

    def is_prune(self, name: str) -> bool:
        return self.harness_name(name) == PRUNE

    # dispatch ---------------------------------------------------------------------------
    def begin_turn(self, turn: int) -> None:
        self.turn = turn
        self._spent = 0

    def execute(self, name: str, arguments: str | dict) -> Observation:
        return self.prepare(name, arguments)()

    def prepare(self, name: str, arguments: str | dict) -> Callable[[], Observation]:
        """Validate and do the slow part (retrieval) now; return what renders the observation.

        Calls of one turn are prepared concurrently and rendered in call order, so which call
        shows a chunk that two of them found does not depend on thread timing."""
        obs = self._validate(name, arguments)
        if isinstance(obs, Observation):
            return lambda: obs
        tool, value = obs
        return {SEARCH: self.search, GREP: self.grep, READ: self.read, PRUNE: self.prune}[tool](value)

    def _validate(self, name: str, arguments: str | dict) -> Observation | tuple[str, object]:
        tool = self._from_model.get(name)
        if tool is None:
            return _error(f"unknown tool {name!r}; available: {', '.join(self._to_model.values())}")
        if isinstance(arguments, str):
            try:
                args = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return _error(f"arguments of {name} are not valid JSON ({exc.msg}); send an object like "
                              f"{json.dumps({self._param(tool): '...'})}")
        else:
            args = arguments
        if not isinstance(args, dict):
            return _error(f"arguments of {name} must be a JSON object")
        param = self._param(tool)
        value = args.get(param)
        if tool == PRUNE and isinstance(value, str):
            value = [v.strip() for v in value.replace(",", " ").split() if v.strip()]
        if value is None or (isinstance(value, str) and not value.strip()) or (tool == PRUNE and not isinstance(value, list)):
            return _error(f"{name} needs the argument {param!r}")
        if tool != PRUNE and self.context.past_hard():
            return _error(
                f"refused: the context holds {self.context.used()} of {self.context.budget} tokens, past the hard limit "
                f"of {self.context.hard_limit}. Only {self._to_model[PRUNE]} is accepted now: prune chunks you do not "
                "need, or give your final answer."
            )
        return tool, value

    @staticmethod
    def _param(tool: str) -> str:
        return PARAMS[tool]

    # the tools --------------------------------------------------------------------------
    def search(self, query: str) -> Callable[[], Observation]:
        self.current_query = query
        hits = self.corpus.hybrid(str(query), self.corpus.CANDIDATES, exclude=set(self.context.shown))
        items = [(h.chunk, h.doc, h.score) for h in hits]
        return lambda: self._render(items, self.config.search_tokens, f"No new chunks match {query!r}.")

    def grep(self, pattern: str) -> Callable[[], Observation]:
        import regex

        flags = 0 if any(ch.isupper() for ch in pattern) else regex.IGNORECASE
        try:
            compiled = regex.compile(pattern, flags)
        except (regex.error, ValueError, TypeError) as exc:
            return _fixed(_error(f"invalid regular expression {pattern!r}: {exc}"))
        deadline = time.monotonic() + self.config.grep_seconds
        found: list[str] = []
        seen = self.context.shown
        for cid, text in self.corpus.all_chunks:
            if cid in seen:
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                if compiled.search(text, timeout=left):
                    found.append(cid)
                    if len(found) >= self.config.grep_max:
                        break
            except TimeoutError:
                break
        timed_out = time.monotonic() >= deadline
        if not found and timed_out:
            return _fixed(_error(f"pattern {pattern!r} took longer than {self.config.grep_seconds:g}s; simplify it"))
        items = [(c, self.corpus.doc(c.doc_id), None) for c in self.corpus.chunks(found)]

        def render() -> Observation:
            obs = self._render(items, self.context.budget, f"No unseen chunk matches {pattern!r}.")
            if timed_out:
                obs.note = "search stopped at the time limit; results may be partial"
            return obs

        return render

    def read(self, doc_id: str) -> Callable[[], Observation]:
        doc_id = str(doc_id).strip()
        if "_" in doc_id and self.corpus.doc(doc_id) is None:
            doc_id = doc_id.rsplit("_", 1)[0]  # a chunk id was given
        doc = self.corpus.doc(doc_id)
        if doc is None:
            return _fixed(_error(f"no document {doc_id!r}; document ids are the part of a chunk id before the underscore"))
        chunks = [c for c in self.corpus.doc_chunks(doc_id) if c.id not in self.context.shown]
        if not chunks:
            return _fixed(Observation(f"All {doc.n_chunks} chunk(s) of {doc_id} were already shown in this run."))
        items = [(c, doc, s) for c, s in self.corpus.rank_chunks(chunks, self.current_query)]

        def render() -> Observation:
            obs = self._render(items, self.config.read_tokens, f"All of {doc_id} was already shown in this run.")
            obs.note = f"document {doc_id} has {doc.n_chunks} chunk(s); {len(obs.refs)} shown now"
            return obs

        return render

    def prune(self, ids: list) -> Callable[[], Observation]:
        before = self.context.used()
        done, bad = self.context.prune([str(i).strip() for i in ids])
        msg = f"Pruned {len(done)} chunk(s)" + (f": {', '.join(s.chunk_id for s in done)}." if done else ".")
        if bad:
            msg += f" Not in context (unknown or already pruned): {', '.join(map(str, bad))}."
        obs = Observation(msg, pruned=done)
        obs.note = f"freed {max(0, before - self.context.used())} tokens"
        return _fixed(obs)

    # rendering --------------------------------------------------------------------------
    def _render(self, items: list[tuple[Chunk, DocRecord, float | None]], budget: int, empty: str) -> Observation:
        with self._lock:  # calls of one turn run concurrently: never show a chunk twice
            return self._render_locked(items, budget, empty)

    def _render_locked(self, items: list[tuple[Chunk, DocRecord, float | None]], budget: int, empty: str) -> Observation:
        """Whole chunks not yet shown, until ``budget`` or what is left under the hard limit (minus
        what earlier calls of this turn already took) is spent."""
        items = [it for it in items if it[0].id not in self.context.shown]
        budget = min(budget, self.context.remaining() - self._spent)
        blocks: list[Block] = []
        refs: list[ChunkRef] = []
        spent = 0
        for chunk, doc, score in items:
            text = render_chunk(chunk, doc, score)
            cost = self.context.count(text)
            if spent + cost > budget:
                if blocks:
                    break
                continue  # a single chunk larger than the budget: try a smaller one
            spent += cost
            blocks.append(Block(text, chunk.id))
            refs.append(ChunkRef(chunk.id, chunk.doc_id, doc.title, score, chunk.page, cost))
            self.context.note_shown(Shown(chunk.id, chunk.doc_id, doc.title, chunk.text, score, self.turn, cost))
        self._spent += spent
        if not blocks:
            reason = empty if not items else f"No chunk fits the remaining budget ({max(budget, 0)} tokens): prune or finish."
            return Observation(reason)
        return Observation(blocks, refs)


def render_chunk(chunk: Chunk, doc: DocRecord, score: float | None) -> str:
    attrs = [f'id="{chunk.id}"', f'doc="{chunk.doc_id}"', f'title="{_attr(doc.title)}"']
    if chunk.page is not None:
        attrs.append(f'page="{chunk.page}"')
    sender = doc.meta.get("from")
    if sender:
        attrs.append(f'from="{_attr(str(sender))}"')
    if doc.meta.get("date"):
        attrs.append(f'date="{_attr(str(doc.meta["date"]))}"')
    if score is not None:
        attrs.append(f'score="{score:.2f}"')
    return f"<chunk {' '.join(attrs)}>\n{chunk.text.strip()}\n</chunk>\n"


def _attr(value: str) -> str:
    return value.replace('"', "'").replace("\n", " ")[:120]


def _error(message: str) -> Observation:
    return Observation(f"Error: {message}", error=message)


def _fixed(obs: Observation) -> Callable[[], Observation]:
    return lambda: obs
