"""What a policy is: given the state of the run, return the next assistant message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from c1.agent.context import ToolCall
from c1.errors import C1Error

if TYPE_CHECKING:
    from c1.agent.context import Context
    from c1.agent.shared import SharedWork
    from c1.retrieval.searcher import Searcher


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    ranked: list | None = None
    """A final answer the policy also gives in structured form (``output.Ranked``: ids, verbatim
    justifications, confidences); the loop takes it instead of parsing ``text``."""
    truncated: bool = False
    """The generation was cut by its token cap (``finish_reason: "length"``, no stop token): what it
    holds is not an answer, and a call in it may be half written."""


@dataclass
class AgentState:
    """What a policy may look at. A model sees ``context.openai_messages()`` and ``tools``; the
    built-in policy reads the same visible chunks in structured form."""

    question: str
    turn: int
    max_turns: int
    context: "Context"
    tools: list[dict]
    tool_names: dict[str, str]
    """Harness tool name → the name the model sees."""
    searcher: "Searcher | None" = None
    """What the policy may look up besides its tool calls, at no cost to the context (``Tools.searcher``):
    the built-in policy's own search of the question, chunk similarities, document records."""
    max_reply_tokens: int | None = None
    """The longest reply that still fits the context budget: a model policy caps its generation with it."""
    shared: "SharedWork | None" = None
    """What the other runs of the same search (``--parallel``) already worked out (:mod:`c1.agent.shared`): a
    policy that works something out from the question and what the run holds alone may take theirs."""


class PolicyError(Exception):
    """The policy cannot produce a reply (server down, wrong model): ends the run with an error."""


class ModelServerError(C1Error, PolicyError):
    """The model server failed (unreachable, HTTP error, a reply that is not a completion): not an
    empty result but an error the front ends report with the server's reason (exit 2, HTTP 502).
    The loop ends the run and raises it."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class Policy(Protocol):
    name: str
    model: str | None

    def system_prompt(self, budget: int) -> str: ...

    def next(self, state: AgentState) -> Reply: ...

    # Optional: ``final(state) -> list[Ranked]``, an answer from what the policy holds that costs no
    # reply (the built-in policy's). The loop asks for it when a run ends without an answer (the
    # budget or the turns ran out); a policy without it (a model, which must generate its answer)
    # gets the loop's fallback.
