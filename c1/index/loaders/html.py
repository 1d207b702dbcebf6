"""HTML pages: the visible text (blocks on their own lines), titled by ``<title>`` or the first ``<h1>``."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from c1.index.documents import Document, Skip
from c1.index.loaders.common import BOMS, SNIFF, clean, clip, file_name, read_bytes
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import is_junk

_SKIPPED_TAGS = {"script", "style", "noscript", "template"}
# Tags that start a new line, and those that start a new paragraph (a blank line before).
_LINE_TAGS = {"br", "caption", "dd", "div", "dt", "figcaption", "li", "summary", "tbody",
              "tfoot", "thead", "tr"}
_PARAGRAPH_TAGS = {"address", "article", "aside", "blockquote", "details", "dl", "fieldset",
                   "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
                   "hr", "main", "nav", "ol", "p", "pre", "section", "table", "ul"}
_CELL_TAGS = {"td", "th"}
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
# What browsers do (WHATWG encoding standard): these labels mean windows-1252, and a UTF-16
# label in a document that was readable as ASCII to find the label means UTF-8.
_CHARSET_OVERRIDES = {"iso-8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
                      "us-ascii": "cp1252", "ascii": "cp1252", "utf-16": "utf-8",
                      "utf-16le": "utf-8", "utf-16be": "utf-8"}


class _HTMLText(HTMLParser):
    """Collects visible text, the ``<title>`` and the first ``<h1>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self.h1: list[str] = []
        self._skipping = 0
        self._in_title = False
        self._in_h1 = False
        self._h1_done = False
        self._pre = 0
        self._newlines = 0  # owed before the next visible text: 1 = new line, 2 = paragraph

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag == "title":
            self._in_title = True
        elif tag == "h1" and not self._h1_done:
            self._in_h1 = True
        elif tag == "pre":
            self._pre += 1
        self._break(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(0, self._skipping - 1)
        elif tag == "title":
            self._in_title = False
        elif tag == "h1" and self._in_h1:
            self._in_h1 = False
            self._h1_done = bool("".join(self.h1).strip())
        elif tag == "pre":
            self._pre = max(0, self._pre - 1)
        self._break(tag)

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        if self._in_title:
            self.title.append(data)
            return
        if self._in_h1:
            self.h1.append(data)
        if not self._pre:  # source newlines are plain spaces in HTML, except inside <pre>
            data = re.sub(r"\s+", " ", data)
        if self._newlines and data.strip():
            self.parts.append("\n" * self._newlines)
            self._newlines = 0
        self.parts.append(data)

    def _break(self, tag: str) -> None:
        """Blocks owe a line break before the next text; the strongest owed one wins, so
        ``</li><li>`` is one new line and ``</p><ul><li>`` a paragraph break."""
        if tag in _PARAGRAPH_TAGS:
            self._newlines = 2
        elif tag in _LINE_TAGS:
            self._newlines = max(self._newlines, 1)
        elif tag in _CELL_TAGS:
            self.parts.append(" ")


def html_to_text(html: str) -> tuple[str, str]:
    """Visible text of an HTML document (blocks on their own lines, a blank line between
    paragraphs) and its title: ``<title>`` when it reads as a title (not "Untitled", not Word's
    "Microsoft Word - x.doc", not garbled), else the first ``<h1>``; "" if neither."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = (re.sub(r"[^\S\n]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title, h1 = clean(clip("".join(parser.title))), clean(clip("".join(parser.h1)))
    return clean(text), title if title and not is_junk(title) else h1


def _decode_html(data: bytes) -> str:
    """A BOM, else ``<meta charset>``, else UTF-8; undecodable bytes become U+FFFD."""
    for bom, codec in BOMS:
        if data.startswith(bom):
            return data.decode(codec, "replace")
    if b"\x00" in data[:SNIFF]:
        raise Skip("binary file")
    match = _META_CHARSET.search(data[:4096])
    charset = match.group(1).decode("ascii").lower() if match else "utf-8"
    charset = _CHARSET_OVERRIDES.get(charset, charset)
    try:
        return data.decode(charset, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def load_html(path: str) -> Loaded:
    data = read_bytes(path, nonempty=True)
    text, title = html_to_text(_decode_html(data))
    if not text:
        raise Skip("no visible text in HTML")
    return [Document(key=path, path=path, title=title or file_name(path), text=text)], []


register(Format("html", (".html", ".htm"), load_html))
