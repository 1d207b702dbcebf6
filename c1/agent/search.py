"""One search: N independent agent runs (``--parallel``), fused with RRF, as one result.

Runs execute in threads (the heavy parts — ONNX, tantivy, Chroma, HTTP to a model server —
release the GIL). Their events are handed to ``on_event`` from the calling thread, in arrival
order, so consumers need no locking. When ``on_event`` raises (a cancelled search) or ``stop`` is
set, every run ends at its next turn and ``run_search`` returns or raises only once all of them
have stopped: nothing keeps working for a search that is over.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from c1.agent import events as ev
from c1.agent.context import Context
from c1.retrieval.corpus import Corpus
from c1.retrieval.evidence import FLOOR, confidences
from c1.retrieval.confidence import monotone as evd_monotone
from c1.retrieval.fusion import rrf
from c1.agent.loop import Agent
from c1.agent.policy import Policy
from c1.agent.result import SearchResult
from c1.agent.shared import SharedWork
from c1.agent.tools import ToolConfig, Tools
from c1.config import Settings
from c1.retrieval.copies import collapse, present


def search_with(corpus: Corpus, settings: Settings, question: str, choice, on_event: Callable[[ev.Event], None] = lambda e: None,
                tool_names: dict | None = None, stop: threading.Event | None = None) -> SearchResult:
    """:func:`run_search` with a chosen policy (``policies.PolicyChoice``), as every front end runs it
    (``c1 search``, ``--batch``, the resident process, the search API): its stats say which policy ran
    and why (``policy_note``) and, when a model server the user named could not be used, that too
    (``policy_warning``). ``tool_names``: the model's names for the tools (default: from the settings)."""
    if tool_names is None:
        tool_names = _tool_names(settings)
    result = run_search(corpus, settings, question, choice.factory, on_event, ToolConfig(names=tool_names), stop=stop)
    from c1.retrieval.passages import attach  # the evidence handed over: passages, and a sentence that justifies

    started = time.perf_counter()
    attach(corpus, question, result.documents, settings.evidence_tokens, replace_justification=result.policy == "builtin")
    result.stats["seconds"] = round(result.stats.get("seconds", 0.0) + time.perf_counter() - started, 3)
    result.stats["policy_note"] = choice.note
    if getattr(corpus, "embedding", None):  # keywords first: how far embedding is (c1/index/indexer.py)
        result.stats["embedding"] = corpus.embedding
    if choice.warning:
        result.stats["policy_warning"] = choice.warning
    return result


def _tool_names(settings: Settings) -> dict:
    if not settings.tool_names:
        return {}
    from c1.agent.policies.llm import parse_tool_names

    return parse_tool_names(settings.tool_names)


def run_search(
    corpus: Corpus,
    settings: Settings,
    question: str,
    make_policy: Callable[[int], Policy],
    on_event: Callable[[ev.Event], None] = lambda e: None,
    tool_config: ToolConfig = ToolConfig(),
    stop: threading.Event | None = None,
) -> SearchResult:
    started = time.perf_counter()
    corpus.refresh()  # a long-lived reader (serve, mcp) sees a re-index
    n = max(1, settings.parallel)
    stop = stop or threading.Event()
    agents = []
    shared = SharedWork() if n > 1 else None
    for i in range(n):
        context = Context(settings.budget, settings.soft_threshold, settings.hard_cutoff)
        tools = Tools(corpus, context, question, tool_config, shared)
        agents.append(Agent(make_policy(i), tools, context, settings.max_turns, run_index=i, stop=stop))
    finished: dict[int, ev.Finished] = {}
    events = _interleave([a.run(question) for a in agents], stop)
    try:
        for event in events:
            if isinstance(event, ev.Finished):
                finished[event.run] = event
            on_event(event)
    finally:
        events.close()  # on an early exit: stop the runs and wait for them
    runs = [finished[i].documents for i in sorted(finished)]
    scored = bool(runs) and all(d.get("score") is not None for docs in runs for d in docs)
    if not scored:  # a model's answers: the evidence model's confidence, the model's order
        for i, docs in zip(sorted(finished), runs):
            conf = confidences(question, corpus, agents[i].context.visible(), [d["id"] for d in docs])
            for d in docs:
                d["score"] = conf.get(d["id"], 0.0)
    justification = {}
    for docs in runs:
        for d in docs:
            justification.setdefault(d["id"], d.get("justification", ""))
    fused, copies = collapse(corpus.store.manifest, fuse(runs, by_score=scored))  # byte-identical files: one result
    documents = [present(corpus, _document(corpus, agents, doc_id, score, justification.get(doc_id, "")), copies.get(doc_id))
                 for doc_id, score in fused[: settings.max_docs]]
    stats = _merge_stats([finished[i].stats for i in sorted(finished)], time.perf_counter() - started)
    stats["stop_reasons"] = [finished[i].stop_reason for i in sorted(finished)]
    policy = agents[0].policy
    return SearchResult(
        question, policy.name, policy.model, settings.budget, documents, stats,
        trajectories=[_trajectory(a) for a in agents],
    )


def fuse(runs: list[list[dict]], floor: float = FLOOR, by_score: bool = True) -> list[tuple[str, float]]:
    """The runs' ranked documents as one list of (id, confidence).

    A document's confidence is the mean of its ``score`` over all runs, counting 0 for a run that
    did not return it: what the runs agree on rises, what one run alone returned falls. With
    ``by_score`` (the policy ranked by those confidences: the built-in one) one run's list is its own
    order, and several runs' start from the first run's and depart from it where more runs agree
    (``_anchored``; documents only other runs returned need ``floor``); otherwise (a model ranked, the
    confidences came after) the order is the runs' RRF fusion (one run: its own order)."""
    by_rrf = rrf([[d["id"] for d in docs] for docs in runs])
    order = {doc_id: i for i, (doc_id, _) in enumerate(by_rrf)}
    mean = {doc_id: round(sum(d.get("score") or 0.0 for docs in runs for d in docs if d["id"] == doc_id)
                          / max(1, len(runs)), 4) for doc_id in order}
    if not by_score:
        return [(doc_id, mean[doc_id]) for doc_id, _ in by_rrf]
    if len(runs) == 1:
        return sorted(mean.items(), key=lambda dv: (-dv[1], order[dv[0]]))
    return _anchored(runs, mean, order, floor)


def _anchored(runs: list[list[dict]], mean: dict[str, float], order: dict[str, int], floor: float) -> list[tuple[str, float]]:
    """Several runs of the built-in policy as one answer that starts from the first run's (the one
    ``--parallel 1`` gives): a document goes above another only when more runs returned it *and* its
    mean confidence is higher — agreement counts, and what one run alone found cannot push out what the
    first run returned. Documents of the first run are kept whatever their mean; the others need
    ``floor``."""
    votes: dict[str, int] = {}
    for docs in runs:
        for d in dict.fromkeys(x["id"] for x in docs):
            votes[d] = votes.get(d, 0) + 1
    first = [d["id"] for d in runs[0]]
    anchor = {d: i for i, d in enumerate(first)}
    rest = sorted((d for d in mean if d not in anchor and mean[d] >= floor), key=lambda d: (-mean[d], order[d]))
    out: list[str] = []
    for d in [*first, *rest]:
        i = len(out)
        while i > 0 and votes[d] > votes[out[i - 1]] and mean[d] > mean[out[i - 1]]:
            i -= 1
        out.insert(i, d)
    scores = evd_monotone([mean[d] for d in out])
    return list(zip(out, (round(v, 4) for v in scores)))


def _interleave(generators: list, stop: threading.Event) -> "iter":
    """Drive each run's event generator in its own thread; yield events as they arrive. Closed
    early, it sets ``stop`` and joins the threads (each run ends at its next turn)."""
    if len(generators) == 1:
        yield from generators[0]
        return
    q: queue.Queue = queue.Queue()
    done = object()

    def pump(gen):
        try:
            for item in gen:
                q.put(item)
        except BaseException as exc:  # surfaced in the caller's thread
            q.put(exc)
        finally:
            q.put(done)

    threads = [threading.Thread(target=pump, args=(g,), daemon=True) for g in generators]
    for t in threads:
        t.start()
    remaining = len(threads)
    try:
        while remaining:
            item = q.get()
            if item is done:
                remaining -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        if remaining:
            stop.set()
        for t in threads:
            t.join()


def _document(corpus: Corpus, agents: list[Agent], doc_id: str, score: float, justification: str) -> dict:
    doc = corpus.doc(doc_id)
    seen: dict[str, object] = {}
    for a in agents:
        for cid, shown in a.context.shown.items():
            if shown.doc_id == doc_id and cid not in a.context.pruned:
                seen.setdefault(cid, shown)
    chunk_ids = sorted(seen, key=lambda c: int(c.rsplit("_", 1)[1])) or [f"{doc_id}_0"]
    chunks = corpus.chunks(chunk_ids)
    pages = [c.page for c in chunks if c.page is not None]
    return {
        "id": doc_id,
        "source_id": doc.source_id if doc else None,
        "title": doc.title if doc else "",
        "path": doc.path if doc else "",
        "page": min(pages) if pages else None,
        "score": round(score, 6),
        "justification": justification,
        "chunks": [{"id": c.id, "text": c.text, "span": [c.start, c.end], "page": c.page} for c in chunks],
    }


def _merge_stats(stats: list[dict], seconds: float) -> dict:
    keys = ("turns", "tool_calls", "pruned", "errors", "prompt_tokens", "completion_tokens", "counted_tokens",
            "count_error", "seen_chunks", "cut_retries")
    out = {k: sum(s.get(k, 0) for s in stats) for k in keys}
    out["runs"] = len(stats)
    if any("supported" in s for s in stats):
        out["supported"] = any(s.get("supported") for s in stats)
    out["context_peak"] = max((s.get("context_peak", 0) for s in stats), default=0)
    out["tokens"] = {"prompt": out.pop("prompt_tokens"), "completion": out.pop("completion_tokens"),
                     "context_peak": out.pop("context_peak"), "counted": out.pop("counted_tokens"),
                     "count_error": out.pop("count_error")}
    out["seconds"] = round(seconds, 3)
    return out


def _trajectory(agent: Agent) -> dict:
    """The full run, pruned chunks included (for --save-trajectory, training and eval)."""
    return {
        "run": agent.run_index,
        "policy": agent.policy.name,
        "messages": [m.to_openai() for m in agent.context.messages],
        "pruned": sorted(agent.context.pruned),
        "shown": [vars(s) for s in agent.context.shown.values()],
        "stats": agent.stats,
    }
