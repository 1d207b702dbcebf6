"""What a person sees of a passage: a one-line excerpt around the question's words, the words marked."""

from __future__ import annotations

import re

from c1.retrieval import sentences as sx

EXCERPT_CHARS = 220
"""Characters of a passage shown in the human output (a display width: it ranks nothing)."""


def excerpt(text: str, question: str, limit: int = EXCERPT_CHARS) -> tuple[str, list[tuple[int, int]]]:
    """A short, one-line excerpt of ``text`` around the question's terms, and the spans in it of the
    words that match a term of the question (same stem): the part of the passage that holds most
    of them, cut at words, with "…" where text was left out."""
    from c1.retrieval.terms import content_terms
    from c1.store.lexical import stems

    flat = sx.readable(text)
    wanted = {s for t in content_terms(question) for s in (stems(t) or [t])}
    words = [(m.start(), m.end()) for m in re.finditer(r"[\w'’$%.,-]*\w", flat)]
    marks = [(a, b) for a, b in words if set(stems(flat[a:b])) & wanted]
    if len(flat) > limit:
        best_start, best_hits = 0, -1
        for a, _ in [(0, 0)] + marks:  # the window of ``limit`` characters holding most marked words
            start = max(0, a - limit // 5) if a else 0
            hits = sum(1 for m in marks if start <= m[0] and m[1] <= start + limit)
            if hits > best_hits:
                best_start, best_hits = start, hits
        start = best_start
        if start:
            start = flat.find(" ", start) + 1 or start
        end = start + limit
        if end < len(flat):
            end = flat.rfind(" ", start, end) if flat.rfind(" ", start, end) > start else end
        pre, post = ("…" if start else ""), ("…" if end < len(flat) else "")
        shown = pre + flat[start:end].strip() + post
        shift = len(pre) - start - (len(flat[start:end]) - len(flat[start:end].lstrip()))
        marks = [(a + shift, b + shift) for a, b in marks if start <= a and b <= end]
        return shown, marks
    return flat, marks
