"""Email: single messages (``.eml``, Maildir and numbered Enron-style files) and ``.mbox`` files.

A message becomes one document whose text starts with a From/To/Cc/Date/Subject block; the plain
body is preferred over the HTML one, and text attachments are appended.
"""

from __future__ import annotations

import contextlib
import email
import email.header
import email.policy
import mailbox
import os
import re
from email.message import EmailMessage, Message

from c1.index.documents import Document, Skip
from c1.index.loaders.common import MAIL_HEADERS, SNIFF, cannot_read, clean, normalize_newlines, read_bytes
from c1.index.loaders.html import html_to_text
from c1.index.loaders.registry import Format, Loaded, register

_HEADER_BLOCK = (("From", "from"), ("To", "to"), ("Cc", "cc"), ("Date", "date"),
                 ("Subject", "subject"))


def load_eml(path: str) -> Loaded:
    data = read_bytes(path)
    if not data.strip():
        raise Skip("empty file")
    return [mail_document(data, key=path, path=path)], []


def load_mbox(path: str) -> Loaded:
    """Each message is a document keyed ``path#<message-id>``, or ``path#<index>`` (from 0)
    without one. Warnings number messages from 1."""
    try:
        if os.path.getsize(path) == 0:
            raise Skip("empty file")
        box = mailbox.mbox(path, create=False)  # opens read-only when it may not write
    except OSError as exc:
        raise cannot_read(exc) from None
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
        raise cannot_read(exc) from None
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
    if b"\x00" in data[:SNIFF]:
        raise Skip("not an email message")
    msg = email.message_from_bytes(data, policy=email.policy.default)
    if not {name.lower() for name in msg.keys()} & MAIL_HEADERS:
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


def _flat(value: object) -> str:
    """A header's text on one line (unfolded, spaces collapsed), cleaned."""
    return clean(" ".join(str(value).split()))


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
        text = _flat(value)
        if "\ufffd" in text:  # raw 8-bit bytes, which the parser replaces: decode them here
            text = _raw_header(msg, name) or text
        return text
    except Exception:  # the parser's header classes can choke on odd input: use the raw value
        return _raw_header(msg, name)


def _raw_header(msg: Message, name: str) -> str:
    """The header as found in the message, 8-bit bytes and RFC 2047 words decoded leniently."""
    for key, value in msg.raw_items():
        if key.lower() == name.lower():
            text = _flat(value)
            if "=?" in text:
                with contextlib.suppress(Exception):
                    text = str(email.header.make_header(email.header.decode_header(text)))
            return clean(text)
    return ""


def _addresses(msg: Message, name: str) -> str:
    """``Name <addr>`` (or ``addr``) for each address, comma-joined."""
    try:
        header = msg[name]
        if header is None:
            return ""
        addresses = getattr(header, "addresses", ())
        if not addresses:
            return _flat(header)
        return clean(", ".join(_format_address(a) for a in addresses))
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
        return parsed.isoformat() if parsed else _flat(header)
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
        return _flat(part.get_filename() or "")
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
    text = normalize_newlines(_decode_bytes(payload, charset))
    if part.get_content_subtype() == "html":
        text = html_to_text(text)[0]
    return clean(text)


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


register(Format("eml", (".eml",), load_eml))
register(Format("mbox", (".mbox",), load_mbox))
