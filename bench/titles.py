#!/usr/bin/env python3
"""What titles real PDFs get: before (metadata title, else the first line) and now, side by side.

    python bench/titles.py                  # FinanceBench filings + SEC filings + the 83 shared PDFs
    python bench/titles.py --list           # every file's metadata title, old title and new title

"Before" is the rule c1 had: the metadata title unless it is a known placeholder or a file
name, else the first line of text. Counted per set: titles that say nothing (a placeholder,
form boilerplate such as "UNITED STATES" or "Table of Contents", a file or generated name, a
bare number: ``c1.index.loaders.titles.is_junk``), and — for files whose names carry words —
titles that hold every word of the file name (``3M_2022_10K.pdf`` → "3M", "2022", "10K").
Prints a table and appends one JSON line to ``bench/out/titles.jsonl``. Not a test.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import textpool  # noqa: E402  (bench/ helpers)

_OLD_JUNK = {"untitled", "title", "document", "untitled document", "no title", "slide 1",
             "microsoft word", "pdf", "(anonymous)", "unknown"}
_OLD_FILE_NAME = re.compile(
    r"\.(pdf|docx?|odt|rtf|txt|tex|dvi|ps|indd|pptx?|xlsx?|html?)$|^\S+\.[A-Za-z0-9]{2,4}$", re.I)


def old_title(metadata: str, text: str) -> str:
    """c1's rule before: metadata unless placeholder / file name / no letters, else first line."""
    from c1.index.loaders.common import first_line

    lowered = metadata.lower()
    if not (len(metadata) < 3 or lowered in _OLD_JUNK or lowered.startswith("microsoft word - ")
            or _OLD_FILE_NAME.search(metadata) or not any(ch.isalpha() for ch in metadata)):
        return metadata
    return first_line(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print every file's titles")
    args = parser.parse_args()

    from c1.index.documents import Skip
    from c1.index.loaders import load
    from c1.index.loaders.pdf import open_pdf
    from c1.index.loaders.titles import is_junk, name_words, normal
    from c1.index.walk import Source

    data = textpool.shared_data_or_exit("pdf")
    sets = {
        "filings": sorted((data / "financebench" / "pdfs").glob("*.pdf")) + sorted((data / "sec").glob("*.pdf")),
        "shared PDFs": sorted((data / "pdf").rglob("*.pdf")),
    }
    summary = {}
    for name, files in sets.items():
        counts = {"files": 0, "junk_before": 0, "junk_now": 0, "named": 0, "name_before": 0, "name_now": 0}
        for path in files:
            try:
                docs = load(Source(str(path), "pdf"))
                with open_pdf(path.read_bytes()) as pdf:
                    metadata = pdf.title()
            except Skip:
                continue
            if not docs:  # no text at all, not even by OCR: no document, no title
                continue
            doc = docs[0]
            before = old_title(metadata, doc.text)
            counts["files"] += 1
            counts["junk_before"] += is_junk(before)
            counts["junk_now"] += is_junk(doc.title)
            words = name_words(str(path))
            if words:
                counts["named"] += 1
                counts["name_before"] += all(normal(w) in normal(before) for w in words.split())
                counts["name_now"] += all(normal(w) in normal(doc.title) for w in words.split())
            if args.list:
                print(f"{path.name[:40]:40} | {metadata[:30]!r:32} | {before[:30]!r:32} | {doc.title[:70]!r}")
        summary[name] = counts
    print(f"{'set':12} {'files':>5} {'says nothing: before':>21} {'now':>5} {'holds file-name words: before':>30} {'now':>5}")
    for name, c in summary.items():
        print(f"{name:12} {c['files']:>5} {c['junk_before']:>21} {c['junk_now']:>5} "
              f"{str(c['name_before']) + '/' + str(c['named']):>30} {str(c['name_now']) + '/' + str(c['named']):>5}")
    from bench.report import OUT, save

    save({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "sets": summary}, OUT / "titles.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
