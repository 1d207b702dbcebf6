"""PDF files: the text of every page, with page offsets, and a title that says what it is.

PDFium reads the text (:mod:`.pdf_pdfium`), statement rows kept whole (:mod:`.pdf_rows`); pypdf
(:mod:`.pdf_pypdf`) reads files PDFium refuses and pages whose glyphs PDFium cannot map to text;
OCR (:mod:`.ocr`) reads pages without a text layer. Pages come from an iterator, one at a time,
so that they could be handed on (to the chunker, the embedder) before the whole file is read, and
each is reported as it is read (``on_page``: ``c1 index`` shows it); only the title waits for the
last page (running heads are found over all of them).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from c1.index.documents import Document, Skip
from c1.index.loaders import ocr
from c1.index.loaders.common import join_pages, read_bytes
from c1.index.loaders.pdf_pdfium import PageText
from c1.index.loaders.registry import Format, Loaded, OnPage, register
from c1.index.loaders.titles import document_title, lines_of


def load_pdf(path: str, on_page: OnPage | None = None) -> Loaded:
    data = read_bytes(path, nonempty=True)
    texts, warnings, first_page, read_by_ocr = [], [], [], 0
    with open_pdf(data) as pdf:
        if pdf.page_count == 0:
            raise Skip("PDF has no pages")
        metadata_title = pdf.title()
        for page in page_texts(pdf, data, path):
            texts.append(page.text)
            read_by_ocr += page.read_by_ocr
            if page.warning:
                warnings.append(page.warning)
            if page.number == 1:
                first_page = page.lines or lines_of(page.text)
            if on_page is not None:
                on_page(page.number, pdf.page_count)
    text, pages = join_pages(texts)
    if not text.strip():
        if read_by_ocr:  # pictures without words: nothing to index, and nothing to retry
            return [], [f"no text, not even by OCR ({read_by_ocr} page{'s' if read_by_ocr > 1 else ''} read)"]
        hint = "" if ocr.available() else f": install c1[{ocr.EXTRA}] to read it with OCR"
        raise Skip(f"no extractable text (scanned PDF?){hint}")
    title = document_title(metadata_title, first_page, texts, path)
    meta = {"ocr_pages": read_by_ocr} if read_by_ocr else {}
    return [Document(key=path, path=path, title=title, text=text, pages=pages, meta=meta)], warnings


@contextmanager
def open_pdf(data: bytes):
    """The PDF opened by PDFium, else by pypdf; raises Skip when neither can read it."""
    from c1.index.loaders.pdf_pdfium import PdfiumPdf, Refused
    from c1.index.loaders.pdf_pypdf import PypdfPdf

    try:
        pdf = PdfiumPdf(data)
    except Refused:
        if b"%PDF-" not in data[:1024]:  # where the spec wants the header
            raise Skip("not a PDF file (no %PDF header)") from None
        pdf = PypdfPdf(data)
    try:
        yield pdf
    finally:
        pdf.close()


def page_texts(pdf, data: bytes, path: str = "") -> Iterator[PageText]:
    """Each page, in order. A PDFium page that draws glyphs it could
    not map to text, or that has right-to-left script, is read again by pypdf (see
    :func:`_prefer_pypdf`). A page rendered for OCR (a scan; every page under ``--ocr``) gets
    the text OCR finds, when it finds any."""
    from c1.index.loaders.pdf_pdfium import PdfiumPdf
    from c1.index.loaders.pdf_pypdf import PypdfPdf

    if not isinstance(pdf, PdfiumPdf):
        yield from pdf.pages()
        return
    understudy: PypdfPdf | None = None
    for page in pdf.pages():
        if page.image is not None:
            found = ocr.image_text(page.image, path=path, page=page.number, pages=pdf.page_count)
            page.image, page.read_by_ocr = None, True
            if found:
                page.text, page.lines = found, None
        elif page.lost_glyphs or page.right_to_left:
            try:
                understudy = understudy or PypdfPdf(data)
                other = understudy.page_text(page.number - 1)
                if _prefer_pypdf(page.text, other, page.right_to_left):
                    page.text, page.lines = other, None
            except Exception:  # pypdf cannot read it either: PDFium's text stands
                pass
        yield page


def _prefer_pypdf(pdfium_text: str, pypdf_text: str, right_to_left: bool) -> bool:
    """pypdf puts right-to-left script in logical order (PDFium: visual, reversed). Otherwise its
    text wins only when a quarter of it is characters that PDFium's text lacks altogether (a font
    PDFium cannot map); a longer text alone proves nothing: pypdf repeats characters that a PDF
    draws twice for a bold effect."""
    if right_to_left:
        return bool(pypdf_text.strip())
    known = set(pdfium_text)
    visible = [ch for ch in pypdf_text if not ch.isspace()]
    missing = sum(1 for ch in visible if ch not in known)
    return missing > 0.25 * len(visible)


register(Format("pdf", (".pdf",), load_pdf, pages=True))
