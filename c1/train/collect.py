"""``c1 train collect``: teacher trajectories through the real c1 loop, scored and filtered.

Each task's question runs ``runs`` times through :class:`c1.agent.loop.Agent` (the same tools,
budget and pruning as ``c1 search``) with the given policy — normally the ``llm`` policy talking
to a strong teacher. A :class:`RecordingPolicy` remembers, for every turn, how many messages the
model saw and which chunks were pruned at that moment, so that the exact prompt of every turn
can be rebuilt later (:func:`visible_messages`) even though pruning rewrites earlier messages.

Every run is scored with the DESIGN.md metrics (:func:`score_run`), then the report's selection
rules decide what is kept (:func:`select_runs`):

- malformed runs are dropped: the run ended without an answer (an error, the turn limit, the
  budget, a reply cut off at ``max_tokens``, a final answer that names no document: any stop
  reason but ``answer``); or at least half of its tool calls were errors. The report counts them
  by that reason (``dropped["malformed:truncated"]``…);
- runs that *found the gold but dropped it* are excluded: the truth was in a chunk the run saw,
  but no returned document holds it (the worst habit to imitate);
- high-recall runs — trajectory recall > 0.5 and output recall > 0.4 — are kept, one per task
  (the best reward; fewer turns on a tie);
- lower-recall runs are kept at a rate that falls with their recall:
  ``low_rate · min(1, (traj_recall + recall) / 0.9)``;
- zero-recall runs (no gold document ever seen) are negatives, kept while they stay at most
  ``negatives`` (5%) of everything kept.

Output: the kept trajectories (JSONL, one run per line, schema in :func:`run_record`) and
``<out>.runs.jsonl`` with the scores and the verdict of every run (resume reads it: tasks already
there are skipped).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from c1.agent import events as ev
from c1.train.settings import RUNS, SelectConfig  # noqa: F401 (SelectConfig: part of this module's interface)
from c1.agent.context import Block, Context, Message, ToolCall
from c1.agent.loop import Agent
from c1.agent.policy import AgentState, Policy, Reply
from c1.agent.tools import ToolConfig, Tools
from c1.train import reward as rewards
from c1.train.tasks import append_jsonl, iter_jsonl
from c1.train.verify import contains


# --- recording what the model saw -------------------------------------------------------------
class RecordingPolicy:
    """Wraps a policy; before each of its turns, notes the number of messages and the pruned set."""

    def __init__(self, inner: Policy):
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.steps: list[dict] = []
        self.tools: list[dict] = []

    def system_prompt(self, budget: int) -> str:
        return self.inner.system_prompt(budget)

    def next(self, state: AgentState) -> Reply:
        self.tools = state.tools
        step = {"n_messages": len(state.context.messages), "pruned": sorted(state.context.pruned)}
        reply = self.inner.next(state)
        self.steps.append(step)
        return reply


def serialize_messages(messages: list[Message]) -> list[dict]:
    """Messages with their chunk blocks kept apart (so that pruning can be replayed)."""
    out = []
    for m in messages:
        d: dict = {"role": m.role}
        d["content"] = m.content if isinstance(m.content, str) else [[b.text, b.chunk_id] for b in m.content]
        if m.tool_calls:
            d["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls]
        for key in ("tool_call_id", "name", "reasoning"):
            if getattr(m, key):
                d[key] = getattr(m, key)
        out.append(d)
    return out


def deserialize_messages(data: list[dict]) -> list[Message]:
    out = []
    for d in data:
        content = d.get("content", "")
        if isinstance(content, list):
            content = [Block(t, cid) for t, cid in content]
        out.append(Message(d["role"], content, [ToolCall(c["id"], c["name"], c["arguments"]) for c in d.get("tool_calls", [])],
                           d.get("tool_call_id"), d.get("name"), d.get("reasoning")))
    return out


def visible_messages(record: dict, step: int) -> tuple[list[dict], dict]:
    """(what the model was sent at turn ``step``, the assistant message it answered with), both
    as OpenAI chat messages — exactly ``Context.openai_messages()`` at that moment."""
    messages, reply, _ = visible_turn(record, step)
    return messages, reply


def visible_turn(record: dict, step: int) -> tuple[list[dict], dict, list[dict]]:
    """:func:`visible_messages` and the tool messages that answered the turn's calls (as the next
    turn was sent them): what renders a multi-call turn one call per generation (harmony)."""
    messages = deserialize_messages(record["messages"])
    s = record["steps"][step]
    n, hidden = s["n_messages"], set(s["pruned"])
    after = record["steps"][step + 1] if step + 1 < len(record["steps"]) else None
    later = set(after["pruned"]) if after else hidden
    results = []
    for m in messages[n + 1:]:
        if m.role != "tool":
            break
        results.append(m.to_openai(later))
    return [m.to_openai(hidden) for m in messages[:n]], messages[n].to_openai(hidden), results


# --- one run ---------------------------------------------------------------------------------
@dataclass
class RunResult:
    task: dict
    run: int
    policy: RecordingPolicy
    agent: Agent
    finished: ev.Finished | None
    tool_calls: list[str]
    error: str | None
    outcome: rewards.Outcome
    seconds: float
    extra: dict = field(default_factory=dict)


def doc_text(corpus, doc_id: str) -> str:
    return "\n".join(c.text for c in corpus.doc_chunks(doc_id))


def run_task(corpus, settings, task: dict, policy: Policy, run: int = 0,
             tool_config: ToolConfig = ToolConfig(), on_event: Callable[[ev.Event], None] | None = None) -> RunResult:
    """One run of the c1 loop on ``task["question"]``; judged against the task's gold."""
    started = time.perf_counter()
    context = Context(settings.budget, settings.soft_threshold, settings.hard_cutoff)
    tools = Tools(corpus, context, task["question"], tool_config)
    rec = policy if isinstance(policy, RecordingPolicy) else RecordingPolicy(policy)
    agent = Agent(rec, tools, context, settings.max_turns, run_index=run)
    finished, error, calls = None, None, []
    for e in agent.run(task["question"]):
        if isinstance(e, ev.ToolCalled):
            calls.append(tools.harness_name(e.name) or e.name)
        elif isinstance(e, ev.Finished):
            finished = e
        elif isinstance(e, ev.RunError):
            error = e.message
        if on_event:
            on_event(e)
    returned = [d["id"] for d in (finished.documents if finished else [])][: settings.max_docs]
    outcome = rewards.Outcome(
        returned=returned,
        returned_texts=[doc_text(corpus, d) for d in returned],
        seen=list(dict.fromkeys(s.doc_id for s in context.shown.values())),
        gold=list(task["gold_docs"]),
        truth=task["truth"],
        truth_docs=list(task.get("truth_docs") or []),
        tool_calls=calls,
        turns=agent.stats["turns"],
        pruned=sorted(context.pruned),
        stop=finished.stop_reason if finished else "error",
    )
    return RunResult(task, run, rec, agent, finished, calls, error, outcome, time.perf_counter() - started)


# --- scoring and selection -----------------------------------------------------------------------
def score_run(r: RunResult, cfg: SelectConfig = SelectConfig(), reward_cfg: rewards.RewardConfig = rewards.RewardConfig()) -> dict:
    o = r.outcome
    stop = r.finished.stop_reason if r.finished else "error"
    stats = r.agent.stats
    calls = stats.get("tool_calls", 0)
    malformed = None
    if r.error or stop == "error":
        malformed = f"error: {r.error or 'run error'}"
    elif stop != "answer":  # max_turns, budget, truncated, unparsed_answer, cancelled: no answer to imitate
        malformed = stop
    elif calls and stats.get("errors", 0) / calls >= cfg.max_error_share:
        malformed = f"{stats['errors']} of {calls} tool calls failed"
    shown = r.agent.context.shown.values()
    truth_seen = bool(set(o.seen) & set(o.truth_docs)) or any(contains(o.truth, s.text) for s in shown)
    rew = rewards.reward(o, cfg.beta, reward_cfg)
    return {
        "task_id": r.task["id"], "run": r.run, "level": r.task.get("level", 0), "stop": stop,
        "turns": o.turns, "tool_calls": calls, "errors": stats.get("errors", 0), "pruned": stats.get("pruned", 0),
        "recall": round(rew.recall, 4), "precision": round(rew.precision, 4), "traj_recall": round(rew.traj_recall, 4),
        "answer_found": rew.answer_found, "truth_seen": truth_seen, "reward": round(rew.total, 4),
        "malformed": malformed, "seconds": round(r.seconds, 3),
        "prompt_tokens": stats.get("prompt_tokens", 0), "completion_tokens": stats.get("completion_tokens", 0),
    }


def malformed_kind(score: dict) -> str:
    """Why a malformed run was dropped, in one word: ``error``, ``tool_errors`` or its stop reason."""
    why = score.get("malformed") or ""
    if why.startswith("error"):
        return "error"
    return why if why.isidentifier() else "tool_errors"


def verdict(score: dict, cfg: SelectConfig = SelectConfig()) -> str:
    """high | low | negative | malformed | dropped_gold (before the per-task and rate limits)."""
    if score["malformed"]:
        return "malformed"
    if score["truth_seen"] and not score["answer_found"]:
        return "dropped_gold"
    if score["traj_recall"] > cfg.traj_recall and score["recall"] > cfg.recall:
        return "high"
    if score["traj_recall"] == 0:
        return "negative"
    return "low"


def low_keep_rate(score: dict, cfg: SelectConfig = SelectConfig()) -> float:
    return cfg.low_rate * min(1.0, (score["traj_recall"] + score["recall"]) / (cfg.traj_recall + cfg.recall))


class Selector:
    """The selection rules, applied task by task (streaming, so that collection can resume)."""

    def __init__(self, cfg: SelectConfig = SelectConfig(), seed: int = 0, kept: int = 0, negatives: int = 0):
        self.cfg = cfg
        self.rng = random.Random(seed)
        self.kept = kept
        self.negatives = negatives

    def select(self, scores: list[dict]) -> list[str]:
        """The decision for each run of one task: ``kept:high`` / ``kept:low`` / ``kept:negative`` or
        ``drop:<why>``."""
        out = []
        high = [i for i, s in enumerate(scores) if verdict(s, self.cfg) == "high"]
        best = min(high, key=lambda i: (-scores[i]["reward"], scores[i]["turns"], i)) if high else None
        for i, s in enumerate(scores):
            v = verdict(s, self.cfg)
            if v == "high":
                out.append("kept:high" if i == best else "drop:not_best_high")
            elif v == "low":
                out.append("kept:low" if self.rng.random() < low_keep_rate(s, self.cfg) else "drop:low_rate")
            elif v == "negative":
                out.append("negative?")
            else:
                out.append(f"drop:{v}")
        self.kept += sum(1 for d in out if d.startswith("kept:"))
        for i, d in enumerate(out):
            if d == "negative?":
                # a negative is kept while negatives stay within their share of everything kept
                if (self.negatives + 1) <= self.cfg.negatives * (self.kept + 1):
                    self.negatives += 1
                    self.kept += 1
                    out[i] = "kept:negative"
                else:
                    out[i] = "drop:negative_quota"
        return out


def select_runs(scores_by_task: list[list[dict]], cfg: SelectConfig = SelectConfig(), seed: int = 0) -> list[list[str]]:
    sel = Selector(cfg, seed)
    return [sel.select(s) for s in scores_by_task]


def run_record(r: RunResult, score: dict, decision: str) -> dict:
    """A kept trajectory: everything SFT needs to rebuild each turn's exact prompt."""
    return {
        "task_id": r.task["id"], "run": r.run, "question": r.task["question"], "truth": r.task["truth"],
        "gold_docs": r.task["gold_docs"], "level": r.task.get("level", 0),
        "policy": r.policy.name, "model": r.policy.model, "tools": r.policy.tools,
        "messages": serialize_messages(r.agent.context.messages), "steps": r.policy.steps,
        "documents": r.finished.documents if r.finished else [], "stats": dict(r.agent.stats),
        "scores": score, "kept": decision.split(":", 1)[1],
    }


# --- the command body ----------------------------------------------------------------------------
@dataclass
class CollectReport:
    out: str
    tasks: int = 0
    tasks_done_before: int = 0
    runs: int = 0
    kept: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    means: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in vars(self).items()}


def collect(corpus, settings, tasks: list[dict], make_policy: Callable[[int], Policy], out: str | Path,
            runs: int = RUNS, cfg: SelectConfig = SelectConfig(), seed: int = 0, workers: int = 1,
            tool_config: ToolConfig = ToolConfig(), on_progress: Callable[[dict], None] | None = None) -> CollectReport:
    out = Path(out)
    log = Path(str(out) + ".runs.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    done_scores = list(iter_jsonl(log))
    done = {s["task_id"] for s in done_scores}
    kept_before = [s for s in done_scores if s.get("decision", "").startswith("kept:")]
    sel = Selector(cfg, seed + len(done), kept=len(kept_before),
                   negatives=sum(1 for s in kept_before if s["decision"] == "kept:negative"))
    report = CollectReport(str(out), tasks=len(tasks), tasks_done_before=len(done & {t["id"] for t in tasks}))
    todo = [t for t in tasks if t["id"] not in done]
    started = time.perf_counter()
    lock = threading.Lock()
    sums: dict[str, float] = {}

    def one(task: dict) -> None:
        results = [run_task(corpus, settings, task, make_policy(i), i, tool_config) for i in range(runs)]
        scores = [score_run(r, cfg) for r in results]
        with lock:
            decisions = sel.select(scores)
            kept = [run_record(r, s, d) for r, s, d in zip(results, scores, decisions) if d.startswith("kept:")]
            if kept:
                append_jsonl(out, kept)
            append_jsonl(log, [{**s, "decision": d} for s, d in zip(scores, decisions)])
            for s, d in zip(scores, decisions):
                bucket = report.kept if d.startswith("kept:") else report.dropped
                key = d.split(":", 1)[1]
                if key == "malformed":
                    key = f"malformed:{malformed_kind(s)}"
                bucket[key] = bucket.get(key, 0) + 1
                report.runs += 1
                report.prompt_tokens += s["prompt_tokens"] or 0
                report.completion_tokens += s["completion_tokens"] or 0
                for k in ("recall", "traj_recall", "answer_found", "reward", "turns"):
                    sums[k] = sums.get(k, 0.0) + float(s[k])
            if on_progress:
                on_progress({"runs": report.runs, "tasks_total": len(todo), "kept": sum(report.kept.values())})

    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="c1-collect") as pool:
            list(pool.map(one, todo))
    else:
        for t in todo:
            one(t)
    report.seconds = time.perf_counter() - started
    report.means = {k: round(v / report.runs, 4) for k, v in sums.items()} if report.runs else {}
    return report


def read_trajectories(path: str | Path) -> list[dict]:
    return [r for r in iter_jsonl(path) if "messages" in r and "steps" in r]

