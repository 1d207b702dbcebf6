"""A candidate of a passage: one readable sentence (or table row) of a returned document, what the scorer
reads of it (:meth:`Candidate.scored_text`), how it grows into a passage with its neighbours
(:func:`grow`, :func:`past_lead_in`), and how a person reads it (:func:`shown`)."""

from __future__ import annotations

from dataclasses import dataclass

from c1.retrieval import sentences as sx
from c1.retrieval.scorers import HEADING_CHARS, PAIR_CHARS
from c1.retrieval.sections import titled


@dataclass
class Candidate:
    doc_rank: int
    doc_id: str
    chunk_id: str
    index: int
    """Its place among the chunk's units."""
    start: int
    end: int
    """In document offsets."""
    text: str
    score: float = 0.0
    heading: str = ""
    """The last heading before it in its chunk ("12.1 GOVERNING LAW.", "CONSOLIDATED STATEMENTS OF CASH
    FLOWS"): the scorer reads it with the sentence, which often does not name its own subject."""
    title: int | None = None
    """Where the title it directly follows starts (document offsets): a passage from it starts there."""
    columns: str = ""
    """A table row's header row (:func:`c1.retrieval.pages.is_header_row`: "(Millions) 2022 2021 2020"):
    what its figures are, read with it."""

    def scored_text(self) -> str:
        """What the scorer reads: the heading (up to ``HEADING_CHARS``), a row's columns and the sentence,
        together at most ``PAIR_CHARS`` (~128 word pieces: a cross-encoder's time grows with the pair's
        length)."""
        text = "\n".join(t for t in (self.heading[:HEADING_CHARS], self.columns[:HEADING_CHARS], self.text) if t)
        return text[:PAIR_CHARS]


def shown(chunk, sent: Candidate) -> str:
    """A sentence of a chunk as a person reads it: a table row with its column names, else without markup."""
    units = list(sx.split(chunk.text))
    for i, u in enumerate(units):
        if chunk.start + u.start == sent.start and u.kind == "row":
            return sx.row_with_header(chunk.text, units, i)
    return sx.readable(sent.text)


def grow(units: list[Candidate], i: int, floor: float, window: int) -> tuple[Candidate, Candidate]:
    """The run of consecutive sentences around ``units[i]``: neighbours scoring at least ``floor``
    joined, the better first, while the run spans at most ``window`` characters."""
    lo = hi = i
    while True:
        options = []
        if lo > 0 and units[lo - 1].score >= floor and units[hi].end - units[lo - 1].start <= window:
            options.append((units[lo - 1].score, lo - 1, hi))
        if hi + 1 < len(units) and units[hi + 1].score >= floor and units[hi + 1].end - units[lo].start <= window:
            options.append((units[hi + 1].score, lo, hi + 1))
        if not options:
            return units[lo], units[hi]
        _, lo, hi = max(options)


def past_lead_in(units: list[Candidate], first: Candidate, last: Candidate, window: int) -> Candidate:
    """A passage does not end on a lead-in: a line that reads as a title ("Governing Law; Submission To
    Jurisdiction; Venue.", unnumbered, so not taken for one) or a sentence ending in a colon ("Subject to
    the provisions of this Agreement, as of the Effective Date:"). What it introduces is the clause:
    the sentence after it joins, while the passage spans at most ``window`` characters."""
    i = last.index
    while (titled(units[i].text) or units[i].text.rstrip().endswith(":")) and i + 1 < len(units) \
            and units[i + 1].end - first.start <= window:
        i += 1
    return units[i]
