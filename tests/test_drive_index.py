"""Issue 33 (a user's own drive): a table keeps every cell, merges come from the file's own merge
ranges; the walk stays inside the named folder; titles that read as titles.

Every file here is a real one, written by the library that writes the format.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from c1.index.loaders import load
from c1.index.walk import Source

HEADER = ["Quarter", "Budget", "Actual", "Forecast"]
ROW = ["Q2", "75000", "75000", "80000"]  # Budget and Actual are equal: two values, two cells
KEPT = "Quarter: Q2 | Budget: 75000 | Actual: 75000 | Forecast: 80000"


def text_of(path: Path, kind: str) -> str:
    docs = load(Source(str(path), kind))
    assert len(docs) == 1
    return docs[0].text


def lines_with(text: str, word: str) -> list[str]:
    return [line for line in text.splitlines() if word in line]


# --- defect 1: equal neighbours are two cells; a merged range's value is written once ----------


def test_csv_keeps_a_cell_equal_to_its_neighbour(tmp_path):
    path = tmp_path / "budget.csv"
    path.write_text(",".join(HEADER) + "\n" + ",".join(ROW) + "\n")
    assert KEPT in text_of(path, "csv")


def make_xlsx(path: Path) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Plan"
    sheet.append(HEADER)
    sheet.append(ROW)
    sheet.append(["H2 total", None, None, None])
    sheet.merge_cells("A3:D3")  # a real merged range: its value is in A3 only
    other = book.create_sheet("Merged header")
    other.append(["Region", "Sales", None])
    other.merge_cells("B1:C1")
    other.append(["West", "1200", "1300"])
    book.save(path)
    return path


def test_xlsx_keeps_equal_cells_and_a_merge_once(tmp_path):
    text = text_of(make_xlsx(tmp_path / "plan.xlsx"), "xlsx")
    assert KEPT in text
    assert lines_with(text, "H2 total") == ["Quarter: H2 total"]
    assert "Region | Sales" in text and text.count("Sales") == 2  # the header line and West's row
    assert "Region: West | Sales: 1200 | 1300" in text


def test_xlsx_merge_ranges_blank_the_cells_they_cover(tmp_path):
    """LibreOffice keeps a merged range's hidden values in the cells it covers; the range, read
    from the sheet's XML, says which are hidden."""
    import zipfile

    import openpyxl

    book = openpyxl.Workbook()
    book.active.append(HEADER)
    book.active.append(["Q3", "closed", "hidden one", "hidden two"])
    book.active.append(["Q4", "tall", "1", "2"])
    book.active.append(["hidden three", "3", "4", "5"])
    plain = tmp_path / "plain.xlsx"
    book.save(plain)
    merged = tmp_path / "merged.xlsx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(merged, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                ranges = b'<mergeCells count="2"><mergeCell ref="B2:D2"/><mergeCell ref="A3:A4"/></mergeCells>'
                data = data.replace(b"</sheetData>", b"</sheetData>" + ranges)
            target.writestr(item, data)
    text = text_of(merged, "xlsx")
    assert "Quarter: Q3 | Budget: closed" in text.splitlines()
    assert "Quarter: Q4 | Budget: tall | Actual: 1 | Forecast: 2" in text.splitlines()
    assert "Budget: 3 | Actual: 4 | Forecast: 5" in text.splitlines()
    assert "hidden" not in text


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    table = document.add_table(rows=4, cols=4)
    for row, values in enumerate([HEADER, ROW]):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    across = table.cell(2, 1).merge(table.cell(2, 3))  # gridSpan over three columns
    across.text = "closed"
    table.cell(2, 0).text = "Q3"
    down = table.cell(2, 0).merge(table.cell(3, 0))  # vMerge: Q3 over two rows
    down.text = "Q3"
    for column, value in enumerate(["10", "11", "12"], 1):
        table.cell(3, column).text = value
    document.save(path)
    return path


def test_docx_keeps_equal_cells_and_writes_a_merge_once(tmp_path):
    text = text_of(make_docx(tmp_path / "plan.docx"), "docx")
    assert KEPT in text
    assert "Quarter: Q3 | Budget: closed" in lines_with(text, "closed")  # spans Actual, Forecast
    assert text.count("closed") == 1
    assert text.count("Q3") == 1  # the vertical merge, once
    assert "Budget: 10 | Actual: 11 | Forecast: 12" in text


def make_pptx(path: Path) -> Path:
    import pptx
    from pptx.util import Inches

    presentation = pptx.Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Plan"
    table = slide.shapes.add_table(3, 4, Inches(0.5), Inches(1.5), Inches(8), Inches(2)).table
    for row, values in enumerate([HEADER, ROW]):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    table.cell(2, 0).text = "Q3"
    table.cell(2, 1).merge(table.cell(2, 3))
    table.cell(2, 1).text = "closed"
    table.cell(2, 2).text = "hidden"  # a spanned cell's text: kept in the file, never shown
    presentation.save(path)
    return path


def test_pptx_keeps_equal_cells_and_writes_a_merge_once(tmp_path):
    text = text_of(make_pptx(tmp_path / "plan.pptx"), "pptx")
    assert KEPT in text
    assert "Quarter: Q3 | Budget: closed" in text
    assert "hidden" not in text


def make_odt(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.table import CoveredTableCell, Table, TableCell, TableColumn, TableRow
    from odf.text import P

    document = OpenDocumentText()
    table = Table(name="Plan")
    table.addElement(TableColumn(numbercolumnsrepeated=4))

    def row(*cells):
        element = TableRow()
        for cell in cells:
            element.addElement(cell)
        table.addElement(element)

    def cell(text="", **attributes):
        element = TableCell(**attributes)
        if text:
            element.addElement(P(text=text))
        return element

    row(*(cell(h) for h in HEADER))
    row(cell("Q2"), cell("75000", numbercolumnsrepeated=2), cell("80000"))  # how writers store equals
    row(cell("Q3"), cell("closed", numbercolumnsspanned=3), CoveredTableCell(), CoveredTableCell())
    row(cell("Q4"), cell(numbercolumnsrepeated=2), cell("99"))  # blanks keep the columns in place
    document.text.addElement(table)
    document.save(str(path))
    return path


def test_odt_keeps_repeated_cells_and_writes_a_merge_once(tmp_path):
    text = text_of(make_odt(tmp_path / "plan.odt"), "odt")
    assert KEPT in text
    assert "Quarter: Q3 | Budget: closed" in text and text.count("closed") == 1
    assert "Quarter: Q4 | Forecast: 99" in text


# --- defect 2: the walk stays inside the named folder ------------------------------------------

MB = 1 << 20
OUTSIDE = "link outside the folder"
HOLDS = "holds the named folder"
LOOP = "symlink loop"


def make_drive(tmp_path: Path) -> Path:
    """``drive/docs`` (the folder named) with links out of it, in it, above it and in a loop."""
    drive = tmp_path / "drive"
    docs = drive / "docs"
    (drive / "mail").mkdir(parents=True)
    docs.mkdir()
    (drive / "mail" / "offer.txt").write_text("The offer expires on Friday.\n")
    (drive / "budget.txt").write_text("The budget is 75000.\n")
    (docs / "a.txt").write_text("The boiler is serviced in October.\n")
    (docs / "up").symlink_to("..")  # `ln -s .. docs/up`: the whole drive again
    (docs / "mail").symlink_to("../mail")  # a folder out of the named one
    (docs / "budget.txt").symlink_to("../budget.txt")  # a file out of it
    (docs / "same.txt").symlink_to("a.txt")  # a second path to a.txt
    os.link(docs / "a.txt", docs / "hard.txt")  # a third one
    (docs / "x").symlink_to("y")  # a loop of file links
    (docs / "y").symlink_to("x")
    (docs / "z.txt").symlink_to("z.txt")
    return docs


def test_links_out_of_the_named_folder_are_skipped_with_the_reason(tmp_path):
    from c1.index.walk import Source, walk

    docs = make_drive(tmp_path)
    sources, skipped = walk([str(docs)], max_bytes=MB)
    assert sources == [Source(str(docs / "a.txt"), "text")]  # same.txt and hard.txt are a.txt
    reasons = dict(skipped)
    assert set(reasons) == {str(docs / n) for n in ("up", "mail", "budget.txt", "x", "y", "z.txt")}
    assert HOLDS in reasons[str(docs / "up")] and "even with --follow" in reasons[str(docs / "up")]
    for name in ("mail", "budget.txt"):
        assert OUTSIDE in reasons[str(docs / name)] and "--follow follows it" in reasons[str(docs / name)]
    for name in ("x", "y", "z.txt"):
        assert LOOP in reasons[str(docs / name)]


def test_follow_follows_links_out_but_never_one_above(tmp_path):
    from c1.index.walk import Source, walk

    docs = make_drive(tmp_path)
    (docs / "offer.txt").symlink_to("../mail/offer.txt")  # reached through docs/mail/ as well
    sources, skipped = walk([str(docs)], max_bytes=MB, follow=True)
    assert sources == [Source(str(docs / p), "text") for p in ("a.txt", "budget.txt", "mail/offer.txt")]
    assert dict(skipped).keys() == {str(docs / n) for n in ("up", "x", "y", "z.txt")}
    assert HOLDS in dict(skipped)[str(docs / "up")]


def test_a_link_to_the_named_folder_or_above_is_never_walked_from_inside(tmp_path):
    from c1.index.walk import walk

    docs = tmp_path / "docs"
    (docs / "deep").mkdir(parents=True)
    (docs / "deep" / "a.txt").write_text("x")
    (docs / "deep" / "top").symlink_to(tmp_path)  # above the named folder
    (docs / "deep" / "back").symlink_to(docs)  # the named folder itself
    sources, skipped = walk([str(docs / "deep")], max_bytes=MB, follow=True)
    assert [s.path for s in sources] == [str(docs / "deep" / "a.txt")]
    reasons = dict(skipped)
    assert HOLDS in reasons[str(docs / "deep" / "top")]
    assert HOLDS in reasons[str(docs / "deep" / "back")]  # it holds deep/, the folder named


def test_a_link_into_another_named_folder_is_left_to_that_folder(tmp_path):
    from c1.index.walk import Source, walk

    docs = make_drive(tmp_path)
    mail = tmp_path / "drive" / "mail"
    sources, skipped = walk([str(docs), str(mail)], max_bytes=MB)
    assert Source(str(mail / "offer.txt"), "text") in sources  # under its own path, not docs/mail/
    assert str(docs / "mail") not in dict(skipped)  # nothing to say: mail/ is walked as itself
    assert not any("docs/mail/" in s.path for s in sources)


def test_a_watch_sees_changes_under_links_out_only_with_follow(tmp_path):
    from c1.index.walk import Source, scan_changed

    docs = make_drive(tmp_path)
    changed = [str(docs / "budget.txt"), str(docs / "mail" / "offer.txt"), str(docs / "a.txt")]
    found = scan_changed([str(docs)], changed, max_bytes=MB)
    assert found.sources == [Source(str(docs / "a.txt"), "text")]
    assert [(p, OUTSIDE in r) for p, r in found.skipped] == [(str(docs / "budget.txt"), True)]
    found = scan_changed([str(docs)], changed, max_bytes=MB, follow=True)
    assert [s.path for s in found.sources] == sorted(changed) and found.skipped == []


def test_c1_index_reports_a_link_out_and_follows_it_with_follow(c1_home, invoke_c1, tmp_path):
    docs = make_drive(tmp_path)
    first = invoke_c1("index", docs, "--keywords-only", "--json")
    assert first.rc == 0, first.stderr
    r = first.json()
    assert r["added"] == 1
    skipped = {s["path"]: s["reason"] for s in r["skipped"]}
    assert OUTSIDE in skipped[str(docs / "mail")] and HOLDS in skipped[str(docs / "up")]
    assert LOOP in skipped[str(docs / "x")]
    followed = invoke_c1("index", docs, "--keywords-only", "--json", "--follow")
    assert followed.rc == 0, followed.stderr
    r = followed.json()
    assert (r["added"], r["unchanged"]) == (2, 1)  # budget.txt and mail/offer.txt; a.txt once
    assert str(docs / "mail") not in {s["path"] for s in r["skipped"]}
    assert HOLDS in {s["path"]: s["reason"] for s in r["skipped"]}[str(docs / "up")]


# --- defect 8: a metadata title only when it reads as one; else the first heading, the file name --


@pytest.mark.parametrize("junk", [
    "MÃ¼nchen Mietvertrag",  # UTF-8 read as Windows-1252
    "\u00fe\u00ffLicence Agreement",  # a UTF-16 byte-order mark read as Latin-1
    "Licence\x07 Agreement", "\ue000\ue001\ue002\ue003 licence",  # a control, unmapped glyphs
    "/home/anna/Documents/licence", r"C:\Users\anna\Desktop\licence", "Users/anna/Desktop/x",
    "Microsoft Word - lease.doc", "untitled", "88300 162..177",
])
def test_garbled_or_non_titles_are_junk(junk):
    from c1.index.loaders.titles import is_junk

    assert is_junk(junk)


@pytest.mark.parametrize("title", [
    "Mietvertrag München 2024", "Q1/Q2 results", "GNU General Public License",
    "菲达环保：关于公司2015年年度报告", "حَبيبي habibi", "Café menu", "grasshopper",
])
def test_real_titles_are_not_junk(title):
    from c1.index.loaders.titles import is_junk

    assert not is_junk(title)


def make_titled_odt(path: Path, title: str, heading: str | None, body: str) -> Path:
    from odf.dc import Title
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    document.meta.addElement(Title(text=title))
    if heading:
        document.text.addElement(H(outlinelevel=1, text=heading))
    document.text.addElement(P(text=body))
    document.save(str(path))
    return path


def test_odt_garbled_metadata_title_gives_way_to_the_first_heading(tmp_path):
    body = "The tenant pays the rent on the first day of each month."
    for n, garbled in enumerate(["MÃ¼nchen Mietvertrag", r"C:\Users\anna\Desktop\lease", "\u00fe\u00ffLease"]):
        path = make_titled_odt(tmp_path / f"{n}.odt", garbled, "Lease of Flat 3", body)
        assert load(Source(str(path), "odt"))[0].title == "Lease of Flat 3", garbled
    fine = make_titled_odt(tmp_path / "4.odt", "Mietvertrag München", "Lease of Flat 3", body)
    assert load(Source(str(fine), "odt"))[0].title == "Mietvertrag München"


def test_a_sentence_is_no_heading_the_file_name_is_the_title(tmp_path):
    for n, body in enumerate(["the tenant shall pay the rent on the first day of each month, in advance.",
                              "Rent is due monthly. The tenant pays it in advance, by bank transfer."]):
        path = make_titled_odt(tmp_path / f"lease_terms_{n}.odt", "untitled", None, body)
        assert load(Source(str(path), "odt"))[0].title == f"lease terms {n}", body


def test_pdf_garbled_metadata_title_is_not_the_title(tmp_path, shared_data):
    import pypdf

    source = shared_data / "pdf" / "pdfplumber_tests" / "issue-982-example.pdf"  # "Art in Machine Learning"
    writer = pypdf.PdfWriter(clone_from=str(source))
    for n, garbled in enumerate(["Ã‰tat de l’art", r"C:\Users\anna\Desktop\licence"]):
        writer.add_metadata({"/Title": garbled})
        path = tmp_path / f"art-{n}.pdf"
        with open(path, "wb") as f:
            writer.write(f)
        title = load(Source(str(path), "pdf"))[0].title
        assert title and "Ã" not in title and "Users" not in title, title


def test_html_title_that_is_no_title_gives_way_to_the_h1(tmp_path):
    path = tmp_path / "lease.html"
    path.write_text("<html><head><title>Microsoft Word - lease.doc</title></head>"
                    "<body><h1>Lease of Flat 3</h1><p>The rent is due monthly.</p></body></html>")
    assert load(Source(str(path), "html"))[0].title == "Lease of Flat 3"


def make_ods(path: Path) -> Path:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import CoveredTableCell, Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    table = Table(name="Plan")
    for cells in ([(h, {}) for h in HEADER],
                  [("Q2", {}), ("75000", {"numbercolumnsrepeated": 2}), ("80000", {})],
                  [("Q3", {}), ("closed", {"numbercolumnsspanned": 3}), None, None],
                  [("", {"numbercolumnsrepeated": 16380})]):  # the empty rest of the row, as writers store it
        row = TableRow()
        for cell in cells:
            if cell is None:
                row.addElement(CoveredTableCell())
                continue
            element = TableCell(**cell[1])
            if cell[0]:
                element.addElement(P(text=cell[0]))
            row.addElement(element)
        table.addElement(row)
    document.spreadsheet.addElement(table)
    document.save(str(path))
    return path


def test_ods_sheets_keep_equal_cells_and_write_a_merge_once(tmp_path):
    docs = load(Source(str(make_ods(tmp_path / "plan.ods")), "ods"))
    assert len(docs) == 1 and docs[0].pages == [(0, 1)]
    text = docs[0].text
    assert text.splitlines()[0] == "Plan"
    assert KEPT in text
    assert "Quarter: Q3 | Budget: closed" in text and text.count("closed") == 1


def test_an_odt_named_ods_is_skipped_with_a_reason(tmp_path):
    from c1.index.loaders import Skip

    odt = make_titled_odt(tmp_path / "x.odt", "Lease", "Lease", "Rent is due monthly.")
    misnamed = tmp_path / "x.ods"
    misnamed.write_bytes(odt.read_bytes())
    with pytest.raises(Skip, match="not an OpenDocument spreadsheet"):
        load(Source(str(misnamed), "ods"))
