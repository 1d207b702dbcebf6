"""Office, e-book, spreadsheet and RTF files: real samples built with the same libraries that read
them (python-docx, python-pptx, openpyxl, odfpy, ebooklib), broken ones skipped with a reason,
and one `c1 index` run over a folder of every kind."""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import sys
from pathlib import Path

import pytest

from c1.index.documents import Skip
from c1.index.loaders import load, load_with_warnings
from c1.index.walk import Source, walk

docx = pytest.importorskip("docx", reason="the office extra: pip install 'c1[office]'")
pptx = pytest.importorskip("pptx", reason="the office extra: pip install 'c1[office]'")
epub = pytest.importorskip("ebooklib.epub", reason="the office extra: pip install 'c1[office]'")


def one(path: Path, kind: str):
    docs, warnings = load_with_warnings(Source(str(path), kind))
    assert len(docs) == 1
    return docs[0], warnings


def skip_reason(path: Path, kind: str) -> str:
    with pytest.raises(Skip) as info:
        load(Source(str(path), kind))
    return str(info.value)


def page_texts(doc) -> list[str]:
    starts = [start for start, _ in doc.pages] + [len(doc.text)]
    return [doc.text[a:b].strip() for a, b in zip(starts, starts[1:])]


def make_docx(path: Path) -> Path:
    d = docx.Document()
    d.core_properties.title, d.core_properties.author = "Quarterly review", "Jane Doe"
    d.add_heading("Quarterly review", 0)
    d.add_paragraph("Revenue grew in the western region.")
    d.add_heading("Numbers", 1)
    table = d.add_table(rows=3, cols=2)
    for r, row in enumerate([("Region", "Sales"), ("West", "1,200"), ("East", "900")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    d.add_paragraph("Prepared for the board.")
    d.save(path)
    return path


def make_pptx(path: Path) -> Path:
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "Launch plan"
    slide.placeholders[1].text = "Spring campaign"
    slide.notes_slide.notes_text_frame.text = "Open with the customer story."
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Budget"
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (r, c), value in zip([(0, 0), (0, 1), (1, 0), (1, 1)], ["Item", "Cost", "Ads", "$5,000"]):
        table.cell(r, c).text = value
    deck.save(path)
    return path


def make_xlsx(path: Path, huge: bool = False) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sales"
    for row in [("Region", "Sales", "Date"), ("West", 1200.0, dt.datetime(2024, 1, 2)), ("East", 900, None)]:
        sheet.append(row)
    notes = book.create_sheet("Notes")
    notes.append(["Remark"])
    notes.append(["All figures in USD"])
    if huge:  # 1,000,000 rows × 3 columns by its dimensions, a few bytes on disk
        big = book.create_sheet("Log")
        big.cell(row=1, column=1, value="event")
        big.cell(row=1_000_000, column=3, value="last")
    book.properties.title = "Sales 2024"
    book.save(path)
    return path


def make_odt(path: Path) -> Path:
    from odf.dc import Creator, Title
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableRow
    from odf.text import H, P

    doc = OpenDocumentText()
    doc.meta.addElement(Title(text="Meeting minutes"))
    doc.meta.addElement(Creator(text="Ann Smith"))
    doc.text.addElement(H(outlinelevel=1, text="Minutes of 4 March"))
    doc.text.addElement(P(text="We agreed on the budget."))
    table = Table(name="Actions")
    for cells in [("Action", "Owner"), ("Book the venue", "Ann")]:
        row = TableRow()
        table.addElement(row)
        for value in cells:
            cell = TableCell()
            cell.addElement(P(text=value))
            row.addElement(cell)
    doc.text.addElement(table)
    doc.save(str(path))
    return path


def make_epub(path: Path) -> Path:
    book = epub.EpubBook()
    book.set_identifier("c1-test-book")
    book.set_title("The Lighthouse Keeper")
    book.set_language("en")
    book.add_author("A. Writer")
    chapters = []
    for n, (heading, body) in enumerate([("The Storm", "The lamp failed at midnight."),
                                         ("Morning", "Boats came back one by one.")], 1):
        chapter = epub.EpubHtml(title=heading, file_name=f"ch{n}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{heading}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = chapters
    epub.write_epub(str(path), book)
    return path


RTF = (rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Arial;}}{\info{\title Annual m\'e9mo}"
       rb"{\author Bob Stone}}\f0\fs24 Caf\'e9 cr\'e8me costs \u8364? 3.\par Second paragraph.\par}")


def test_docx_paragraphs_headings_tables_and_properties(tmp_path):
    doc, warnings = one(make_docx(tmp_path / "review.docx"), "docx")
    assert doc.text == ("Quarterly review\n\nRevenue grew in the western region.\n\nNumbers\n\n"
                        "Region | Sales\nRegion: West | Sales: 1,200\nRegion: East | Sales: 900\n\n"
                        "Prepared for the board.")
    assert doc.title == "Quarterly review" and doc.meta == {"author": "Jane Doe"}
    assert doc.pages is None and warnings == []


def test_pptx_slides_are_pages_with_notes_and_tables(tmp_path):
    doc, _ = one(make_pptx(tmp_path / "launch.pptx"), "pptx")
    assert page_texts(doc) == [
        "Launch plan\nSpring campaign\nNotes: Open with the customer story.",
        "Budget\nItem | Cost\nItem: Ads | Cost: $5,000",
    ]
    assert doc.title == "Launch plan"  # no title in the properties: the first slide's title


def test_xlsx_sheets_are_pages_rows_name_their_columns(tmp_path):
    doc, warnings = one(make_xlsx(tmp_path / "sales.xlsx"), "xlsx")
    assert page_texts(doc) == [
        "Sales\nRegion | Sales | Date\nRegion: West | Sales: 1200 | Date: 2024-01-02\nRegion: East | Sales: 900",
        "Notes\nRemark\nRemark: All figures in USD",
    ]
    assert doc.title == "Sales 2024" and warnings == []


def test_xlsx_huge_sheet_is_skipped_unread(tmp_path):
    import time

    path = make_xlsx(tmp_path / "log.xlsx", huge=True)
    t0 = time.perf_counter()
    doc, warnings = one(path, "xlsx")
    assert time.perf_counter() - t0 < 5  # the 1,000,000-row sheet is not walked
    assert warnings == ["sheet 'Log' skipped: 3,000,000 cells, over the 2,000,000-cell limit"]
    assert [n for _, n in doc.pages] == [1, 2, 3] and page_texts(doc)[2] == ""
    import openpyxl

    only_huge = openpyxl.load_workbook(path)
    del only_huge["Sales"], only_huge["Notes"]
    only_huge.save(tmp_path / "only-log.xlsx")
    assert "over the 2,000,000-cell limit" in skip_reason(tmp_path / "only-log.xlsx", "xlsx")


def test_csv_and_tsv(tmp_path):
    (tmp_path / "people.csv").write_bytes("name;age;city\nAnn;31;Paris\nRené;;Köln\n".encode("cp1252"))
    doc, warnings = one(tmp_path / "people.csv", "csv")
    assert doc.text == "name | age | city\nname: Ann | age: 31 | city: Paris\nname: René | city: Köln"
    assert warnings == ["not valid UTF-8: read as Windows-1252 text"]
    assert doc.title == "people"
    (tmp_path / "t.tsv").write_text("a\tb\n1\t2\n")
    assert one(tmp_path / "t.tsv", "csv")[0].text == "a | b\na: 1 | b: 2"
    (tmp_path / "blank.csv").write_text(",,\n,,\n")
    assert skip_reason(tmp_path / "blank.csv", "csv") == "no text (no cells)"


def test_odt_headings_paragraphs_tables_and_metadata(tmp_path):
    doc, _ = one(make_odt(tmp_path / "minutes.odt"), "odt")
    assert doc.text == ("Minutes of 4 March\n\nWe agreed on the budget.\n\n"
                        "Action | Owner\nAction: Book the venue | Owner: Ann")
    assert doc.title == "Meeting minutes" and doc.meta == {"author": "Ann Smith"}


def test_epub_chapters_are_pages(tmp_path):
    doc, _ = one(make_epub(tmp_path / "keeper.epub"), "epub")
    assert page_texts(doc) == ["The Storm\n\nThe lamp failed at midnight.", "Morning\n\nBoats came back one by one."]
    assert doc.title == "The Lighthouse Keeper" and doc.meta == {"author": "A. Writer"}


def test_rtf_text_code_page_and_info(tmp_path):
    (tmp_path / "memo.rtf").write_bytes(RTF)
    doc, _ = one(tmp_path / "memo.rtf", "rtf")
    assert doc.text == "Café crème costs € 3.\nSecond paragraph."
    assert doc.title == "Annual mémo" and doc.meta == {"author": "Bob Stone"}
    (tmp_path / "fake.rtf").write_text("just text")
    assert skip_reason(tmp_path / "fake.rtf", "rtf") == "not an RTF file (no {\\rtf header)"


def test_broken_office_files_are_skipped_with_a_reason(tmp_path):
    good = make_docx(tmp_path / "good.docx").read_bytes()
    (tmp_path / "truncated.docx").write_bytes(good[: len(good) // 2])
    assert skip_reason(tmp_path / "truncated.docx", "docx") == "damaged Word document (truncated or broken zip)"
    shutil.copy(make_xlsx(tmp_path / "book.xlsx"), tmp_path / "misnamed.docx")
    assert skip_reason(tmp_path / "misnamed.docx", "docx") == (
        "not a Word document: it is an Excel workbook (wrong extension?)")
    (tmp_path / "notes.pptx").write_text("plain text with the wrong extension")
    assert skip_reason(tmp_path / "notes.pptx", "pptx") == "not a PowerPoint presentation (not a zip package)"
    (tmp_path / "old.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(4096))
    assert "older binary Office file" in skip_reason(tmp_path / "old.docx", "docx")
    (tmp_path / "empty.epub").write_bytes(b"")
    assert skip_reason(tmp_path / "empty.epub", "epub") == "empty file"
    import openpyxl

    openpyxl.Workbook().save(tmp_path / "empty.xlsx")
    assert skip_reason(tmp_path / "empty.xlsx", "xlsx") == "no text (empty Excel workbook)"


def test_password_protected_docx_is_skipped(tmp_path):
    msoffcrypto = pytest.importorskip("msoffcrypto", reason="builds the encrypted sample (test extra)")
    from msoffcrypto.format.ooxml import OOXMLFile

    plain = make_docx(tmp_path / "plain.docx")
    encrypted = io.BytesIO()
    with open(plain, "rb") as f:
        OOXMLFile(f).encrypt("secret", encrypted)
    (tmp_path / "locked.docx").write_bytes(encrypted.getvalue())
    assert msoffcrypto.OfficeFile(io.BytesIO(encrypted.getvalue())).is_encrypted()
    assert skip_reason(tmp_path / "locked.docx", "docx") == "encrypted Word document (password-protected)"


def rezip(source: Path, target: Path, changes: dict[str, bytes]) -> Path:
    """A copy of the zip ``source`` with some members replaced or added."""
    import zipfile

    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for info in old.infolist():
            if info.filename not in changes:
                new.writestr(info, old.read(info))
        for name, data in changes.items():
            new.writestr(name, data)
    return target


def test_encrypted_odt_and_epub_and_damaged_parts_are_skipped(tmp_path):
    odt = make_odt(tmp_path / "plain.odt")
    manifest = b'<manifest:manifest><manifest:encryption-data manifest:checksum="x"/></manifest:manifest>'
    rezip(odt, tmp_path / "locked.odt", {"META-INF/manifest.xml": manifest})
    assert skip_reason(tmp_path / "locked.odt", "odt") == "encrypted OpenDocument text (password-protected)"
    book = make_epub(tmp_path / "plain.epub")
    listed = b'<encryption><EncryptedData><CipherReference URI="%s"/></EncryptedData></encryption>'
    rezip(book, tmp_path / "drm.epub", {"META-INF/encryption.xml": listed % b"EPUB/ch1.xhtml"})
    assert skip_reason(tmp_path / "drm.epub", "epub") == "encrypted EPUB book (DRM)"
    rezip(book, tmp_path / "fonts.epub", {"META-INF/encryption.xml": listed % b"EPUB/font.otf"})
    assert one(tmp_path / "fonts.epub", "epub")[0].title == "The Lighthouse Keeper"  # obfuscated fonts: harmless
    rezip(make_docx(tmp_path / "good.docx"), tmp_path / "broken.docx", {"word/document.xml": b"<w:document"})
    assert skip_reason(tmp_path / "broken.docx", "docx").startswith("damaged Word document (")


def test_missing_office_extra_is_a_one_line_skip_reason(tmp_path):
    """Without python-docx (here: a stand-in that fails to import, as without lxml), .docx files
    are skipped with the extra to install; other files are indexed as usual."""
    import subprocess

    make_docx(tmp_path / "report.docx")
    fake = tmp_path / "site" / "docx"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named lxml')\n")
    code = ("from c1.index.loaders import load\nfrom c1.index.walk import Source\n"
            "from c1.index.documents import Skip\n"
            f"try:\n    load(Source({str(tmp_path / 'report.docx')!r}, 'docx'))\n"
            "except Skip as exc:\n    print(exc)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "install c1[office] to index .docx files"


@pytest.mark.slow
def test_index_a_folder_of_every_format(tmp_path, run_c1, c1_home):
    folder = tmp_path / "docs"
    folder.mkdir()
    make_docx(folder / "review.docx")
    make_pptx(folder / "launch.pptx")
    make_xlsx(folder / "sales.xlsx")
    make_odt(folder / "minutes.odt")
    make_epub(folder / "keeper.epub")
    (folder / "memo.rtf").write_bytes(RTF)
    (folder / "people.csv").write_text("name,city\nAnn,Paris\n")
    sources, skipped = walk([str(folder)], max_bytes=1 << 20)
    assert sorted(s.kind for s in sources) == ["csv", "docx", "epub", "odt", "pptx", "rtf", "xlsx"]
    result = run_c1("index", folder, "--json")
    assert result.rc == 0, result.stderr
    report = result.json()
    assert (report["added"], report["skipped"], report["unsupported"]) == (7, [], {})
    found = run_c1("search", "who books the venue?", "--json", "-k", "3").json()
    assert any(d["path"].endswith("minutes.odt") for d in found["documents"])
