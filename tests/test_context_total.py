"""A context's count is kept between changes, and is always what counting it afresh gives: after every
message added, every chunk pruned, a line appended to the last message and new tool schemas."""

from __future__ import annotations

import json
import random

from c1.agent.context import Block, Context, Message, Shown, ToolCall

TOOLS = [{"type": "function", "function": {"name": "search_corpus", "description": "Search.",
                                           "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]


def _afresh(ctx: Context) -> int:
    other = Context(ctx.budget)
    other.set_tools(ctx.tools)
    other.messages = list(ctx.messages)
    other.pruned = set(ctx.pruned)
    return other.counted()


def test_the_kept_count_is_the_count_afresh_after_every_change():
    rng = random.Random(7)
    words = "Neil Peart drummed for Rush 1976 合同终止 the clause survives termination of the agreement".split()
    for trial in range(30):
        ctx = Context(budget=1_000_000)
        ctx.add(Message("system", "You are a retrieval subagent."))
        ctx.add(Message("user", " ".join(rng.choices(words, k=8))))
        chunks: list[str] = []
        for step in range(25):
            op = rng.random()
            if op < 0.35:
                ids = [f"d{trial}_{step}_{i}" for i in range(rng.randint(1, 4))]
                chunks += ids
                blocks = [Block(f'<chunk id="{c}">\n{" ".join(rng.choices(words, k=rng.randint(3, 40)))}\n</chunk>\n', c)
                          for c in ids]
                ctx.add(Message("tool", blocks, tool_call_id=f"c{step}", name="search_corpus"))
                for c in ids:
                    ctx.note_shown(Shown(c, "d", "D", "", None, step, 1))
            elif op < 0.55:
                call = ToolCall(f"c{step}", "search_corpus", json.dumps({"query": " ".join(rng.choices(words, k=3))}))
                ctx.add(Message("assistant", "", [call], reasoning=" ".join(rng.choices(words, k=rng.randint(0, 30)))))
            elif op < 0.75 and chunks:
                before = ctx.counted()
                if ctx.prune(rng.sample(chunks, k=min(len(chunks), rng.randint(1, 3))))[0]:
                    assert _afresh(ctx) < before, "pruning frees tokens"
            elif op < 0.9 and isinstance(ctx.messages[-1].content, list):
                ctx.messages[-1].content.append(Block("\n" + ctx.usage_line()))  # as the loop does
            else:
                ctx.set_tools(TOOLS if rng.random() < 0.5 else [])
            assert ctx.counted() == _afresh(ctx), (trial, step)
            assert ctx.counted() == _afresh(ctx)  # asked again, kept
