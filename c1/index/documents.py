"""What loaders produce: plain documents with their text, page offsets and metadata.

A file yields zero or more documents (an mbox or a .jsonl corpus yields many). A loader that
cannot read a file raises :class:`Skip` with a short, human reason; nothing else escapes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Skip(Exception):
    """The file cannot be indexed; ``str(exc)`` is the one-line reason shown to the user."""


@dataclass
class Document:
    key: str
    """Unique and stable within the collection: the path, or ``path#<message-id>``, ``path#<id>``."""
    path: str
    """The file the document came from (absolute)."""
    title: str
    text: str
    pages: list[tuple[int, int]] | None = None
    """(character offset where the page starts in ``text``, 1-based page number), ascending."""
    meta: dict[str, str | int] = field(default_factory=dict)
    """Flat metadata: ``source_id`` for .jsonl, ``from``/``to``/``cc``/``date``/``subject``/
    ``message_id``/``attachments`` for email. Only str and int values."""

    def page_at(self, offset: int) -> int | None:
        """The page number that holds character ``offset``, if the document has pages."""
        if not self.pages:
            return None
        page = self.pages[0][1]
        for start, number in self.pages:
            if start > offset:
                break
            page = number
        return page
