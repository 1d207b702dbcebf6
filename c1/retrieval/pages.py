"""A document's pages: which page holds an offset, a statement's table pages, and the order in which a
read shows a long document's chunks.

A figure asked about is a row of a statement ("Consolidated Statements of Cash Flows") whose title,
not its row, says what it is. The chunks of such a page rank low against a question (numbers, few
words), so a long filing's pages are found twice: by its chunks (ranked against the question) and by
its table pages (each scored as its title and the rows that hold the question's terms).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from c1.retrieval import sentences as sx
from c1.retrieval.scorers import HEADING_CHARS, PAIR_CHARS, Scorer, TermDenseScorer

TABLE_PAGES = 2
"""The table pages (:func:`table_pages`) of a document that a read shows among its first pages
(:func:`reading_order`), and of the first document whose best rows join the scored passages, read
under their page's title: those that score best as a page (its title and its two rows that hold
most of the question's terms) among the document's table pages. A figure asked about is a row of a
statement ("Consolidated Statements of Cash Flows") whose title, not its row, says what it is: the
chunks of such a page rank low against a question (numbers, few words), and the sentences that hold
the question's terms best are prose elsewhere (MD&A, notes)."""
PAGE_ROWS = 2
"""Rows of each of those pages that join the scored sentences: those it was scored with (rows that hold
figures before header rows, :func:`is_header_row`; holding most of the question's terms, then the
page's first; 4: the same pages found, more pairs)."""
TABLE_ROWS = 5
"""A page is a table page when at least this many of its lines are table rows and they hold at least
half of its text (a statement, a schedule; not a page of prose with a table in it). Half of its text,
not of its lines: a PDF may break a statement's title one word a line ("MGM\nRESORTS\n...")."""


_NUMBER = re.compile(r"\d[\d,.]*")
_YEAR = re.compile(r"(?:19|20)\d{2}")
_CELL = re.compile(r"\s\|\s|\t|\|")
_DAY = re.compile(r"\b([^\W\d_]+)\.?\s+\d{1,2}\b")
"""A month and its day ("December 31, 2022 2021"): a date that names a column, not a figure."""


def is_header_row(line: str, first: bool = False) -> bool:
    """A table row that names its table's columns and holds no figure: a statement's line of years
    ("(Dollars in millions, except per share amount) 2022 2021", "Net Sales (Millions) 2022 2021 2020":
    one cell, every number in it a year, the last word one), or the first row of its table
    (``first``) whose cells are years or hold no digit ("Quarter | Budget | Actual"). It says what the
    rows below it hold; by itself it answers nothing."""
    text = line.strip().strip("|").strip()
    numbers = _NUMBER.findall(_DAY.sub(lambda m: m.group() if m.group(1).lower() not in sx.MONTHS else " ", text))
    if not text or any(not _YEAR.fullmatch(n) for n in numbers):
        return False
    if len([c for c in _CELL.split(text) if c.strip()]) > 1:
        return first  # "Widget | 2019 | 2021" under "Product | Launched | Retired" is a row of data
    return bool(numbers) and bool(_YEAR.fullmatch(text.split()[-1]))


def _page_key(chunk) -> object:
    return chunk.page if chunk.page is not None else ("chunk", chunk.id)


def _page_groups(ranked: list[tuple[object, float]]) -> list[list[tuple[object, float]]]:
    """Ranked chunks grouped by page, the groups in the order of their best chunk (chunks without a page
    each stand for themselves)."""
    groups: dict[object, list] = {}
    for chunk, score in ranked:
        groups.setdefault(_page_key(chunk), []).append((chunk, score))
    return list(groups.values())


def by_page(ranked: list[tuple[object, float]]) -> list[tuple[object, float]]:
    """Ranked chunks regrouped by page: the page of the best chunk first, with its other chunks, then
    the page of the next best, and so on."""
    return [item for group in _page_groups(ranked) for item in group]


def _page_at(starts: list, offsets: list[int], offset: int) -> int:
    """The page of ``offset`` from where the pages start (``starts``: (offset, page) pairs; ``offsets``:
    their offsets)."""
    return starts[max(0, bisect.bisect_right(offsets, offset) - 1)][1]


def page_of(doc, chunk, offset: int) -> int | None:
    """The page holding character ``offset`` of the document: from where its pages start (recorded at
    indexing), else the page of the chunk's first character."""
    starts = (doc.meta or {}).get("page_starts") if doc is not None else None
    if starts:
        return _page_at(starts, [s for s, _ in starts], offset)
    return chunk.page


@dataclass
class TablePage:
    """A page of a document whose table rows hold at least half of its text (``TABLE_ROWS``)."""
    page: int
    title: str
    """What the page says before its first row, without the lines that top many of the document's pages
    (a running header: "Table of Contents", the company's name) or a page number: "CONSOLIDATED BALANCE
    SHEETS (In thousands, except par value) November 27, 2015 ...", up to ``HEADING_CHARS``."""
    rows: list[tuple[int, int, str]]
    """Its rows (lines): (start, end) in document offsets and their text."""


_TABLE_PAGES: dict[tuple, list[TablePage]] = {}


def table_pages(doc, chunks: list) -> list[TablePage]:
    """The table pages of a document (``doc``: its record, with the page starts recorded at indexing;
    ``chunks``: all of its chunks), in page order; none for a document without pages. Read line by
    line (a row of a PDF's table is a line: :func:`c1.retrieval.sentences.is_row`), without splitting
    the chunks into sentences, and cached per document."""
    starts = (doc.meta or {}).get("page_starts") if doc is not None else None
    if not chunks or not starts:
        return []
    key = (doc.doc_id, len(chunks), chunks[-1].end, chunks[0].hash, chunks[-1].hash)
    if key in _TABLE_PAGES:
        return _TABLE_PAGES[key]
    offsets = [s for s, _ in starts]
    lines: dict[int, list[tuple[int, int, str, bool]]] = {}  # page → (start, end, line, is a row), in order
    covered = 0
    for chunk in sorted(chunks, key=lambda c: c.start):
        for a, b in sx.line_spans(chunk.text):
            start, end = chunk.start + a, chunk.start + b
            line = chunk.text[a:b].strip()
            if start < covered or not line:
                continue  # the overlap of consecutive chunks is read once
            covered = end
            page = _page_at(starts, offsets, start)
            lines.setdefault(page, []).append((start, end, line, sx.is_row(line)))
    tops: dict[int, list[str]] = {}
    counts: dict[str, int] = {}
    for page, got in lines.items():
        first_row = next((i for i, ln in enumerate(got) if ln[3]), len(got))
        tops[page] = [ln[2] for ln in got[:first_row]]
        for ln in set(tops[page]):
            counts[ln] = counts.get(ln, 0) + 1
    running = max(3, len(lines) // 10)  # a line topping a tenth of the pages is a running header
    out = []
    for page, got in sorted(lines.items()):
        rows = [(start, end, line) for start, end, line, row in got if row]
        if len(rows) < TABLE_ROWS or 2 * sum(len(r[2]) for r in rows) < sum(len(ln[2]) for ln in got):
            continue
        title = " ".join(ln for ln in tops[page] if counts[ln] < running and not re.fullmatch(r"[\divxlcIVXLC]+", ln))
        out.append(TablePage(page, " ".join(sx.readable(title).split())[:HEADING_CHARS], rows))
    if len(_TABLE_PAGES) >= 64:
        _TABLE_PAGES.clear()
    _TABLE_PAGES[key] = out
    return out


def best_table_pages(scorer: Scorer, question: str, pages: list[TablePage], n: int = TABLE_PAGES,
                     rows: int = PAGE_ROWS) -> list[tuple[TablePage, float, list[tuple[int, int]]]]:
    """The ``n`` table pages that score best for ``question`` (one scorer call: each page as its title,
    the header row above its two rows that hold figures and most of the question's terms, and those
    rows), each with its score and the spans of its ``rows`` rows holding most of those terms (BM25
    among all the pages' rows), then its first; a header row only after every row that holds figures.
    Only the pages whose title or rows hold a term of the question are scored, where any does: a statement
    that shares no word with the question is no answer beside one that does (a read for a name, "AEM",
    scored a 10-K's nine statements, a third of a second, to show none of them)."""
    if not pages or n <= 0:
        return []
    terms = TermDenseScorer().terms
    texts = [r[2] for p in pages for r in p.rows]
    lexical = terms(question, texts)
    titled = terms(question, [p.title for p in pages])
    picks, texts, held, k = [], [], [], 0
    for p, title in zip(pages, titled):
        mine = lexical[k : k + len(p.rows)]
        k += len(p.rows)
        if title > 0 or any(v > 0 for v in mine):
            held.append(len(picks))
        # a row that holds figures before one that names the columns: "Net sales $ 34,229 $ 35,355"
        # before "Net Sales (Millions) 2022 2021 2020", which holds the question's words and no answer
        order = sorted(range(len(p.rows)), key=lambda i: (is_header_row(p.rows[i][2]), -mine[i], i))
        picks.append(order)
        shown = sorted(order[:2])
        names = [j for j in range(shown[0] if shown else 0) if is_header_row(p.rows[j][2])][-1:]  # their columns
        texts.append("\n".join([p.title] + [sx.readable(p.rows[i][2]) for i in names + shown])[:PAIR_CHARS])
    asked = held or list(range(len(pages)))
    got = dict(zip(asked, scorer(question, [texts[i] for i in asked])))
    best = sorted(asked, key=lambda i: (-got[i], i))[:n]
    return [(pages[i], float(got[i]), [pages[i].rows[j][:2] for j in picks[i][:rows]]) for i in best]


def reading_order(scorer: Scorer, question: str, doc, chunks: list, ranked: list[tuple[object, float]],
                  n: int = TABLE_PAGES) -> list[tuple[object, float]]:
    """The order in which a read shows a document's ``ranked`` chunks (best first; ``chunks``: all of
    the document's, read for its table pages): page by page (:func:`by_page`), the ``n`` table pages
    that score best for ``question`` (:func:`best_table_pages`) taking turns with the pages of the best
    chunks — the statement that holds a figure first, then the best chunk's page, then the second
    statement, and so on. A document without table pages is read by its chunks alone.

    FinanceBench (18 questions, the gold filing read once, 3,000 tokens): the gold page among what the
    read shows 9 -> 17, on its first chunk 2 -> 11 (by its chunks alone -> with its table pages:
    ``python bench/read_pages.py``)."""
    groups = _page_groups(ranked)
    grouped = [item for group in groups for item in group]
    pages = table_pages(doc, chunks) if n > 0 else []
    if not pages or not grouped:
        return grouped
    best = [p for p, _, _ in best_table_pages(scorer, question, pages, n)]
    tables = [[c for c, _ in grouped if c.start < p.rows[-1][1] and p.rows[0][0] < c.end] for p in best]
    by_chunks = [[c for c, _ in group] for group in groups]
    place: dict[str, int] = {}
    for i in range(max(len(tables), len(by_chunks))):
        for source in (tables, by_chunks):
            for c in source[i] if i < len(source) else []:
                place.setdefault(c.id, len(place))
    return sorted(grouped, key=lambda item: place[item[0].id])
