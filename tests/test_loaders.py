"""Loaders and the folder walk, on the real data in shared/data and on hand-made edge cases.

The real data is found at ``<repo>/../shared/data`` or wherever ``C1_SHARED_DATA`` points; the
tests that need it are skipped when it is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from c1.index.documents import Document, Skip
from c1.index.loaders import html_to_text, load, load_with_warnings
from c1.index.walk import Source, walk

MB = 1 << 20
DATA = Path(
    os.environ.get("C1_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)


def data_dir(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real test data not found at {path} (set C1_SHARED_DATA to shared/data)")
    return path


def load_one(path: Path, kind: str) -> Document:
    docs = load(Source(str(path), kind))
    assert len(docs) == 1
    return docs[0]


def skip_reason(path: Path, kind: str) -> str:
    with pytest.raises(Skip) as info:
        load(Source(str(path), kind))
    return str(info.value)


# --- real PDFs -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pdf_outcomes() -> dict[str, tuple[str, object]]:
    """Every PDF of shared/data/pdf loaded once, without OCR (tests/test_ocr.py has it):
    relative path -> ("ok", Document), ("skip", reason) or ("error", repr of any other
    exception). About 5 s on 2 cores."""
    from c1.index.loaders import ocr

    ocr.set_mode("never")
    try:
        return _load_all_pdfs()
    finally:
        ocr.set_mode("auto")


def _load_all_pdfs() -> dict[str, tuple[str, object]]:
    root = data_dir("pdf")
    sources, skipped = walk([str(root)], max_bytes=50 * MB)
    assert skipped == []
    outcomes = {}
    for source in sources:
        if source.kind != "pdf":
            continue
        key = Path(source.path).relative_to(root).as_posix()
        try:
            docs = load(source)
            assert len(docs) == 1
            outcomes[key] = ("ok", docs[0])
        except Skip as exc:
            outcomes[key] = ("skip", str(exc))
        except Exception as exc:  # the test below reports these
            outcomes[key] = ("error", repr(exc))
    return outcomes


def test_pdf_walk_finds_all_83(pdf_outcomes):
    assert len(pdf_outcomes) == 83


def test_pdf_loader_raises_only_skip(pdf_outcomes):
    errors = {k: v for k, (status, v) in pdf_outcomes.items() if status == "error"}
    assert errors == {}


def test_pdf_page_counts_match_files_json(pdf_outcomes):
    listing = json.loads((data_dir("pdf", "pypdf_sample_files") / "files.json").read_text())
    checked = 0
    for entry in listing["data"]:
        outcome = pdf_outcomes.get(f"pypdf_sample_files/{entry['path']}")
        if outcome is None or outcome[0] != "ok" or "pages" not in entry:
            continue  # absent (GeoTopo.pdf), or skipped: see the tests on skips
        doc = outcome[1]
        assert [number for _, number in doc.pages] == list(range(1, entry["pages"] + 1)), entry
        checked += 1
    assert checked >= 20


def test_pdf_every_character_maps_to_its_page(pdf_outcomes):
    for name, (status, doc) in pdf_outcomes.items():
        if status != "ok":
            continue
        starts = [start for start, _ in doc.pages]
        assert starts[0] == 0 and starts == sorted(starts) and starts[-1] <= len(doc.text), name
        ends = [start for start, _ in doc.pages[1:]] + [len(doc.text)]
        for (start, number), end in zip(doc.pages, ends, strict=True):
            for offset in {start, (start + end) // 2, end - 1} & set(range(start, end)):
                assert doc.page_at(offset) == number, (name, offset)


def test_pdf_known_bad_files_are_skipped_with_reasons(pdf_outcomes):
    expected = {
        "pdfplumber_tests/empty.pdf": "empty",
        "pdfplumber_tests/password-example.pdf": "password",
        "pypdf_sample_files/005-libreoffice-writer-password/libreoffice-writer-password.pdf":
            "password",
        "pypdf_sample_files/017-unreadable-meta-data/unreadablemetadata.pdf": "damaged",
    }
    for name, word in expected.items():
        status, reason = pdf_outcomes[name]
        assert status == "skip" and word in reason, (name, reason)


def test_pdf_other_skips_are_image_only_files(pdf_outcomes):
    """Besides the four bad files, only PDFs without a text layer (images, scans) are skipped."""
    skips = {k: v for k, (status, v) in pdf_outcomes.items() if status == "skip"}
    image_only = {k: v for k, v in skips.items() if v.startswith("no extractable text (scanned PDF?)")}
    assert len(skips) - len(image_only) == 4
    assert len(image_only) <= 8  # 7 with pypdf 7.1
    loaded = [doc for status, doc in pdf_outcomes.values() if status == "ok"]
    assert len(loaded) >= 70  # 72 with pypdf 7.1
    assert all(doc.text.strip() and doc.title for doc in loaded)


def test_pdf_title_from_metadata_else_first_page_heading(pdf_outcomes):
    def title(name):
        return pdf_outcomes[name][1].title

    # no metadata title: the first page's heading, after the file name's words
    assert title("pypdf_sample_files/021-pdfa/crazyones-pdfa.pdf") == "crazyones pdfa — The Crazy Ones"
    # a real metadata title stands; a file name about something else is not mixed in
    assert title("pdfplumber_tests/issue-982-example.pdf") == "Art in Machine Learning"
    # metadata "10811.exe" is a file name and the first line "1" a line number: neither is a title
    assert title("pdfplumber_tests/scotus-transcript-p1.pdf") == (
        "scotus transcript p1 — Official - Subject to Final Review")
    # "Microsoft Word - SPECIAL BOARD AGENDA 040616.doc": the heading in the largest type instead
    assert title("pdfplumber_tests/cupertino_usd_4-6-16.pdf") == (
        "cupertino usd 4 6 16 — Board of Education Special Meeting AGENDA")
    from c1.index.loaders.titles import is_junk

    loaded = [doc for status, doc in pdf_outcomes.values() if status == "ok"]
    assert [doc.title for doc in loaded if is_junk(doc.title)] == []


@pytest.mark.slow
def test_filing_titles_say_which_filing(filing):
    """Metadata titles of filings are accession numbers, "Document" or generated names, and
    their first lines are "Table of Contents", "UNITED STATES", "UNITED": the title comes from
    the cover's largest type and the file name instead."""
    expected = {
        "AMERICANWATERWORKS_2020_10K.pdf": "AMERICANWATERWORKS 2020 10K — AMERICAN WATER WORKS COMPANY, INC",
        "COCACOLA_2017_10K.pdf": "COCACOLA 2017 10K — FORM 10-K",
        "MGMRESORTS_2018_10K.pdf": "MGMRESORTS 2018 10K — FORM 10-K",
    }
    for name, title in expected.items():
        assert filing(name).title == title


def test_title_rules():
    from c1.index.loaders.titles import (
        is_junk, running_heads, salient_heading, strip_heading_marks, with_name_words)

    for junk in ["Document", "untitled", "Microsoft Word - 151201DSP-Fond-581-90D", "10811.exe",
                 "905_Precinct_NoOU", "0001410636-21-000101", "CORP Q2 2023-2023-08-03-16-07",
                 "UNITED STATES", "Table of Contents", "1", "上", "issue-987-test", "  index "]:
        assert is_junk(junk), junk
    for title in ["The Crazy Ones", "ADBE 10K FY15", "Geometrie und Topologie", "grasshopper",
                  "菲达环保：关于公司2015年年度报告中有关财务事项的说阴"]:
        assert not is_junk(title), title
    cover = [("UNITED STATES", 13.3), ("SECURITIES AND EXCHANGE COMMISSION", 13.3),
             ("Washington, D.C. 20549", 8.6), ("FORM 10-K", 13.3), ("(Mark One)", 8.6),
             ("For the fiscal year ended December 31, 2022", 8.6), ("☒", 13.3), ("3M COMPANY", 13.3),
             ("(Exact name of registrant as specified in its charter)", 8.6)] + [("body", 8.6)] * 5
    assert salient_heading(cover) == "FORM 10-K — 3M COMPANY"
    paper = [("arXiv preprint", 9.0), ("Attention Is All", 17.2), ("You Need", 17.2),
             ("Ashish Vaswani", 10.0)] + [("body", 10.0)] * 5
    assert salient_heading(paper) == "Attention Is All You Need"
    same_size = [("Table of Contents", 10.0), ("Quarterly report", 10.0), ("body", 10.0)]
    assert salient_heading(same_size) == "Quarterly report"
    assert salient_heading([("Acme Corp", None), ("Q3 memo", None)], {"acme corp"}) == "Q3 memo"
    pages = [f"Acme Corp\npage {n} text\nConfidential" for n in range(6)] + ["Acme Corp\nend"]
    assert running_heads(pages) >= {"acme corp", "confidential"}
    assert "page 1 text" not in running_heads(pages)
    assert with_name_words("3M COMPANY", "/d/3M_2018_10K.pdf") == "3M 2018 10K — 3M COMPANY"
    assert with_name_words("3M 2018 10-K", "/d/3M_2018_10K.pdf") == "3M 2018 10-K"
    assert with_name_words("Art", "/d/issue-982.pdf", related_only=True) == "Art"
    assert with_name_words("Memo", "/d/scan0001.pdf") == "Memo"
    assert with_name_words("", "/d/Q3_board_minutes.pdf") == "Q3 board minutes"
    assert [strip_heading_marks(t) for t in ["## Notes ##", "#hashtag", "plain"]] == ["Notes", "#hashtag", "plain"]


def test_markdown_marks_are_not_part_of_titles(tmp_path):
    (tmp_path / "notes.md").write_text("## Weekly notes\n\nsome text\n")
    assert load_one(tmp_path / "notes.md", "text").title == "Weekly notes"
    (tmp_path / "todo.txt").write_text("# Things to do #\n- one\n")
    assert load_one(tmp_path / "todo.txt", "text").title == "Things to do"
    (tmp_path / "book.md").write_text("## Contents\n\n# Learning C#\n\ntext\n")
    assert load_one(tmp_path / "book.md", "text").title == "Learning C#"  # the first level-1 heading


def test_pdf_loading_is_quiet(capfd):
    """pypdf's complaints about damaged files must not reach the terminal."""
    for name in ("pypdf_sample_files/017-unreadable-meta-data/unreadablemetadata.pdf",
                 "pdfplumber_tests/issue-848.pdf", "pdfplumber_tests/issue-297-example.pdf"):
        with contextlib.suppress(Skip):
            load(Source(str(data_dir("pdf", name)), "pdf"))
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def test_pdf_encrypted_with_empty_password_opens():
    pytest.importorskip("cryptography", reason="AES-encrypted PDFs need 'cryptography'")
    doc = load_one(data_dir("sec", "ADOBE_2022_10K.pdf"), "pdf")
    assert len(doc.pages) == 99
    assert "Adobe" in doc.text


@pytest.mark.parametrize("kind", ["pdf", "html", "text", "eml", "mbox", "jsonl", "rtf", "csv", "docx", "epub"])
def test_empty_and_unreadable_files_say_so(tmp_path, kind):
    from c1.index.loaders import format_of

    if format_of(kind).missing():
        pytest.skip(format_of(kind).missing())
    (tmp_path / "empty").write_bytes(b"")
    assert skip_reason(tmp_path / "empty", kind) == "empty file"
    (tmp_path / "folder").mkdir()
    assert skip_reason(tmp_path / "folder", kind) == "cannot read file (Is a directory)"
    (tmp_path / "blank").write_bytes(b" \n\t\n")
    blank = skip_reason(tmp_path / "blank", kind)
    assert (blank == "empty file") == (kind in ("eml", "jsonl", "rtf")), blank  # whitespace only


def test_pdf_hand_made_failures(tmp_path):
    (tmp_path / "notes.pdf").write_text("just some text, not a PDF\n" * 10)
    assert "not a PDF" in skip_reason(tmp_path / "notes.pdf", "pdf")
    (tmp_path / "empty.pdf").write_bytes(b"")
    assert skip_reason(tmp_path / "empty.pdf", "pdf") == "empty file"
    real = data_dir("pdf", "pypdf_sample_files", "001-trivial", "minimal-document.pdf").read_bytes()
    (tmp_path / "truncated.pdf").write_bytes(real[: len(real) // 3])
    (tmp_path / "bad-xref.pdf").write_bytes(real.replace(b"startxref", b"startxre\x00"))
    for name in ("truncated.pdf", "bad-xref.pdf"):
        try:
            load(Source(str(tmp_path / name), "pdf"))
        except Skip as exc:
            assert str(exc)


@pytest.mark.slow
def test_pdf_text_comes_from_pdfium_many_times_faster_than_pypdf():
    """PDFium reads the same pages as pypdf, at a fraction of its CPU time (18× over the shared
    PDFs in bench/pdf_extract.py; the bound here leaves room for a noisy machine)."""
    import time

    from pypdf import PdfReader

    path = data_dir("sec", "AMCOR_2023Q4_EARNINGS.pdf")
    t0 = time.process_time()
    doc = load_one(path, "pdf")
    ours = time.process_time() - t0
    t0 = time.process_time()
    pypdf_pages = [page.extract_text() for page in PdfReader(path).pages]
    theirs = time.process_time() - t0
    assert len(doc.pages) == len(pypdf_pages)
    assert ours < theirs / 4, (ours, theirs)
    words = set(doc.text.split())
    for number, text in enumerate(pypdf_pages, 1):  # the same words, page by page
        page_words = set(text.split())
        assert len(page_words & words) >= 0.8 * len(page_words), number


@pytest.mark.slow
def test_pdf_pages_pdfium_cannot_read_come_from_pypdf():
    # a CJK font that PDFium cannot map to text (GBK-EUC-H CMap, no ToUnicode)
    doc = load_one(data_dir("pdf", "pdfplumber_tests", "pr-136-example.pdf"), "pdf")
    assert "浙江菲达环保科技股份有限公司" in doc.text and len(doc.pages) == 6
    # right-to-left script: pypdf gives logical order, PDFium visual order
    doc = load_one(data_dir("pdf", "pypdf_sample_files", "015-arabic", "habibi.pdf"), "pdf")
    assert "حَبيبي" in doc.text and "habibi" in doc.text
    # characters drawn twice (a bold effect) stay single: PDFium's text is kept
    doc = load_one(data_dir("pdf", "pdfplumber_tests", "issue-842-example.pdf"), "pdf")
    assert "安徽安利合成革股份有限公司" in doc.text
    assert "安徽安利合成革股份有限公司安徽安利" not in doc.text


@pytest.mark.slow
def test_pdf_loading_from_threads_is_safe_and_deterministic():
    """PDFium is not thread-safe: the loader serialises it, so loaders on threads (the indexer
    loads in a background thread) neither crash nor mix up pages."""
    from concurrent.futures import ThreadPoolExecutor

    root = data_dir("pdf", "pdfplumber_tests")
    names = ["chelsea_pdta.pdf", "issue-316-example.pdf", "federal-register-2020-17221.pdf",
             "pr-136-example.pdf", "issue-67-example.pdf", "WARN-Report-for-7-1-2015-to-03-25-2016.pdf"]
    serial = {name: load_one(root / name, "pdf").text for name in names}
    with ThreadPoolExecutor(max_workers=6) as pool:
        for _ in range(3):
            texts = list(pool.map(lambda name: load_one(root / name, "pdf").text, names))
            assert texts == [serial[name] for name in names]


@pytest.fixture(scope="module")
def filing():
    """``filing(name)``: a FinanceBench filing loaded once for the module (hundreds of pages),
    without OCR (a chart page would cost seconds)."""
    import functools

    from c1.index.loaders import ocr

    ocr.set_mode("never")
    yield functools.cache(lambda name: load_one(data_dir("financebench", "pdfs", name), "pdf"))
    ocr.set_mode("auto")


@pytest.mark.slow
def test_statement_rows_keep_label_and_values_on_one_line(filing):
    """Rows of the FinanceBench gold statement pages: pypdf put every value on its own line
    (0.66 of gold rows whole over the 27 pages, bench/pdf_tables.py); PDFium plus the row
    joining keeps them whole (0.99)."""
    expected = {
        "COCACOLA_2017_10K.pdf": (76, ["Cash and cash equivalents $ 6,006 $ 8,555",
                                       "TOTAL CURRENT LIABILITIES 27,194 26,532"]),
        "MGMRESORTS_2018_10K.pdf": (57, ["Cash and cash equivalents $ 1,526,762 $ 1,499,995"]),
    }
    for name, (page, rows) in expected.items():
        doc = filing(name)
        starts = [start for start, _ in doc.pages] + [len(doc.text)]
        lines = [" ".join(line.split()) for line in doc.text[starts[page - 1]:starts[page]].split("\n")]
        for row in rows:
            assert any(row in line for line in lines), (name, row)


def test_join_rows_joins_only_values_beside_their_label():
    from c1.index.loaders.pdf_rows import join_rows

    def page(*lines):
        """PDFium-like text and a box_of() from (text, box) pairs."""
        text, boxes, pos = [], {}, 0
        for line, box in lines:
            boxes[pos] = box
            text.append(line)
            pos += len(line) + 2
        return "\r\n".join(text), lambda start, count: boxes[start]

    label = (36, 338.6, 146, 344.1)
    # values 7 pt lower than the label, to its right: one row (Coca-Cola's TOTAL CURRENT LIABILITIES)
    text, box_of = page(("TOTAL", label), ("27,194 26,532", (483, 330.7, 563, 337.4)))
    assert join_rows(text, box_of) == "TOTAL 27,194 26,532"
    # a raised footnote mark and values: one row; then the next row stays apart
    text, box_of = page(("Net income", label), ("1", (147, 342, 150, 346)), ("$ 5,070", (480, 338.6, 520, 344.1)),
                        ("Taxes 117", (36, 326, 520, 331.5)))
    assert join_rows(text, box_of) == "Net income 1 $ 5,070\r\nTaxes 117"
    # apart: a year under its header word (stacked column header), values a row farther down,
    # words beside the line (prose, another column)
    for first, second in [(("December 26,", label), ("2015", (60, 330, 80, 336))),
                          (("Taxes", label), ("117", (483, 325, 503, 331))),
                          (("Taxes", label), ("and other assets", (483, 338.6, 563, 344.1)))]:
        text, box_of = page(first, second)
        assert join_rows(text, box_of) == text


# --- Enron maildir -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def enron() -> tuple[list[Source], list[list[Document]]]:
    sources, skipped = walk([str(data_dir("enron", "maildir"))], max_bytes=50 * MB)
    assert skipped == []
    return sources, [load(source) for source in sources]


@pytest.mark.slow
def test_enron_walk_finds_all_messages(enron):
    sources, _ = enron
    assert len(sources) == 993
    assert {s.kind for s in sources} == {"eml"}
    assert [s.path for s in sources] == sorted(s.path for s in sources)
    assert all(Path(s.path).name.endswith(".") for s in sources)


@pytest.mark.slow
def test_enron_each_message_is_one_document_with_headers(enron):
    sources, loaded = enron
    # This sample has no RFC 2047 encoded or non-ASCII header (checked); the hand-made .eml
    # test covers decoding. Here: every header the CMU layout always has is there.
    for source, docs in zip(sources, loaded, strict=True):
        assert len(docs) == 1
        doc = docs[0]
        assert doc.key == doc.path == source.path
        assert doc.meta["from"] and doc.meta["message_id"] and "@" in doc.meta["from"]
        assert datetime.fromisoformat(str(doc.meta["date"])).tzinfo is not None
        assert set(doc.meta) == {"from", "to", "cc", "date", "subject", "message_id", "attachments"}
        assert doc.title == (doc.meta["subject"] or "(no subject)")
        assert doc.text.startswith(f"From: {doc.meta['from']}\n")
    assert len({docs[0].meta["message_id"] for docs in loaded}) == 993


def test_enron_known_message():
    path = data_dir("enron", "maildir", "allen-p", "_sent_mail", "22.")
    doc = load_one(path, "eml")
    assert doc.meta["date"] == "2001-04-26T17:01:00-07:00"
    assert doc.meta["message_id"] == "22039354.1075855378849.JavaMail.evans@thyme"
    assert doc.text.endswith("I would look at properties in San Antonio or Dallas.")
    sources, skipped = walk([str(path)], max_bytes=MB)  # named explicitly
    assert sources == [Source(str(path), "eml")] and skipped == []


# --- HotpotQA as a .jsonl corpus -----------------------------------------------------------


def test_hotpotqa_paragraphs_round_trip_source_ids(tmp_path):
    records = []
    with open(data_dir("hotpotqa", "hotpotqa_dev_distractor_200.jsonl"), encoding="utf-8") as f:
        for line in f:
            question = json.loads(line)
            for j, (title, sentences) in enumerate(question["context"]):
                records.append({"id": f"{question['_id']}/{j}", "title": title,
                                "text": "".join(sentences)})
    corpus = tmp_path / "hotpot.jsonl"
    corpus.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    docs, warnings = load_with_warnings(Source(str(corpus), "jsonl"))
    assert warnings == []
    assert len(docs) == len(records) == 1992  # one of the 200 questions has 2 paragraphs
    for record, doc in zip(records, docs, strict=True):
        assert doc.meta == {"source_id": record["id"]}
        assert doc.key == f"{corpus}#{record['id']}"
        assert doc.title == record["title"] and doc.text == record["text"]


def test_jsonl_bad_lines_and_duplicates_are_warnings(tmp_path):
    lines = [
        '{"id": 1, "title": "One", "text": "first"}',
        "",
        '{"id": 2, "text": "second\u2028with a line separator"}',
        "{not json",
        '{"id": 1, "text": "duplicate"}',
        '{"title": "no id", "text": "x"}',
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    docs, warnings = load_with_warnings(Source(str(path), "jsonl"))
    assert [d.meta["source_id"] for d in docs] == ["1", "2"]
    assert docs[0].title == "One" and docs[0].text == "first"
    assert docs[1].title.startswith("second") and "\u2028" in docs[1].text
    assert warnings == [
        "line 4: invalid JSON",
        'line 6: missing or invalid "id"',
        "line 5: duplicate id '1', kept the first",
    ]


def test_jsonl_lines_that_only_the_standard_library_reads_are_read(tmp_path):
    """orjson parses the lines (faster) but refuses NaN and a lone surrogate escape, and reads an integer id
    past 64 bits as a float; json reads them all: such lines are indexed as before."""
    path = tmp_path / "odd.jsonl"
    path.write_text('{"id": 1, "text": "a score", "score": NaN}\n'
                    '{"id": 2, "text": "half a pair \\ud800 here"}\n'
                    '{"id": 123456789012345678901234567890, "text": "a long id"}\n', encoding="utf-8")
    docs, warnings = load_with_warnings(Source(str(path), "jsonl"))
    assert warnings == []
    assert [d.meta["source_id"] for d in docs] == ["1", "2", "123456789012345678901234567890"]


def test_jsonl_mostly_invalid_is_skipped(tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text('{"id": 1, "text": "ok"}\n{"a": 1}\n{"b": 2}\n')
    assert skip_reason(path, "jsonl") == "not a {id,title,text} JSONL corpus: 2 of 3 lines invalid"


# --- text, Markdown, HTML ------------------------------------------------------------------


def test_text_edge_cases(tmp_path):
    (tmp_path / "empty.txt").write_bytes(b"")
    assert skip_reason(tmp_path / "empty.txt", "text") == "empty file"
    (tmp_path / "blob.txt").write_bytes(b"ELF\x00\x01\x02" + bytes(range(256)))
    assert skip_reason(tmp_path / "blob.txt", "text") == "binary file"
    # Not UTF-8, not plausible Windows-1252 either (undefined byte 0x81, control characters)
    (tmp_path / "bad.txt").write_bytes(b"\x81\x02\x03\x04 hello \xff\xfe\x90" * 20)
    assert skip_reason(tmp_path / "bad.txt", "text") == "not valid UTF-8 text"
    (tmp_path / "bom.txt").write_bytes("\ufeffFirst line\r\nsecond".encode("utf-8"))
    doc = load_one(tmp_path / "bom.txt", "text")
    assert doc.text == "First line\nsecond" and doc.title == "First line"
    assert doc.key == doc.path == str(tmp_path / "bom.txt") and doc.pages is None


def test_legacy_windows_text_is_read_with_a_warning(tmp_path):
    (tmp_path / "old.txt").write_bytes("Café crème – naïve résumé\n".encode("cp1252"))
    docs, warnings = load_with_warnings(Source(str(tmp_path / "old.txt"), "text"))
    assert docs[0].text.startswith("Café crème – naïve résumé")
    assert warnings == ["not valid UTF-8: read as Windows-1252 text"]


def test_utf8_text_with_a_few_bad_bytes_is_read_with_replacement_characters(tmp_path):
    japanese = "東京のガス市場についての報告書です。\n" * 20
    (tmp_path / "ja.txt").write_bytes(japanese.encode() + b"\xff\n")  # one bad byte
    docs, warnings = load_with_warnings(Source(str(tmp_path / "ja.txt"), "text"))
    assert docs[0].text.startswith(japanese[:30]) and docs[0].text.endswith("\ufffd\n")
    assert warnings == ["not valid UTF-8 in 1 place: replaced by U+FFFD"]
    # Western UTF-8 with a bad byte stays UTF-8 (not garbled "CafÃ©" from a Windows-1252 reading)
    (tmp_path / "fr.txt").write_bytes("Café crème\n".encode() + b"\x81" + " naïve\n".encode())
    docs, warnings = load_with_warnings(Source(str(tmp_path / "fr.txt"), "text"))
    assert docs[0].text == "Café crème\n\ufffd naïve\n" and len(warnings) == 1
    # plain ASCII with one byte that no encoding explains
    (tmp_path / "log.txt").write_bytes(b"all quiet on the server\n" * 50 + b"\x81\n")
    assert load_one(tmp_path / "log.txt", "text").text.endswith("server\n\ufffd\n")


def test_a_few_bad_bytes_beside_few_accented_letters_stay_utf8(tmp_path):
    """One "Café" and four corrupted bytes: read as Windows-1252 it was "CafÃ©" (the README promises
    U+FFFD for the bad bytes); Windows-1252 text with many accents and one chance UTF-8 pair stays 1252."""
    note = "Meeting at the Café on Monday about the budget.\n".encode() + b"Totals \xff\xfe and \x9c\xfd lost.\n"
    (tmp_path / "note.txt").write_bytes(note)
    docs, warnings = load_with_warnings(Source(str(tmp_path / "note.txt"), "text"))
    assert "Café" in docs[0].text and "Ã" not in docs[0].text
    assert docs[0].text.count("\ufffd") == 4
    assert warnings == ["not valid UTF-8 in 4 places: replaced by U+FFFD"]
    legacy = "CAFÉ” — crème brûlée, pâté, naïve, résumé, déjà vu, façade, élève, où, señor\n"  # É” is valid UTF-8
    (tmp_path / "old.txt").write_bytes(legacy.encode("cp1252") * 2)
    docs, warnings = load_with_warnings(Source(str(tmp_path / "old.txt"), "text"))
    assert docs[0].text == legacy * 2 and warnings == ["not valid UTF-8: read as Windows-1252 text"]


def test_scan_counts_unsupported_files_by_extension(tmp_path):
    from c1.index.walk import scan

    for name in ["a.txt", "b.ZIP", "c.zip", "tool.py", "Makefile", "sub/d.zip", ".hidden.zip", "7."]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    found = scan([str(tmp_path)], max_bytes=MB)
    assert [Path(s.path).name for s in found.sources] == ["a.txt"]
    assert found.unsupported == {".zip": 3, ".py": 1, "(no extension)": 2}  # "7." is no mail here
    assert scan([str(tmp_path / "tool.py")], max_bytes=MB).unsupported == {}  # named: skipped instead


def test_markdown_and_text_titles(tmp_path):
    md = "---\nlayout: post\n---\n\nIntro line\n\n```sh\n# not a title\n```\n# Real Title #\n"
    (tmp_path / "a.md").write_text(md)
    assert load_one(tmp_path / "a.md", "text").title == "Real Title"
    (tmp_path / "b.md").write_text("---\ntitle: \"From front matter\"\n---\n# Heading\n")
    assert load_one(tmp_path / "b.md", "text").title == "From front matter"
    (tmp_path / "c.rst").write_text("=====\n\n" + "Long " * 50 + "\n=====\n")
    title = load_one(tmp_path / "c.rst", "text").title
    assert title.startswith("Long Long") and len(title) == 120
    (tmp_path / "d.txt").write_text("   \n\n")
    assert "whitespace" in skip_reason(tmp_path / "d.txt", "text")


def test_a_letter_spaced_first_line_is_no_title(tmp_path):
    spaced = tmp_path / "Acme Globex NDA [signed].txt"
    spaced.write_text("N o n- d i s c l o s u re A g re e m e n t\n\nThis Agreement is made between Acme and Globex.\n")
    assert load_one(spaced, "text").title == "Acme Globex NDA [signed].txt"
    plain = tmp_path / "b.txt"
    plain.write_text("A Tale of Two Cities\n\nIt was the best of times.\n")
    assert load_one(plain, "text").title == "A Tale of Two Cities"
    from c1.index.loaders.titles import is_junk

    assert is_junk("M U T U A L  N O N D I S C L O S U R E") and not is_junk("Q1 and Q2 of FY 2024 in the US")


def test_a_first_line_of_prose_gives_its_first_sentence_or_the_file_name(tmp_path):
    notes = tmp_path / "Quarterly notes (v2) [draft].txt"
    notes.write_text("Quarterly review notes. Marketing spent 75000 in Q2 against a budget of 75000.\n")
    assert load_one(notes, "text").title == "Quarterly review notes"
    long = tmp_path / "memo.txt"
    long.write_text("We met on Tuesday with the whole team to go over the budget and the plan for the rest of the "
                    "year. Nothing was decided.\n")
    assert load_one(long, "text").title == "memo.txt"
    contract = tmp_path / "c.txt"
    contract.write_text("Exhibit 10.6 TRADEMARK LICENSE AGREEMENT This TRADEMARK LICENSE AGREEMENT is made by Acme Inc.\n")
    assert load_one(contract, "text").title.startswith("Exhibit 10.6 TRADEMARK LICENSE AGREEMENT")


def test_html_to_text(tmp_path):
    html = """<!DOCTYPE html><html><head><meta charset="windows-1252">
    <title>Caf\xe9 &amp; Co</title><style>body { color: red }</style>
    <script>var x = "<p>hidden</p>";</script></head>
    <body><noscript>enable JS</noscript><h1>Menu</h1>
    <p>Espresso&nbsp;&euro;2 &lt;hot&gt;
       and   tea</p><ul><li>one</li><li>two</li></ul>
    <table><tr><td>a</td><td>b</td></tr></table><template><p>tpl</p></template>
    <pre>keep
  lines</pre></body></html>"""
    (tmp_path / "page.html").write_bytes(html.encode("cp1252"))
    doc = load_one(tmp_path / "page.html", "html")
    assert doc.title == "Café & Co"
    assert doc.text == "Menu\n\nEspresso €2 <hot> and tea\n\none\ntwo\n\na b\n\nkeep\nlines"
    for hidden in ("color", "hidden", "enable JS", "tpl", "var x"):
        assert hidden not in doc.text
    only_heading = html_to_text("<h1>Only <b>heading</b></h1><p>x</p>")
    assert only_heading == ("Only heading\n\nx", "Only heading")
    (tmp_path / "blank.htm").write_text("<html><script>x()</script></html>")
    assert "no visible text" in skip_reason(tmp_path / "blank.htm", "html")
    (tmp_path / "untitled.htm").write_text("<p>caf\u00e9</p>", encoding="utf-8")
    doc = load_one(tmp_path / "untitled.htm", "html")
    assert doc.title == "untitled.htm" and doc.text == "café"


# --- email ---------------------------------------------------------------------------------

MULTIPART_EML = b"""\
Message-ID: <abc@x.org>
Date: Tue, 5 Mar 2024 10:15:00 +0100
From: =?utf-8?q?J=C3=BCrgen?= <j@x.org>
To: "Doe, Jane" <jane@y.org>, bob@y.org
Cc: =?iso-8859-1?q?Ren=E9e?= <renee@z.org>
Subject: =?utf-8?b?UXVhcnRhbHNiZXJpY2h0IMOcYmVyc2ljaHQ=?=
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="OUTER"

--OUTER
Content-Type: multipart/alternative; boundary="INNER"

--INNER
Content-Type: text/html; charset=utf-8

<html><body><p>Hallo <b>Welt</b> &amp; Gr&uuml;&szlig;e</p><script>x()</script></body></html>
--INNER--
--OUTER
Content-Type: text/csv; charset=utf-8
Content-Disposition: attachment; filename="numbers.csv"

a,b
1,2
--OUTER
Content-Type: application/pdf
Content-Disposition: attachment; filename="scan.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--OUTER--
"""


def test_eml_decodes_headers_html_body_and_attachments(tmp_path):
    (tmp_path / "m.eml").write_bytes(MULTIPART_EML)
    doc = load_one(tmp_path / "m.eml", "eml")
    assert doc.meta == {
        "from": "Jürgen <j@x.org>",
        "to": "Doe, Jane <jane@y.org>, bob@y.org",
        "cc": "Renée <renee@z.org>",
        "date": "2024-03-05T10:15:00+01:00",
        "subject": "Quartalsbericht Übersicht",
        "message_id": "abc@x.org",
        "attachments": "numbers.csv, scan.pdf",
    }
    assert doc.title == "Quartalsbericht Übersicht"
    assert doc.text == (
        "From: Jürgen <j@x.org>\nTo: Doe, Jane <jane@y.org>, bob@y.org\nCc: Renée <renee@z.org>\n"
        "Date: 2024-03-05T10:15:00+01:00\nSubject: Quartalsbericht Übersicht\n\n"
        "Hallo Welt & Grüße\n\n--- attachment: numbers.csv ---\na,b\n1,2"
    )


def test_eml_broken_charsets_and_garbage(tmp_path):
    odd = (b"From: =?unknown-8bit?q?M=FCller?= <m@x.org>\nSubject: caf\xe9\nDate: not a date\n"
           b"Content-Type: text/plain; charset=x-no-such-charset\n\nK\xf6ln \x80\n")
    (tmp_path / "odd.eml").write_bytes(odd)
    doc = load_one(tmp_path / "odd.eml", "eml")
    assert doc.meta["date"] == "not a date" and doc.meta["subject"] == "café"
    assert "m@x.org" in doc.meta["from"] and doc.title == "café"
    assert doc.text.endswith("Köln €")
    (tmp_path / "garbage.eml").write_bytes(bytes(range(256)) * 4)
    assert skip_reason(tmp_path / "garbage.eml", "eml") == "not an email message"
    (tmp_path / "prose.eml").write_text("Dear diary,\nno headers here.\n")
    assert skip_reason(tmp_path / "prose.eml", "eml") == "not an email message"
    (tmp_path / "nosubject.eml").write_text("From: a@b.c\n\nhi\n")
    assert load_one(tmp_path / "nosubject.eml", "eml").title == "(no subject)"


def test_mbox_three_messages_with_unique_keys(tmp_path):
    mbox = (
        "From a@x.org Mon Jan  1 00:00:00 2024\nMessage-ID: <one@x>\nFrom: a@x.org\n"
        "Subject: first\n\nbody one\n>From the escaped line\n\n"
        "From b@x.org Mon Jan  1 00:00:00 2024\nFrom: b@x.org\nSubject: second\n\nbody two\n\n"
        "From c@x.org Mon Jan  1 00:00:00 2024\nMessage-ID: <one@x>\nFrom: c@x.org\n"
        "Subject: third, same id\n\nbody three\n"
    )
    path = tmp_path / "box.mbox"
    path.write_text(mbox)
    docs = load(Source(str(path), "mbox"))
    assert [d.title for d in docs] == ["first", "second", "third, same id"]
    assert [d.key for d in docs] == [f"{path}#one@x", f"{path}#1", f"{path}#one@x#2"]
    assert all(d.path == str(path) for d in docs)
    assert docs[1].text.endswith("body two")
    (tmp_path / "plain.mbox").write_text("no separator lines\n")
    assert "not an mbox" in skip_reason(tmp_path / "plain.mbox", "mbox")


# --- walk ----------------------------------------------------------------------------------


def test_walk_kinds_hidden_sorted_and_explicit_files(tmp_path):
    files = ["b.md", "a.txt", "c.HTML", "d.pdf", "e.eml", "f.mbox", "g.jsonl", "h.rst",
             "skip.py", "README", "7.", ".hidden.txt", ".git/x.txt", "__pycache__/y.txt",
             "sub/z.markdown"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("Subject: s\n\nx" if name == "7." else "x")
    (tmp_path / "42").write_text("not a mail, just a number file\n")
    sources, skipped = walk([str(tmp_path)], max_bytes=MB)
    assert [(Path(s.path).relative_to(tmp_path).as_posix(), s.kind) for s in sources] == [
        ("7.", "eml"), ("a.txt", "text"), ("b.md", "text"), ("c.HTML", "html"), ("d.pdf", "pdf"),
        ("e.eml", "eml"), ("f.mbox", "mbox"), ("g.jsonl", "jsonl"), ("h.rst", "text"),
        ("sub/z.markdown", "text"),
    ]
    assert skipped == []
    sources, skipped = walk([str(tmp_path / "skip.py"), str(tmp_path / "README"),
                             str(tmp_path / ".hidden.txt")], max_bytes=MB)
    assert sources == [Source(str(tmp_path / ".hidden.txt"), "text")]
    assert skipped == [(str(tmp_path / "README"), "unsupported file type (no extension)"),
                       (str(tmp_path / "skip.py"), "unsupported file type (.py)")]


def test_walk_missing_path_raises(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(FileNotFoundError) as info:
        walk([str(tmp_path / "a.txt"), str(tmp_path / "nope")], max_bytes=MB)
    assert str(tmp_path / "nope") in str(info.value)


def test_walk_symlink_loop_and_duplicate_links(tmp_path):
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "docs" / "deep" / "a.txt").write_text("x")
    (tmp_path / "docs" / "deep" / "loop").symlink_to(tmp_path / "docs")
    (tmp_path / "docs" / "alias").symlink_to(tmp_path / "docs" / "deep")
    (tmp_path / "docs" / "same.txt").symlink_to(tmp_path / "docs" / "deep" / "a.txt")
    (tmp_path / "docs" / "dangling.txt").symlink_to(tmp_path / "missing.txt")
    sources, skipped = walk([str(tmp_path / "docs"), str(tmp_path / "docs" / "deep")], max_bytes=MB)
    # alias/ comes first in sorted order: the folder and its file are taken once, through it
    assert sources == [Source(str(tmp_path / "docs" / "alias" / "a.txt"), "text")]
    assert skipped == [
        (str(tmp_path / "docs" / "alias" / "loop"),
         "symlink loop (links back to a folder being walked)"),
        (str(tmp_path / "docs" / "dangling.txt"), "broken symbolic link"),
    ]


def test_walk_size_limit(tmp_path):
    (tmp_path / "big.txt").write_bytes(b"x" * (MB + 1))
    (tmp_path / "small.txt").write_bytes(b"x" * MB)
    sources, skipped = walk([str(tmp_path)], max_bytes=MB)
    assert sources == [Source(str(tmp_path / "small.txt"), "text")]
    assert skipped == [(str(tmp_path / "big.txt"), "larger than 1 MB limit (1 MB)")]
    _, skipped = walk([str(tmp_path / "big.txt")], max_bytes=50 * MB // 100)
    assert skipped[0][1] == "larger than 512 KB limit (1 MB)"


def test_walk_unreadable_folder(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    (tmp_path / "a.txt").write_text("x")
    real_scandir = os.scandir

    def scandir(path):  # chmod 0 does not stop root, who runs CI: fake the refusal
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr("c1.index.walk.os.scandir", scandir)
    sources, skipped = walk([str(tmp_path)], max_bytes=MB)
    assert sources == [Source(str(tmp_path / "a.txt"), "text")]
    assert skipped == [(str(locked), "cannot read folder (Permission denied)")]


def test_walk_maildir(tmp_path):
    box = tmp_path / "Mail"
    message = "From: a@x.org\nSubject: hello {n}\n\nbody {n}\n"
    for part, name in [("cur", "1700000000.M1P1.host:2,S"), ("new", "1700000001.M2P2.host"),
                       ("tmp", "1700000002.M3P3.host"), (".Sent/cur", "1700000003.M4P4.host:2,S")]:
        (box / part).mkdir(parents=True, exist_ok=True)
        (box / part / name).write_text(message.format(n=name[:10]))
    (box / ".Sent" / "tmp").mkdir()
    (box / ".Trash").mkdir()
    (box / ".Trash" / "note.txt").write_text("hidden and not a Maildir folder")
    (box / "dovecot-uidlist").write_text("3 V1 N4\n")
    sources, skipped = walk([str(tmp_path)], max_bytes=MB)
    assert [(Path(s.path).relative_to(box).as_posix(), s.kind) for s in sources] == [
        (".Sent/cur/1700000003.M4P4.host:2,S", "eml"),
        ("cur/1700000000.M1P1.host:2,S", "eml"),
        ("new/1700000001.M2P2.host", "eml"),
    ]
    assert skipped == []
    assert load_one(Path(sources[1].path), "eml").title == "hello 1700000000"
    sources, skipped = walk([str(box / "new"), str(box / "cur" / "1700000000.M1P1.host:2,S")],
                            max_bytes=MB)
    assert [Path(s.path).parent.name for s in sources] == ["cur", "new"] and skipped == []


def test_load_raises_only_skip(tmp_path):
    """Every kind of loader on every kind of bad input: Skip, nothing else."""
    from c1.index.loaders import formats

    samples = {
        "empty": b"",
        "nul": b"\x00" * 100,
        "garbage": bytes(range(256)) * 50,
        "half-json": b'{"id": 1, "text": "x"',
        "html-ish": b"<html><body><p>unclosed <b>tags",
        "mail-ish": b"From: \nSubject: =?bogus?x?zz?=\nContent-Type: multipart/mixed\n\n--",
    }
    for name, data in samples.items():
        path = tmp_path / name
        path.write_bytes(data)
        for kind in formats():
            try:
                docs = load(Source(str(path), kind))
            except Skip as exc:
                assert str(exc) and "\n" not in str(exc), (name, kind)
            else:
                assert all(isinstance(d, Document) for d in docs)
    assert "cannot read" in skip_reason(tmp_path / "does-not-exist.txt", "text")
    assert "unsupported kind" in skip_reason(tmp_path / "empty", "no-such-kind")


def test_exchange_x_from_name_becomes_the_display_name(tmp_path):
    from c1.index.loaders import load
    from c1.index.walk import Source

    msg = tmp_path / "m.eml"
    msg.write_text(
        "Message-ID: <1@x>\nFrom: phillip.allen@enron.com\nX-From: Phillip K Allen\nTo: a@b.c\n"
        "Subject: hi\nDate: Thu, 26 Apr 2001 17:01:00 -0700\n\nbody\n"
    )
    doc = load(Source(str(msg), "eml"))[0]
    assert doc.meta["from"] == "Phillip K Allen <phillip.allen@enron.com>"
    assert doc.text.startswith("From: Phillip K Allen <phillip.allen@enron.com>")


# --- the registry of formats -------------------------------------------------------------------


def test_walk_takes_its_extensions_from_the_registry(tmp_path):
    from c1.index.loaders import extensions, formats

    assert set(extensions().values()) <= set(formats())
    for ext, kind in extensions().items():
        (tmp_path / f"file{ext}").write_text("x")
    sources, skipped = walk([str(tmp_path)], max_bytes=MB)
    assert skipped == []
    assert sorted((Path(s.path).suffix, s.kind) for s in sources) == sorted(extensions().items())


def test_a_format_whose_library_is_missing_names_the_extra():
    from c1.index.loaders import Format

    def never_called(path):
        raise AssertionError(path)

    fmt = Format("fake", (".fake",), never_called, extra="office", modules=("c1_no_such_module",))
    assert fmt.missing() == "install c1[office] to index .fake files"
    assert Format("json", (".json",), never_called, modules=("json",)).missing() is None
