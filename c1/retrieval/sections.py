"""Sections of a contract or a report: their numbered titles, and the sentences under a title.

A clause the question means but does not word ("a cap on liability") is found through the title its
drafter gave it ("10. LIMITATION ON LIABILITY."): the passages (:mod:`c1.retrieval.passages`) score
the headings of the first document's best chunks by themselves (:func:`section_sentences`), read each
sentence under the last title before it (:func:`carried_from`: a clause title under its section's,
:func:`under`), and read a best section from its title on (:func:`openings`).
"""

from __future__ import annotations

import re

from c1.retrieval import sentences as sx
from c1.retrieval.scorers import HEADING_CHARS, Scorer

TITLE_WORDS = 12
"""A numbered unit of at most this many words, mostly capitalised ("13. Termination.", "Section 5.10
Absence of Certain Changes."), is a section's title: the heading of the sentences after it."""

_NUMBERED_TITLE = re.compile(r"^\s*(?:(?:section|article|item|part|§)\s+)?(?:[0-9]{1,3}(?:\.[0-9]{1,3})*|[IVXLC]{1,6}"
                             r"|\(?[a-zA-Z0-9]{1,3}\))[.):]?\s+\S", re.IGNORECASE)
_SMALL = frozenset("a an and as at by for from in of on or the to with without under upon".split())


def is_title(text: str) -> bool:
    """A numbered section title: "13. Termination.", "10. LIMITATION ON LIABILITY.", "Section 7.03 No
    Solicitation; Other Offers." — at most ``TITLE_WORDS`` words after its number, the words that are
    not small ones capitalised, no sentence inside it (no period before its end)."""
    m = _NUMBERED_TITLE.match(text)
    if not m:
        return False
    return titled(text[m.end() - 1:])


def titled(rest: str) -> bool:
    """Words that read as a title: at most ``TITLE_WORDS``, those that are not small ones capitalised,
    no sentence inside."""
    rest = rest.strip().rstrip(".:;")
    words = re.findall(r"[A-Za-z][\w'’-]*", rest)
    if not words or len(rest.split()) > TITLE_WORDS or re.search(r"[.!?]\s", rest):
        return False
    big = [w for w in words if w.lower() not in _SMALL]
    return bool(big) and sum(1 for w in big if w[0].isupper()) >= 0.8 * len(big)



PARENT_CHUNKS = 12
"""How far back (in chunks) a clause title's section title is looked for: a section's clauses can
run over many chunks ("Section 6.06 No Solicitation of Transactions." over six)."""


def carried_from(by_n: dict, chunk, back: int = 3) -> tuple[str, object, str]:
    """The section a chunk starts in: the last section title (:func:`section_title`) of the chunks
    before it (up to ``back`` of them; ``by_n``: the document's chunks by their number; "" when none),
    a clause title read under its section's (looked for up to ``PARENT_CHUNKS`` chunks further back:
    :func:`under`); the chunk that holds it (None when none); and the title a clause title after it
    in the chunk is read under."""
    last, holder = "", None
    for n in range(chunk.n - 1, chunk.n - 1 - back - PARENT_CHUNKS, -1):
        if not last and n <= chunk.n - 1 - back:
            break
        prev = by_n.get(n)
        if prev is None:
            break
        for u in reversed(sx.split(prev.text)):
            text = u.text(prev.text)
            if (u.kind == "heading" or u.kind in sx.READABLE) and section_title(u, text):
                name = sx.readable(text)
                if not last:
                    last, holder = name, prev
                    if not clause_title(name):
                        return name, holder, name
                elif not clause_title(name):
                    return under(name, last), holder, name
    return last, holder, ""


def clause_title(name: str) -> bool:
    """A title of a lettered clause inside a section ("(b) Exceptions.")."""
    return name.startswith("(")


def under(parent: str, name: str) -> str:
    """A clause title as it reads: under its section's title ("Section 7.03 No Solicitation; Other
    Offers. (b) Exceptions."): "(b) Exceptions." by itself does not say of what."""
    return f"{parent} {name}" if parent and clause_title(name) else name


def openings(by_n: dict, chunks: list) -> dict[str, str]:
    """Where the sections begin that ``chunks`` (the section chunks) start inside of: the ids of the
    chunks from the one holding such a section's title up to the section chunk → that title (a chunk
    that opens with its own title starts inside no earlier section). A best section is read from its
    title on: its first sentences say what it is ("Section 6.06 No Solicitation of Transactions. (a)
    The Company agrees that ... shall not ... solicit"), while the chunks the question ranks best are
    often its later provisos."""
    out: dict[str, str] = {}
    ids = {c.id for c in chunks}
    for chunk in chunks:
        units = [u for u in sx.split(chunk.text) if u.kind == "heading" or u.kind in sx.READABLE]
        if not units or section_title(units[0], units[0].text(chunk.text)):
            continue
        title, holder, _ = carried_from(by_n, chunk)
        if holder is None:
            continue
        for n in range(holder.n, chunk.n):
            if by_n[n].id not in ids:
                out.setdefault(by_n[n].id, title)
    return out


def section_title(unit: sx.Unit, text: str) -> bool:
    """A section's own title: numbered (:func:`is_title`) or a Markdown heading — not the short lines
    a PDF's text stands alone (a running header, a table's caption, "December"), which map nothing."""
    return is_title(text) or unit.kind == "heading" and text.lstrip().startswith("#")


def section_sentences(scorer: Scorer, question: str, sections: dict[str, list], titled: dict[int, float],
                      units: int) -> list:
    """The sentences of the section whose heading alone scores best for ``question`` (one scorer call on
    the headings, short texts): its ``units`` sentences holding most of the question's terms (their
    lexical scores), then the first ones, and its first sentence. ``units`` is what the document can
    hand over (its passages, ``passages.PER_DOC``): a second section, more of the section, or no bound
    on the headings scored found no gold span or page more (docs/relevance.md, "Eleventh pass"). That
    first sentence after the title scores at least what the title did (``titled``): "Where is the
    No-Shop Clause?" is answered by the title "Section 6.06 No Solicitation of Transactions." and what
    follows it, whatever the scorer makes of the sentence alone."""
    names = list(sections)
    if not names:
        return []
    got = scorer(question, [n[:HEADING_CHARS] for n in names])
    best = max(range(len(names)), key=lambda i: got[i])
    under = sections[names[best]]
    out = sorted(under, key=lambda c: (-c.score, c.start))[:units]
    # its first sentence: the one after its title, else (the title lies further back) the earliest read
    first = next((c for c in under if c.title is not None), None) or min(under, key=lambda c: c.start)
    titled[id(first)] = float(got[best])
    return out + [first]
