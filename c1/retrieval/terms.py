"""The words of a query that carry meaning, and how much of them a text covers."""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its of on or "
    "she that the their them they this to was were what when where which who whom whose why will with "
    "you your i we our us not no than then there these those been being into about also can could "
    "would should may might must shall one ones name named called".split()
)
_WORD = re.compile(r"[\w']+")


def content_terms(text: str) -> list[str]:
    """Lower-cased words that carry meaning (no stopwords, no 1-letter tokens), in order, unique."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        w = w.strip("'")
        if len(w) > 1 and w not in STOPWORDS:
            seen.setdefault(w, None)
    return list(seen)


def coverage(terms: list[str], text: str) -> float:
    """Share of query terms that occur in ``text`` (prefix match, a cheap stand-in for stemming)."""
    words = set(_WORD.findall(text.lower()))
    stems = {w[:5] for w in words if len(w) > 4}
    hit = sum(1 for t in terms if t in words or (len(t) > 4 and t[:5] in stems))
    return hit / len(terms)
