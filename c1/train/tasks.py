"""The task file written by ``c1 train synth`` and read by ``collect`` and ``rl``: one JSON object per line.

A task is one level of a chain. Level 0 asks for a truth found in three supporting chunks; each
further level adds a *bridging item* (a chunk reached from a supporting chunk of the level below
through a shared entity) holding a new truth, and a new question that needs the whole chain.
Every level is written as a task of its own (``parent`` names the level below), so training can
start with few hops (the difficulty curriculum).

Fields (``SCHEMA_VERSION`` 1)::

    id              str    "t_<8 hex>_L<level>"; stable for a seed (resume)
    schema          int    1
    collection      str    the indexed collection the chunk ids belong to
    seed_chunk      str    the chunk exploration started from
    level           int    0 = the base task; n = n bridges deep
    parent          str?   id of the task one level down (null at level 0)
    question        str    what the agent is asked; never contains the truth
    truth           str    the answer string; occurs verbatim (normalised) in a supporting chunk
    truth_type      str    person | place | organization | date | number | title | event | other
    truths          [str]  truths of every level so far, this one last
    clues           [{text, chunk_id, quote, level}]
                           obfuscated statements (no verbatim keywords of their chunk) and the
                           verbatim quote each is based on
    supporting_items [{chunk_id, doc_id, title, quotes: [str], contains_truth: bool, level}]
                           the evidence, all levels; contains_truth is computed, never trusted
    bridging_item   {from_chunk_id, chunk_id, doc_id, title, link, quotes, contains_truth}?
                           how this level was reached (null at level 0)
    distractors     [{chunk_id, doc_id, title, clue}]
                           chunks that match a clue but contain no truth so far
    gold_docs       [str]  document ids of every supporting item (what retrieval must return)
    truth_docs      [str]  document ids of the supporting items that contain this level's truth
    verification    {quotes: int, found: int, ratio: float, rejected_quotes: [str], truth_in: [chunk_id]}
    teacher         {model: str, prompt_tokens: int, completion_tokens: int}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

SCHEMA_VERSION = 1
TRUTH_TYPES = ("person", "place", "organization", "date", "number", "title", "event", "other")

_REQUIRED = {
    "id": str, "schema": int, "collection": str, "seed_chunk": str, "level": int, "question": str,
    "truth": str, "truth_type": str, "truths": list, "clues": list, "supporting_items": list,
    "distractors": list, "gold_docs": list, "truth_docs": list, "verification": dict, "teacher": dict,
}
_CLUE = {"text": str, "chunk_id": str, "quote": str, "level": int}
_ITEM = {"chunk_id": str, "doc_id": str, "title": str, "quotes": list, "contains_truth": bool, "level": int}
_BRIDGE = {"from_chunk_id": str, "chunk_id": str, "doc_id": str, "title": str, "link": str, "quotes": list,
           "contains_truth": bool}
_DISTRACTOR = {"chunk_id": str, "doc_id": str, "title": str, "clue": int}


def _check(obj, spec: dict, where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: not an object"]
    errors = []
    for key, kind in spec.items():
        if key not in obj:
            errors.append(f"{where}: missing {key!r}")
        elif not isinstance(obj[key], kind) or (kind is int and isinstance(obj[key], bool)):
            errors.append(f"{where}: {key!r} is not {kind.__name__}")
    return errors


def validate_task(task: dict) -> list[str]:
    """Schema errors of one task record (empty list: valid). Checks types and the invariants that
    do not need the corpus: the truth is not in the question, a truth-bearing item exists, the
    gold documents are exactly the supporting items' documents."""
    errors = _check(task, _REQUIRED, "task")
    if errors:
        return errors
    if task["schema"] != SCHEMA_VERSION:
        errors.append(f"task: schema {task['schema']} is not {SCHEMA_VERSION}")
    if task["level"] < 0:
        errors.append("task: negative level")
    if task["truth_type"] not in TRUTH_TYPES:
        errors.append(f"task: truth_type {task['truth_type']!r} not one of {', '.join(TRUTH_TYPES)}")
    if not task["truth"].strip() or not task["question"].strip():
        errors.append("task: empty truth or question")
    if task["truths"][-1:] != [task["truth"]]:
        errors.append("task: truths must end with the truth")
    from c1.train.verify import normalise

    if normalise(task["truth"]) and normalise(task["truth"]) in normalise(task["question"]):
        errors.append("task: the question gives the truth away")
    if task["level"] == 0 and task.get("parent") is not None:
        errors.append("task: level 0 has no parent")
    if task["level"] > 0 and not task.get("parent"):
        errors.append("task: a level above 0 needs its parent")
    for i, c in enumerate(task["clues"]):
        errors += _check(c, _CLUE, f"clues[{i}]")
    for i, it in enumerate(task["supporting_items"]):
        errors += _check(it, _ITEM, f"supporting_items[{i}]")
    for i, d in enumerate(task["distractors"]):
        errors += _check(d, _DISTRACTOR, f"distractors[{i}]")
    bridge = task.get("bridging_item")
    if task["level"] > 0:
        if bridge is None:
            errors.append("task: a level above 0 needs its bridging_item")
        else:
            errors += _check(bridge, _BRIDGE, "bridging_item")
    if errors:
        return errors
    if not task["supporting_items"]:
        errors.append("task: no supporting items")
    if not any(it["contains_truth"] and it["level"] == task["level"] for it in task["supporting_items"]):
        errors.append("task: no supporting item of this level contains the truth")
    gold = sorted({it["doc_id"] for it in task["supporting_items"]})
    if sorted(set(task["gold_docs"])) != gold:
        errors.append("task: gold_docs differ from the supporting items' documents")
    if not set(task["truth_docs"]) <= set(gold) or not task["truth_docs"]:
        errors.append("task: truth_docs must be non-empty gold documents")
    supporting = {it["chunk_id"] for it in task["supporting_items"]}
    if any(d["chunk_id"] in supporting for d in task["distractors"]):
        errors.append("task: a distractor is also a supporting item")
    return errors


def read_tasks(path: str | Path) -> list[dict]:
    """Every task of a JSONL file; raises ValueError naming the first bad line."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from None
        errors = validate_task(task)
        if errors:
            raise ValueError(f"{path}:{n}: {errors[0]}")
        out.append(task)
    return out


def iter_jsonl(path: str | Path) -> Iterator[dict]:
    """Objects of a JSONL file, skipping a torn last line (a run killed mid-write)."""
    p = Path(path)
    if not p.exists():
        return
    with p.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def append_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    with open(path, "a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
        f.flush()


def by_level(tasks: list[dict], max_level: int | None = None) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for t in tasks:
        if max_level is None or t["level"] <= max_level:
            out.setdefault(t["level"], []).append(t)
    return dict(sorted(out.items()))
