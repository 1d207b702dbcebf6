"""The four tools of the harness contract, over a Corpus and the run's Context.

Every tool is one :class:`ToolSpec` in ``SPECS``: its name, its one argument, what its schema and
the system prompt say about it, how it retrieves (the slow part, run concurrently with the other
calls of a turn) and how it renders its observation (in call order). The schemas, the prompt's
tool list (:mod:`c1.agent.prompts`), the live view and training's argument map all derive from it.

Every failure a model can cause (bad JSON, unknown tool, missing argument, invalid or runaway
regex, unknown document) becomes an error observation; the run goes on.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from c1.agent.context import Block, Context, Shown
from c1.agent.events import ChunkRef
from c1.retrieval.searcher import Searcher

if TYPE_CHECKING:
    from c1.agent.shared import SharedWork
    from c1.retrieval.corpus import Corpus
    from c1.store.manifest import Chunk, DocRecord


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


@dataclass(frozen=True)
class ToolSpec:
    name: str
    """The harness name (the contract's); ``ToolConfig.names`` may rename it for the model."""
    param: str
    """Its one argument."""
    kind: dict
    """The argument's JSON schema."""
    param_doc: str
    description: str
    """For the function schema; ``{grep_max}`` is filled from the ToolConfig."""
    prompt: str
    """What the system prompt says it does."""
    retrieve: Callable[["Tools", object, str], object]
    """(tools, argument, the query in effect at this call) → a payload, or an error Observation."""
    render: Callable[["Tools", object, object], Observation]
    """(tools, argument, payload) → the observation, in call order."""
    first: bool = False
    """Runs alone, before the other calls of its turn (it changes what they may do)."""
    by_query: bool = False
    """What it retrieves depends on the query in effect (besides its argument and the chunks already shown)."""
    shown_of: Callable[["Tools", object], frozenset] | None = None
    """The chunks already shown that what it retrieves depends on (default: all of them): the runs of one
    search that differ only in others share its retrieval (:meth:`Tools._retrieve`)."""


class Tools:
    def __init__(self, corpus: "Corpus", context: Context, question: str, config: ToolConfig = ToolConfig(),
                 shared: "SharedWork | None" = None):
        """``shared``: the retrievals of the other runs of the same search (``--parallel``), by argument,
        query and chunks already shown (:mod:`c1.agent.shared`)."""
        self.corpus = corpus
        self.shared = shared
        self.searcher = Searcher(corpus)
        """What the policy may look up besides these tools (``AgentState.searcher``)."""
        self.context = context
        self.config = config
        self.current_query = question
        self.turn = 0
        self._spent = 0
        self._lock = threading.Lock()
        self._to_model = tool_names(config.names)
        self._from_model = {v: k for k, v in self._to_model.items()}

    # schemas ----------------------------------------------------------------------------
    def schemas(self) -> list[dict]:
        return [_schema(self._to_model[s.name], s.description.format(grep_max=self.config.grep_max), s.param, s.kind,
                        s.param_doc) for s in SPECS]

    def model_name(self, tool: str) -> str:
        return self._to_model[tool]

    @property
    def names(self) -> dict[str, str]:
        """Harness name → the name the model sees."""
        return dict(self._to_model)

    def harness_name(self, name: str) -> str | None:
        """The harness name of a tool as the model called it (None for an unknown tool)."""
        return self._from_model.get(name)

    def runs_first(self, name: str) -> bool:
        tool = self.harness_name(name)
        return tool is not None and TOOLS[tool].first

    # dispatch ---------------------------------------------------------------------------
    def begin_turn(self, turn: int) -> None:
        self.turn = turn
        self._spent = 0

    def queries(self, calls: list[tuple[str, str | dict]]) -> list[str]:
        """The query in effect at each call of a turn, fixed in call order before any runs: a
        ``read_document`` after a ``search_corpus`` of the same turn ranks against that search's
        query, one before it against the previous one, whatever the threads do."""
        out = []
        for name, arguments in calls:
            out.append(self.current_query)
            checked = self._arguments(name, arguments)
            if isinstance(checked, tuple) and checked[0] == SEARCH:
                self.current_query = str(checked[1])
        return out

    def execute(self, name: str, arguments: str | dict, query: str | None = None) -> Observation:
        return self.prepare(name, arguments, query)()

    def prepare(self, name: str, arguments: str | dict, query: str | None = None) -> Callable[[], Observation]:
        """Validate and retrieve (the slow part) now; return what renders the observation.

        Calls of one turn are prepared concurrently and rendered in call order, so which call
        shows a chunk that two of them found does not depend on thread timing."""
        checked = self._validate(name, arguments)
        if isinstance(checked, Observation):
            return lambda: checked
        tool, value = checked
        spec = TOOLS[tool]
        if query is None:
            query = self.current_query
            if tool == SEARCH:
                self.current_query = str(value)
        payload = self._retrieve(spec, value, query)
        if isinstance(payload, Observation):
            return lambda: payload
        return lambda: spec.render(self, value, payload)

    def _retrieve(self, spec: ToolSpec, value, query: str):
        if self.shared is None or spec.first:
            return spec.retrieve(self, value, query)
        shown = spec.shown_of(self, value) if spec.shown_of else frozenset(self.context.shown)
        key = (spec.name, json.dumps(value, sort_keys=True), query if spec.by_query else None, shown)
        return self.shared.get(key, lambda: spec.retrieve(self, value, query))

    def _arguments(self, name: str, arguments: str | dict) -> Observation | tuple[str, object]:
        tool = self._from_model.get(name)
        if tool is None:
            return _error(f"unknown tool {name!r}; available: {', '.join(self._to_model.values())}")
        param = TOOLS[tool].param
        if isinstance(arguments, str):
            try:
                args = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return _error(f"arguments of {name} are not valid JSON ({exc.msg}); send an object like "
                              f"{json.dumps({param: '...'})}")
        else:
            args = arguments
        if not isinstance(args, dict):
            return _error(f"arguments of {name} must be a JSON object")
        value = args.get(param)
        if tool == PRUNE and isinstance(value, str):
            value = [v.strip() for v in value.replace(",", " ").split() if v.strip()]
        if value is None or (isinstance(value, str) and not value.strip()) or (tool == PRUNE and not isinstance(value, list)):
            return _error(f"{name} needs the argument {param!r}")
        return tool, value

    def _validate(self, name: str, arguments: str | dict) -> Observation | tuple[str, object]:
        checked = self._arguments(name, arguments)
        if isinstance(checked, tuple) and not TOOLS[checked[0]].first and self.context.past_hard():
            return _error(
                f"refused: the context holds {self.context.used()} of {self.context.budget} tokens, past the hard limit "
                f"of {self.context.hard_limit}. Only {self._to_model[PRUNE]} is accepted now: prune chunks you do not "
                "need, or give your final answer."
            )
        return checked

    # rendering --------------------------------------------------------------------------
    def _render(self, items: list[tuple["Chunk", "DocRecord", float | None]], budget: int, empty: str) -> Observation:
        with self._lock:  # calls of one turn run concurrently: never show a chunk twice
            return self._render_locked(items, budget, empty)

    def _render_locked(self, items: list[tuple["Chunk", "DocRecord", float | None]], budget: int, empty: str) -> Observation:
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


# --- the tools: retrieve (concurrently), then render (in call order) --------------------------------
def _search(tools: Tools, query, _current: str):
    hits = tools.corpus.hybrid(str(query), tools.corpus.CANDIDATES, exclude=set(tools.context.shown))
    return [(h.chunk, h.doc, h.score) for h in hits]


def _show_search(tools: Tools, query, items) -> Observation:
    return tools._render(items, tools.config.search_tokens, f"No new chunks match {query!r}.")


def _grep(tools: Tools, pattern, _current: str):
    import regex

    pattern = str(pattern)
    flags = 0 if any(ch.isupper() for ch in pattern) else regex.IGNORECASE
    try:
        compiled = regex.compile(pattern, flags)
    except (regex.error, ValueError, TypeError) as exc:
        return _error(f"invalid regular expression {pattern!r}: {exc}")
    limit = tools.config.grep_seconds
    deadline = time.monotonic() + limit
    found: list[str] = []
    seen = tools.context.shown
    for cid, text in tools.corpus.all_chunks:
        if cid in seen:
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            if compiled.search(text, timeout=left):
                found.append(cid)
                if len(found) >= tools.config.grep_max:
                    break
        except TimeoutError:
            break
    timed_out = time.monotonic() >= deadline
    if not found and timed_out:
        return _error(f"pattern {pattern!r} took longer than {limit:g}s; simplify it")
    return [(c, tools.corpus.doc(c.doc_id), None) for c in tools.corpus.chunks(found)], timed_out


def _show_grep(tools: Tools, pattern, payload) -> Observation:
    items, timed_out = payload
    obs = tools._render(items, tools.context.budget, f"No unseen chunk matches {pattern!r}.")
    if timed_out:
        obs.note = "search stopped at the time limit; results may be partial"
    return obs


def _doc_id(tools: Tools, value) -> str:
    doc_id = str(value).strip()
    if "_" in doc_id and tools.corpus.doc(doc_id) is None:
        doc_id = doc_id.rsplit("_", 1)[0]  # a chunk id was given
    return doc_id


def _read_shown(tools: Tools, value) -> frozenset:
    """A read depends on which chunks of its document were shown, not on what else was."""
    doc_id = _doc_id(tools, value)
    if tools.corpus.doc(doc_id) is None:
        return frozenset()
    shown = tools.context.shown
    return frozenset(c.id for c in tools.corpus.doc_chunks(doc_id) if c.id in shown)


def _read(tools: Tools, doc_id, query: str):
    corpus = tools.corpus
    doc_id = _doc_id(tools, doc_id)
    doc = corpus.doc(doc_id)
    if doc is None:
        return _error(f"no document {doc_id!r}; document ids are the part of a chunk id before the underscore")
    every = corpus.doc_chunks(doc_id)
    chunks = [c for c in every if c.id not in tools.context.shown]
    if not chunks:
        return Observation(f"All {doc.n_chunks} chunk(s) of {doc_id} were already shown in this run.")
    from c1.retrieval.pages import reading_order
    from c1.retrieval.within import rank_in_document, within
    from c1.retrieval.scorers import make_scorer

    # the likeliest pages first (the page holding the figure asked about, not page 1): those of the best
    # chunks taking turns with the statements whose titles and rows score best by their terms (BM25
    # among the pages; the cross-encoder is for the passages: docs/performance.md, "Tenth look")
    ranked = rank_in_document(corpus, query, chunks, rerank=True)
    order = reading_order(make_scorer(corpus, "lexical"), within(corpus, query, doc_id), doc, every, ranked)
    return doc, [(c, doc, s) for c, s in order]


def _show_read(tools: Tools, _doc_id, payload) -> Observation:
    doc, items = payload
    obs = tools._render(items, tools.config.read_tokens, f"All of {doc.doc_id} was already shown in this run.")
    obs.note = f"document {doc.doc_id} has {doc.n_chunks} chunk(s); {len(obs.refs)} shown now"
    return obs


def _prune(tools: Tools, ids, _current: str):
    return [str(i).strip() for i in ids]


def _show_prune(tools: Tools, _ids, ids: list[str]) -> Observation:
    ctx = tools.context
    before = ctx.used()
    done, bad = ctx.prune(ids)
    msg = f"Pruned {len(done)} chunk(s)" + (f": {', '.join(s.chunk_id for s in done)}." if done else ".")
    if bad:
        msg += f" Not in context (unknown or already pruned): {', '.join(map(str, bad))}."
    return Observation(msg, pruned=done, note=f"freed {max(0, before - ctx.used())} tokens")


SEARCH, GREP, READ, PRUNE = "search_corpus", "grep_corpus", "read_document", "prune_chunks"
SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(SEARCH, "query", {"type": "string"}, "What to look for.",
             "Hybrid search (BM25 + dense, fused and re-ranked) over the corpus. Returns whole chunks not shown before "
             "in this run, best first.",
             "hybrid keyword and semantic search. Returns whole chunks you have not seen yet in this session, best first.",
             _search, _show_search),
    ToolSpec(GREP, "pattern", {"type": "string"}, "A Python regular expression.",
             "Regular-expression search over chunk text; returns up to {grep_max} chunks not shown before. "
             "Case-insensitive unless the pattern has capitals.",
             "regular-expression search over chunk text, for exact names, numbers, dates and phrases.",
             _grep, _show_grep),
    ToolSpec(READ, "doc_id", {"type": "string"}, "The document id (the part of a chunk id before the underscore).",
             "Read a document: its chunks ranked against the current query, cut to the remaining budget.",
             "more chunks of one document, ranked against your latest query.",
             _read, _show_read, by_query=True, shown_of=_read_shown),
    ToolSpec(PRUNE, "chunk_ids", {"type": "array", "items": {"type": "string"}}, "Ids of chunks to remove.",
             "Remove chunks you no longer need from the context to free tokens.",
             "remove chunks you no longer need from your context.",
             _prune, _show_prune, first=True),
)
TOOLS = {s.name: s for s in SPECS}
PARAMS = {s.name: s.param for s in SPECS}
"""Each tool's one argument."""


def tool_names(renames: dict | None) -> dict[str, str]:
    """Harness name → the name the model sees, with ``renames`` applied."""
    return {s.name: (renames or {}).get(s.name, s.name) for s in SPECS}


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


_FORGEABLE = re.compile(r"<(?=\s*/?\s*chunk\b|\|)", re.IGNORECASE)


def escape_body(text: str) -> str:
    """Chunk text as data: ``<`` written ``&lt;`` where it would open or close a chunk tag
    (``</chunk><chunk id=…>``) or a special token of a chat template (``<|im_end|>``), so that no
    document can forge the structure of an observation or a turn. Everything else is left as is."""
    return _FORGEABLE.sub("&lt;", text)


def render_chunk(chunk: "Chunk", doc: "DocRecord", score: float | None) -> str:
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
    return f"<chunk {' '.join(attrs)}>\n{escape_body(chunk.text.strip())}\n</chunk>\n"


def _attr(value: str) -> str:
    return escape_body(value.replace('"', "'").replace("\n", " ")[:120]).replace(">", "&gt;")


def _error(message: str) -> Observation:
    return Observation(f"Error: {message}", error=message)
