"""OpenDocument spreadsheets ``.ods`` (odfpy), read as ``.xlsx`` is: each sheet a page, each row
a line that names its columns; a merged range (the cells it covers are ``covered-table-cell``)
written once, cells stored as repeated written as often as they repeat."""

from __future__ import annotations

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, join_pages, table_text
from c1.index.loaders.odt import _encrypted, table_rows
from c1.index.loaders.package import open_package
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.sheets import MAX_CELLS
from c1.index.loaders.titles import document_title

_WHAT = "OpenDocument spreadsheet"


def load_ods(path: str) -> Loaded:
    from odf import opendocument

    document = open_package(path, _WHAT, "content.xml", opendocument.load, _encrypted)
    spreadsheet = getattr(document, "spreadsheet", None)
    if spreadsheet is None:
        raise Skip(f"not an {_WHAT}: it is another OpenDocument file (wrong extension?)")
    sheets, warnings, budget = [], [], MAX_CELLS
    for table in spreadsheet.childNodes:
        if getattr(table, "qname", (None, None))[1] != "table":
            continue
        name = clean(table.getAttribute("name") or "")
        rows = table_rows(table)
        cells = sum(len(row) for row in rows)
        if cells > budget:
            warnings.append(f"sheet {name!r} skipped: {cells:,} cells, over the {MAX_CELLS:,}-cell limit")
            sheets.append("")
            continue
        budget -= cells
        body = table_text(rows)
        sheets.append(f"{name}\n{body}" if name and body else body)
    if not any(sheets):
        raise Skip("; ".join(warnings) if warnings else f"no text (empty {_WHAT})")
    text, pages = join_pages(sheets)
    title = document_title(_title(document), [], [], path)
    return [Document(key=path, path=path, title=title, text=text, pages=pages)], warnings


def _title(document) -> str:
    from odf import teletype

    for child in document.meta.childNodes:
        if getattr(child, "qname", (None, None))[1] == "title":
            return clean(teletype.extractText(child)).strip()
    return ""


register(Format("ods", (".ods",), load_ods))
