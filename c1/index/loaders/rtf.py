"""Rich Text Format ``.rtf`` (striprtf): the text without control words, in the document's code
page; title and author from its ``\\info`` group."""

from __future__ import annotations

import codecs
import re

from c1.index.documents import Document, Skip
from c1.index.loaders.common import clean, normalize_newlines, read_bytes
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import document_title, lines_of

_CODE_PAGE = re.compile(rb"\\ansicpg(\d+)")
_INFO = {"title": re.compile(r"\{\\title\s+([^{}]*)\}"), "author": re.compile(r"\{\\author\s+([^{}]*)\}")}


def load_rtf(path: str) -> Loaded:
    from striprtf.striprtf import rtf_to_text

    data = read_bytes(path)
    if not data.strip():
        raise Skip("empty file")
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        raise Skip("not an RTF file (no {\\rtf header)")
    encoding = _encoding(data)
    raw = data.decode("latin-1")  # RTF is 7-bit: other bytes are escapes in the code page
    text = clean(normalize_newlines(rtf_to_text(raw, encoding=encoding, errors="replace"))).strip()
    if not text:
        raise Skip("no text in RTF file")
    info = {key: clean(rtf_to_text("{\\rtf1 " + m.group(1) + "}", encoding=encoding, errors="replace")).strip()
            for key, pattern in _INFO.items() if (m := pattern.search(raw))}
    lines = lines_of(text)[:40]
    title = document_title(info.get("title", ""), lines, [], path)
    meta = {"author": info["author"]} if info.get("author") else {}
    return [Document(key=path, path=path, title=title, text=text, meta=meta)], []


def _encoding(data: bytes) -> str:
    """``\\ansicpg1251`` → cp1251; Windows-1252 when absent or unknown."""
    match = _CODE_PAGE.search(data[:4096])
    if match:
        name = f"cp{match.group(1).decode()}"
        try:
            codecs.lookup(name)
            return name
        except LookupError:
            pass
    return "cp1252"


register(Format("rtf", (".rtf",), load_rtf))
