"""Spreadsheets: Excel ``.xlsx`` (openpyxl, read-only) and ``.csv``/``.tsv`` (stdlib csv).

Each row becomes a line that names its columns ("Region: West | Sales: 1,200"), so that a chunk
cut from the middle of a sheet still says what its numbers are. A workbook's sheet is a page.
Size is bounded before anything is loaded: a sheet of more than :data:`MAX_CELLS` cells is
skipped with a reason (the others are read), and reading stops at that many cells per file.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zipfile
import zlib

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, join_pages, read_bytes, table_text
from c1.index.loaders.package import open_package
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.text import decode_text
from c1.index.loaders.titles import document_title

MAX_CELLS = 2_000_000
"""Cells read per file (a sheet with more is skipped): about 20 MB of text, minutes to embed."""
_WHAT = "Excel workbook"


def load_xlsx(path: str) -> Loaded:
    import openpyxl

    book = open_package(path, _WHAT, "xl/workbook.xml",
                        lambda p: openpyxl.load_workbook(p, read_only=True, data_only=True))
    try:
        sheets, warnings, budget = [], [], MAX_CELLS
        for sheet in book.worksheets:
            cells = (sheet.max_row or 0) * (sheet.max_column or 0)  # from its <dimension>: unread
            if cells > budget:
                warnings.append(f"sheet {sheet.title!r} skipped: {cells:,} cells, over the "
                                f"{MAX_CELLS:,}-cell limit" + (" (per file)" if cells <= MAX_CELLS else ""))
                sheets.append("")
                continue
            rows, budget = _rows(sheet.iter_rows(values_only=True), budget, _merged_ranges(sheet))
            if budget < 0:  # a sheet larger than its <dimension> said
                warnings.append(f"sheet {sheet.title!r} cut at the {MAX_CELLS:,}-cell limit")
                budget = 0
            sheets.append(_sheet_text(sheet.title, rows))
        title = clean(book.properties.title or "")
    finally:
        book.close()
    if not any(sheets):
        raise Skip("; ".join(warnings) if warnings else f"no text (empty {_WHAT})")
    text, pages = join_pages(sheets)
    doc = Document(key=path, path=path, title=document_title(title, [], [], path), text=text, pages=pages)
    return [doc], warnings


def load_csv(path: str) -> Loaded:
    text, warnings = decode_text(read_bytes(path))
    if not text.strip():
        raise Skip("no text (only whitespace)")
    try:
        dialect = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if path.lower().endswith(".tsv") else csv.excel
    try:
        rows, left = _rows(csv.reader(io.StringIO(text), dialect), MAX_CELLS)
    except csv.Error as exc:
        raise Skip(f"not a readable CSV file ({exc})") from None
    if left < 0:
        warnings.append(f"cut at the {MAX_CELLS:,}-cell limit")
    body = _sheet_text("", rows)
    if not body:
        raise Skip("no text (no cells)")
    return [Document(key=path, path=path, title=document_title("", [], [], path), text=body)], warnings


def _rows(rows, budget: int, merges: list[Range] = ()) -> tuple[list[list[str]], int]:
    """Non-empty rows as lists of cell strings, and the cells left of ``budget`` (-1: the rows
    were cut when it ran out). The cells a merged range covers are blank but its first, so a
    merged value is written once."""
    out, merges, active = [], sorted(merges, key=lambda r: r[1]), []
    for number, row in enumerate(rows, 1):
        budget -= len(row)
        if budget < 0:
            return out, -1
        cells = [_cell(value) for value in row]
        while merges and merges[0][1] <= number:
            active.append(merges.pop(0))
        active = [r for r in active if r[3] >= number]
        for first_column, first_row, last_column, _ in active:
            start = first_column if number == first_row else first_column - 1
            cells[start:last_column] = [""] * len(cells[start:last_column])
        if any(cells):
            out.append(cells)
    return out, budget


Range = tuple[int, int, int, int]
"""A merged range: first column, first row, last column, last row (1-based, inclusive)."""
_MERGE_REF = re.compile(rb'<(?:\w+:)?mergeCell\b[^>]*?\bref="([A-Za-z]+[0-9]+:[A-Za-z]+[0-9]+)"')


def _merged_ranges(sheet) -> list[Range]:
    """The sheet's merged ranges, read from its XML (after the cells there): openpyxl's
    read-only sheets, which stream the cells, do not read them. A range's cells but the first
    may hold hidden values (LibreOffice keeps them)."""
    from openpyxl.utils.cell import range_boundaries

    refs: set[bytes] = set()
    tail = b""
    try:
        with sheet._get_source() as source:
            while chunk := source.read(1 << 20):
                if b"mergeCell" in (window := tail + chunk):
                    refs.update(_MERGE_REF.findall(window))
                tail = chunk[-256:]  # a tag cut by the chunk's end is found whole next time
    except (OSError, KeyError, AttributeError, zipfile.BadZipFile, zlib.error):
        return []
    return [range_boundaries(ref.decode("ascii")) for ref in refs]


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value.date().isoformat()
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return clean(str(value)).strip()


def _sheet_text(name: str, rows: list[list[str]]) -> str:
    """The sheet's name, then its rows; the first row names the columns."""
    table = table_text(rows)
    return f"{name}\n{table}" if name and table else table


register(Format("xlsx", (".xlsx", ".xlsm"), load_xlsx))
register(Format("csv", (".csv", ".tsv"), load_csv))
