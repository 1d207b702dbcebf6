"""Cut a document's text into chunks of about N model tokens, at paragraph or sentence bounds.

Every chunk is an exact slice ``text[start:end]`` of its document, so the character span stored
with it is true and the page of a chunk is the page of its first character. Consecutive chunks
overlap by a few sentences (about ``overlap`` tokens) so that a fact straddling a cut is whole in
at least one chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from c1.tokens import chars_for_tokens

_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# Where a sentence ends: after its punctuation and any closing quotes or brackets (which stay
# with it), before the whitespace that precedes the next one; or at a line that starts a list item.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*(?=\s+\S)|\n(?=\s*(?:[-*•]|\d+[.)])\s)")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Span:
    start: int
    end: int


def _units(text: str, max_chars: int) -> list[Span]:
    """Sentence-sized spans covering the non-blank text, none longer than ``max_chars``."""
    units: list[Span] = []
    pos = 0
    for para in _PARAGRAPH.split(text):
        p_start = text.index(para, pos) if para else pos
        pos = p_start + len(para)
        if not para.strip():
            continue
        s_start = p_start
        for m in _SENTENCE_END.finditer(para):
            units.extend(hard_split(text, s_start, p_start + m.end(), max_chars))
            s_start = p_start + m.end()
        units.extend(hard_split(text, s_start, p_start + len(para), max_chars))
    return units


def hard_split(text: str, start: int, end: int, max_chars: int) -> list[Span]:
    """Split an over-long sentence at whitespace (or anywhere, as a last resort)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    spans = []
    while end - start > max_chars:
        cut = text.rfind(" ", start + max_chars // 2, start + max_chars)
        cut = cut if cut > start else start + max_chars
        spans.append(Span(start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        spans.append(Span(start, end))
    return spans


def chunk_spans(text: str, tokens: int = 512, overlap: int = 48) -> list[Span]:
    """Greedy packing of sentence units into chunks of at most ~``tokens`` model tokens."""
    max_chars = chars_for_tokens(tokens)
    overlap_chars = chars_for_tokens(overlap)
    units = _units(text, max_chars)
    chunks: list[Span] = []
    i = 0
    while i < len(units):
        j = i
        while j + 1 < len(units) and units[j + 1].end - units[i].start <= max_chars:
            j += 1
        chunks.append(Span(units[i].start, units[j].end))
        if j + 1 >= len(units):
            break
        # Start the next chunk a few units back, but always move forward.
        k = j + 1
        while k - 1 > i and units[j].end - units[k - 1].start <= overlap_chars:
            k -= 1
        i = k
    return chunks


def normalise_space(text: str) -> str:
    return _SPACE.sub(" ", text).strip()
