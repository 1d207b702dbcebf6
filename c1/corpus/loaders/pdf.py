"""PDF files: the text of every page, with page offsets, and a title from the metadata."""

from __future__ import annotations

import io
import logging
import re
import warnings as _warnings

from c1.corpus.documents import Document, Skip
from c1.corpus.loaders.common import clean, clip, file_name, first_line, one_line, read_bytes
from c1.corpus.loaders.registry import Format, Loaded, register

# "report.doc", "C:\\work\\x.pdf", "10811.exe": a file name where a title should be
_FILE_NAME_TITLE = re.compile(
    r"\.(pdf|docx?|odt|rtf|txt|tex|dvi|ps|indd|pptx?|xlsx?|html?)$|^\S+\.[A-Za-z0-9]{2,4}$", re.I
)
_JUNK_TITLES = {"untitled", "title", "document", "untitled document", "no title", "slide 1",
                "microsoft word", "pdf", "(anonymous)", "unknown"}
_pypdf_quiet = False


def _quiet_pypdf() -> None:
    """pypdf reports recoverable damage through the "pypdf" logger and warnings; without a
    handler, Python prints those to stderr. Keep errors for applications that log, nothing else."""
    global _pypdf_quiet
    if _pypdf_quiet:
        return
    from pypdf.errors import PdfReadWarning

    logger = logging.getLogger("pypdf")
    logger.setLevel(logging.ERROR)
    logger.addHandler(logging.NullHandler())  # no "last resort" printing to stderr
    _warnings.filterwarnings("ignore", category=PdfReadWarning)
    _warnings.filterwarnings("ignore", module=r"pypdf(\.|$)")
    _pypdf_quiet = True


def load_pdf(path: str) -> Loaded:
    from pypdf import PdfReader

    _quiet_pypdf()
    data = read_bytes(path)
    if not data:
        raise Skip("empty file")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            _unlock(reader)
        page_count = len(reader.pages)
    except Skip:
        raise
    except Exception as exc:
        if b"%PDF-" not in data[:1024]:  # where the spec wants the header (pypdf is laxer)
            raise Skip("not a PDF file (no %PDF header)") from None
        raise Skip(f"damaged PDF ({one_line(exc)})") from None
    if page_count == 0:
        raise Skip("PDF has no pages")
    texts, warnings = _page_texts(reader, page_count)
    text, pages = _join_pages(texts)
    if not text.strip():
        raise Skip("no extractable text (scanned PDF?)")
    title = _pdf_title(reader) or first_line(text) or file_name(path)
    return [Document(key=path, path=path, title=title, text=text, pages=pages)], warnings


def _unlock(reader) -> None:
    """Open a PDF encrypted with an empty user password (common: "no copy" permissions)."""
    from pypdf.errors import DependencyError

    try:
        if reader.decrypt(""):
            return
    except DependencyError:
        raise Skip("encrypted PDF (AES): install the 'cryptography' package to read it") from None
    except NotImplementedError as exc:
        raise Skip(f"encrypted PDF (unsupported encryption: {one_line(exc)})") from None
    raise Skip("encrypted PDF (password required)")


def _page_texts(reader, page_count: int) -> tuple[list[str], list[str]]:
    """Text of each page; a page that fails to extract is empty, with a warning."""
    texts, warnings = [], []
    for number in range(1, page_count + 1):
        try:
            texts.append(clean(reader.pages[number - 1].extract_text() or "").strip())
        except Exception as exc:
            texts.append("")
            warnings.append(f"page {number}: no text extracted ({type(exc).__name__})")
    return texts, warnings


def _join_pages(texts: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Pages joined with a blank line; page n starts where its text starts, and the separator
    after a page belongs to it, so every character maps to exactly one page."""
    pages, offset = [], 0
    for number, text in enumerate(texts, 1):
        pages.append((offset, number))
        offset += len(text) + 2
    return "\n\n".join(texts), pages


def _pdf_title(reader) -> str | None:
    """``/Title`` from the metadata when it looks like a real title (not a file name, not a
    word processor's placeholder)."""
    try:
        raw = getattr(reader.metadata, "title", None)
        title = clip(clean(str(raw))) if raw is not None else ""
    except Exception:
        return None
    lowered = title.lower()
    if (
        len(title) < 3
        or lowered in _JUNK_TITLES
        or lowered.startswith("microsoft word - ")
        or _FILE_NAME_TITLE.search(title)
        or "\ufffd" in title
        or not any(ch.isalpha() for ch in title)
    ):
        return None
    return title


register(Format("pdf", (".pdf",), load_pdf))
