"""The loop's events. Everything that shows or stores a run (live view, --jsonl, trajectory
files, the HTTP stream, training rollouts) consumes these and nothing else."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Event:
    run: int = 0
    """Which of the ``--parallel`` runs emitted it."""

    @property
    def kind(self) -> str:
        return _KINDS[type(self)]

    def to_json(self) -> dict:
        return {"event": self.kind, **asdict(self)}


@dataclass
class ChunkRef:
    id: str
    doc_id: str
    title: str
    score: float | None = None
    page: int | None = None
    tokens: int = 0


@dataclass
class RunStarted(Event):
    query: str = ""
    policy: str = ""
    model: str | None = None
    budget: int = 0


@dataclass
class TurnStarted(Event):
    turn: int = 0
    used: int = 0
    budget: int = 0


@dataclass
class ToolCalled(Event):
    turn: int = 0
    call_id: str = ""
    name: str = ""
    """The tool as the model called it."""
    arguments: dict = field(default_factory=dict)
    tool: str | None = None
    """Its harness name (``search_corpus``…, whatever ``--tool-names`` renamed it to); None if unknown."""


@dataclass
class ToolResult(Event):
    turn: int = 0
    call_id: str = ""
    name: str = ""
    chunks: list[ChunkRef] = field(default_factory=list)
    error: str | None = None
    note: str | None = None
    tool: str | None = None
    """The harness name, as in :class:`ToolCalled`."""


@dataclass
class ChunksPruned(Event):
    turn: int = 0
    chunks: list[ChunkRef] = field(default_factory=list)
    freed: int = 0


@dataclass
class BudgetWarning(Event):
    turn: int = 0
    used: int = 0
    budget: int = 0
    level: str = "soft"  # soft | hard


@dataclass
class ReplyTruncated(Event):
    """The model's reply was cut by its token cap: the run ends without its answer."""
    turn: int = 0
    completion_tokens: int | None = None
    cap: int | None = None
    documents: int = 0
    """How many documents the run falls back to (those it was shown)."""


@dataclass
class AssistantText(Event):
    turn: int = 0
    text: str = ""
    reasoning: str | None = None


@dataclass
class Finished(Event):
    documents: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    stop_reason: str = "answer"  # answer | unparsed_answer | max_turns | budget | truncated | cancelled | error


@dataclass
class RunError(Event):
    message: str = ""


_KINDS = {
    RunStarted: "run_started",
    TurnStarted: "turn_started",
    ToolCalled: "tool_called",
    ToolResult: "tool_result",
    ChunksPruned: "chunks_pruned",
    BudgetWarning: "budget_warning",
    ReplyTruncated: "reply_truncated",
    AssistantText: "assistant_text",
    Finished: "finished",
    RunError: "error",
}

_BY_KIND = {kind: cls for cls, kind in _KINDS.items()}


def from_json(data: dict) -> Event:
    """The event that :meth:`Event.to_json` gave ``data`` (events that crossed a process boundary)."""
    fields = {k: v for k, v in data.items() if k != "event"}
    if "chunks" in fields:
        fields["chunks"] = [ChunkRef(**c) for c in fields["chunks"]]
    return _BY_KIND[data["event"]](**fields)
