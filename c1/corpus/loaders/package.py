"""Zip packages — Word, PowerPoint, Excel (OOXML), OpenDocument, EPUB — checked before a library
parses them, so that a damaged, truncated, encrypted or misnamed file gets a clear reason and a
zip bomb is refused before it is unpacked."""

from __future__ import annotations

import zipfile

from c1.corpus.documents import Skip

_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Compound File Binary: legacy Office, encrypted OOXML
_ENCRYPTED = "EncryptionInfo".encode("utf-16-le")  # the stream an encrypted OOXML file holds
MAX_UNPACKED = 1 << 30
"""Bytes a package may unpack to (compressed XML is 10-20× smaller than itself)."""
_KINDS = {  # a member that only this kind of package has → what it is
    "word/document.xml": "a Word document", "xl/workbook.xml": "an Excel workbook",
    "ppt/presentation.xml": "a PowerPoint presentation", "META-INF/container.xml": "an EPUB book",
    "content.xml": "an OpenDocument file",
}


def check_package(path: str, what: str, member: str) -> None:
    """Raise Skip unless ``path`` is a readable zip package holding ``member`` (the part that
    makes it a ``what``: "word/document.xml" for a Word document)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if head.startswith(_OLE2):
                encrypted = _ENCRYPTED in f.read()
    except OSError as exc:
        raise Skip(f"cannot read file ({exc.strerror or exc})") from None
    if not head:
        raise Skip("empty file")
    if head.startswith(_OLE2):
        if encrypted:
            raise Skip(f"encrypted {what} (password-protected)")
        raise Skip(f"not {article(what)} in the current format (an older binary Office file?)")
    try:
        with zipfile.ZipFile(path) as package:
            names = set(package.namelist())
            unpacked = sum(info.file_size for info in package.infolist())
    except zipfile.BadZipFile:
        if head.startswith(b"PK"):
            raise Skip(f"damaged {what} (truncated or broken zip)") from None
        raise Skip(f"not {article(what)} (not a zip package)") from None
    if member not in names:
        actual = next((kind for part, kind in _KINDS.items() if part in names), "another kind of zip")
        raise Skip(f"not {article(what)}: it is {actual} (wrong extension?)")
    if unpacked > MAX_UNPACKED:
        raise Skip(f"{what} unpacks to {unpacked >> 20} MB, over the {MAX_UNPACKED >> 20} MB limit")


def article(what: str) -> str:
    """"an Excel workbook", "a Word document"."""
    return f"{'an' if what[:1] in 'AEIOU' else 'a'} {what}"
