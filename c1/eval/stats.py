"""Bootstrap intervals over questions: how far a figure, or a difference of two, can move by chance.

Each figure of a benchmark is a mean over questions (found, full recall, rank 1: 0 or 1 per
question). The percentile bootstrap resamples the questions with replacement, ``resamples`` times with
a fixed seed, and takes the 2.5th and 97.5th percentiles of the resampled means. A difference between
two systems run on the same questions is *paired*: each resample draws the same questions for both,
which is the bootstrap of the per-question differences; it is much narrower than two separate
intervals when the systems agree on most questions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

RESAMPLES = 2000
SEED = 0
LEVEL = 0.95


@lru_cache(maxsize=16)
def _draws(n: int, resamples: int, seed: int):
    """A (resamples, n) matrix of question indices; the same for every call with the same arguments
    (read-only: it is shared between calls)."""
    import numpy as np

    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    draws.flags.writeable = False
    return draws


def interval(values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED,
             level: float = LEVEL) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``; (nan, nan) when there are none."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (math.nan, math.nan)
    means = x[_draws(x.size, resamples, seed)].mean(axis=1)
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return (float(lo), float(hi))


def paired_interval(a: Sequence[float], b: Sequence[float], **kw) -> tuple[float, float, float]:
    """(mean(a) − mean(b), low, high): the paired bootstrap interval of the difference, ``a[i]`` and
    ``b[i]`` being the same question's values."""
    if len(a) != len(b):
        raise ValueError(f"paired values differ in length ({len(a)} and {len(b)})")
    diff = [float(x) - float(y) for x, y in zip(a, b)]
    lo, hi = interval(diff, **kw)
    return (sum(diff) / len(diff) if diff else math.nan, lo, hi)


def excludes_zero(lo: float, hi: float) -> bool:
    """Whether an interval of a difference lies wholly on one side of 0."""
    return lo > 0 or hi < 0


def half_width(p: float, n: int, level: float = LEVEL) -> float:
    """Half-width of the normal-approximation interval of a proportion ``p`` over ``n`` questions:
    roughly the smallest change of one system's figure that its own interval can show."""
    from statistics import NormalDist

    if n <= 0:
        return math.nan
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    return z * math.sqrt(max(p * (1 - p), 0.0) / n)


def pair(a: dict[str, float], b: dict[str, float]) -> tuple[list[str], list[float], list[float]]:
    """The question ids both runs hold (in ``a``'s order) and their values in each."""
    ids = [q for q in a if q in b]
    return ids, [a[q] for q in ids], [b[q] for q in ids]


def smallest_gain(n: int, lost: int = 0, **kw) -> int | None:
    """The fewest questions a change must gain, losing ``lost`` others of ``n``, for its paired
    interval to exclude 0 (None when no number of gains does)."""
    for gained in range(1, n - lost + 1):
        diff = [1.0] * gained + [-1.0] * lost + [0.0] * (n - gained - lost)
        if interval(diff, **kw)[0] > 0:
            return gained
    return None
