"""The context each chunk is indexed with: what document it is from and where in it.

A chunk from page 62 of a long filing ("Purchases of property, plant and equipment (1,577)")
never says which company or year it belongs to, so neither BM25 nor the embedding can tie it to a
question that names them. What is indexed for a chunk is therefore the chunk plus a short header:

- for BM25, the ``title`` field holds the document's identity (its title and its file-name words:
  ``3M_2018_10K.pdf`` → "3M 2018 10K") and the ``text`` field the section heading the chunk sits
  under, then the chunk;
- for the embedding, one line ``title · file-name words · heading · page N`` before the chunk.

The text stored, returned to users and shown to the model stays the chunk itself. File-name words
are left out for files that hold many documents (a ``.jsonl`` corpus, an mbox: the file name
names the collection, not the document) and when the title already contains them; the embedding
header is left out entirely when the chunk starts with its title (a passage corpus), so short
passages are embedded as before.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from c1.store.names import file_name_words

HEADER_VERSION = 2
"""Bumped whenever what is indexed for a chunk changes (collections built before embed without it)."""

MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
"""A Markdown ATX heading line; group 1 is its text without the marks (``## Intro ##`` → "Intro";
a ``#`` that ends a word stays: ``# Learning C#`` → "Learning C#"). Titles use it too."""
_NUMBER = re.compile(r"\d[\d,.%$]*")
_WORD = re.compile(r"[^\W\d_][\w'’&.-]*")
_SMALL = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to", "with",
          "vs", "per", "its", "our", "their", "de", "la", "le", "du", "des", "und", "der", "die"}
_SPACE = re.compile(r"\s+")
HEADING_MAX = 90
"""Longest line taken as a heading (characters)."""
RUNNING_HEADER = 3
"""A heading-like line that occurs this often in one document is a running page header or footer
("Table of Contents", the company name), not a section heading."""


@dataclass(frozen=True)
class ChunkContext:
    title: str
    identity: str
    """Title and file-name words: the lexical ``title`` field."""
    heading: str
    """The section heading the chunk sits under ("" when none is known)."""
    page: int | None

    def lexical_text(self, text: str) -> str:
        """The lexical ``text`` field: the heading, then the chunk."""
        return f"{self.heading}\n{text}" if self.heading else text

    def embed_text(self, text: str) -> str:
        """What the embedder sees: ``title · file-name words · heading · page N``, then the chunk.

        A heading the chunk starts with is not repeated; the header is left out when it would be
        the title alone and the chunk starts with it (a passage, the first chunk of a note)."""
        parts = [self.identity] if self.identity else []
        if self.heading and not _starts_with(text, self.heading):
            parts.append(self.heading)
        if self.page is not None:
            parts.append(f"page {self.page}")
        if not parts or (parts == [self.identity] and self.identity == self.title
                         and text.lstrip().startswith(self.title[:40])):
            return text
        return " · ".join(parts) + "\n" + text


def identity(title: str, path: str, key: str) -> str:
    """The document's title plus the words of its file name, when the file is the document and
    its title does not already hold them."""
    title = _SPACE.sub(" ", title or "").strip()
    if key != path:  # one of many documents of a file (.jsonl, mbox): the file name is not its name
        return title
    words = file_name_words(path)
    if not words or _squash(words) in _squash(title):
        return title
    return f"{title} · {words}" if title else words


def contexts(title: str, path: str, key: str, text: str, chunks: Sequence) -> list[ChunkContext]:
    """One context per chunk (``chunks``: anything with ``start`` and ``page``, in document order)."""
    ident = identity(title, path, key)
    heads = section_headings(text, [c.start for c in chunks])
    return [ChunkContext(title or "", ident, h, c.page) for c, h in zip(chunks, heads)]


def stored_contexts(doc, chunks: Sequence) -> dict[str, ChunkContext]:
    """Chunk id → context, from what the manifest keeps (a repair has no source text): chunks are
    exact slices of their document, so its lines come back from them."""
    chunks = sorted(chunks, key=lambda c: c.start)
    return {c.id: ctx for c, ctx in zip(chunks, contexts(doc.title, doc.path, doc.key, text_from_chunks(chunks), chunks))}


def text_from_chunks(chunks: Sequence) -> str:
    """The document text rebuilt from its chunks (``start``, ``text``): each chunk at its offset,
    gaps (the blank space between chunks) as newlines."""
    out: list[str] = []
    pos = 0
    for c in sorted(chunks, key=lambda c: c.start):
        if c.start > pos:
            out.append("\n" * (c.start - pos))
            pos = c.start
        end = c.start + len(c.text)
        if end > pos:
            out.append(c.text[pos - c.start:])
            pos = end
    return "".join(out)


def section_headings(text: str, starts: Sequence[int]) -> list[str]:
    """For each chunk start offset, the last heading line that begins before it ("" if none)."""
    found = headings(text)
    out, i, current = [], 0, ""
    for start in starts:
        while i < len(found) and found[i][0] < start:
            current = found[i][1]
            i += 1
        out.append(current)
    return out


def headings(text: str) -> list[tuple[int, str]]:
    """(offset, heading) of each line that reads as a section heading: a Markdown ``#`` line, or a
    short line in title case or capitals without sentence punctuation or figures, that does not
    repeat on every page."""
    lines: list[tuple[int, str, bool]] = []
    pos = 0
    for raw in text.splitlines(keepends=True):
        line = raw.strip()
        md = MD_HEADING.match(line)
        if md and md.group(1).strip():
            lines.append((pos, md.group(1).strip(), True))
        elif line and is_heading(line):
            lines.append((pos, _SPACE.sub(" ", line), False))
        pos += len(raw)
    counts = Counter(h for _, h, md in lines if not md)
    return [(p, h) for p, h, md in lines if md or counts[h] < RUNNING_HEADER]


def is_heading(line: str) -> bool:
    """A line that looks like a heading: 3-90 characters, starts with a capital (or "1.2 Title"),
    does not end like a sentence or a table row label, holds at most one number, and its words are
    capitalised (short function words aside)."""
    if not 3 <= len(line) <= HEADING_MAX or line[-1] in ".,;:" or line[0] in "(•-*–—":
        return False
    body = re.sub(r"^(?:\d+(?:\.\d+)*\.?|[IVX]+\.)\s+", "", line)  # "2.3 Results", "IV. Discussion"
    if not body[:1].isupper() and not body[:1].isdigit():
        return False
    if len(_NUMBER.findall(line)) > 1:
        return False
    words = _WORD.findall(body)
    if not words or len(words) > 12:
        return False
    content = [w for w in words if w.lower() not in _SMALL]
    if not content:
        return False
    capitalised = sum(1 for w in content if w[0].isupper())
    return capitalised >= max(1, round(0.8 * len(content)))


def _squash(text: str) -> str:
    return re.sub(r"\W", "", text.lower())


def _starts_with(text: str, prefix: str) -> bool:
    return _squash(text[: len(prefix) + 40]).startswith(_squash(prefix)[:40])
