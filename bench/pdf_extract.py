#!/usr/bin/env python3
"""PDF text extraction: pypdf against PDFium against c1's PDF loader, side by side, on real PDFs.

    python bench/pdf_extract.py                    # the 83 PDFs of shared/data/pdf + the 3 SEC filings
    python bench/pdf_extract.py --set financebench # the 18 FinanceBench filings (3,841 pages; slow for pypdf)
    python bench/pdf_extract.py --show 0.9         # list the files whose agreement is below 0.9

Engines, each run on every file in the same process, one after the other:
- ``pypdf``: what c1 used before (``PdfReader(strict=False)``, empty-password decryption,
  ``extract_text()`` per page);
- ``pdfium``: pypdfium2 alone (``get_text_range()`` per page);
- ``c1``: the loader as it stands (``c1.index.loaders.load``): PDFium, pypdf where PDFium falls short
  (OCR off, so that all three compare text extraction alone).

Per engine: files read, pages, skips (files that gave no text or could not be opened), CPU
seconds, page counts that match ``pypdf_sample_files/files.json``, and text agreement with pypdf:
the Dice overlap of the two texts' word multisets (lower-cased ``\\w+`` tokens), pooled over the
files both engines read (1.0 = the same words). Prints a table and appends one JSON line to
``bench/out/pdf_extract.jsonl``. Not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import textpool  # noqa: E402  (bench/ helpers)

ENGINES = ("pypdf", "pdfium", "c1")
_WORD = re.compile(r"\w+")


def pdf_files(data: Path, which: str) -> list[Path]:
    sets = {
        "pdf": lambda: sorted((data / "pdf").rglob("*.pdf")),
        "sec": lambda: sorted((data / "sec").glob("*.pdf")),
        "financebench": lambda: sorted((data / "financebench" / "pdfs").glob("*.pdf")),
    }
    names = ["pdf", "sec"] if which == "default" else list(sets) if which == "all" else [which]
    return [p for name in names for p in sets[name]()]


def expected_pages(data: Path) -> dict[str, int]:
    listing = data / "pdf" / "pypdf_sample_files" / "files.json"
    if not listing.exists():
        return {}
    entries = json.loads(listing.read_text())["data"]
    return {str(listing.parent / e["path"]): e["pages"] for e in entries if "pages" in e}


def run_pypdf(data: bytes) -> list[str]:
    from c1.index.loaders.pdf_pypdf import PypdfPdf

    pdf = PypdfPdf(data)
    return [page.text for page in pdf.pages()]


def run_pdfium(data: bytes) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    try:
        return [doc[i].get_textpage().get_text_range() for i in range(len(doc))]
    finally:
        doc.close()


def run_c1(path: Path) -> list[str]:
    from c1.index.loaders import load
    from c1.index.walk import Source

    doc = load(Source(str(path), "pdf"))[0]
    starts = [start for start, _ in doc.pages] + [len(doc.text)]
    return [doc.text[a:b].strip() for a, b in zip(starts, starts[1:])]


def extract(engine: str, path: Path) -> tuple[list[str] | None, str | None, float]:
    """(page texts or None, skip reason or None, CPU seconds)."""
    from c1.index.documents import Skip

    data = path.read_bytes()
    t0 = time.process_time()
    try:
        if not data:
            raise Skip("empty file")
        pages = {"pypdf": run_pypdf, "pdfium": run_pdfium}[engine](data) if engine != "c1" else run_c1(path)
        reason = None if any(p.strip() for p in pages) else "no text"
    except Exception as exc:  # Skip, PdfiumError, pypdf errors: all count as a skip here
        pages, reason = None, f"{type(exc).__name__}: {exc}"[:80]
    return pages, reason, time.process_time() - t0


def words(pages: list[str]) -> Counter:
    return Counter(w.lower() for page in pages for w in _WORD.findall(page))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", default="default", choices=["default", "pdf", "sec", "financebench", "all"])
    parser.add_argument("--show", type=float, default=0.0, help="list files whose agreement with pypdf is below this")
    args = parser.parse_args()

    from c1.index.loaders import ocr

    ocr.set_mode("never")
    data = textpool.shared_data_or_exit("pdf")
    files = pdf_files(data, args.set)
    expected = expected_pages(data)
    results: dict[str, dict[str, tuple]] = {e: {} for e in ENGINES}
    for path in files:
        for engine in ENGINES:
            results[engine][str(path)] = extract(engine, path)

    reference = results["pypdf"]
    summary = {}
    for engine in ENGINES:
        runs = results[engine]
        read = {p: r for p, r in runs.items() if r[1] is None}
        inter = total = 0
        for p, (pages, _, _) in read.items():
            ref = reference[p][0]
            if ref is None or engine == "pypdf":
                continue
            a, b = words(pages), words(ref)
            both = sum((a & b).values())
            size = sum(a.values()) + sum(b.values())
            inter, total = inter + both, total + size
        # page counts, on the listed files that every engine read
        listed = [p for p in expected if all(results[e].get(p, (None, "absent"))[1] is None for e in ENGINES)]
        matched = sum(1 for p in listed if len(read[p][0]) == expected[p])
        summary[engine] = {
            "files": len(runs),
            "read": len(read),
            "pages": sum(len(r[0]) for r in read.values()),
            "skips": sum(1 for r in runs.values() if r[1] is not None),
            "cpu_seconds": round(sum(r[2] for r in runs.values()), 2),
            "page_counts_matching_files_json": f"{matched}/{len(listed)}",
            "agreement_with_pypdf": round(2 * inter / total, 4) if total else 1.0,
        }
        summary[engine]["skipped"] = {str(Path(p).relative_to(data)): r[1] for p, r in runs.items() if r[1] is not None}

    base = summary["pypdf"]["cpu_seconds"] or 1e-9
    print(f"{len(files)} PDFs ({args.set})")
    print(f"{'engine':8} {'read':>5} {'pages':>6} {'skips':>6} {'CPU s':>8} {'speed-up':>9} {'pages=json':>11} {'agreement':>10}")
    for engine in ENGINES:
        s = summary[engine]
        print(f"{engine:8} {s['read']:>5} {s['pages']:>6} {s['skips']:>6} {s['cpu_seconds']:>8.2f} "
              f"{base / max(s['cpu_seconds'], 1e-9):>8.1f}× {s['page_counts_matching_files_json']:>11} "
              f"{s['agreement_with_pypdf']:>10.4f}")
    for engine in ENGINES:
        for other in ENGINES:
            only = sorted(set(summary[engine]["skipped"]) - set(summary[other]["skipped"]))
            if only:
                print(f"skipped by {engine}, read by {other}: " + ", ".join(f"{p} ({summary[engine]['skipped'][p]})" for p in only))
    if args.show:
        for engine in ("pdfium", "c1"):
            low = []
            for p, (pages, _, _) in results[engine].items():
                ref = reference[p][0]
                if pages is None or ref is None:
                    continue
                a, b = words(pages), words(ref)
                size = sum(a.values()) + sum(b.values())
                score = 2 * sum((a & b).values()) / size if size else 1.0
                if score < args.show:
                    low.append(f"  {score:.3f} {Path(p).relative_to(data)} ({sum(a.values())} vs {sum(b.values())} words)")
            print(f"{engine}: {len(low)} files below {args.show}")
            print("\n".join(sorted(low)))
    from bench.report import OUT, save

    save({"set": args.set, "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "engines": summary}, OUT / "pdf_extract.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
