"""EPUB books (ebooklib): the chapters in reading order, each one page; title and author from the
book's metadata."""

from __future__ import annotations

import re
import warnings
import zipfile

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, join_pages
from c1.index.loaders.html import html_to_text
from c1.index.loaders.package import open_package
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import document_title

_WHAT = "EPUB book"
_ENCRYPTED_TEXT = re.compile(rb"""URI=["'][^"']+\.x?html?["']""", re.I)


def load_epub(path: str) -> Loaded:
    from ebooklib import ITEM_DOCUMENT, epub

    def read(file: str):
        with warnings.catch_warnings():  # ebooklib warns about its own future defaults
            warnings.simplefilter("ignore")
            return epub.read_epub(file, options={"ignore_ncx": True})

    book = open_package(path, _WHAT, "META-INF/container.xml", read, _drm)
    chapters, headings = [], []
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or item.get_type() != ITEM_DOCUMENT:
            continue
        text, heading = html_to_text(item.get_content().decode("utf-8", "replace"))
        chapters.append(text)
        if heading and text:
            headings.append((heading, 1.0))
    if not any(c.strip() for c in chapters):
        raise Skip(f"no text in {_WHAT}")
    text, pages = join_pages(chapters)
    title = document_title(_dc(book, "title"), headings[:1], chapters, path)
    author = _dc(book, "creator")
    return [Document(key=path, path=path, title=title, text=text, pages=pages,
                     meta={"author": author} if author else {})], []


def _dc(book, name: str) -> str:
    values = book.get_metadata("DC", name)
    return clean(str(values[0][0])).strip() if values and values[0][0] else ""


def _drm(package: zipfile.ZipFile) -> str:
    """Chapters listed in META-INF/encryption.xml (fonts obfuscated there are harmless)."""
    try:
        return "DRM" if _ENCRYPTED_TEXT.search(package.read("META-INF/encryption.xml")) else ""
    except (KeyError, zipfile.BadZipFile, OSError):
        return ""


register(Format("epub", (".epub",), load_epub, extra="office", modules=("ebooklib",)))
