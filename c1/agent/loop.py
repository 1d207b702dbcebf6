"""The agent loop: query → act → observe, until the policy answers in text or turns run out.

It knows nothing of terminals, HTTP or files: it yields events. Tool calls of one turn run
concurrently (they are independent reads); their results enter the context in call order.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from c1.agent import events as ev
from c1.agent.context import Block, Context, Message
from c1.agent.output import Ranked, parse_final
from c1.agent.policy import AgentState, Policy, PolicyError
from c1.agent.tools import Observation, Tools
from c1.corpus.ids import doc_of


class Agent:
    def __init__(self, policy: Policy, tools: Tools, context: Context, max_turns: int = 24, run_index: int = 0):
        self.policy = policy
        self.tools = tools
        self.context = context
        self.max_turns = max_turns
        self.run_index = run_index
        self.stats = {"turns": 0, "tool_calls": 0, "pruned": 0, "errors": 0,
                      "prompt_tokens": 0, "completion_tokens": 0}
        self.ranked: list[Ranked] = []

    def run(self, question: str) -> Iterator[ev.Event]:
        r = self.run_index
        started = time.perf_counter()
        ctx = self.context
        yield ev.RunStarted(r, question, self.policy.name, self.policy.model, ctx.budget)
        ctx.add(Message("system", self.policy.system_prompt(ctx.budget)))
        ctx.add(Message("user", question))
        names = {k: self.tools.model_name(k) for k in ("search_corpus", "grep_corpus", "read_document", "prune_chunks")}
        stop = "max_turns"
        warned = None
        for turn in range(1, self.max_turns + 1):
            self.stats["turns"] = turn
            yield ev.TurnStarted(r, turn, ctx.used(), ctx.budget)
            state = AgentState(question, turn, self.max_turns, ctx, self.tools.schemas(), names, self.tools.corpus)
            try:
                reply = self.policy.next(state)
            except PolicyError as exc:
                yield ev.RunError(r, str(exc))
                stop = "error"
                break
            self._count_tokens(reply)
            ctx.add(Message("assistant", reply.text, list(reply.tool_calls), reasoning=reply.reasoning))
            if reply.text or reply.reasoning:
                yield ev.AssistantText(r, turn, reply.text, reply.reasoning)
            if not reply.tool_calls:
                self.ranked = parse_final(reply.text, self._resolve)
                stop = "answer"
                break
            yield from self._act(turn, reply)
            ctx.messages[-1].content.append(Block("\n" + ctx.usage_line()))
            level = "hard" if ctx.past_hard() else "soft" if ctx.past_soft() else None
            if level and level != warned:
                warned = level
                yield ev.BudgetWarning(r, turn, ctx.used(), ctx.budget, level)
        if stop != "answer" or not self.ranked:
            self.ranked = self._fallback()
            if stop == "answer" and self.ranked:
                stop = "unparsed_answer"  # the answer named no document, but the run saw some
        self.stats["seconds"] = round(time.perf_counter() - started, 3)
        self.stats["context_peak"] = ctx.peak
        self.stats["seen_chunks"] = len(ctx.shown)
        yield ev.Finished(r, [{"id": x.doc_id, "justification": x.justification} for x in self.ranked], dict(self.stats), stop)

    # acting -----------------------------------------------------------------------------
    def _act(self, turn: int, reply) -> Iterator[ev.Event]:
        calls = [c if c.id else _with_id(c) for c in reply.tool_calls]
        for call in calls:
            yield ev.ToolCalled(self.run_index, turn, call.id, call.name, _args_for_event(call.arguments))
        # Prunes first and alone: they change what later calls may do (the hard limit). The others
        # retrieve concurrently, then render in call order (deterministic results).
        self.tools.begin_turn(turn)
        prunes = [c for c in calls if self.tools.is_prune(c.name)]
        others = [c for c in calls if c not in prunes]
        results: dict[str, Observation] = {c.id: self.tools.execute(c.name, c.arguments) for c in prunes}
        if len(others) > 1:
            with ThreadPoolExecutor(max_workers=min(4, len(others))) as pool:
                pending = list(pool.map(lambda c: self.tools.prepare(c.name, c.arguments), others))
        else:
            pending = [self.tools.prepare(c.name, c.arguments) for c in others]
        for call, render in zip(others, pending):
            results[call.id] = render()
        for call in calls:
            obs = results[call.id]
            self.stats["tool_calls"] += 1
            if obs.error:
                self.stats["errors"] += 1
            content = obs.text if isinstance(obs.text, list) else [Block(obs.text)]
            if obs.note:
                content = content + [Block(f"({obs.note})\n")]
            self.context.add(Message("tool", content, tool_call_id=call.id, name=call.name))
            yield ev.ToolResult(self.run_index, turn, call.id, call.name, obs.refs, obs.error, obs.note)
            if obs.pruned:
                self.stats["pruned"] += len(obs.pruned)
                refs = [ev.ChunkRef(s.chunk_id, s.doc_id, s.title, s.score, None, s.tokens) for s in obs.pruned]
                yield ev.ChunksPruned(self.run_index, turn, refs, sum(s.tokens for s in obs.pruned))

    def _count_tokens(self, reply) -> None:
        if reply.prompt_tokens:
            self.stats["prompt_tokens"] += reply.prompt_tokens
            self.context.calibrate(reply.prompt_tokens)
        if reply.completion_tokens:
            self.stats["completion_tokens"] += reply.completion_tokens

    # the answer -------------------------------------------------------------------------
    def _resolve(self, raw: str) -> str | None:
        """A document id the model wrote (or a chunk id of it) → a document id it has seen."""
        seen_docs = {s.doc_id for s in self.context.shown.values()}
        for cand in (raw, raw.lower(), doc_of(raw), doc_of(raw.lower())):
            if cand in seen_docs:
                return cand
        corpus = self.tools.corpus
        for cand in (raw, raw.lower(), doc_of(raw.lower())):
            if corpus.doc(cand) is not None:
                return cand
        return None

    def _fallback(self) -> list[Ranked]:
        """Without a parsable answer: documents of the visible chunks, best chunk score first."""
        best: dict[str, float] = {}
        for s in self.context.visible().values():
            best[s.doc_id] = max(best.get(s.doc_id, -1.0), s.score if s.score is not None else 0.0)
        return [Ranked(d) for d, _ in sorted(best.items(), key=lambda kv: -kv[1])]


def _with_id(call):
    call.id = f"call_{uuid.uuid4().hex[:8]}"
    return call


def _args_for_event(arguments: str) -> dict:
    import json

    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
        return value if isinstance(value, dict) else {"_raw": arguments}
    except (json.JSONDecodeError, TypeError):
        return {"_raw": arguments}
