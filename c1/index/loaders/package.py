"""Zip packages — Word, PowerPoint, Excel (OOXML), OpenDocument, EPUB — checked before a library
parses them, so that a damaged, truncated, encrypted or misnamed file gets a clear reason and a
zip bomb is refused before it is unpacked."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from typing import TypeVar

from c1.index.documents import Skip
from c1.index.loaders.common import cannot_read

T = TypeVar("T")

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Compound File Binary: legacy Office, encrypted OOXML
_ENCRYPTED = "EncryptionInfo".encode("utf-16-le")  # the stream an encrypted OOXML file holds
MAX_UNPACKED = 1 << 30
"""Bytes a package may unpack to (compressed XML is 10-20× smaller than itself)."""
_KINDS = {  # a member that only this kind of package has → what it is
    "word/document.xml": "a Word document", "xl/workbook.xml": "an Excel workbook",
    "ppt/presentation.xml": "a PowerPoint presentation", "META-INF/container.xml": "an EPUB book",
    "content.xml": "an OpenDocument file",
}


def open_package(path: str, what: str, member: str, opener: Callable[[str], T],
                 encrypted: Callable[[zipfile.ZipFile], str] | None = None) -> T:
    """``opener(path)`` once :func:`check_package` passes; what it raises becomes "damaged
    ``what``". ``encrypted(package)``: how the open zip says its content is encrypted
    ("DRM"), "" when it is not."""
    check_package(path, what, member, encrypted)
    try:
        return opener(path)
    except Exception as exc:  # broken XML, a part missing or of the wrong type
        raise Skip(f"damaged {what} ({type(exc).__name__})") from None


def check_package(path: str, what: str, member: str,
                  encrypted: Callable[[zipfile.ZipFile], str] | None = None) -> None:
    """Raise Skip unless ``path`` is a readable zip package holding ``member`` (the part that
    makes it a ``what``: "word/document.xml" for a Word document), not encrypted."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if head.startswith(_OLE2):
                ole_encrypted = _ENCRYPTED in f.read()
    except OSError as exc:
        raise cannot_read(exc) from None
    if not head:
        raise Skip("empty file")
    if head.startswith(_OLE2):
        if ole_encrypted:
            raise Skip(f"encrypted {what} (password-protected)")
        raise Skip(f"not {article(what)} in the current format (an older binary Office file?)")
    try:
        with zipfile.ZipFile(path) as package:
            _check_members(package, what, member)
            if encrypted is not None and (how := encrypted(package)):
                raise Skip(f"encrypted {what} ({how})")
    except zipfile.BadZipFile:
        if head.startswith(b"PK"):
            raise Skip(f"damaged {what} (truncated or broken zip)") from None
        raise Skip(f"not {article(what)} (not a zip package)") from None


def _check_members(package: zipfile.ZipFile, what: str, member: str) -> None:
    names = set(package.namelist())
    if member not in names:
        actual = next((kind for part, kind in _KINDS.items() if part in names), "another kind of zip")
        raise Skip(f"not {article(what)}: it is {actual} (wrong extension?)")
    unpacked = sum(info.file_size for info in package.infolist())
    if unpacked > MAX_UNPACKED:
        raise Skip(f"{what} unpacks to {unpacked >> 20} MB, over the {MAX_UNPACKED >> 20} MB limit")


def article(what: str) -> str:
    """"an Excel workbook", "a Word document"."""
    return f"{'an' if what[:1] in 'AEIOU' else 'a'} {what}"
