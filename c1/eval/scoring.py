"""Scoring: one system run on one question, and what it returned scored against the gold keys."""

from __future__ import annotations

import dataclasses
import os
import time

from c1.config import Settings
from c1.eval import metrics
from c1.eval.datasets import Question, page_key
from c1.eval.systems import System


class Keys:
    """Maps what a system returned or saw onto gold keys.

    Passage datasets: a document's key is its ``source_id``. Page datasets (FinanceBench): a
    document matches each gold ``<file>#p<page>`` that one of its returned chunks covers; a
    document that matches no gold page keeps its own id (so it still counts against precision).

    The manifest stores the page where a chunk starts; a chunk also surely covers the start page
    of every chunk of its document that starts inside it (chunks overlap), so those count too.
    """

    def __init__(self, corpus, gold: tuple[str, ...], gold_kind: str):
        self.corpus = corpus
        self.gold = set(gold)
        self.kind = gold_kind
        self._starts: dict[str, list[tuple[int, int]]] = {}

    def _pages(self, doc_id: str, start: int, end: int, page: int | None) -> set[int]:
        if doc_id not in self._starts:
            self._starts[doc_id] = [(c.start, c.page) for c in self.corpus.doc_chunks(doc_id) if c.page is not None]
        pages = {page} if page is not None else set()
        pages.update(p for s, p in self._starts[doc_id] if start <= s < end)
        return pages

    def _page_keys(self, doc_id: str, path: str, spans) -> list[str]:
        name = os.path.basename(path or "")
        pages: set[int] = set()
        for start, end, page in spans:
            pages |= self._pages(doc_id, start, end, page)
        return [page_key(name, p) for p in sorted(pages) if page_key(name, p) in self.gold]

    def document(self, doc: dict) -> list[str]:
        if self.kind == "page":
            spans = [(c["span"][0], c["span"][1], c.get("page")) for c in doc.get("chunks", []) if c.get("span")]
            return self._page_keys(doc["id"], doc.get("path") or "", spans) or [doc["id"]]
        return [doc.get("source_id") or doc["id"]]

    def chunks(self, chunk_ids: list[str]) -> dict[str, list[str]]:
        """chunk id → its keys (page datasets: the gold pages the chunk covers, else its document id)."""
        if not chunk_ids:
            return {}
        out = {}
        if self.kind == "page":
            for c in self.corpus.chunks(chunk_ids):
                doc = self.corpus.doc(c.doc_id)
                hits = self._page_keys(c.doc_id, doc.path if doc else "", [(c.start, c.end, c.page)])
                out[c.id] = hits or [c.doc_id]
            return out
        for cid in chunk_ids:
            doc_id = cid.rsplit("_", 1)[0]
            doc = self.corpus.doc(doc_id)
            out[cid] = [(doc.source_id if doc else None) or doc_id]
        return out


def answer_found(answers: tuple[str, ...], texts: list[str], returned: list[str], gold: tuple[str, ...]) -> bool:
    """Any answer string (alias) is found by :func:`metrics.answer_found`; a set without answer
    strings counts a question as found when a gold (answer-bearing) document was returned."""
    if not answers:
        return bool(set(returned) & set(gold))
    return any(metrics.answer_found(a, texts, returned, gold) for a in answers)


def score_row(question: Question, system: System, documents: list[dict], keys: Keys, *,
              seen_chunks: list[str] = (), pruned_chunks: list[str] = (), cost: dict, extra: dict | None = None) -> dict:
    """One per-question result row: what was returned, the metrics and the cost."""
    returned = list(dict.fromkeys(k for d in documents for k in keys.document(d)))
    texts = ["\n".join([d.get("title") or "", *(c["text"] for c in d.get("chunks", []))]) for d in documents]
    gold = question.gold
    s = metrics.score("", returned, texts, gold)
    chunk_keys = keys.chunks(list(dict.fromkeys([*seen_chunks, *pruned_chunks])))
    seen = set(returned) | {k for c in seen_chunks for k in chunk_keys.get(c, ())}
    pruned = list(dict.fromkeys(pruned_chunks))
    gold_pruned = [c for c in pruned if any(k in keys.gold for k in chunk_keys.get(c, ()))]
    row = {
        "system": system.label,
        "qid": question.id,
        "question": question.question,
        "answers": list(question.answers),
        "gold": list(gold),
        "returned": returned,
        "documents": [{"id": d["id"], "source_id": d.get("source_id"), "title": d.get("title"), "page": d.get("page"),
                       "chunks": len(d.get("chunks", [])), "score": d.get("score"),
                       "gold": any(k in keys.gold for k in keys.document(d))} for d in documents],
        "metrics": {
            "answer_found": answer_found(question.answers, texts, returned, gold),
            "recall": s.recall,
            "precision": s.precision,
            "f1": round(s.f1, 6),
            "full_recall": s.full_recall,
            "trajectory_recall": metrics.trajectory_recall(seen, gold),
            "prune_accuracy": metrics.prune_accuracy(pruned, gold_pruned),
        },
        "cost": cost,
    }
    if extra:
        row.update(extra)
    return row


def run_one(corpus, settings: Settings, question: Question, system: System, choice, gold_kind: str) -> dict:
    """Run one system on one question and score it."""
    keys = Keys(corpus, question.gold, gold_kind)
    started = time.perf_counter()
    if system.kind != "agent":
        from c1.eval.baselines import retrieve

        documents = retrieve(corpus, system.kind, question.question, settings.max_docs)
        seconds = time.perf_counter() - started
        cost = {"turns": None, "tool_calls": None, "prompt_tokens": 0, "completion_tokens": 0, "seconds": round(seconds, 4)}
        return score_row(question, system, documents, keys, cost=cost)
    from c1.agent.search import run_search

    s = dataclasses.replace(settings, policy=choice.name, parallel=system.parallel)
    result = run_search(corpus, s, question.question, choice.factory)
    seconds = time.perf_counter() - started
    shown = [x["chunk_id"] for t in result.trajectories for x in t.get("shown", [])]
    pruned = [c for t in result.trajectories for c in t.get("pruned", [])]
    st = result.stats
    cost = {
        "turns": st.get("turns", 0), "tool_calls": st.get("tool_calls", 0), "pruned": st.get("pruned", 0),
        "errors": st.get("errors", 0), "prompt_tokens": st.get("tokens", {}).get("prompt", 0),
        "completion_tokens": st.get("tokens", {}).get("completion", 0),
        "context_peak": st.get("tokens", {}).get("context_peak", 0), "seconds": round(seconds, 4),
        "counted_tokens": st.get("tokens", {}).get("counted", 0), "count_error": st.get("tokens", {}).get("count_error", 0),
    }
    cost["repeated_calls"] = repeated_calls(result.trajectories)
    last = [next((m for m in reversed(t.get("messages", [])) if m.get("role") == "assistant"), None) for t in result.trajectories]
    return score_row(question, system, result.documents, keys, seen_chunks=shown, pruned_chunks=pruned, cost=cost,
                     extra={"stop_reasons": st.get("stop_reasons", []),
                            "last_replies": [str((m or {}).get("content") or "")[:300] for m in last]})


def repeated_calls(trajectories: list[dict]) -> int:
    """Tool calls that repeat an earlier call of the same run word for word (same tool, same
    arguments): a model going round in a loop."""
    n = 0
    for t in trajectories:
        seen = set()
        for m in t.get("messages", []):
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or c
                key = (fn.get("name"), " ".join(str(fn.get("arguments")).split()))
                n += key in seen
                seen.add(key)
    return n
