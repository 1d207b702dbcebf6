"""Bridges: the names in a document that the question lacks, which lead a multi-hop search to its next
document ("... in the autonomous community of Murcia")."""

from __future__ import annotations

import functools
import re

from c1.retrieval import text as tx
from c1.retrieval.memo import TEXTS
from c1.retrieval.question_terms import RARE_SHARE
from c1.retrieval.terms import STOPWORDS

BRIDGE_RANK = (1.0, 0.6, 0.4)
"""What a pivot's first, second and third bridge weigh as a link to a document that holds it; a pivot's
bridges are as many as these weights."""
BRIDGES_PER_PIVOT = len(BRIDGE_RANK)


def bridges(ranker, doc, title: str) -> list[str]:
    """Names in the document's content that the question lacks, best sentence first: not its
    own title, not a date, a year, a bare first name, a capitalised word that only starts
    sentences, or a name written all over the corpus (``ranker``: the question's
    :class:`c1.retrieval.evidence.Ranker`; ``doc``: a ``DocView``; ``title``: its title as a name)."""
    read = [_chunk_names(ranker, cid, text) for cid, text in doc.chunks]
    contents = [content for content, _ in read]
    firsts = set().union(*map(_first_names, contents))  # a name or a line never spans two chunks' content
    after_word = _after_lower(contents)
    mids: dict[str, bool] = {}

    def mid(word: str) -> bool:
        got = mids.get(word)
        if got is None:
            got = mids[word] = word in after_word if _WORD.fullmatch(word) else _mid_sentence("\n".join(contents), word)
        return got

    scored: dict[str, float] = {}
    pos = 0
    for _, units in read:
        for rel, names in units:
            for ent, n in names:
                if n == title or n in title:
                    continue
                if " " not in ent and (ent in firsts or not mid(ent)):
                    continue
                score = rel - 0.1 * pos
                if score > scored.get(ent, -1e9):
                    scored[ent] = score
            pos += 1
    picks = sorted(scored, key=lambda e: -scored[e])
    # a bridge is a rare name, as a rare question term is (``RARE_SHARE`` of the chunks at most, and
    # ``evidence.COMMON_MENTIONS``): not a section heading of every filing ("Management's Discussion"),
    # not a colleague's first name in a mailbox
    out = [e for e in picks[: 4 * BRIDGES_PER_PIVOT] if not ranker.common(e, RARE_SHARE)][:BRIDGES_PER_PIVOT + 1]
    return out


def _chunk_names(ranker, chunk_id: str, text: str) -> tuple[str, list[tuple[int, tuple[tuple[str, str], ...]]]]:
    """A chunk's content and, sentence by sentence, the question's terms it holds and its names that the
    question lacks (each with its normal form), remembered by the question's ``ranker``: a pivot is read
    again at every turn that shows it one more chunk, and by every run of the search."""
    got = ranker.chunk_names.get(chunk_id)
    if got is None:
        q_lower = ranker.asked.text.lower()
        terms = set(ranker.asked.terms)
        units = []
        for s, e in tx.units(text):
            words, names = _read(text[s:e])
            kept = tuple((ent, n) for ent in names
                         if ent.lower() not in q_lower and (n := ranker.normed(ent)) and n not in STOPWORDS)
            units.append((sum(1 for t in terms if t in words), kept))
        got = ranker.chunk_names[chunk_id] = (tx.content(text), units)
    return got


@functools.lru_cache(maxsize=4 * TEXTS)
def _read(sentence: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """A sentence's words (lower case) and the names in it that can be bridges whatever the question: three
    characters at least, not a year or a date; remembered (a pivot's sentences are read at every turn)."""
    names = tuple(e for e in tx.entities(sentence)
                  if len(e) >= 3 and not tx.YEAR.match(e) and not any(w in tx.CALENDAR for w in e.split()))
    return frozenset(re.findall(r"[\w']+", sentence.lower())), names


@functools.lru_cache(maxsize=TEXTS)
def _first_names(content: str) -> frozenset[str]:
    """:func:`c1.retrieval.text.bare_first_names` of one chunk's content, remembered: a pivot's bridges are
    read again at every turn that shows one more of its chunks."""
    return frozenset(tx.bare_first_names(content))


_BEFORE_NAME = frozenset("abcdefghijklmnopqrstuvwxyz0123456789,;:)")
_WORD = re.compile(r"\w+")
_AFTER_LOWER = re.compile(r"[a-z0-9,;:)]\s+(?=(\w+))")
_FIRST_WORD = re.compile(r"\s*(\w+)")


def _after_lower(contents: list[str]) -> frozenset[str]:
    """The words that follow a lower-case word or a comma in the chunks' contents joined by newlines: for a
    word, what :func:`_mid_sentence` finds in the joined text, read once for each chunk (a filing's pivot is
    read again at every turn that shows it one more chunk) and across their joins."""
    got = set().union(*map(_words_after_lower, contents))
    last = ""  # the last character of the contents so far that is not white space
    for content in contents:
        if last in _BEFORE_NAME and (m := _FIRST_WORD.match(content)):
            got.add(m.group(1))
        last = content.rstrip()[-1:] or last
    return frozenset(got)


@functools.lru_cache(maxsize=TEXTS)
def _words_after_lower(content: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _AFTER_LOWER.finditer(content))


def _mid_sentence(text: str, word: str) -> bool:
    r"""``word`` occurs capitalised after a lower-case word or a comma somewhere in ``text``: a name,
    not a capitalised word that only starts sentences ("Effective January 1, …"). The same as
    ``re.search(r"[a-z0-9,;:)]\s+WORD(?!\w)")``, read from the word's own occurrences (a filing's text is
    long and a run asks this of every one-word name in it)."""
    n, i = len(word), text.find(word)
    while i != -1:
        after = text[i + n:i + n + 1]
        if not (after.isalnum() or after == "_"):
            j = i - 1
            while j >= 0 and text[j].isspace():
                j -= 1
            if 0 <= j < i - 1 and text[j] in _BEFORE_NAME:
                return True
        i = text.find(word, i + 1)
    return False
