"""Plain text, Markdown and reStructuredText: decoded with care, titled by their first heading."""

from __future__ import annotations

import re

from c1.index.documents import Document, Skip
from c1.index.headers import MD_HEADING
from c1.index.loaders.common import BOMS, SNIFF, clip, file_name, first_line, normalize_newlines, read_bytes
from c1.index.loaders.registry import Format, Loaded, register
from c1.index.loaders.titles import line_title, strip_heading_marks

_ASCII = bytes(range(128))
_ALLOWED_CONTROLS = set("\t\n\r\f\x1a")  # \x1a: the end-of-file mark of old DOS files
UTF8_EVIDENCE = 10
"""Invalid spots that one valid multi-byte UTF-8 character outweighs in sparse text (see :func:`decode_text`)."""
LEGACY_SHARE = 0.3
"""Most non-ASCII bytes that Western text holds (a CJK legacy encoding holds more)."""
_FRONT_MATTER_TITLE = re.compile(r"^title:\s*(.+)$", re.I)


def load_text(path: str) -> Loaded:
    text, warnings = decode_text(read_bytes(path))
    if not text.strip():
        raise Skip("no text (only whitespace)")
    title = _markdown_title(text) if path.lower().endswith((".md", ".markdown")) else None
    title = title or line_title(strip_heading_marks(first_line(text))) or file_name(path)
    return [Document(key=path, path=path, title=title, text=text)], warnings


def decode_text(data: bytes) -> tuple[str, list[str]]:
    """Bytes of a text file -> (text with ``\n`` newlines, warnings); raises Skip.

    Strict UTF-8 first (a BOM, UTF-8 or UTF-16, is honoured). Bytes that are not valid UTF-8:
    - when the file holds at least as many valid multi-byte UTF-8 characters as invalid spots, or,
      in sparse text (at most 30% non-ASCII bytes, as Western text), one for every
      :data:`UTF8_EVIDENCE` invalid spots, it is UTF-8 with a few bad bytes (a truncated copy, a
      corrupted byte, a line pasted from another encoding): they become U+FFFD, with a warning.
      Sparse Windows-1252 text seldom holds such characters by chance: its accented letters stand
      alone between ASCII letters (each an invalid spot), and a valid pair would read as a capital
      accented letter followed by a symbol ("Ã©"). Dense legacy text (Shift-JIS) forms valid
      sequences by chance, so there the valid ones must be the majority;
    - else one fallback, Windows-1252, when the result looks like Western text: it decodes
      without undefined bytes, has (almost) no control characters and at most 30% non-ASCII
      bytes. Bytes failing UTF-8 with no valid multi-byte character beside them, and passing these
      checks, are nearly always legacy Windows/Latin-1 text (old notes, exports); rejecting them would
      lose content that is searchable, and a wrong guess garbles only accented letters, never
      the ASCII words. CJK legacy encodings fail the 30% check, binary data the control check;
    - else, with only one invalid spot in a thousand bytes, UTF-8 with U+FFFD again.
    """
    if not data:
        raise Skip("empty file")
    for bom, codec in BOMS:
        if data.startswith(bom):
            try:
                return normalize_newlines(data.decode(codec)), []
            except UnicodeDecodeError:
                reason = f"not valid text (bad {codec.upper()} after its byte-order mark)"
                raise Skip(reason) from None
    if b"\x00" in data[:SNIFF]:
        raise Skip("binary file")
    try:
        return normalize_newlines(data.decode("utf-8")), []
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    multibyte = sum(1 for ch in text if ch > "\x7f") - bad
    sparse = len(data.translate(None, _ASCII)) <= LEGACY_SHARE * len(data)
    if multibyte >= bad or (sparse and multibyte * UTF8_EVIDENCE >= bad):
        return normalize_newlines(text), [_replaced(bad)]
    legacy = _decode_legacy(data)
    if legacy is not None:
        return normalize_newlines(legacy), ["not valid UTF-8: read as Windows-1252 text"]
    if bad <= max(1, len(data) // 1000) and _looks_like_text(text):
        return normalize_newlines(text), [_replaced(bad)]
    raise Skip("not valid UTF-8 text")


def _replaced(bad: int) -> str:
    return f"not valid UTF-8 in {bad} place{'s' if bad > 1 else ''}: replaced by U+FFFD"


def _looks_like_text(text: str) -> bool:
    return sum(1 for ch in text if ch < " " and ch not in _ALLOWED_CONTROLS) <= len(text) // 1000


def _decode_legacy(data: bytes) -> str | None:
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:  # bytes 0x81 0x8D 0x8F 0x90 0x9D are undefined in cp1252
        return None
    non_ascii = len(data.translate(None, _ASCII))
    if non_ascii > LEGACY_SHARE * len(data) or not _looks_like_text(text):
        return None
    return text


def _markdown_title(text: str) -> str | None:
    """``title:`` of YAML front matter, else the first non-empty ``# heading`` outside code fences,
    else the first line after the front matter."""
    lines = text.split("\n")
    start = 0
    if lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                for line in lines[1:i]:
                    if match := _FRONT_MATTER_TITLE.match(line):
                        return clip(match.group(1).strip().strip("\"'")) or None
                start = i + 1
                break
    in_fence = False
    for line in lines[start:]:
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and (match := MD_HEADING.match(line)) and line.lstrip(" ")[1] != "#":  # level 1
            if title := clip(match.group(1)):
                return title
    return strip_heading_marks(first_line("\n".join(lines[start:]))) or None


register(Format("text", (".txt", ".md", ".markdown", ".rst"), load_text))
