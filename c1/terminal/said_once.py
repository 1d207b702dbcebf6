"""Notes said once per index home: the same line before every search is noise (``using the built-in
policy (no model): ...``), but the first time, and whenever it changes, it is news.

What was said is kept in ``<home>/said.json`` (note kind → its last text). A home that cannot be
written keeps nothing: there the note is said every time rather than never.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE = "said.json"


def first_time(home: Path, kind: str, text: str) -> bool:
    """Whether ``text`` is news for ``home`` under ``kind`` (not the last text said of that kind); it is
    remembered as said."""
    path = Path(home) / FILE
    try:
        said = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(said, dict):
            said = {}
    except (OSError, ValueError):
        said = {}
    if said.get(kind) == text:
        return False
    said[kind] = text
    tmp = path.with_name(f"{FILE}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(said, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
    return True
