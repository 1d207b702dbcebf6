"""Confidences of ranked documents: the logistic of the evidence model's logits, the shift that makes a
supported question need at least one document (:func:`needed_offset`), a ranked answer's monotone and
calibrated confidences (:func:`answer_confidences`)."""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

CALIBRATION_FILE = Path(__file__).resolve().parents[1] / "data" / "calibration.json"
"""The answer's calibration, ``{"slope", "bias", "first"}`` (see :func:`calibrated`), written by ``python
bench/calibration_fit.py ROWS --write`` from the development suite's answers of every kind."""


def logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, x))))


def logit(p: float) -> float:
    """The inverse of :func:`logistic` (``p`` held inside (0, 1))."""
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


def needed_offset(logits: list[float]) -> float:
    """The smallest c ≥ 0 with Σ logistic(logit + c) ≥ 1 (one document): the evidence model's logits were fitted
    on multi-hop sets, where most documents a run holds are distractors; on a corpus of another kind the
    same features give lower logits to every document alike. Shifting them all keeps their order and
    their odds ratios, and makes the probabilities mean what they say: a question that something supports
    needs at least one document."""
    if not logits or sum(logistic(x) for x in logits) >= 1:
        return 0.0
    lo, hi = 0.0, 30.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(logistic(x + mid) for x in logits) >= 1:
            hi = mid
        else:
            lo = mid
    return hi


@lru_cache(maxsize=1)
def calibration() -> tuple[float, float, float]:
    """``(slope, bias, first)`` of :data:`CALIBRATION_FILE`."""
    from c1.errors import C1Error

    try:
        data = json.loads(CALIBRATION_FILE.read_text())
        return float(data["slope"]), float(data["bias"]), float(data["first"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise C1Error(f"c1's calibration file {CALIBRATION_FILE} cannot be read ({exc}): reinstall c1") from None


def calibrated(confidence: float, place: int, params: tuple[float, float, float] | None = None,
               supported: bool = True) -> float:
    """The probability that the document at ``place`` (0 = first) of an answer is needed, from the evidence
    model's ``confidence``: ``σ(slope × logit(confidence) + bias + first × [place = 0 and supported])``. The
    evidence model scores each document alone and was fitted on multi-hop questions; what it cannot see is
    that the document a whole answer puts first is the one a known-item question asks for (a contract, a
    filing, a mail: right at rank 1 for nearly every question at middling confidences; docs/relevance.md,
    round 5). That holds where something supports the question (``Ranking.supported``): the first place of
    an answer to a question nothing supports is lifted no more than any other. Increasing in ``confidence``
    and lifting only the first place, it keeps a ranked answer's order and its confidences non-increasing."""
    slope, bias, first = params or calibration()
    return logistic(slope * logit(confidence) + bias + (first if place == 0 and supported else 0.0))


def uncalibrated(confidence: float, place: int, params: tuple[float, float, float] | None = None,
                 supported: bool = True) -> float:
    """The inverse of :func:`calibrated` (for refitting from saved answers)."""
    slope, bias, first = params or calibration()
    return logistic((logit(confidence) - bias - (first if place == 0 and supported else 0.0)) / slope)


def answer_confidences(values: list[float], supported: bool = True) -> list[float]:
    """A ranked answer's confidences from the evidence model's: non-increasing (:func:`monotone`), then
    calibrated by place (:func:`calibrated`)."""
    return [calibrated(v, i, supported=supported) for i, v in enumerate(monotone(values))]


def monotone(values: list[float]) -> list[float]:
    """The closest non-increasing sequence to ``values`` (pool adjacent violators, equal weights): the
    confidences of a ranked list, so that a document ranked higher is never less likely than one below it."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([v, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    out = []
    for s, n in blocks:
        out += [s / n] * n
    return out
