"""pypdf, PDFium's understudy: it reads the files PDFium refuses to open, and pages whose glyphs
PDFium cannot map to text (CJK fonts with a predefined CMap and no ToUnicode map, for one).

Measured over the shared PDFs (``bench/pdf_extract.py``; the figures: docs/indexing.md): PDFium opens
every file pypdf opens, at a fraction of pypdf's CPU, so pypdf is never the first choice.
"""

from __future__ import annotations

import io
import logging
import warnings as _warnings
from collections.abc import Iterator

from c1.index.documents import Skip
from c1.index.loaders.common import clean, clip, one_line
from c1.index.loaders.pdf_pdfium import PageText

_quiet = False


def _quiet_pypdf() -> None:
    """pypdf reports recoverable damage through the "pypdf" logger and warnings; without a
    handler, Python prints those to stderr. Keep errors for applications that log, nothing else."""
    global _quiet
    if _quiet:
        return
    from pypdf.errors import PdfReadWarning

    logger = logging.getLogger("pypdf")
    logger.setLevel(logging.ERROR)
    logger.addHandler(logging.NullHandler())  # no "last resort" printing to stderr
    _warnings.filterwarnings("ignore", category=PdfReadWarning)
    _warnings.filterwarnings("ignore", module=r"pypdf(\.|$)")
    _quiet = True


class PypdfPdf:
    """A PDF read by pypdf: page count, metadata title, text page by page; raises Skip only."""

    def __init__(self, data: bytes):
        from pypdf import PdfReader

        _quiet_pypdf()
        try:
            self.reader = PdfReader(io.BytesIO(data), strict=False)
            if self.reader.is_encrypted:
                _unlock(self.reader)
            self.page_count = len(self.reader.pages)
        except Skip:
            raise
        except Exception as exc:
            raise Skip(f"damaged PDF ({one_line(exc)})") from None

    def title(self) -> str:
        try:
            raw = getattr(self.reader.metadata, "title", None)
            return clip(clean(str(raw))) if raw is not None else ""
        except Exception:
            return ""

    def page_text(self, index: int) -> str:
        """Text of page ``index`` (from 0); raises what pypdf raises."""
        return clean(self.reader.pages[index].extract_text() or "").strip()

    def pages(self) -> Iterator[PageText]:
        """Each page's text; a page that fails to extract is empty, with a warning."""
        for index in range(self.page_count):
            try:
                yield PageText(index + 1, self.page_text(index))
            except Exception as exc:
                yield PageText(index + 1, "", warning=f"page {index + 1}: no text extracted ({type(exc).__name__})")

    def close(self) -> None:
        pass


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
