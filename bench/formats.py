#!/usr/bin/env python3
"""Indexing speed per file format, against the embedder alone; and OCR's pages per second.

    python bench/formats.py                      # every format, about 80 chunks each
    python bench/formats.py --formats docx,xlsx  # some of them
    python bench/formats.py --no-ocr             # skip the OCR part (minutes on 2 cores)

For each format, in one process: the same real text (HotpotQA paragraphs, a title per article;
for PDF, real PDFs from shared/data) written as files of that format, indexed into a fresh home
with the real embedder, Chroma and tantivy; then the very same chunk texts embedded again by the
same embedder instance, in batches of the same size. ``ratio`` = index chunks/s ÷ embedder
chunks/s: what loading, chunking and the stores cost for that format (plain text is the
reference); and the loaders' own CPU time per chunk, which a busy machine does not skew. OCR:
a scanned PDF made here from known text (pages/s of the loader alone, and
character accuracy), and how many of the 7 shared PDFs without a text layer now index.
Prints a table and appends one JSON line to ``bench/out/formats.jsonl``. Not a test.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

FORMATS = ("txt", "pdf", "docx", "pptx", "xlsx", "csv", "odt", "epub", "rtf")
IMAGE_ONLY = ["pypdf_sample_files/007-imagemagick-images/imagemagick-ASCII85Decode.pdf",
              "pypdf_sample_files/007-imagemagick-images/imagemagick-CCITTFaxDecode.pdf",
              "pypdf_sample_files/007-imagemagick-images/imagemagick-lzw.pdf",
              "pypdf_sample_files/019-grayscale-image/grayscale-image.pdf",
              "pypdf_sample_files/023-cmyk-image/cmyk-image.pdf",
              "pdfplumber_tests/issue-203-decimalize.pdf", "pdfplumber_tests/issue-297-example.pdf"]


def articles(n: int) -> list[tuple[str, list[str]]]:
    """``n`` (title, paragraphs) pairs of real text: HotpotQA paragraphs grouped by question."""
    from textpool import hotpot_records

    out = []
    for record in hotpot_records()[:n]:
        paragraphs = ["".join(sentences) for _, sentences in record["context"]]
        out.append((record["context"][0][0], paragraphs))
    return out


def write(fmt: str, folder: Path, docs: list[tuple[str, list[str]]], data: Path) -> None:
    folder.mkdir(parents=True)
    if fmt == "pdf":
        for name in ("sec/AMCOR_2023Q4_EARNINGS.pdf", "pdf/pdfplumber_tests/federal-register-2020-17221.pdf"):
            shutil.copyfile(data / name, folder / Path(name).name)
        return
    for i, (title, paragraphs) in enumerate(docs):
        path = folder / f"article-{i:03d}.{fmt}"
        WRITERS[fmt](path, title, paragraphs)


def _txt(path, title, paragraphs):
    path.write_text(title + "\n\n" + "\n\n".join(paragraphs))


def _docx(path, title, paragraphs):
    import docx

    d = docx.Document()
    d.add_heading(title, 0)
    for p in paragraphs:
        d.add_paragraph(p)
    d.save(path)


def _pptx(path, title, paragraphs):
    import pptx

    deck = pptx.Presentation()
    for p in paragraphs:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = p
    deck.save(path)


def _rows(paragraphs):
    return [["Paragraph", "Text"]] + [[str(i), p] for i, p in enumerate(paragraphs, 1)]


def _xlsx(path, title, paragraphs):
    import openpyxl

    book = openpyxl.Workbook()
    for row in _rows(paragraphs):
        book.active.append(row)
    book.properties.title = title
    book.save(path)


def _csv(path, title, paragraphs):
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows(_rows(paragraphs))


def _odt(path, title, paragraphs):
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.text.addElement(H(outlinelevel=1, text=title))
    for p in paragraphs:
        doc.text.addElement(P(text=p))
    doc.save(str(path))


def _epub(path, title, paragraphs):
    from html import escape

    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier(path.stem)
    book.set_title(title)
    chapters = []
    for n in range(0, len(paragraphs), 3):
        chapter = epub.EpubHtml(title=f"Part {n // 3 + 1}", file_name=f"c{n}.xhtml")
        chapter.content = "<html><body>" + "".join(f"<p>{escape(p)}</p>" for p in paragraphs[n:n + 3]) + "</body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.spine = chapters
    book.add_item(epub.EpubNcx())
    epub.write_epub(str(path), book)


def _rtf(path, title, paragraphs):
    def esc(text):
        return "".join(ch if ord(ch) < 128 and ch not in "\\{}" else f"\\u{ord(ch)}?" if ord(ch) < 32768
                       else "?" for ch in text)

    path.write_text("{\\rtf1\\ansi{\\info{\\title " + esc(title) + "}}" + "".join(f"{esc(p)}\\par " for p in paragraphs) + "}")


WRITERS = {"txt": _txt, "docx": _docx, "pptx": _pptx, "xlsx": _xlsx, "csv": _csv, "odt": _odt,
           "epub": _epub, "rtf": _rtf}


def load_cpu_seconds(folder: Path) -> float:
    """CPU seconds the loaders alone take on the folder's files (steady on a busy machine,
    where wall-clock ratios swing)."""
    from c1.index.loaders import load
    from c1.index.walk import walk

    sources, _ = walk([str(folder)], max_bytes=1 << 30)
    t0 = time.process_time()
    for source in sources:
        load(source)
    return time.process_time() - t0


def index_and_compare(fmt: str, folder: Path, home: Path, embedder) -> dict:
    from c1.config import Settings
    from c1.index import indexer as ix

    from index_speed import same_texts

    settings = Settings().with_flags(home=home, collection=f"bench-{fmt}")
    report = ix.Indexer(settings, embedder).run([str(folder)])
    assert not report.skipped, report.skipped
    texts = same_texts(settings)
    t0 = time.perf_counter()
    for start in range(0, len(texts), ix.BATCH_CHUNKS):
        embedder.embed(texts[start:start + ix.BATCH_CHUNKS])
    embed_only = time.perf_counter() - t0
    index_cps, embed_cps = report.chunks / report.seconds, len(texts) / embed_only
    return {"files": report.added, "chunks": report.chunks, "index_seconds": round(report.seconds, 2),
            "load_cpu_ms_per_chunk": round(1000 * load_cpu_seconds(folder) / report.chunks, 2),
            "chunks_per_second": round(index_cps, 2), "embedder_chunks_per_second": round(embed_cps, 2),
            "ratio": round(index_cps / embed_cps, 3)}


def ocr_figures(data: Path, work: Path) -> dict:
    from PIL import Image, ImageDraw, ImageFont

    from c1.index.documents import Skip
    from c1.index.loaders import load
    from c1.index.walk import Source

    lines = [title for title, _ in articles(40)]
    pages = []
    for n in range(4):
        image = Image.new("RGB", (1275, 1650), "white")
        draw = ImageDraw.Draw(image)
        for i, line in enumerate(lines[n * 10:(n + 1) * 10]):
            draw.text((110, 150 + i * 70), line, fill="black", font=ImageFont.load_default(size=34))
        pages.append(image)
    scan = work / "scan.pdf"
    pages[0].save(scan, save_all=True, append_images=pages[1:], resolution=150)
    t0 = time.perf_counter()
    doc = load(Source(str(scan), "pdf"))[0]
    seconds = time.perf_counter() - t0
    found, expected = " ".join(doc.text.split()), " ".join(" ".join(lines).split())
    blocks = difflib.SequenceMatcher(None, found, expected, autojunk=False).get_matching_blocks()
    indexed = []
    for name in IMAGE_ONLY:
        try:
            if load(Source(str(data / "pdf" / name), "pdf")):
                indexed.append(name)
        except Skip:
            pass
    return {"pages": len(pages), "seconds": round(seconds, 2), "pages_per_second": round(len(pages) / seconds, 3),
            "character_accuracy": round(sum(b.size for b in blocks) / max(len(found), len(expected)), 4),
            "image_only_shared_pdfs_indexed": f"{len(indexed)}/{len(IMAGE_ONLY)}", "indexed": indexed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, from: " + ", ".join(FORMATS))
    parser.add_argument("--articles", type=int, default=12, help="articles per format (about 7 chunks each)")
    parser.add_argument("--no-ocr", action="store_true", help="skip the OCR figures")
    args = parser.parse_args()

    from bench.report import OUT, load, save
    from c1.config import Settings
    from c1.store.embedders import make_embedder
    from textpool import shared_data_or_exit

    data = shared_data_or_exit("pdf")
    docs = articles(args.articles)
    settings = Settings()
    embedder = make_embedder(settings.embed_url, settings.embed_model)
    embedder.embed(["warm-up: load the model before the clock starts"])
    work = Path(tempfile.mkdtemp(prefix="c1-formats-"))
    results = {}
    try:
        for fmt in args.formats.split(","):
            write(fmt, work / "corpus" / fmt, docs, data)
            results[fmt] = index_and_compare(fmt, work / "corpus" / fmt, work / "home", embedder)
            r = results[fmt]
            print(f"{fmt:5} {r['files']:>3} files {r['chunks']:>4} chunks  index {r['chunks_per_second']:6.2f}/s  "
                  f"embedder {r['embedder_chunks_per_second']:6.2f}/s  ratio {r['ratio']:.3f}  "
                  f"loading {r['load_cpu_ms_per_chunk']:.1f} ms CPU/chunk", flush=True)
        ocr = None if args.no_ocr else ocr_figures(data, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if ocr:
        print(f"OCR   {ocr['pages']} scanned pages in {ocr['seconds']} s: {ocr['pages_per_second']} pages/s, "
              f"character accuracy {ocr['character_accuracy']}; image-only shared PDFs indexed: "
              f"{ocr['image_only_shared_pdfs_indexed']} ({', '.join(Path(n).name for n in ocr['indexed'])})")
    record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "formats": results, "ocr": ocr,
              "cpus": os.cpu_count(), "load_average_1m": load(), "embedder": embedder.name}
    save(record, OUT / "formats.jsonl")
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
