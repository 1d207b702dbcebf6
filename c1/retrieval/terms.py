"""The words of a query that carry meaning, and how much of them a text covers, read from the text's
keyword form (:func:`c1.store.keywords.keyword_form`, the form the lexical index stores)."""

from __future__ import annotations

import functools
import re
import sys

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
    words, stems = _words(keyword_form(text) if any(DIGIT.search(t) or not t.isascii() for t in terms) else text)
    hit = sum(1 for t in terms if t in words or (len(t) > 4 and t[:5] in stems))
    return hit / len(terms)


@functools.lru_cache(maxsize=2048)
def _words(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """A text's words in lower case and the first five letters of the longer ones, remembered for the last
    2,048 texts: a read ranks every chunk of a 10-K (some 500) against its query, and the next read, turn
    and ``--parallel`` run the same ones again (the words are interned: a collection's chunks share most of
    them; some 16 KB a text)."""
    words = frozenset(sys.intern(w) for w in _WORD.findall(text.lower()))
    return words, frozenset(sys.intern(w[:5]) for w in words if len(w) > 4)
