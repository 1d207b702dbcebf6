"""Memory of pure functions of a chunk's text.

A search reads the same chunks at every turn, in every ``--parallel`` run and again in the passages;
the resident process reads a collection's likeliest chunks for search after search. Splitting a
text into its lines, sentences and units depends on the text alone, so each is worked out once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

TEXTS = 8192
"""Texts remembered per function (chunks are ~2,000 characters: some 16 MB each at most)."""


def per_text(fn: Callable[[str], list]) -> Callable[[str], list]:
    """``fn`` (one text → a list of immutable items) remembered for the last ``TEXTS`` texts; each call
    returns a list of its own, so a caller that changes its list changes nobody else's."""
    kept = functools.lru_cache(maxsize=TEXTS)(lambda text: tuple(fn(text)))

    @functools.wraps(fn)
    def remembered(text: str) -> list:
        return list(kept(text))

    remembered.cache_clear = kept.cache_clear  # type: ignore[attr-defined]
    return remembered
