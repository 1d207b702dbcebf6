"""Table rows kept whole: a label and its values on one line.

PDFium returns a page's text line by line, and keeps most statement rows whole. It breaks a row
when the values sit a little lower or higher than their label (a label centred on two lines of
values, a footnote mark raised above the line, a font with another baseline): then a line of
bare numbers follows the label's line. Such a line is joined to the line before it when it lies
to the right of it and their vertical centres are closer than the next row would be.

Only lines of numbers are ever joined, so prose is never rearranged: two columns of text stay
two runs of lines. Measured on the FinanceBench evidence pages and filings with
``bench/pdf_tables.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Box = tuple[float, float, float, float]
"""left, bottom, right, top, in PDF points (y grows upwards)."""

_VALUE = re.compile(r"^[($]*[-+]?[$]?\d[\d,]*(\.\d+)?[)%]*[,;]?$|^[—–-]+$|^\$$|^\(?[a-z\d]\)$")
"""One cell of a statement: 1,577 · (1,577) · $ · 3.6% · — · (a) · (4) — or a footnote mark."""
_LINE_BREAK = "\r\n"  # PDFium's generated line end
_ROW_GAP = 1.2
"""Centres closer than this many glyph heights are one row. A glyph box (ascender to descender)
is about 0.9 of the font size and rows are at least about 1.2 font sizes apart, so the next row
is farther; Coca-Cola's label 7.3 pt above its values (6.7 pt high) is nearer."""


def is_values(line: str) -> bool:
    """A line of numbers, dashes and footnote marks only."""
    cells = line.split()
    return bool(cells) and all(_VALUE.match(cell) for cell in cells)


def join_rows(text: str, box_of: Callable[[int, int], Box | None]) -> str:
    """PDFium's page ``text`` (``\\r\\n`` line ends, character ``i`` of the text page at
    ``text[i]``) with lines of values joined to the label before them; ``box_of(start, count)``
    is the bounding box of those characters (None when they draw nothing)."""
    lines: list[list] = []  # [text, start, count, box or None (not measured yet)]
    pos = 0
    for line in text.split(_LINE_BREAK):
        start, pos = pos, pos + len(line) + len(_LINE_BREAK)
        if lines and lines[-1][0].strip() and is_values(line):
            prev = lines[-1]
            box = box_of(start, len(line))
            prev_box = prev[3] or box_of(prev[1], prev[2])
            if box and prev_box and _same_row(prev_box, box):
                prev[0] = f"{prev[0].rstrip()} {line.strip()}"
                prev[3] = (prev_box[0], min(prev_box[1], box[1]), box[2], max(prev_box[3], box[3]))
                continue
            prev[3] = prev_box
        lines.append([line, start, len(line), None])
    return _LINE_BREAK.join(line[0] for line in lines)


def _same_row(label: Box, values: Box) -> bool:
    """``values`` starts right of where ``label`` ends, and their centres are less than
    ``_ROW_GAP`` glyph heights apart vertically."""
    height = max(label[3] - label[1], values[3] - values[1])
    centre_gap = abs((label[1] + label[3]) - (values[1] + values[3])) / 2
    return values[0] >= label[2] - 1 and centre_gap < _ROW_GAP * height
