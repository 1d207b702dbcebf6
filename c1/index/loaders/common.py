"""Helpers shared by the format modules: reading bytes, cleaning and clipping text, titles."""

from __future__ import annotations

import atexit
import codecs
import os
import re

from c1.index.documents import Skip

TITLE_MAX = 120
SNIFF = 8192  # bytes looked at to tell binary files from text
MAX_WARNINGS = 20  # per kind of problem, per file

BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def read_bytes(path: str, *, nonempty: bool = False) -> bytes:
    """The file's bytes; raises Skip when it cannot be read (or, with ``nonempty``, is empty)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise cannot_read(exc) from None
    if nonempty and not data:
        raise Skip("empty file")
    return data


MAIL_HEADERS = frozenset({"message-id", "from", "to", "date", "subject", "received", "return-path"})
"""Header fields of which one, at the top of a file, makes it a mail message (the walk and the .eml loader)."""


def cannot_read(exc: OSError) -> Skip:
    """The skip for a file the system would not let us read."""
    return Skip(f"cannot read file ({exc.strerror or exc})")


def one_line(value: object, limit: int = 160) -> str:
    return clip(str(value), limit) or "no details"


def clip(text: str, limit: int = TITLE_MAX) -> str:
    """Whitespace collapsed, at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def first_line(text: str) -> str:
    """The first line with a letter or digit in it (skips ``----`` rules and the like)."""
    for line in text.splitlines():
        if any(ch.isalnum() for ch in line):
            return clip(line)
    return ""


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """Drop NULs and repair lone surrogates, which JSON encoders and vector stores reject.

    The email parser keeps undecodable bytes as surrogate escapes; those are turned back into
    bytes and decoded as UTF-8 (else Windows-1252), anything else becomes U+FFFD.
    """
    text = text.replace("\x00", "")
    if not _SURROGATE.search(text):
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def file_name(path: str) -> str:
    return os.path.basename(path)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def capped(messages: list[str]) -> list[str]:
    """At most ``MAX_WARNINGS`` messages, then one line saying how many more there were."""
    if len(messages) <= MAX_WARNINGS:
        return messages
    return messages[:MAX_WARNINGS] + [f"... and {len(messages) - MAX_WARNINGS} more like these"]


def join_pages(texts: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Pages (slides, sheets, chapters) joined with a blank line, and where each starts: page n
    starts where its text starts, and the separator after a page belongs to it, so every
    character maps to exactly one page."""
    pages, offset = [], 0
    for number, text in enumerate(texts, 1):
        pages.append((offset, number))
        offset += len(text) + 2
    return "\n\n".join(texts), pages


def row_text(cells: list[str], headers: list[str] | None = None) -> str:
    """One table row as a line: ``Region: West | Sales: 1,200`` with column headers, else
    ``West | 1,200``; empty cells left out. Every other cell is kept, equal neighbours too: a
    merged cell comes to this function once (the loaders blank the cells its range covers),
    so two equal values are two values."""
    parts = []
    for i, cell in enumerate(cells):
        cell = " ".join(str(cell).split())
        if not cell:
            continue
        header = headers[i] if headers and i < len(headers) else ""
        parts.append(f"{header}: {cell}" if header and header != cell else cell)
    return " | ".join(parts)


def table_text(rows: list[list[str]]) -> str:
    """A table's rows as lines; the first row's cells name the columns of the rows below it."""
    if not rows:
        return ""
    headers = rows[0]
    return "\n".join(filter(None, [row_text(headers)] + [row_text(r, headers) for r in rows[1:]]))


def run_first_at_exit(handler) -> None:
    """(Re-)register ``handler`` so that it runs before every exit handler registered so far
    (they run last-registered first): libraries keep registering theirs as they are used."""
    atexit.unregister(handler)
    atexit.register(handler)
