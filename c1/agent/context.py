"""The agent's working context: the message list, its token budget, and pruning.

Observations are lists of blocks; a block that holds a chunk disappears from everything re-sent
to the model once that chunk is pruned, while the full trajectory keeps it.

``used()`` is what the next request costs the model, in one unit: o200k_harmony tokens of the
request as harmony renders it (system and developer messages with the tool schemas, every
message, reasoning and tool call sent back, the ``<|start|>assistant`` that ends the prompt;
:mod:`c1.model.harmony`). A server that reports its own ``prompt_tokens`` corrects an *offset*: the
difference between its count and ours for the same request (a chat template with another
preamble, another tokenizer) is added to every later count, never multiplied into it.

The budget is a ceiling: a reply may not be longer than what is left (``reply_room``), and an
observation that would not fit is replaced by a short error before it enters the context
(:meth:`fits`), so the request sent never exceeds ``budget``.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

from c1.config import DEFAULT_BUDGET
from c1.tokens import count_lines

USAGE_RESERVE = 48
"""Tokens kept free for the ``[Token usage: …]`` line the loop appends after every turn."""
MIN_REPLY = 32
"""A turn needs at least this much room for the model's reply (a prune call, a short answer)."""


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
    def __init__(self, budget: int = DEFAULT_BUDGET, soft: float = 0.5, hard: float = 0.9):
        self.budget = budget
        self.soft_limit = int(budget * soft)
        self.hard_limit = int(budget * hard)
        self.messages: list[Message] = []
        self.tools: list[dict] = []
        self.shown: dict[str, Shown] = {}
        self.pruned: set[str] = set()
        self.offset = 0
        """The server's count minus ours for the last request it reported on."""
        self.peak = 0
        self._preamble: tuple[tuple, int] | None = None
        self._counts: dict[int, tuple[tuple, int]] = {}
        self._total: tuple[tuple, int] | None = None
        self._headers: dict[str, int] = {}

    # building ---------------------------------------------------------------------------
    def set_tools(self, schemas: list[dict]) -> None:
        """The tool schemas sent with every request (they are counted with the preamble)."""
        self.tools = list(schemas)
        self._preamble = None

    def add(self, message: Message, tokens: int | None = None) -> None:
        """Append ``message``; ``tokens``: what :meth:`message_tokens` said it costs (saves a count)."""
        self.messages.append(message)
        if tokens is not None:
            self._counts[len(self.messages) - 1] = (self._key(message), tokens)
        if message.role != "assistant" or message.tool_calls:  # a final answer is never sent back
            self.peak = max(self.peak, self.used())

    def note_shown(self, shown: Shown) -> None:
        self.shown.setdefault(shown.chunk_id, shown)

    def unshow(self, chunk_ids: list[str]) -> None:
        """Forget chunks that were rendered but never entered the context (their observation did not fit)."""
        for cid in chunk_ids:
            self.shown.pop(cid, None)

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

    @staticmethod
    def count(text: str) -> int:
        """Tokens of a piece of text (a chunk as rendered), in the context's unit."""
        return count_lines(text)

    def counted(self) -> int:
        """Our count of the request that would be sent now (no offset). A run asks for it some 130 times (each
        tool call's room, each limit's test), so the total is kept while nothing it depends on changed: the
        preamble, the number of messages, the pruned chunks (only ever added to) and the last message (the
        only one changed in place: the loop appends the usage line to it)."""
        msgs = self.messages
        start = 1 if msgs and msgs[0].role == "system" else 0
        preamble = self._preamble_tokens(msgs[0].text() if start else None)
        stamp = (preamble, len(msgs), len(self.pruned), self._key(msgs[-1]) if msgs else None)
        if self._total is not None and self._total[0] == stamp:
            return self._total[1]
        total = preamble
        names = {c.id: c.name for m in msgs for c in m.tool_calls}
        for i in range(start, len(msgs)):
            total += self._message_tokens(i, msgs[i], names)
        self._total = (stamp, total)
        return total

    def _preamble_tokens(self, instructions: str | None) -> int:
        from c1.model import harmony

        key = (instructions, len(self.tools))
        if self._preamble is None or self._preamble[0] != key:
            today = _dt.date.today().isoformat()  # vLLM dates the system message
            self._preamble = (key, harmony.count_preamble(instructions, self.tools, start_date=today))
        return self._preamble[1]

    def _message_tokens(self, i: int, m: Message, names: dict[str, str]) -> int:
        from c1.model import harmony

        key = self._key(m)
        hit = self._counts.get(i)
        if hit is None or hit[0] != key:
            hit = (key, self._count(m, names.get(m.tool_call_id or "", "")))
            self._counts[i] = hit
        return hit[1]

    def _count(self, m: Message, tool_name: str) -> int:
        """``m``'s tokens as harmony renders it. A tool message is its header's tokens and its text's, the
        text counted line by line (:func:`c1.tokens.count_lines`): its chunks' lines were counted when
        they were shown, so a message is not tokenized again."""
        from c1.model import harmony

        name = m.name or tool_name
        if m.role != "tool":
            return harmony.count_message(m.to_openai(self.pruned), name)
        header = self._headers.get(name)
        if header is None:
            header = self._headers[name] = harmony.count_message({"role": "tool", "content": "", "name": name}, name)
        return header + count_lines(m.text(self.pruned))

    def _key(self, m: Message) -> tuple:
        """What a message's count depends on: its blocks, which of them are pruned, its reasoning and calls."""
        pruned = self.pruned
        hidden = frozenset(b.chunk_id for b in m.content if b.chunk_id in pruned) if pruned and isinstance(m.content, list) else ()
        return len(m.content), hidden, len(m.reasoning or ""), len(m.tool_calls)

    def message_tokens(self, message: Message) -> int:
        """What adding ``message`` would cost."""
        return self._count(message, "")

    def used(self) -> int:
        return max(0, self.counted() + self.offset)

    def calibrate(self, reported_prompt_tokens: int, counted_when_sent: int) -> None:
        """The server counted ``reported_prompt_tokens`` for a request we counted ``counted_when_sent``."""
        if reported_prompt_tokens and reported_prompt_tokens > 0 and counted_when_sent > 0:
            self.offset = reported_prompt_tokens - counted_when_sent

    def remaining(self) -> int:
        """Room for tool results: what is left under the hard limit."""
        return max(0, self.hard_limit - self.used())

    def reply_room(self) -> int:
        """The longest reply the model may write now: half of what is left once the usage line is
        reserved, the other half for the observations its tool calls bring back (an observation
        costs less than the call that asked for it when it has to be cut to an error)."""
        return self.whole_reply_room() // 2

    def whole_reply_room(self) -> int:
        """All that is left once the usage line is reserved: the room a reply cut at
        :meth:`reply_room` gets when it is asked once more. A final answer needs no room for
        observations, and calls whose results no longer fit get a short error instead (:meth:`fits`)."""
        return max(0, self.budget - self.used() - USAGE_RESERVE)

    def fits(self, tokens: int) -> bool:
        """Whether ``tokens`` more still leave room for the usage line under the budget."""
        return self.used() + tokens + USAGE_RESERVE <= self.budget

    def past_soft(self) -> bool:
        return self.used() >= self.soft_limit

    def past_hard(self) -> bool:
        return self.used() >= self.hard_limit

    def usage_line(self, prune: str = "prune_chunks") -> str:
        line = f"[Token usage: {self.used()}/{self.budget}]"
        if self.past_hard():
            line += f" Context is past the hard limit: only {prune} is accepted now; prune or give your final answer."
        elif self.past_soft():
            line += f" Context is past {self.soft_limit} tokens: prune chunks you no longer need, or finish."
        return line

