"""The agent loop: query → act → observe, until the policy answers in text or turns run out.

It knows nothing of terminals, HTTP or files: it yields events. Tool calls of one turn run
concurrently (they are independent reads); their results enter the context in call order.

The context budget is a ceiling on every request sent: each turn the policy is told how long its
reply may be (``AgentState.max_reply_tokens``; near the limit that is little, enough for a prune
or a short answer), an observation that would not fit is replaced by a short error (its chunks
are not counted as shown), and a run whose context has no room left at all ends (stop reason
``budget``). The cap is half of what is left, the other half for the observations the reply's
calls bring back; a reply cut by it is asked once more with all that is left (a final answer needs
no room for observations). A reply cut again (``Reply.truncated``) is no answer: the run ends
(stop reason ``truncated``) with the documents it was shown, and a warning says so.

A model server that fails is not an empty result: the run reports it and raises
:class:`~c1.agent.policy.ModelServerError`, which the front ends turn into exit 2 / HTTP 502.
Final answers name only documents the run was shown: an id the model invented is dropped, even
when the corpus happens to hold it; an answer given before any search is sent back once, saying so.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from c1.agent import events as ev
from c1.agent.context import MIN_REPLY, Block, Context, Message, ToolCall
from c1.agent.output import Ranked, parse_final
from c1.agent.policy import AgentState, ModelServerError, Policy, PolicyError, Reply
from c1.agent.tools import PRUNE, SEARCH, Observation, Tools
from c1.store.ids import doc_of


UNSEEN_ANSWER = ("You have not been shown any document yet, so the documents your answer names are not in this "
                 "corpus. Search it first ({search}), then answer with the ids of documents you were shown.")


class Agent:
    def __init__(self, policy: Policy, tools: Tools, context: Context, max_turns: int = 24, run_index: int = 0,
                 stop: threading.Event | None = None):
        self.policy = policy
        self.tools = tools
        self.context = context
        self.max_turns = max_turns
        self.run_index = run_index
        self.stop = stop
        """Set by the caller to end the run at its next turn (a cancelled search)."""
        self.stats = {"turns": 0, "tool_calls": 0, "pruned": 0, "errors": 0, "cut_retries": 0,
                      "prompt_tokens": 0, "completion_tokens": 0, "counted_tokens": 0, "count_error": 0}
        self.ranked: list[Ranked] = []

    def run(self, question: str) -> Iterator[ev.Event]:
        r = self.run_index
        started = time.perf_counter()
        ctx = self.context
        yield ev.RunStarted(r, question, self.policy.name, self.policy.model, ctx.budget)
        ctx.set_tools(self.tools.schemas())
        ctx.add(Message("system", self.policy.system_prompt(ctx.budget)))
        ctx.add(Message("user", question))
        names = self.tools.names
        stop = "max_turns"
        warned = None
        structured = False  # the policy gave its answer as a list: an empty one means nothing is good enough
        for turn in range(1, self.max_turns + 1):
            if self.stop is not None and self.stop.is_set():
                stop = "cancelled"
                break
            room = ctx.reply_room()
            if turn == 1 and room < MIN_REPLY:
                yield ev.RunError(r, f"the context budget is too small: the prompt and the tool schemas alone take "
                                     f"{ctx.used()} of {ctx.budget} tokens, which leaves no room for a reply; "
                                     "raise --budget")
                stop = "error"
                break
            if room < 1:  # not even a short answer fits
                stop = "budget"
                break
            self.stats["turns"] = turn
            yield ev.TurnStarted(r, turn, ctx.used(), ctx.budget)
            try:
                reply, cap = self._reply(question, turn, room)
            except ModelServerError as exc:
                yield ev.RunError(r, str(exc))
                raise
            except PolicyError as exc:
                yield ev.RunError(r, str(exc))
                stop = "error"
                break
            if reply.truncated:  # cut by max_tokens: neither an answer nor calls to trust
                stop = "truncated"
                yield ev.ReplyTruncated(r, turn, reply.completion_tokens, cap,
                                        len({s.doc_id for s in ctx.visible().values()}))
                break
            calls = _unique_ids(reply.tool_calls)
            ctx.add(Message("assistant", reply.text, calls, reasoning=reply.reasoning))
            if reply.text or reply.reasoning:
                yield ev.AssistantText(r, turn, reply.text, reply.reasoning)
            if not calls:
                structured = reply.ranked is not None
                self.ranked = list(reply.ranked) if structured else parse_final(reply.text, self._resolve)
                if self._unseen_answer(structured, turn):
                    continue
                stop = "answer"
                break
            if ctx.used() > ctx.budget:  # a reply longer than it was allowed (a server that ignores max_tokens)
                stop = "budget"
                break
            yield from self._act(turn, calls)
            ctx.messages[-1].content.append(Block("\n" + ctx.usage_line(names[PRUNE])))
            level = "hard" if ctx.past_hard() else "soft" if ctx.past_soft() else None
            if level and level != warned:
                warned = level
                yield ev.BudgetWarning(r, turn, ctx.used(), ctx.budget, level)
        final = getattr(self.policy, "final", None)  # an answer that costs no reply (the built-in policy's)
        if stop in ("budget", "max_turns", "truncated") and final is not None:
            self.ranked, structured = list(final(self._state(question, self.stats["turns"], 0))), True
        if not structured and (stop != "answer" or not self.ranked):
            self.ranked = self._fallback()
            if stop == "answer" and self.ranked:
                stop = "unparsed_answer"  # the answer named no document, but the run saw some
        supported = getattr(self.policy, "supported", None)  # what the built-in policy's evidence says of the question
        if supported is not None:
            self.stats["supported"] = supported()
        self.stats["seconds"] = round(time.perf_counter() - started, 3)
        self.stats["context_peak"] = ctx.peak
        self.stats["seen_chunks"] = len(ctx.shown)
        documents = [{"id": x.doc_id, "justification": x.justification, **({"score": x.score} if x.score is not None else {})}
                     for x in self.ranked]
        yield ev.Finished(r, documents, dict(self.stats), stop)

    def _state(self, question: str, turn: int, room: int) -> AgentState:
        return AgentState(question, turn, self.max_turns, self.context, self.tools.schemas(), self.tools.names,
                          self.tools.searcher, room, self.tools.shared)

    # acting -----------------------------------------------------------------------------
    def _act(self, turn: int, calls: list[ToolCall]) -> Iterator[ev.Event]:
        tools, ctx = self.tools, self.context
        for call in calls:
            yield ev.ToolCalled(self.run_index, turn, call.id, call.name, _args_for_event(call.arguments),
                                tools.harness_name(call.name))
        # Each call's query is fixed in call order first. Then calls that change what the others may
        # do (prunes) run first and alone; the others retrieve concurrently and render in call order.
        tools.begin_turn(turn)
        queries = tools.queries([(c.name, c.arguments) for c in calls])
        results: dict[int, Observation] = {}
        others = []
        for i, call in enumerate(calls):
            if tools.runs_first(call.name):
                results[i] = tools.execute(call.name, call.arguments, queries[i])
            else:
                others.append(i)
        if len(others) > 1:
            with ThreadPoolExecutor(max_workers=min(4, len(others))) as pool:
                pending = list(pool.map(lambda i: tools.prepare(calls[i].name, calls[i].arguments, queries[i]), others))
        else:
            pending = [tools.prepare(calls[i].name, calls[i].arguments, queries[i]) for i in others]
        for i, render in zip(others, pending):
            results[i] = render()
        for i, call in enumerate(calls):
            obs, message, tokens = self._fit(results[i], call)
            self.stats["tool_calls"] += 1
            if obs.error:
                self.stats["errors"] += 1
            ctx.add(message, tokens)
            tool = tools.harness_name(call.name)
            yield ev.ToolResult(self.run_index, turn, call.id, call.name, obs.refs, obs.error, obs.note, tool)
            if obs.pruned:
                self.stats["pruned"] += len(obs.pruned)
                refs = [ev.ChunkRef(s.chunk_id, s.doc_id, s.title, s.score, None, s.tokens) for s in obs.pruned]
                yield ev.ChunksPruned(self.run_index, turn, refs, sum(s.tokens for s in obs.pruned))

    def _fit(self, obs: Observation, call: ToolCall) -> tuple[Observation, Message, int]:
        """The observation's tool message and its tokens, or a short error in its place when it would
        not fit under the budget."""
        ctx = self.context
        message = _tool_message(obs, call)
        tokens = ctx.message_tokens(message)
        if ctx.fits(tokens):
            return obs, message, tokens
        ctx.unshow([r.id for r in obs.refs])
        why = (f"not shown: the context is full ({ctx.used()} of {ctx.budget} tokens); prune chunks with "
               f"{self.tools.model_name(PRUNE)} or give your final answer")
        for text in (why, "context full"):
            obs = Observation(f"Error: {text}", error=text)
            message = _tool_message(obs, call)
            tokens = ctx.message_tokens(message)
            if ctx.fits(tokens):
                break
        return obs, message, tokens

    def _reply(self, question: str, turn: int, room: int) -> tuple[Reply, int]:
        """The policy's reply to this turn, and the cap it was given. A reply cut at ``room`` (half of
        what is left, not a cap of the policy's own) is asked once more with all that is left."""
        ctx = self.context
        sent, counted = ctx.used(), ctx.counted()
        reply = self._ask(self._state(question, turn, room), sent, counted)
        if reply.truncated and (reply.completion_tokens or room) >= room and (whole := ctx.whole_reply_room()) > room:
            self.stats["cut_retries"] += 1
            return self._ask(self._state(question, turn, whole), sent, counted), whole
        return reply, room

    def _ask(self, state: AgentState, sent: int, counted: int) -> Reply:
        reply = self.policy.next(state)
        self._count_tokens(reply, sent, counted)
        return reply

    def _count_tokens(self, reply: Reply, sent: int, counted: int) -> None:
        if reply.prompt_tokens:
            self.stats["prompt_tokens"] += reply.prompt_tokens
            self.stats["counted_tokens"] += sent
            self.stats["count_error"] += abs(sent - reply.prompt_tokens)
            self.context.calibrate(reply.prompt_tokens, counted)
        if reply.completion_tokens:
            self.stats["completion_tokens"] += reply.completion_tokens

    # the answer -------------------------------------------------------------------------
    def _unseen_answer(self, structured: bool, turn: int) -> bool:
        """An answer given before any document was shown names none the run has seen (its ids are
        invented): with turns left, the model is told so, once, and the run goes on."""
        if structured or self.ranked or self.context.shown or turn >= self.max_turns or self.stats.get("unseen_answers"):
            return False
        self.stats["unseen_answers"] = 1
        self.context.add(Message("user", UNSEEN_ANSWER.format(search=self.tools.names[SEARCH])))
        return True

    def _resolve(self, raw: str) -> str | None:
        """A document id the model wrote (or a chunk id of it) → a document the run was shown, else
        None: an id it never saw is invented, even when the corpus holds a document by that id."""
        seen_docs = {s.doc_id for s in self.context.shown.values()}
        for cand in (raw, raw.lower(), doc_of(raw), doc_of(raw.lower())):
            if cand in seen_docs:
                return cand
        return None

    def _fallback(self) -> list[Ranked]:
        """Without a parsable answer: documents of the visible chunks, best chunk score first."""
        best: dict[str, float] = {}
        for s in self.context.visible().values():
            best[s.doc_id] = max(best.get(s.doc_id, -1.0), s.score if s.score is not None else 0.0)
        return [Ranked(d) for d, _ in sorted(best.items(), key=lambda kv: -kv[1])]


def _tool_message(obs: Observation, call: ToolCall) -> Message:
    content = obs.text if isinstance(obs.text, list) else [Block(obs.text)]
    if obs.note:
        content = content + [Block(f"({obs.note})\n")]
    return Message("tool", content, tool_call_id=call.id, name=call.name)


def _unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Every call its own id: a missing or repeated id (two calls both ``call_0``) gets a fresh one,
    so that each tool message answers exactly one call."""
    seen: set[str] = set()
    for call in calls:
        if not call.id or call.id in seen:
            call.id = f"call_{uuid.uuid4().hex[:8]}"
        seen.add(call.id)
    return list(calls)


def _args_for_event(arguments: str) -> dict:
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
        return value if isinstance(value, dict) else {"_raw": arguments}
    except (json.JSONDecodeError, TypeError):
        return {"_raw": arguments}
