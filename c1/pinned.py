"""Files c1 relies on byte for byte (a vocabulary, a tokenizer, an ONNX model), checked against a
pinned SHA-256 before use: a renamed, truncated or altered file is refused with one clear line."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 23), b""):  # few blocks: each takes the interpreter lock again
            h.update(block)
    return h.hexdigest()


def checked(path: Path, sha256: str, what: str, error: type[Exception]) -> Path:
    """``path``, once its SHA-256 is ``sha256``; else ``error`` saying what is wrong."""
    try:
        digest = sha256_file(path)
    except OSError as exc:
        raise error(f"{what} is missing ({path}: {exc.strerror}); reinstall c1") from None
    if digest != sha256:
        raise error(f"{path} is not {what} c1 expects (SHA-256 {digest[:12]}…, pinned {sha256[:12]}…)")
    return path
