"""Word ``.docx`` (python-docx): paragraphs and headings in order, tables row by row with their
column headers; title and author from the document's properties."""

from __future__ import annotations

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, table_text
from c1.index.loaders.package import open_package
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import document_title

_WHAT = "Word document"
_HEADING_SIZES = {"title": 4.0, "heading 1": 3.0, "heading 2": 2.5}
"""A style's rank as a type size, for the title's choice of heading (body text is 1)."""


def load_docx(path: str) -> Loaded:
    import docx

    document = open_package(path, _WHAT, "word/document.xml", docx.Document)
    blocks: list[str] = []
    lines: list[tuple[str, float | None]] = []
    for block in document.iter_inner_content():
        if hasattr(block, "rows"):
            blocks.append(table_text([_row_cells(row) for row in block.rows]))
            continue
        text = clean(block.text).strip()
        if text:
            blocks.append(text)
            lines.append((text, _style_size(block)))
    text = "\n\n".join(b for b in blocks if b)
    if not text.strip():
        raise Skip(f"no text in {_WHAT}")
    props = document.core_properties
    title = document_title(clean(props.title or ""), lines, [], path)
    meta = {"author": clean(props.author or "")} if props.author else {}
    return [Document(key=path, path=path, title=title, text=text, meta=meta)], []


def _row_cells(row) -> list[str]:
    """A row's text per grid column, from the file's own merges: a cell spanning columns
    (``gridSpan``) gives its text to the first and leaves the others blank, and a cell that
    continues a vertical merge (``vMerge``) is blank, so a merged value is written once.
    (python-docx's ``row.cells`` repeats the merged cell in each column it covers.)"""
    from docx.table import _Cell

    cells = [""] * row._tr.grid_before
    for tc in row._tr.tc_lst:
        text = "" if tc.vMerge == "continue" else clean(_Cell(tc, row.table).text)
        cells += [text] + [""] * (tc.grid_span - 1)
    return cells


def _style_size(paragraph) -> float:
    name = (paragraph.style.name if paragraph.style is not None else "").lower()
    if name in _HEADING_SIZES:
        return _HEADING_SIZES[name]
    return 2.0 if name.startswith("heading") else 1.0


register(Format("docx", (".docx",), load_docx, extra="office", modules=("docx",)))
