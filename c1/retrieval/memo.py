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
LONG_CHARS = 4000
"""A longer text (the chunks of a document in view, joined) is remembered among ``LONG_TEXTS`` alone."""
LONG_TEXTS = 64
"""Long texts remembered per function: a turn joins one a document in view, and the next turn mostly the same."""


def per_text(fn: Callable[[str], list]) -> Callable[[str], list]:
    """``fn`` (one text → a list of immutable items) remembered for the last ``TEXTS`` texts; each call
    returns a list of its own, so a caller that changes its list changes nobody else's."""
    kept = functools.lru_cache(maxsize=TEXTS)(lambda text: tuple(fn(text)))

    @functools.wraps(fn)
    def remembered(text: str) -> list:
        return list(kept(text))

    remembered.cache_clear = kept.cache_clear  # type: ignore[attr-defined]
    return remembered


def per_string(fn: Callable[[str], object]) -> Callable[[str], object]:
    """``fn`` (one text → an immutable value: a string, a frozenset) remembered for the last ``TEXTS``
    short texts and the last ``LONG_TEXTS`` long ones, so that a few joined documents do not take the
    memory of thousands of chunks."""
    short = functools.lru_cache(maxsize=TEXTS)(fn)
    long = functools.lru_cache(maxsize=LONG_TEXTS)(fn)

    @functools.wraps(fn)
    def remembered(text: str):
        return (long if len(text) > LONG_CHARS else short)(text)

    remembered.cache_clear = lambda: (short.cache_clear(), long.cache_clear())  # type: ignore[attr-defined]
    return remembered
