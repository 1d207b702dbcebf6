"""Checking what a teacher claims against the corpus: quotes, truths and clue leaks.

A teacher that writes a task cites verbatim quotes from the chunks it used. Every quote is looked
up in the text of the chunk it names, after normalisation (Unicode NFKC, case folded, curly quotes
and dashes unified, punctuation and whitespace runs collapsed to one space); an ellipsis splits a
quote into fragments that must occur in order. A quote shorter than ``MIN_QUOTE_CHARS`` once
normalised proves nothing and counts as not found.

A level of a task passes when
- at least ``MIN_FOUND`` (2/3) of all its quotes (clue quotes and item quotes) are found;
- at least one supporting item contains the truth (computed here from the chunk text, never
  taken from the teacher);
- neither the question nor any kept clue contains the truth;
- at least one clue survives (clues whose quote is not found, or that copy a run of
  ``LEAK_WORDS`` words from their chunk, are dropped).
Quotes that were not found are removed from the task and listed in ``rejected_quotes``:
fabricated text never reaches the task file.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

MIN_FOUND = 2 / 3
MIN_QUOTE_CHARS = 12
LEAK_WORDS = 4

_TRANSLATE = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u00a0": " ",
})
_NON_WORD = re.compile(r"[^\w]+", re.UNICODE)
_ELLIPSIS = re.compile(r"\.\s*\.\s*\.|\u2026|\[\s*\.\.\.\s*\]")


def normalise(text: str) -> str:
    """Case-folded words separated by single spaces: what quotes are compared on."""
    text = unicodedata.normalize("NFKC", text or "").translate(_TRANSLATE).casefold()
    return _NON_WORD.sub(" ", text).replace("_", " ").strip()


def _padded(text: str) -> str:
    return f" {normalise(text)} "


def contains(needle: str, haystack: str) -> bool:
    """``needle`` occurs in ``haystack`` on word boundaries, after normalisation."""
    n = normalise(needle)
    return bool(n) and f" {n} " in _padded(haystack)


def quote_found(quote: str, text: str) -> bool:
    """The quote (its ellipsis-separated fragments, in order) is in ``text``."""
    fragments = [normalise(f) for f in _ELLIPSIS.split(quote or "")]
    fragments = [f for f in fragments if f]
    if sum(len(f) for f in fragments) < MIN_QUOTE_CHARS:
        return False
    hay = _padded(text)
    pos = 0
    for frag in fragments:
        at = hay.find(f" {frag} ", pos)
        if at < 0:
            return False
        pos = at + len(frag) + 1
    return True


def leaks(clue: str, source: str, words: int = LEAK_WORDS) -> bool:
    """The clue copies a run of ``words`` consecutive words from its source chunk."""
    cw = normalise(clue).split()
    if len(cw) < words:
        return False
    hay = _padded(source)
    return any(f" {' '.join(cw[i:i + words])} " in hay for i in range(len(cw) - words + 1))


@dataclass
class Verdict:
    ok: bool
    reasons: list[str] = field(default_factory=list)
    quotes: int = 0
    found: int = 0
    rejected_quotes: list[str] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    """Supporting items with only their found quotes and a computed ``contains_truth``."""
    clues: list[dict] = field(default_factory=list)
    """Clues whose quote was found and that do not leak their chunk's words."""
    truth_in: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.found / self.quotes if self.quotes else 0.0

    def to_json(self) -> dict:
        return {"quotes": self.quotes, "found": self.found, "ratio": round(self.ratio, 4),
                "rejected_quotes": self.rejected_quotes, "truth_in": self.truth_in}


def verify_level(items: list[dict], clues: list[dict], truth: str, question: str,
                 chunk_text: dict[str, str], min_found: float = MIN_FOUND) -> Verdict:
    """Check one level. ``items``: ``[{chunk_id, quotes: [str]}]``; ``clues``: ``[{text, chunk_id,
    quote}]``; ``chunk_text``: chunk id → text for every chunk the teacher was shown (an id outside
    it is unknown and its quotes count as not found)."""
    v = Verdict(ok=False)
    for it in items:
        text = chunk_text.get(it.get("chunk_id", ""))
        kept = []
        for q in it.get("quotes") or []:
            v.quotes += 1
            if text is not None and isinstance(q, str) and quote_found(q, text):
                v.found += 1
                kept.append(q)
            else:
                v.rejected_quotes.append(str(q))
        if text is None:
            v.reasons.append(f"unknown chunk {it.get('chunk_id')!r}")
            continue
        has_truth = contains(truth, text)
        if has_truth:
            v.truth_in.append(it["chunk_id"])
        v.items.append({**it, "quotes": kept, "contains_truth": has_truth})
    for c in clues:
        text = chunk_text.get(c.get("chunk_id", ""))
        v.quotes += 1
        q = c.get("quote", "")
        if text is None or not isinstance(q, str) or not quote_found(q, text):
            v.rejected_quotes.append(str(q))
            continue
        v.found += 1
        if leaks(c.get("text", ""), text) or contains(truth, c.get("text", "")):
            v.reasons.append(f"clue copies its chunk or gives the truth away: {c.get('text', '')[:80]!r}")
            continue
        v.clues.append(c)
    if v.quotes == 0 or v.ratio < min_found:
        v.reasons.append(f"only {v.found} of {v.quotes} quotes found in their chunks (need {min_found:.0%})")
    if not v.truth_in:
        v.reasons.append(f"no supporting chunk contains the truth {truth!r}")
    if not normalise(truth):
        v.reasons.append("empty truth")
    if contains(truth, question):
        v.reasons.append("the question contains the truth")
    if not v.clues:
        v.reasons.append("no usable clue")
    v.ok = bool(v.quotes) and v.ratio >= min_found and bool(v.truth_in) and bool(normalise(truth)) \
        and not contains(truth, question) and bool(v.clues)
    return v
