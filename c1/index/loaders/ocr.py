"""Text from pictures of text: scanned PDF pages and image files, by RapidOCR (the ``ocr`` extra).

RapidOCR runs PaddleOCR's detection and recognition models with onnxruntime; the models ship
inside its wheel, so it works offline. It is slow on a CPU (seconds a page), so every page it
reads is reported to :data:`on_page` (``c1 index`` shows it on its progress line).

Policy (:func:`set_mode`): ``"auto"`` reads the pages without a text layer when the extra is
installed; ``"always"`` (``c1 index --ocr``) reads every page, text layer or not; ``"never"``
reads none.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable

from c1.index.documents import Skip
from c1.index.loaders.common import run_first_at_exit

EXTRA = "ocr"
LONG_SIDE = 2000
"""Pixels on a page image's longer side: RapidOCR scales larger images down to this anyway."""

on_page: Callable[[str, int, int], None] | None = None
"""Called with (file, page, pages) before each page is read; set by ``c1 index``."""

MODES = ("auto", "always", "never")
_mode = "auto"
_engine = None
_lock = threading.Lock()  # one recognition at a time: the engine is not shared across threads
_exiting = threading.Event()


@functools.cache
def available() -> bool:
    try:
        import rapidocr  # noqa: F401
    except Exception:  # not installed, or OpenCV / onnxruntime failed to load
        return False
    return True


def set_mode(mode: str) -> None:
    """``"auto"``, ``"always"`` or ``"never"``: see the module's docstring."""
    global _mode
    if mode not in MODES:
        raise ValueError(f"OCR mode {mode!r} is not one of {MODES}")
    _mode = mode


def wanted(has_text: bool) -> bool:
    """Should a PDF page be read with OCR (``has_text``: it has a text layer)?"""
    if _mode == "auto":
        return not has_text and available()
    return _mode == "always"


def scale_for(width: float, height: float) -> float:
    """Render scale that gives a page :data:`LONG_SIDE` pixels on its longer side (300 dpi at
    most: a postcard-sized page does not need more)."""
    return min(LONG_SIDE / max(width, height, 1.0), 300 / 72)


def image_text(image, *, path: str = "", page: int = 1, pages: int = 1) -> str:
    """The text in ``image`` (a PIL image): lines top to bottom, words left to right, a blank
    line where a gap of more than a line's height separates paragraphs."""
    if _exiting.is_set():
        raise Skip("interrupted")
    if on_page is not None:
        on_page(path, page, pages)
    image = _fit(image)
    with _lock:
        engine = _get_engine()  # loading it imports onnxruntime, which registers exit handlers of its own
    run_first_at_exit(_at_exit)  # before the first page is read, so an interrupt during it is covered
    with _lock:
        result = engine(image)
    run_first_at_exit(_at_exit)  # libraries may register more handlers during their first run
    if not result.txts:
        return ""
    return _layout(list(zip(result.boxes, result.txts)))


def _get_engine():
    global _engine
    if _engine is None:
        from rapidocr import RapidOCR

        _engine = RapidOCR(params={"Global.log_level": "critical"})
        logging.getLogger("RapidOCR").setLevel(logging.CRITICAL)
    return _engine


def _at_exit() -> None:
    """A loader thread may be reading a page when the process ends (Ctrl-C): let it finish that
    page, start no other, and keep onnxruntime idle while it is torn down (a thread inside it
    then aborts the process)."""
    _exiting.set()
    _lock.acquire()


def _fit(image):
    image = image.convert("RGB")
    if max(image.size) > LONG_SIDE:
        image.thumbnail((LONG_SIDE, LONG_SIDE))
    return image


def _layout(found: list) -> str:
    """Boxes (four corner points) and their text → lines. Boxes whose vertical centres lie within
    half a box height of a line's are on that line."""
    boxes = []
    for points, text in found:
        ys = [p[1] for p in points]
        xs = [p[0] for p in points]
        boxes.append((min(ys), max(ys), min(xs), text.strip()))
    boxes.sort()
    lines: list[list] = []  # [top, bottom, [(x, text)]]
    for top, bottom, x, text in boxes:
        centre = (top + bottom) / 2
        if lines and abs(centre - (lines[-1][0] + lines[-1][1]) / 2) <= (bottom - top) / 2:
            lines[-1][2].append((x, text))
            lines[-1][1] = max(lines[-1][1], bottom)
        else:
            lines.append([top, bottom, [(x, text)]])
    out, previous_bottom = [], None
    for top, bottom, words in lines:
        if previous_bottom is not None and top - previous_bottom > bottom - top:
            out.append("")
        out.append(" ".join(text for _, text in sorted(words)))
        previous_bottom = bottom
    return "\n".join(out).strip()
