"""OCR of scanned PDF pages and image files, on pictures of known text made here with Pillow
(its bundled font: no system fonts needed), read by the real RapidOCR models."""

from __future__ import annotations

import difflib
import os
import time
from pathlib import Path

import pytest

from c1.index.documents import Skip
from c1.index.loaders import load, load_with_warnings, ocr
from c1.index.walk import Source

pytest.importorskip("rapidocr", reason="the ocr extra: pip install 'c1[ocr]'")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402  (Pillow comes with the ocr extra)

pytestmark = pytest.mark.slow  # the OCR model reading pages on this CPU, c1 in subprocesses

PAGES = [
    ["Quarterly report of the Northwind Trading Company",
     "Revenue rose to 1,577 million dollars in 2018.",
     "Purchases of property, plant and equipment fell."],
    ["Minutes of the board meeting held on 4 March",
     "The board approved the budget for the new warehouse.",
     "Next meeting: 12 April at the Leeds office."],
]


def page_image(lines: list[str]) -> Image.Image:
    """A letter-sized page at 150 dpi with ``lines`` in 16-point type."""
    image = Image.new("RGB", (1275, 1650), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=34)
    for i, line in enumerate(lines):
        draw.text((110, 150 + i * 70), line, fill="black", font=font)
    return image


def accuracy(found: str, expected: str) -> float:
    """Character accuracy: 1 - (edits / length), from difflib's matching blocks."""
    a, b = " ".join(found.split()), " ".join(expected.split())
    matched = sum(block.size for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return matched / max(len(a), len(b))


@pytest.fixture
def scanned_pdf(tmp_path) -> Path:
    """A two-page PDF of page images and no text layer, as a scanner makes."""
    first, second = (page_image(lines) for lines in PAGES)
    path = tmp_path / "scan.pdf"
    first.save(path, save_all=True, append_images=[second], resolution=150)
    return path


def test_scanned_pdf_is_read_page_by_page(scanned_pdf, capsys):
    t0 = time.perf_counter()
    doc = load(Source(str(scanned_pdf), "pdf"))[0]
    seconds = time.perf_counter() - t0
    starts = [start for start, _ in doc.pages] + [len(doc.text)]
    texts = [doc.text[a:b] for a, b in zip(starts, starts[1:])]
    assert [n for _, n in doc.pages] == [1, 2] and doc.meta == {"ocr_pages": 2}
    for found, lines in zip(texts, PAGES, strict=True):
        assert accuracy(found, "\n".join(lines)) >= 0.97, found
    assert doc.title == "Quarterly report of the Northwind Trading Company"  # "scan" says nothing
    with capsys.disabled():
        print(f"\nOCR: {2 / seconds:.2f} pages/s, character accuracy "
              f"{min(accuracy(t, chr(10).join(p)) for t, p in zip(texts, PAGES)):.3f} (worst page)")


def test_image_files_are_read_and_tiff_frames_are_pages(tmp_path):
    page_image(PAGES[0]).save(tmp_path / "memo.png")
    doc = load(Source(str(tmp_path / "memo.png"), "image"))[0]
    assert accuracy(doc.text, "\n".join(PAGES[0])) >= 0.97 and doc.pages is None
    first, second = (page_image(lines).convert("L") for lines in PAGES)
    first.save(tmp_path / "fax.tif", save_all=True, append_images=[second])
    doc = load(Source(str(tmp_path / "fax.tif"), "image"))[0]
    assert [n for _, n in doc.pages] == [1, 2] and "warehouse" in doc.text.split("\n\n", 2)[-1]
    Image.new("RGB", (400, 300), "white").save(tmp_path / "blank.jpg")  # indexed as nothing:
    docs, warnings = load_with_warnings(Source(str(tmp_path / "blank.jpg"), "image"))  # not retried
    assert (docs, warnings) == ([], ["no text found in the image (OCR)"])
    (tmp_path / "fake.png").write_text("not an image")
    with pytest.raises(Skip, match="not an image"):
        load(Source(str(tmp_path / "fake.png"), "image"))


def test_ocr_modes(shared_data):
    """auto: only pages without text; always (--ocr): every page; never: none."""
    text_pdf = Source(str(shared_data / "pdf/pypdf_sample_files/001-trivial/minimal-document.pdf"), "pdf")
    assert "ocr_pages" not in load(text_pdf)[0].meta
    try:
        ocr.set_mode("always")
        forced = load(text_pdf)[0]
        assert forced.meta == {"ocr_pages": 1} and "Lorem ipsum" in forced.text
        ocr.set_mode("never")
        blank = shared_data / "pdf/pypdf_sample_files/019-grayscale-image/grayscale-image.pdf"
        with pytest.raises(Skip, match=r"^no extractable text \(scanned PDF\?\)$"):
            load(Source(str(blank), "pdf"))
    finally:
        ocr.set_mode("auto")


def test_without_the_extra(tmp_path, run_c1):
    """Without RapidOCR: --ocr is refused in one line; image files in a folder are counted with
    the unsupported ones and the summary says what to install; a named one is skipped so."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['rapidocr'] = None\n")
    env = {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "notes.txt").write_text("The warehouse opens in May.\n")
    page_image(PAGES[0]).save(folder / "scan.png")
    run_c1("index", folder, "--ocr", env=env).assert_one_line_error(2, "--ocr needs the OCR engine: pip install 'c1[ocr]'")
    result = run_c1("index", folder, "--json", env=env)
    assert result.rc == 0, result.stderr
    report = result.json()
    assert (report["added"], report["skipped"], report["unsupported"]) == (1, [], {".png": 1})
    assert "ignored 1 file of unsupported types: .png 1 (install c1[ocr] to index .png files)" in result.stderr
    named = run_c1("index", folder / "scan.png", "--json", env=env).json()
    assert named["skipped"] == [{"path": str(folder / "scan.png"), "reason": "install c1[ocr] to index .png files"}]


def test_each_page_read_is_reported(scanned_pdf, monkeypatch):
    seen = []
    monkeypatch.setattr(ocr, "on_page", lambda path, page, pages: seen.append((path, page, pages)))
    load(Source(str(scanned_pdf), "pdf"))
    assert seen == [(str(scanned_pdf), 1, 2), (str(scanned_pdf), 2, 2)]


def test_index_reads_a_scanned_pdf_and_search_finds_it(scanned_pdf, run_c1):
    blank = scanned_pdf.parent / "holiday.png"  # a picture without words: recorded, not retried
    Image.new("RGB", (640, 480), "skyblue").save(blank)
    result = run_c1("index", scanned_pdf.parent, "--json")
    assert result.rc == 0, result.stderr
    report = result.json()
    assert (report["added"], report["skipped"], report["documents"]) == (2, [], 1)
    assert report["warnings"] == [{"path": str(blank), "warning": "no text found in the image (OCR)"}]
    found = run_c1("search", "when is the next board meeting?", "--json", "-k", "1").json()
    assert found["documents"][0]["path"] == str(scanned_pdf)
    again = run_c1("index", scanned_pdf.parent, "--json").json()
    assert (again["unchanged"], again["chunks"], again["warnings"]) == (2, 0, [])


_ANNOUNCED = """
import sys
import c1.index.loaders.ocr as ocr
original, pages = ocr._get_engine, [0]
def announced():  # called as each page's recognition begins (the first call loads the engine)
    pages[0] += 1
    print(f"test: OCR of page {pages[0]} begins", file=sys.stderr, flush=True)
    return original()
ocr._get_engine = announced
sys.argv[0] = "c1"
from c1.cli import main
main()
"""


def _stderr_lines(proc) -> "queue.Queue[str | None]":
    """Each line ``proc`` writes on stderr, as it comes (None at its end)."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _wait_for_line(lines, wanted: str, timeout: float = 300) -> list[str]:
    """The lines up to the first holding ``wanted``; fails if c1 ends first or the time runs out."""
    import queue

    seen, deadline = [], time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"no {wanted!r} on stderr within {timeout:g} s: {''.join(seen)}")
        if line is None:
            pytest.fail(f"c1 ended before {wanted!r}: {''.join(seen)}")
        seen.append(line)
        if wanted in line:
            return seen


@pytest.mark.parametrize("page", [1, 2], ids=["first-page", "later-page"])
def test_ctrl_c_during_ocr_exits_130_at_once(tmp_path, c1_home, page):
    """Ctrl-C while the OCR engine loads and reads its first page, and while it reads a later one:
    never an abort from onnxruntime's threads (exit handlers), always 130 within seconds. The signal
    is sent as c1 says (on stderr, from a hook on the engine) that the page's recognition begins."""
    import signal
    import subprocess
    import sys

    pages = [page_image(PAGES[i % 2]) for i in range(12)]
    (tmp_path / "docs").mkdir()
    pages[0].save(tmp_path / "docs" / "long-scan.pdf", save_all=True, append_images=pages[1:])
    proc = subprocess.Popen([sys.executable, "-c", _ANNOUNCED, "index", str(tmp_path / "docs")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = _stderr_lines(proc)
        seen = _wait_for_line(lines, f"test: OCR of page {page} begins")
        proc.send_signal(signal.SIGINT)
        t0 = time.perf_counter()
        rc = proc.wait(timeout=30)
        took = time.perf_counter() - t0
        rest = []
        while (line := lines.get(timeout=30)) is not None:
            rest.append(line)
        stderr = "".join(seen + rest)
        assert rc == 130, stderr
        assert took < 10 and "Traceback" not in stderr, stderr
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
