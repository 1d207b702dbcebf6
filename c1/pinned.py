"""Files c1 relies on byte for byte (a vocabulary, a tokenizer, an ONNX model), checked against a
pinned SHA-256 before use: a renamed, truncated or altered file is refused with one clear line."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from c1.cache_files import cache_path, write_whole


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 23), b""):  # few blocks: each takes the interpreter lock again
            h.update(block)
    return h.hexdigest()


def checked(path: Path, sha256: str, what: str, error: type[Exception]) -> Path:
    """``path``, once its SHA-256 is ``sha256``; else ``error`` saying what is wrong.

    A file found whole is remembered in the cache folder by where it is on disk and its size, modification
    and change times (:func:`_mark`), and not hashed again while they stay: hashing the embedder's and the
    cross-encoder's files took 0.1-0.35 s of a cold search's model thread, beside the search's own work.
    Writing to a file moves its change time, which no tool can set back, so an altered file is hashed."""
    try:
        mark = _mark(path, sha256)
        if mark.exists():
            return path
        digest = sha256_file(path)
    except OSError as exc:
        raise error(f"{what} is missing ({path}: {exc.strerror}); reinstall c1") from None
    if digest != sha256:
        raise error(f"{path} is not {what} c1 expects (SHA-256 {digest[:12]}…, pinned {sha256[:12]}…)")
    write_whole(mark, b"")  # a read-only cache: hashed again next time
    return path


def _mark(path: Path, sha256: str) -> Path:
    st = os.stat(path)
    key = f"{os.path.realpath(path)}|{st.st_dev}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|{st.st_ctime_ns}|{sha256}"
    return cache_path("checked", hashlib.sha256(key.encode()).hexdigest()[:32])
