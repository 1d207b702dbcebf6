"""Retrieval metrics with Context-1's definitions, as small pure functions.

Documents are compared by id (any hashable: c1 doc ids, HotpotQA titles). ``returned`` is the
ranked list a system answered with (duplicates count once); ``gold`` is the set of documents that
support the answer.

- final answer found: a returned document's text contains the answer (case-insensitive, spaces
  normalised). For yes/no answers (HotpotQA comparison questions) no document contains the answer;
  it counts as found when every gold document is returned.
- recall, precision, F1: of the returned documents against the gold set.
- full recall: every gold document returned.
- trajectory recall: gold documents seen at any point of the run, even if pruned later.
- prune accuracy: share of pruned items that were not gold.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from dataclasses import asdict, dataclass

YES_NO = frozenset({"yes", "no"})
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Lower case, whitespace runs collapsed to one space, trimmed."""
    return _SPACE.sub(" ", text).strip().lower()


def is_yes_no(answer: str) -> bool:
    return normalise(answer) in YES_NO


def contains_answer(answer: str, texts: Iterable[str]) -> bool:
    """Some text contains ``answer`` (case-insensitive, whitespace normalised). An empty answer is never found."""
    needle = normalise(answer)
    return bool(needle) and any(needle in normalise(t) for t in texts)


def _unique(items: Iterable[Hashable]) -> list:
    return list(dict.fromkeys(items))


def recall(returned: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """|returned ∩ gold| / |gold|; 1.0 when there is no gold document (nothing to miss)."""
    gold_set = set(gold)
    if not gold_set:
        return 1.0
    return len(set(returned) & gold_set) / len(gold_set)


def precision(returned: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """|returned ∩ gold| / |returned|; 0.0 when nothing is returned."""
    got = _unique(returned)
    if not got:
        return 0.0
    return len(set(got) & set(gold)) / len(got)


def f1(returned: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    returned, gold = _unique(returned), set(gold)
    p, r = precision(returned, gold), recall(returned, gold)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def full_recall(returned: Iterable[Hashable], gold: Iterable[Hashable]) -> bool:
    return set(gold) <= set(returned)


def answer_found(answer: str, returned_texts: Iterable[str], returned: Iterable[Hashable], gold: Iterable[Hashable]) -> bool:
    """The answer string is in a returned document; for a yes/no answer, every gold document is returned."""
    if is_yes_no(answer):
        return full_recall(returned, gold)
    return contains_answer(answer, returned_texts)


def trajectory_recall(seen: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """Recall over every document the run saw, pruned or not."""
    return recall(seen, gold)


def prune_accuracy(pruned: Iterable[Hashable], gold: Iterable[Hashable]) -> float | None:
    """Share of pruned documents that were not gold; None when nothing was pruned."""
    items = _unique(pruned)
    if not items:
        return None
    gold_set = set(gold)
    return sum(1 for x in items if x not in gold_set) / len(items)


@dataclass(frozen=True)
class Scores:
    answer_found: bool
    recall: float
    full_recall: bool
    precision: float
    f1: float

    def to_json(self) -> dict:
        return asdict(self)


def score(answer: str, returned: list[Hashable], returned_texts: list[str], gold: Iterable[Hashable]) -> Scores:
    """All per-question document metrics at once."""
    gold = set(gold)
    return Scores(
        answer_found(answer, returned_texts, returned, gold),
        recall(returned, gold),
        full_recall(returned, gold),
        precision(returned, gold),
        f1(returned, gold),
    )


def mean(values: Iterable[float | bool]) -> float:
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else 0.0


def summarise(rows: Iterable[Scores]) -> dict[str, float]:
    """Means over questions (booleans become rates)."""
    rows = list(rows)
    return {
        "n": len(rows),
        "answer_found": mean(r.answer_found for r in rows),
        "recall": mean(r.recall for r in rows),
        "full_recall": mean(r.full_recall for r in rows),
        "precision": mean(r.precision for r in rows),
        "f1": mean(r.f1 for r in rows),
    }


def calibration_bands(scored: Iterable[tuple[float | None, bool]],
                      bands: Iterable[tuple[float, float, str]]) -> list[dict]:
    """Calibration of confidences: for each band ``(low, high, label)`` (low ≤ score < high), how
    many returned documents fall in it and the share of them that are gold (None when empty).
    Documents without a score are left out."""
    items = [(s, g) for s, g in scored if s is not None]
    out = []
    for low, high, label in bands:
        inside = [g for s, g in items if low <= s < high]
        out.append({"band": label, "documents": len(inside),
                    "gold_share": sum(inside) / len(inside) if inside else None})
    return out
