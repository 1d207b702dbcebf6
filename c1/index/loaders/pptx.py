"""PowerPoint ``.pptx`` (python-pptx): each slide's text (text boxes, tables, grouped shapes) and
its speaker notes; the slide number is the page. Title from the properties, else the first
slide's title."""

from __future__ import annotations

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, join_pages, table_text
from c1.index.loaders.package import open_package
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import document_title, lines_of

_WHAT = "PowerPoint presentation"


def load_pptx(path: str) -> Loaded:
    import pptx

    presentation = open_package(path, _WHAT, "ppt/presentation.xml", pptx.Presentation)
    slides = [_slide_text(slide) for slide in presentation.slides]
    if not any(s.strip() for s in slides):
        raise Skip(f"no text in {_WHAT}" if slides else f"{_WHAT} has no slides")
    text, pages = join_pages(slides)
    first = presentation.slides[0]
    heading = first.shapes.title.text if first.shapes.title is not None and first.shapes.title.has_text_frame else ""
    lines = [(clean(heading), 2.0)] if heading.strip() else []
    lines += lines_of(slides[0], 1.0)
    props = presentation.core_properties
    title = document_title(clean(props.title or ""), lines, slides, path)
    meta = {"author": clean(props.author or "")} if props.author else {}
    return [Document(key=path, path=path, title=title, text=text, pages=pages, meta=meta)], []


def _slide_text(slide) -> str:
    parts = [t for shape in slide.shapes for t in _shape_texts(shape)]
    if slide.has_notes_slide:
        notes = clean(slide.notes_slide.notes_text_frame.text or "").strip()
        if notes:
            parts.append(f"Notes: {notes}")
    return "\n".join(parts)


def _shape_texts(shape) -> list[str]:
    if getattr(shape, "shapes", None) is not None:  # a group: its members, in order
        return [t for member in shape.shapes for t in _shape_texts(member)]
    if getattr(shape, "has_table", False) and shape.has_table:
        text = table_text([[_cell_text(cell) for cell in row.cells] for row in shape.table.rows])
        return [text] if text else []
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        text = clean(shape.text_frame.text).strip()
        return [text] if text else []
    return []


def _cell_text(cell) -> str:
    """A table cell's text; blank when a merge covers it (its text, which PowerPoint keeps but
    does not show, is not the merged range's), so a merged value is written once."""
    return "" if cell.is_spanned else clean(cell.text)


register(Format("pptx", (".pptx",), load_pptx, extra="office", modules=("pptx",)))
