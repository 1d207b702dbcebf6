"""Turn a :class:`~c1.corpus.walk.Source` into documents: text, Markdown, HTML, PDF, email, JSONL.

``load(source)`` returns the documents of one file and raises :class:`Skip` (with a one-line,
human reason) when the file cannot be indexed; no other exception escapes it. Problems that do
not prevent indexing (a bad line in a .jsonl corpus, a PDF page whose text cannot be extracted,
a legacy-encoded text file) come back as warnings from ``load_with_warnings``.
"""

from __future__ import annotations

import codecs
import contextlib
import email
import email.header
import email.policy
import io
import json
import logging
import mailbox
import os
import re
import warnings as _warnings
from collections.abc import Callable
from email.message import EmailMessage, Message
from html.parser import HTMLParser

from c1.corpus.documents import Document, Skip
from c1.corpus.walk import Source

Loaded = tuple[list[Document], list[str]]

TITLE_MAX = 120
_SNIFF = 8192  # bytes looked at to tell binary files from text
_MAX_WARNINGS = 20  # per kind of problem, per file


def load(source: Source) -> list[Document]:
    """The documents of ``source``; raises :class:`Skip` only."""
    return load_with_warnings(source)[0]


def load_with_warnings(source: Source) -> Loaded:
    """The documents of ``source`` and the non-fatal problems met; raises :class:`Skip` only."""
    loader = _LOADERS.get(source.kind)
    if loader is None:
        raise Skip(f"unsupported kind of source: {source.kind}")
    try:
        return loader(source.path)
    except Skip:
        raise
    except MemoryError:
        raise Skip("too large to load into memory") from None
    except RecursionError:
        raise Skip("too deeply nested to parse") from None
    except Exception as exc:  # a last resort: a loader bug or a library surprise
        raise Skip(f"could not be read ({type(exc).__name__}: {_one_line(exc)})") from exc


# --- shared helpers ------------------------------------------------------------------------


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise Skip(f"cannot read file ({exc.strerror or exc})") from None


def _one_line(value: object, limit: int = 160) -> str:
    return clip(str(value), limit) or "no details"


def clip(text: str, limit: int = TITLE_MAX) -> str:
    """Whitespace collapsed, at most ``limit`` characters (an ellipsis marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _first_line(text: str) -> str:
    """The first line with a letter or digit in it (skips ``----`` rules and the like)."""
    for line in text.splitlines():
        if any(ch.isalnum() for ch in line):
            return clip(line)
    return ""


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(text: str) -> str:
    """Drop NULs and repair lone surrogates, which JSON encoders and vector stores reject.

    The email parser keeps undecodable bytes as surrogate escapes; those are turned back into
    bytes and decoded as UTF-8 (else Windows-1252), anything else becomes U+FFFD.
    """
    text = text.replace("\x00", "")
    if not _SURROGATE.search(text):
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def _file_name(path: str) -> str:
    return os.path.basename(path)


# --- plain text and Markdown ---------------------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_ASCII = bytes(range(128))
_ALLOWED_CONTROLS = set("\t\n\r\f\x1a")  # \x1a: the end-of-file mark of old DOS files
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FRONT_MATTER_TITLE = re.compile(r"^title:\s*(.+)$", re.I)


def _load_text(path: str) -> Loaded:
    text, warnings = decode_text(_read(path))
    if not text.strip():
        raise Skip("no text (only whitespace)")
    title = _markdown_title(text) if path.lower().endswith((".md", ".markdown")) else None
    title = title or _first_line(text) or _file_name(path)
    return [Document(key=path, path=path, title=title, text=text)], warnings


def decode_text(data: bytes) -> tuple[str, list[str]]:
    """Bytes of a text file -> (text with ``\\n`` newlines, warnings); raises Skip.

    Strict UTF-8 first (a BOM, UTF-8 or UTF-16, is honoured). Bytes that are not UTF-8 get one
    fallback, Windows-1252, and only when the result looks like Western text: it decodes without
    undefined bytes, has (almost) no control characters and at most 30% non-ASCII bytes. Valid
    UTF-8 is such a strong signal that bytes failing it and passing these checks are nearly
    always legacy Windows/Latin-1 text (old notes, exports); rejecting them would lose content
    that is searchable, and a wrong guess garbles only accented letters, never the ASCII words.
    CJK legacy encodings fail the 30% check, binary data the control-character check.
    """
    if not data:
        raise Skip("empty file")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return _normalize_newlines(data.decode(codec)), []
            except UnicodeDecodeError:
                reason = f"not valid text (bad {codec.upper()} after its byte-order mark)"
                raise Skip(reason) from None
    if b"\x00" in data[:_SNIFF]:
        raise Skip("binary file")
    try:
        return _normalize_newlines(data.decode("utf-8")), []
    except UnicodeDecodeError:
        pass
    text = _decode_legacy(data)
    if text is None:
        raise Skip("not valid UTF-8 text")
    return _normalize_newlines(text), ["not valid UTF-8: read as Windows-1252 text"]


def _decode_legacy(data: bytes) -> str | None:
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:  # bytes 0x81 0x8D 0x8F 0x90 0x9D are undefined in cp1252
        return None
    non_ascii = len(data.translate(None, _ASCII))
    controls = sum(1 for ch in text if ch < " " and ch not in _ALLOWED_CONTROLS)
    if non_ascii > 0.3 * len(data) or controls > len(text) // 1000:
        return None
    return text


def _normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _markdown_title(text: str) -> str | None:
    """``title:`` of YAML front matter, else the first ``# heading`` outside code fences,
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
        elif not in_fence and (match := _ATX_H1.match(line)):
            return clip(match.group(1))
    return _first_line("\n".join(lines[start:])) or None


# --- HTML ----------------------------------------------------------------------------------

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
    paragraphs) and its title (``<title>``, else the first ``<h1>``; "" if neither)."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    lines = (re.sub(r"[^\S\n]+", " ", line).strip() for line in "".join(parser.parts).split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = clip("".join(parser.title)) or clip("".join(parser.h1))
    return _clean(text), _clean(title)


def _decode_html(data: bytes) -> str:
    """A BOM, else ``<meta charset>``, else UTF-8; undecodable bytes become U+FFFD."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return data.decode(codec, "replace")
    if b"\x00" in data[:_SNIFF]:
        raise Skip("binary file")
    match = _META_CHARSET.search(data[:4096])
    charset = match.group(1).decode("ascii").lower() if match else "utf-8"
    charset = _CHARSET_OVERRIDES.get(charset, charset)
    try:
        return data.decode(charset, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def _load_html(path: str) -> Loaded:
    data = _read(path)
    if not data:
        raise Skip("empty file")
    text, title = html_to_text(_decode_html(data))
    if not text:
        raise Skip("no visible text in HTML")
    return [Document(key=path, path=path, title=title or _file_name(path), text=text)], []


# --- PDF -----------------------------------------------------------------------------------

# "report.doc", "C:\\work\\x.pdf", "10811.exe": a file name where a title should be
_FILE_NAME_TITLE = re.compile(
    r"\.(pdf|docx?|odt|rtf|txt|tex|dvi|ps|indd|pptx?|xlsx?|html?)$|^\S+\.[A-Za-z0-9]{2,4}$", re.I
)
_JUNK_TITLES = {"untitled", "title", "document", "untitled document", "no title", "slide 1",
                "microsoft word", "pdf", "(anonymous)", "unknown"}
_pypdf_quiet = False


def _quiet_pypdf() -> None:
    """pypdf reports recoverable damage through the "pypdf" logger and warnings; without a
    handler, Python prints those to stderr. Keep errors for applications that log, nothing else."""
    global _pypdf_quiet
    if _pypdf_quiet:
        return
    from pypdf.errors import PdfReadWarning

    logger = logging.getLogger("pypdf")
    logger.setLevel(logging.ERROR)
    logger.addHandler(logging.NullHandler())  # no "last resort" printing to stderr
    _warnings.filterwarnings("ignore", category=PdfReadWarning)
    _warnings.filterwarnings("ignore", module=r"pypdf(\.|$)")
    _pypdf_quiet = True


def _load_pdf(path: str) -> Loaded:
    from pypdf import PdfReader

    _quiet_pypdf()
    data = _read(path)
    if not data:
        raise Skip("empty file")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            _unlock(reader)
        page_count = len(reader.pages)
    except Skip:
        raise
    except Exception as exc:
        if b"%PDF-" not in data[:1024]:  # where the spec wants the header (pypdf is laxer)
            raise Skip("not a PDF file (no %PDF header)") from None
        raise Skip(f"damaged PDF ({_one_line(exc)})") from None
    if page_count == 0:
        raise Skip("PDF has no pages")
    texts, warnings = _page_texts(reader, page_count)
    text, pages = _join_pages(texts)
    if not text.strip():
        raise Skip("no extractable text (scanned PDF?)")
    title = _pdf_title(reader) or _first_line(text) or _file_name(path)
    return [Document(key=path, path=path, title=title, text=text, pages=pages)], warnings


def _unlock(reader) -> None:
    """Open a PDF encrypted with an empty user password (common: "no copy" permissions)."""
    from pypdf.errors import DependencyError

    try:
        if reader.decrypt(""):
            return
    except DependencyError:
        raise Skip("encrypted PDF (AES): install the 'cryptography' package to read it") from None
    except NotImplementedError as exc:
        raise Skip(f"encrypted PDF (unsupported encryption: {_one_line(exc)})") from None
    raise Skip("encrypted PDF (password required)")


def _page_texts(reader, page_count: int) -> tuple[list[str], list[str]]:
    """Text of each page; a page that fails to extract is empty, with a warning."""
    texts, warnings = [], []
    for number in range(1, page_count + 1):
        try:
            texts.append(_clean(reader.pages[number - 1].extract_text() or "").strip())
        except Exception as exc:
            texts.append("")
            warnings.append(f"page {number}: no text extracted ({type(exc).__name__})")
    return texts, warnings


def _join_pages(texts: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Pages joined with a blank line; page n starts where its text starts, and the separator
    after a page belongs to it, so every character maps to exactly one page."""
    pages, offset = [], 0
    for number, text in enumerate(texts, 1):
        pages.append((offset, number))
        offset += len(text) + 2
    return "\n\n".join(texts), pages


def _pdf_title(reader) -> str | None:
    """``/Title`` from the metadata when it looks like a real title (not a file name, not a
    word processor's placeholder)."""
    try:
        raw = getattr(reader.metadata, "title", None)
        title = clip(_clean(str(raw))) if raw is not None else ""
    except Exception:
        return None
    lowered = title.lower()
    if (
        len(title) < 3
        or lowered in _JUNK_TITLES
        or lowered.startswith("microsoft word - ")
        or _FILE_NAME_TITLE.search(title)
        or "\ufffd" in title
        or not any(ch.isalpha() for ch in title)
    ):
        return None
    return title


# --- email ---------------------------------------------------------------------------------

_MAIL_HEADERS = {"message-id", "from", "to", "date", "subject", "received", "return-path"}
_HEADER_BLOCK = (("From", "from"), ("To", "to"), ("Cc", "cc"), ("Date", "date"),
                 ("Subject", "subject"))


def _load_eml(path: str) -> Loaded:
    data = _read(path)
    if not data.strip():
        raise Skip("empty file")
    return [mail_document(data, key=path, path=path)], []


def _load_mbox(path: str) -> Loaded:
    """Each message is a document keyed ``path#<message-id>``, or ``path#<index>`` (from 0)
    without one. Warnings number messages from 1."""
    try:
        if os.path.getsize(path) == 0:
            raise Skip("empty file")
        box = mailbox.mbox(path, create=False)  # opens read-only when it may not write
    except OSError as exc:
        raise Skip(f"cannot read file ({exc.strerror or exc})") from None
    try:
        keys = box.keys()
        if not keys:
            raise Skip("not an mbox file (no 'From ' separator lines)")
        docs, warnings, used = [], [], set()
        for index, box_key in enumerate(keys):
            try:
                doc = mail_document(box.get_bytes(box_key), key="", path=path)
            except Skip as exc:
                warnings.append(f"message {index + 1}: skipped ({exc})")
                continue
            doc.key = _unique_key(path, doc.meta["message_id"] or str(index), index, used)
            docs.append(doc)
    except OSError as exc:
        raise Skip(f"cannot read file ({exc.strerror or exc})") from None
    finally:
        box.close()
    if not docs:
        raise Skip(f"no readable message in mbox ({len(keys)} found)")
    return docs, warnings


def _unique_key(path: str, ident: str, index: int, used: set[str]) -> str:
    """``path#ident``; a repeated Message-ID (copies of one mail) gets the index appended."""
    key = f"{path}#{ident}"
    suffix = index
    while key in used:
        key = f"{path}#{ident}#{suffix}"
        suffix += 1
    used.add(key)
    return key


def mail_document(data: bytes, *, key: str, path: str) -> Document:
    """One RFC 822 message -> a document whose text is a From/To/Cc/Date/Subject block, a blank
    line, the body, then text attachments. Raises Skip("not an email message")."""
    if b"\x00" in data[:_SNIFF]:
        raise Skip("not an email message")
    msg = email.message_from_bytes(data, policy=email.policy.default)
    if not {name.lower() for name in msg.keys()} & _MAIL_HEADERS:
        raise Skip("not an email message")
    meta: dict[str, str | int] = {
        "from": _with_x_name(_addresses(msg, "From"), _header(msg, "X-From")),
        "to": _addresses(msg, "To"),
        "cc": _addresses(msg, "Cc"),
        "date": _date(msg),
        "subject": _header(msg, "Subject"),
        "message_id": _header(msg, "Message-ID").strip("<> "),
    }
    body, attachments = _mail_body(msg)
    meta["attachments"] = ", ".join(attachments)
    header = "\n".join(f"{label}: {meta[name]}" for label, name in _HEADER_BLOCK if meta[name])
    text = f"{header}\n\n{body}" if body else header
    title = str(meta["subject"]) or "(no subject)"
    return Document(key=key, path=path, title=title, text=text, meta=meta)


def _with_x_name(address: str, x_name: str) -> str:
    """Exchange exports (the Enron set) keep the sender's name only in ``X-From``: use it as the
    display name of a bare ``From`` address so that a search by person name finds the message."""
    name = re.sub(r"<[^>]*>", "", x_name).strip(" ,'\"")
    if not name or "<" in address or "," in address or "@" in name:
        return address
    return f"{name} <{address}>" if address else name


def _header(msg: Message, name: str) -> str:
    """A header, decoded (RFC 2047) and unfolded; "" when absent. Never raises."""
    try:
        value = msg[name]
        if value is None:
            return ""
        text = _clean(" ".join(str(value).split()))
        if "\ufffd" in text:  # raw 8-bit bytes, which the parser replaces: decode them here
            text = _raw_header(msg, name) or text
        return text
    except Exception:  # the parser's header classes can choke on odd input: use the raw value
        return _raw_header(msg, name)


def _raw_header(msg: Message, name: str) -> str:
    """The header as found in the message, 8-bit bytes and RFC 2047 words decoded leniently."""
    for key, value in msg.raw_items():
        if key.lower() == name.lower():
            text = _clean(" ".join(str(value).split()))
            if "=?" in text:
                with contextlib.suppress(Exception):
                    text = str(email.header.make_header(email.header.decode_header(text)))
            return _clean(text)
    return ""


def _addresses(msg: Message, name: str) -> str:
    """``Name <addr>`` (or ``addr``) for each address, comma-joined."""
    try:
        header = msg[name]
        if header is None:
            return ""
        addresses = getattr(header, "addresses", ())
        if not addresses:
            return _clean(" ".join(str(header).split()))
        return _clean(", ".join(_format_address(a) for a in addresses))
    except Exception:
        return _raw_header(msg, name)


def _format_address(address) -> str:
    name, spec = " ".join(address.display_name.split()), address.addr_spec
    return f"{name} <{spec}>" if name and spec else name or spec


def _date(msg: Message) -> str:
    """ISO 8601 when the Date header parses, else its raw text."""
    try:
        header = msg["Date"]
        if header is None:
            return ""
        parsed = getattr(header, "datetime", None)
        return parsed.isoformat() if parsed else _clean(" ".join(str(header).split()))
    except Exception:
        return _raw_header(msg, "Date")


def _mail_body(msg: EmailMessage) -> tuple[str, list[str]]:
    """(body text followed by text attachments, names of all attachments)."""
    body_part, body = None, ""
    for preference in (("plain",), ("html",)):  # an empty text/plain yields to the HTML one
        try:
            part = msg.get_body(preferencelist=preference)
        except Exception:
            part = None
        if part is not None and (text := _part_text(part).strip()):
            body_part, body = part, text
            break
    names, appended = [], []
    for part in msg.walk():
        if part is body_part or part.is_multipart():
            continue
        name = _attachment_name(part)
        if not name:
            continue
        names.append(name)
        if part.get_content_maintype() == "text" and (text := _part_text(part).strip()):
            appended.append(f"--- attachment: {name} ---\n{text}")
    return "\n\n".join(([body] if body else []) + appended), names


def _attachment_name(part: Message) -> str:
    try:
        return _clean(" ".join((part.get_filename() or "").split()))
    except Exception:
        return ""


def _part_text(part: Message) -> str:
    """Decoded text of a text/* part (HTML converted to text); "" for anything else."""
    if part.get_content_maintype() != "text":
        return ""
    try:
        payload = part.get_payload(decode=True)
        charset = part.get_content_charset()
    except Exception:
        return ""
    if not isinstance(payload, bytes) or not payload:
        return ""
    text = _normalize_newlines(_decode_bytes(payload, charset))
    if part.get_content_subtype() == "html":
        text = html_to_text(text)[0]
    return _clean(text)


def _decode_bytes(data: bytes, charset: str | None) -> str:
    """The declared charset, else UTF-8, else Windows-1252; unknown charset names (such as
    ``unknown-8bit``) and wrong declarations never raise."""
    for encoding in (charset, "utf-8"):
        if encoding:
            try:
                return data.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                continue
    return data.decode("cp1252", "replace")


# --- JSONL corpora -------------------------------------------------------------------------


def _load_jsonl(path: str) -> Loaded:
    """One document per line ``{"id", "title"?, "text"}``, keyed ``path#id``.

    Bad lines (not JSON, no id, no text) are skipped with a warning unless they are the
    majority, in which case the file is not such a corpus. A repeated id keeps its first line.
    """
    data = _read(path)
    if not data.strip():
        raise Skip("empty file")
    try:
        content = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Skip("not valid UTF-8 text") from None
    docs, invalid, duplicates, seen, total = [], [], [], set(), 0
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and other line separators.
    for number, line in enumerate(content.split("\n"), 1):
        if not line.strip():
            continue
        total += 1
        try:
            ident, title, text = _jsonl_record(line)
        except ValueError as exc:
            invalid.append(f"line {number}: {exc}")
            continue
        if ident in seen:
            duplicates.append(f"line {number}: duplicate id {ident!r}, kept the first")
            continue
        seen.add(ident)
        title = title or _first_line(text) or ident
        docs.append(Document(key=f"{path}#{ident}", path=path, title=title, text=text,
                             meta={"source_id": ident}))
    if len(invalid) * 2 > total:
        raise Skip(f"not a {{id,title,text}} JSONL corpus: {len(invalid)} of {total} lines invalid")
    return docs, _capped(invalid) + _capped(duplicates)


def _jsonl_record(line: str) -> tuple[str, str, str]:
    """(id, title or "", text) of one line; raises ValueError with the reason."""
    try:
        record = json.loads(line)
    except ValueError:
        raise ValueError("invalid JSON") from None
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    ident = record.get("id")
    if isinstance(ident, bool) or not isinstance(ident, (str, int)) or str(ident).strip() == "":
        raise ValueError('missing or invalid "id"')
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError('missing or empty "text"')
    title = record.get("title")
    title = clip(_clean(title)) if isinstance(title, str) else ""
    return _clean(str(ident)), title, _clean(text)


def _capped(messages: list[str]) -> list[str]:
    if len(messages) <= _MAX_WARNINGS:
        return messages
    return messages[:_MAX_WARNINGS] + [f"... and {len(messages) - _MAX_WARNINGS} more like these"]


_LOADERS: dict[str, Callable[[str], Loaded]] = {
    "text": _load_text,
    "html": _load_html,
    "pdf": _load_pdf,
    "eml": _load_eml,
    "mbox": _load_mbox,
    "jsonl": _load_jsonl,
}
