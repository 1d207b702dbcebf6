"""The agent's working context: the message list, its token budget, and pruning.

Observations are lists of blocks; a block that holds a chunk disappears from everything re-sent
to the model once that chunk is pruned, while the full trajectory keeps it. ``used()`` counts the
tokens of what would be sent now: an estimate, calibrated by the model server's reported prompt
tokens when a policy provides them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from c1.tokens import estimate_tokens


@dataclass
class Block:
    text: str
    chunk_id: str | None = None


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str
    """Raw JSON text, as the model wrote it (may be malformed)."""


@dataclass
class Message:
    role: str  # system | user | assistant | tool
    content: str | list[Block] = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None

    def text(self, hidden: set[str] = frozenset()) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if b.chunk_id is None or b.chunk_id not in hidden)

    def to_openai(self, hidden: set[str] = frozenset()) -> dict:
        out: dict = {"role": self.role, "content": self.text(hidden)}
        if self.role == "assistant":
            if self.tool_calls:
                out["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in self.tool_calls
                ]
            if self.reasoning:
                out["reasoning"] = self.reasoning
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
            if self.name:
                out["name"] = self.name
        return out


@dataclass
class Shown:
    """A chunk that was put in front of the model in this run."""

    chunk_id: str
    doc_id: str
    title: str
    text: str
    score: float | None
    turn: int
    tokens: int


class Context:
    def __init__(self, budget: int = 32768, soft: float = 0.5, hard: float = 0.9, count: Callable[[str], int] = estimate_tokens):
        self.budget = budget
        self.soft_limit = int(budget * soft)
        self.hard_limit = int(budget * hard)
        self.count = count
        self.messages: list[Message] = []
        self.shown: dict[str, Shown] = {}
        self.pruned: set[str] = set()
        self._scale = 1.0
        self.peak = 0

    # building ---------------------------------------------------------------------------
    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.peak = max(self.peak, self.used())

    def note_shown(self, shown: Shown) -> None:
        self.shown.setdefault(shown.chunk_id, shown)

    # pruning ----------------------------------------------------------------------------
    def prune(self, ids: list[str]) -> tuple[list[Shown], list[str]]:
        """Hide these chunks from now on; return (pruned, unknown-or-already-pruned ids)."""
        done, bad = [], []
        for cid in ids:
            if cid in self.shown and cid not in self.pruned:
                self.pruned.add(cid)
                done.append(self.shown[cid])
            else:
                bad.append(cid)
        return done, bad

    def visible(self) -> dict[str, Shown]:
        return {cid: s for cid, s in self.shown.items() if cid not in self.pruned}

    # accounting -------------------------------------------------------------------------
    def openai_messages(self) -> list[dict]:
        return [m.to_openai(self.pruned) for m in self.messages]

    def estimate(self) -> int:
        return sum(self.count(m.text(self.pruned)) + 4 for m in self.messages)

    def used(self) -> int:
        return int(self.estimate() * self._scale)

    def calibrate(self, reported_prompt_tokens: int) -> None:
        """Align the estimate with the server's count of the prompt just sent."""
        est = self.estimate()
        if reported_prompt_tokens > 0 and est > 0:
            self._scale = reported_prompt_tokens / est

    def remaining(self) -> int:
        return max(0, self.hard_limit - self.used())

    def past_soft(self) -> bool:
        return self.used() >= self.soft_limit

    def past_hard(self) -> bool:
        return self.used() >= self.hard_limit

    def usage_line(self) -> str:
        line = f"[Token usage: {self.used()}/{self.budget}]"
        if self.past_hard():
            line += " Context is past the hard limit: only prune_chunks is accepted now; prune or give your final answer."
        elif self.past_soft():
            line += " Context is over half full: prune chunks you no longer need, or finish."
        return line
