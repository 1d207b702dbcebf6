"""Turn a :class:`~c1.index.walk.Source` into documents, one module per format.

``load(source)`` returns the documents of one file and raises :class:`Skip` (with a one-line,
human reason) when the file cannot be indexed; no other exception escapes it. Problems that do
not prevent indexing (a bad line in a .jsonl corpus, a PDF page whose text cannot be extracted,
a legacy-encoded text file) come back as warnings from ``load_with_warnings``.

Each format is a module of this package that registers itself (see :mod:`.registry`); the
helpers other code uses are re-exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from c1.index.documents import Document, Skip
from c1.index.loaders.common import one_line
from c1.index.loaders.html import html_to_text
from c1.index.loaders.registry import Format, Loaded, OnPage, extensions, format_of, formats

if TYPE_CHECKING:
    from c1.index.walk import Source

__all__ = ["Document", "Format", "Loaded", "OnPage", "Skip", "extensions", "format_of", "formats",
           "html_to_text", "load", "load_with_warnings"]


def load(source: Source) -> list[Document]:
    """The documents of ``source``; raises :class:`Skip` only."""
    return load_with_warnings(source)[0]


def load_with_warnings(source: Source, on_page: OnPage | None = None) -> Loaded:
    """The documents of ``source`` and the non-fatal problems met; raises :class:`Skip` only.
    ``on_page(number, pages)``: told of each page as it is read, by the formats that read pages (PDF)."""
    fmt = format_of(source.kind)
    if fmt is None:
        raise Skip(f"unsupported kind of source: {source.kind}")
    if reason := fmt.missing():
        raise Skip(reason)
    try:
        if on_page is not None and fmt.pages:
            return fmt.load(source.path, on_page=on_page)
        return fmt.load(source.path)
    except Skip:
        raise
    except MemoryError:
        raise Skip("too large to load into memory") from None
    except RecursionError:
        raise Skip("too deeply nested to parse") from None
    except Exception as exc:  # a last resort: a loader bug or a library surprise
        raise Skip(f"could not be read ({type(exc).__name__}: {one_line(exc)})") from exc

