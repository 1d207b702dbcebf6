"""PDFium (pypdfium2) reads PDF text: the same text as pypdf, at a fraction of its CPU (``bench/pdf_extract.py``;
docs/indexing.md).

PDFium is not thread-safe, not even across documents: every call into it, from any thread, holds
:data:`LOCK`. Objects are closed explicitly under the lock rather than left to the garbage
collector, which could finalise them on another thread in the middle of someone else's call.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from c1.index.documents import Skip
from c1.index.loaders import ocr
from c1.index.loaders.common import clean, clip, run_first_at_exit
from c1.index.loaders.pdf_rows import join_rows

LOCK = threading.RLock()
"""Held around every PDFium call in this process (text here, page rendering for OCR)."""

_PASSWORD, _UNSUPPORTED_SECURITY = 4, 5  # FPDF_ERR_PASSWORD, FPDF_ERR_SECURITY
_TRAILING_SPACE = re.compile(r"[ \t]+(?=\n)")
_LINE = re.compile(r"[^\r\n]+")
_RIGHT_TO_LEFT = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")  # Hebrew, Arabic, Syriac...


class Refused(Exception):
    """PDFium cannot open the file (damaged, or not a PDF); another reader may still manage."""


@dataclass
class PageText:
    number: int
    """1-based."""
    text: str
    lost_glyphs: bool = False
    """The page draws text that PDFium could not map to characters (a font without a Unicode
    map that PDFium knows): another reader may do better."""
    right_to_left: bool = False
    """The page has Arabic or Hebrew text, which PDFium returns in visual order (reversed)."""
    lines: list[tuple[str, float | None]] | None = None
    """First page only: its first lines with their type size, to find its heading."""
    warning: str | None = None
    image: object = None
    """The page rendered (a PIL image) when it is to be read by OCR, else None."""
    read_by_ocr: bool = False


class PdfiumPdf:
    """An open PDF: page count, metadata title, text page by page (one page held at a time)."""

    def __init__(self, data: bytes):
        import pypdfium2 as pdfium

        with LOCK:
            try:
                self.doc = pdfium.PdfDocument(data)
            except pdfium.PdfiumError as exc:
                if exc.err_code == _PASSWORD:
                    raise Skip("encrypted PDF (password required)") from None
                if exc.err_code == _UNSUPPORTED_SECURITY:
                    raise Skip("encrypted PDF (unsupported encryption)") from None
                raise Refused(str(exc)) from None
            self.page_count = len(self.doc)

    def title(self) -> str:
        with LOCK:
            try:
                raw = self.doc.get_metadata_value("Title")
            except Exception:
                return ""
        return clip(clean(raw or ""))

    def pages(self) -> Iterator[PageText]:
        """Each page's text in reading order as PDFium sees it; the lock is held per page only,
        so that a consumer may do other work (or stream pages onwards) between pages."""
        for index in range(self.page_count):
            with LOCK:
                page = self.doc[index]
                try:
                    result = _page_text(page, index + 1)
                    if _ocr_wanted(page, result.text):
                        result.image = _render(page)
                finally:
                    page.close()
                    run_first_at_exit(_hold_at_exit)  # after pypdfium2's, which it adds as used
            yield result

    def close(self) -> None:
        with LOCK:
            self.doc.close()


def _hold_at_exit() -> None:
    """Exit handler: wait for a PDFium call in flight on a loader thread (Ctrl-C while a PDF is
    read) and let no other start. pypdfium2's own handlers close its objects and PDFium, and a
    thread inside PDFium then crashes the process."""
    LOCK.acquire()


def _page_text(page, number: int) -> PageText:
    import pypdfium2.raw as raw

    textpage = page.get_textpage()
    lines = None
    try:
        chars = textpage.count_chars()
        text = textpage.get_text_range() if chars > 0 else ""
        if len(text) == chars:  # one Python character per text-page character: positions agree
            if number == 1:
                lines = _sized_lines(textpage, text)
            text = join_rows(text, lambda start, count: _box(textpage, start, count))
    finally:
        textpage.close()
    objects = raw.FPDFPage_CountObjects(page)
    lost = objects > chars and _text_objects(page, objects) > chars
    return PageText(number, normalize(text), lost, bool(_RIGHT_TO_LEFT.search(text)), lines)


def _ocr_wanted(page, text: str) -> bool:
    """OCR for a page that draws something but has no text (a scan), or for every page when
    forced; a blank page is left alone."""
    import pypdfium2.raw as raw

    has_text = any(ch.isalnum() for ch in text)
    return ocr.wanted(has_text) and raw.FPDFPage_CountObjects(page) > 0


def _render(page):
    """The page as a PIL image sized for OCR (a copy: the bitmap is freed here, under the lock)."""
    bitmap = page.render(scale=ocr.scale_for(*page.get_size()))
    try:
        return bitmap.to_pil().convert("RGB")
    finally:
        bitmap.close()


def _sized_lines(textpage, text: str, limit: int = 40) -> list[tuple[str, float | None]]:
    """The first ``limit`` non-blank lines and the type size most of their characters have
    (the height of their font box: the font size operand alone is often 1, scaled elsewhere)."""
    import pypdfium2.raw as raw

    out, box = [], raw.FS_RECTF()
    for match in _LINE.finditer(text):
        if not match.group().strip():
            continue
        heights: Counter = Counter()
        for i in range(match.start(), match.end()):
            if not text[i].isspace() and raw.FPDFText_GetLooseCharBox(textpage, i, box):
                heights[round(box.top - box.bottom, 1)] += 1
        out.append((normalize(match.group()), heights.most_common(1)[0][0] if heights else None))
        if len(out) == limit:
            break
    return out


def _box(textpage, start: int, count: int):
    """Bounding box (left, bottom, right, top) of characters ``start`` to ``start + count``."""
    rects = [textpage.get_rect(i) for i in range(textpage.count_rects(start, count))]
    if not rects:
        return None
    return (min(r[0] for r in rects), min(r[1] for r in rects),
            max(r[2] for r in rects), max(r[3] for r in rects))


def _text_objects(page, objects: int) -> int:
    """Text objects on the page. Each draws at least one glyph, so more of them than characters
    means glyphs without text. Only counted when the cheap total count raises the doubt."""
    import pypdfium2.raw as raw

    return sum(
        1 for i in range(objects)
        if raw.FPDFPageObj_GetType(raw.FPDFPage_GetObject(page, i)) == raw.FPDF_PAGEOBJ_TEXT
    )


def normalize(text: str) -> str:
    """PDFium's text as c1 stores text: ``\\n`` line ends without trailing spaces, no-break spaces
    as spaces, and U+FFFE (PDFium's mark for a hyphen where it joined a word across lines) as a
    hyphen ("FAA-approved", "non-normal")."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\xa0", " ").replace("\ufffe", "-")
    return _TRAILING_SPACE.sub("", clean(text)).strip()
