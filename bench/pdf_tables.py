#!/usr/bin/env python3
"""Statement tables in PDFs: does a row's label share a line with its first value?

    python bench/pdf_tables.py              # the FinanceBench gold evidence pages
    python bench/pdf_tables.py --show 3     # print the rows missed on the 3 worst pages

Gold rows come from FinanceBench's own page texts (``evidence_text_full_page`` of
``financebench_dev_18.jsonl``): a line with words followed by a number, on the same line or as the
next non-blank line ("Purchases of property, plant and equipment" / "(1,577)"). Each engine then
extracts the same page from the PDF, and a row counts as *kept* when one line of that text holds
the label and, after it, the value (compared without spaces, dot leaders and ``$``, so that
different spacing does not matter). Engines, side by side: ``pypdf`` (c1 before PDFium),
``pdfium`` (``get_text_range()``), ``c1`` (the loader as it stands). Also: CPU seconds for the
whole of each filing, and over the whole filings the rows found whole (words, then amounts, on
one line) and split (a line of amounts only after a line of words without any).
Prints a table and appends one JSON line to ``bench/out/pdf_tables.jsonl``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import textpool  # noqa: E402  (bench/ helpers)

ENGINES = ("pypdf", "pdfium", "c1")
_VALUE = re.compile(r"^\(?-?\$?\s?\(?\d[\d,]*(\.\d+)?\)?%?\)?$|^[—–-]$")
_LETTERS = re.compile(r"[A-Za-z]{2}")
_NOISE = re.compile(r"[\s.$…·]+")


def key(text: str) -> str:
    return _NOISE.sub("", text).lower()


def gold_rows(page_text: str) -> list[tuple[str, str]]:
    """(label, first value) of each table row of a gold page text. The first and last lines of
    the page are left out: a number there is the page number, not a row's value."""
    lines = [line.strip() for line in page_text.split("\n")]
    filled = [i for i, line in enumerate(lines) if line]
    if len(filled) > 2:
        lines = lines[filled[0] + 1 : filled[-1]]
    rows = []
    for i, line in enumerate(lines):
        tokens = line.replace("$", " ").split()
        if not _LETTERS.search(line):
            continue
        values = []
        while tokens and _VALUE.match(tokens[-1]):
            values.insert(0, tokens.pop())
        label = " ".join(tokens).rstrip(" .…:")
        if not _LETTERS.search(label) or len(key(label)) < 4:
            continue
        if values:
            rows.append((label, values[0]))
            continue
        for nxt in lines[i + 1:]:
            if nxt in ("", "$"):
                continue
            first = nxt.replace("$", " ").split()
            if first and all(_VALUE.match(t) for t in first):
                rows.append((label, first[0]))
            break
    return rows


def kept(rows: list[tuple[str, str]], text: str) -> tuple[int, int, list]:
    """(rows kept on one line, rows whose label is on one line at all, missed rows)."""
    lines = [key(line) for line in text.split("\n")]
    together = present = 0
    missed = []
    for label, value in rows:
        lk, vk = key(label), key(value)
        hits = [line for line in lines if lk in line]
        if not hits:
            continue
        present += 1
        if any(vk in line[line.index(lk) + len(lk):] for line in hits):
            together += 1
        else:
            missed.append((label, value))
    return together, present, missed


def page_text(engine: str, path: Path, page: int) -> str:
    if engine == "pypdf":
        from pypdf import PdfReader

        return PdfReader(path).pages[page].extract_text()
    if engine == "pdfium":
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(path))
        try:
            return doc[page].get_textpage().get_text_range()
        finally:
            doc.close()
    return c1_pages(path)[page]


_c1_cache: dict[Path, list[str]] = {}


def c1_pages(path: Path) -> list[str]:
    from c1.index.loaders import load
    from c1.index.walk import Source

    if path not in _c1_cache:
        doc = load(Source(str(path), "pdf"))[0]
        starts = [s for s, _ in doc.pages] + [len(doc.text)]
        _c1_cache[path] = [doc.text[a:b] for a, b in zip(starts, starts[1:])]
    return _c1_cache[path]


def whole_file(engine: str, path: Path) -> tuple[list[str], float]:
    """(page texts, CPU seconds) of a whole filing."""
    t0 = time.process_time()
    if engine == "pypdf":
        from pypdf import PdfReader

        pages = [p.extract_text() for p in PdfReader(path).pages]
    elif engine == "pdfium":
        import pypdfium2 as pdfium

        doc = pdfium.PdfDocument(str(path))
        pages = [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
        doc.close()
    else:
        _c1_cache.pop(path, None)
        pages = c1_pages(path)
    return pages, time.process_time() - t0


def split_rows(pages: list[str]) -> tuple[int, int]:
    """(rows whole, rows split): a line with words ending in amounts is a whole row; a line of
    amounts only, right after a line of words without any, is a split one. Amounts: numbers with
    a thousands comma or in parentheses (so that years and page numbers do not count)."""
    from c1.index.loaders.pdf_rows import is_values

    whole = split = 0
    for page in pages:
        lines = [line.strip() for line in page.replace("\r", "").split("\n")]
        for before, line in zip([""] + lines, lines):
            cells = line.replace("$", " ").split()
            amounts = [c for c in cells if "," in c or "(" in c]
            if not amounts:
                continue
            if is_values(line):
                if _LETTERS.search(before) and not is_values(before.split()[-1] if before.split() else ""):
                    split += 1
            elif _LETTERS.search(line) and is_values(cells[-1]):
                whole += 1
    return whole, split


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", type=int, default=0, help="print the missed rows of the N worst pages (c1)")
    parser.add_argument("--no-speed", action="store_true", help="skip the whole-file timings (pypdf takes minutes)")
    args = parser.parse_args()
    from c1.index.loaders import ocr

    ocr.set_mode("never")  # text extraction alone, as the other engines
    root = textpool.shared_data_or_exit("financebench") / "financebench"
    evidence = []
    for line in open(root / "financebench_dev_18.jsonl", encoding="utf-8"):
        record = json.loads(line)
        for e in record["evidence"]:
            evidence.append((root / "pdfs" / f"{e['doc_name']}.pdf", e["evidence_page_num"], e["evidence_text_full_page"]))
    evidence = sorted(set(evidence))
    totals = {e: [0, 0] for e in ENGINES}
    per_page = []
    for path, page, gold in evidence:
        rows = gold_rows(gold)
        result = {}
        for engine in ENGINES:
            together, present, missed = kept(rows, page_text(engine, path, page))
            totals[engine][0] += together
            totals[engine][1] += present
            result[engine] = (together, present, missed)
        per_page.append((path.stem, page + 1, len(rows), result))

    seconds = {e: 0.0 for e in ENGINES}
    splits = {e: [0, 0] for e in ENGINES}
    if not args.no_speed:
        for path in sorted({p for p, _, _ in evidence}):
            for engine in ENGINES:
                pages, spent = whole_file(engine, path)
                seconds[engine] += spent
                whole, split = split_rows(pages)
                splits[engine][0] += whole
                splits[engine][1] += split

    print(f"{len(evidence)} gold evidence pages, {sum(n for _, _, n, _ in per_page)} gold rows")
    print(f"{'page':34} {'rows':>5} " + " ".join(f"{e:>13}" for e in ENGINES))
    for name, page, n, result in per_page:
        cells = " ".join(f"{result[e][0]:>6}/{result[e][1]:<6}" for e in ENGINES)
        print(f"{name + ' p' + str(page):34} {n:>5} {cells}")
    print(f"{'rows kept / labels found':40} " + " ".join(f"{t[0]:>6}/{t[1]:<6}" for t in totals.values()))
    shares = {e: round(t[0] / t[1], 4) if t[1] else 0.0 for e, t in totals.items()}
    print(f"{'share kept':40} " + " ".join(f"{shares[e]:>13.3f}" for e in ENGINES))
    if not args.no_speed:
        base = seconds["pypdf"] or 1e-9
        print(f"{'CPU s, whole filings':40} " + " ".join(f"{seconds[e]:>13.1f}" for e in ENGINES))
        print(f"{'speed-up over pypdf':40} " + " ".join(f"{base / max(seconds[e], 1e-9):>12.1f}×" for e in ENGINES))
        print(f"{'rows whole / split, whole filings':40} " + " ".join(f"{w:>6}/{s:<6}" for w, s in splits.values()))
    if args.show:
        worst = sorted(per_page, key=lambda r: r[3]["c1"][0] / max(r[3]["c1"][1], 1))[: args.show]
        for name, page, _, result in worst:
            print(f"--- {name} p{page}: missed by c1")
            for label, value in result["c1"][2]:
                print(f"    {label!r} {value!r}")
    from bench.report import OUT, save

    save({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "share_kept": shares, "rows": {e: totals[e] for e in ENGINES},
          "cpu_seconds": {e: round(s, 2) for e, s in seconds.items()}, "rows_whole_split_whole_filings": splits},
         OUT / "pdf_tables.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
