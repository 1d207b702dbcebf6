"""OpenDocument text ``.odt`` (odfpy): headings, paragraphs, lists and tables in order; title and
author from the document's metadata."""

from __future__ import annotations

import zipfile

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, table_text
from c1.index.loaders.package import open_package
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import document_title

_WHAT = "OpenDocument text"


def load_odt(path: str) -> Loaded:
    from odf import opendocument

    document = open_package(path, _WHAT, "content.xml", opendocument.load, _encrypted)
    blocks: list[tuple[str, float]] = []
    _collect(document.text, blocks)
    text = "\n\n".join(block for block, _ in blocks)
    if not text.strip():
        raise Skip(f"no text in {_WHAT}")
    meta = _metadata(document)
    title = document_title(meta.pop("title", ""), blocks, [], path)
    return [Document(key=path, path=path, title=title, text=text, meta=meta)], []


def _collect(element, blocks: list[tuple[str, float]]) -> None:
    """Append (text, rank as a type size) of each heading, paragraph and table, in order."""
    from odf import teletype

    for child in element.childNodes:
        name = getattr(child, "qname", (None, None))[1]
        if name in ("h", "p"):
            text = clean(teletype.extractText(child)).strip()
            if text:
                level = child.getAttribute("outlinelevel") if name == "h" else None
                blocks.append((text, 4.0 - min(int(level or 1), 3) * 0.5 if name == "h" else 1.0))
        elif name == "table":
            if table := table_text(table_rows(child)):
                blocks.append((table, 1.0))
        elif name is not None:
            _collect(child, blocks)  # lists, sections, frames: what they hold


_MAX_REPEAT = 1000
"""Copies made of a repeated row or cell: writers mark the empty rest of a sheet as one row or
cell repeated up to a million times."""


def table_rows(table) -> list[list[str]]:
    """A table's rows as cell texts per column. A cell a merge covers
    (``covered-table-cell``) is blank, so a merged value is written once; a row or cell marked
    as repeated (``number-*-repeated``, how writers store equal neighbours) is repeated."""
    from odf import teletype

    rows = []
    for row in _rows(table):
        cells: list[str] = []
        for cell in _cells(row):
            covered = cell.qname[1] == "covered-table-cell"
            text = "" if covered else clean(teletype.extractText(cell))
            cells += [text] * _repeat(cell, "numbercolumnsrepeated")
        while cells and not cells[-1].strip():
            cells.pop()
        rows += [cells] * (_repeat(row, "numberrowsrepeated") if any(cells) else 1)
    return rows


def _repeat(element, attribute: str) -> int:
    """How many times ``element`` stands for itself (its repeat count, at most ``_MAX_REPEAT``)."""
    try:
        count = int(element.getAttribute(attribute) or 1)
    except ValueError:
        count = 1
    return max(1, min(count, _MAX_REPEAT))


def _rows(table) -> list:
    rows = []
    for child in table.childNodes:
        name = getattr(child, "qname", (None, None))[1]
        if name == "table-row":
            rows.append(child)
        elif name in ("table-header-rows", "table-rows", "table-row-group"):
            rows.extend(_rows(child))
    return rows


def _cells(row) -> list:
    return [c for c in row.childNodes
            if getattr(c, "qname", (None, None))[1] in ("table-cell", "covered-table-cell")]


def _metadata(document) -> dict[str, str]:
    from odf import teletype

    found: dict[str, str] = {}
    for child in document.meta.childNodes:
        name = getattr(child, "qname", (None, None))[1]
        key = {"title": "title", "creator": "author", "initial-creator": "author"}.get(name)
        if key and key not in found and (value := clean(teletype.extractText(child)).strip()):
            found[key] = value
    return found


def _encrypted(package: zipfile.ZipFile) -> str:
    """ODF encryption leaves the zip readable and says so in the manifest."""
    try:
        return "password-protected" if b"encryption-data" in package.read("META-INF/manifest.xml") else ""
    except (KeyError, zipfile.BadZipFile, OSError):
        return ""


register(Format("odt", (".odt",), load_odt))
