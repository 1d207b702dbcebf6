"""The words of a query that carry meaning, and how much of them a text covers, read from the text's
keyword form (:func:`c1.store.keywords.keyword_form`, the form the lexical index stores)."""

from __future__ import annotations

import re

from c1.store.keywords import CJK_RUN, DIGIT, keyword_form

STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its of on or "
    "she that the their them they this to was were what when where which who whom whose why will with "
    "you your i we our us not no than then there these those been being into about also can could "
    "would should may might must shall one ones name named called".split()
)
_WORD = re.compile(r"[\w']+")


def content_terms(text: str) -> list[str]:
    """Lower-cased words that carry meaning (no stopwords, no 1-letter tokens but a lone ideograph),
    read from :func:`keyword_form`, in order, unique."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(keyword_form(text).lower()):
        w = w.strip("'")
        if (len(w) > 1 or w and CJK_RUN.match(w)) and w not in STOPWORDS:
            seen.setdefault(w, None)
    return list(seen)


def coverage(terms: list[str], text: str) -> float:
    """Share of query terms that occur in ``text`` (prefix match, a cheap stand-in for stemming); the
    text read in its :func:`keyword_form` where a term has a digit or a character of Chinese or Japanese
    (the form changes nothing else that terms can match)."""
    if any(DIGIT.search(t) or not t.isascii() for t in terms):
        text = keyword_form(text)
    words = set(_WORD.findall(text.lower()))
    stems = {w[:5] for w in words if len(w) > 4}
    hit = sum(1 for t in terms if t in words or (len(t) > 4 and t[:5] in stems))
    return hit / len(terms)
