"""JSONL corpora: one document per line ``{"id", "title"?, "text"}``; the id comes back as ``source_id``."""

from __future__ import annotations

import json

import orjson

from c1.index.documents import Document, Skip
from c1.index.loaders.common import capped, clean, clip, first_line, read_bytes
from c1.index.loaders.registry import Format, Loaded, register

def load_jsonl(path: str) -> Loaded:
    """One document per line ``{"id", "title"?, "text"}``, keyed ``path#id``.

    Bad lines (not JSON, no id, no text) are skipped with a warning unless they are the
    majority, in which case the file is not such a corpus. A repeated id keeps its first line.
    """
    data = read_bytes(path)
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
        title = title or first_line(text) or ident
        docs.append(Document(key=f"{path}#{ident}", path=path, title=title, text=text,
                             meta={"source_id": ident}))
    if len(invalid) * 2 > total:
        raise Skip(f"not a {{id,title,text}} JSONL corpus: {len(invalid)} of {total} lines invalid")
    return docs, capped(invalid) + capped(duplicates)


def _jsonl_record(line: str) -> tuple[str, str, str]:
    """(id, title or "", text) of one line; raises ValueError with the reason."""
    try:
        record = _parse(line)
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
    title = clip(clean(title)) if isinstance(title, str) else ""
    return clean(str(ident)), title, clean(text)


def _parse(line: str):
    """orjson (faster on corpus lines: bench/json_speed.py; docs/benchmarks.md, "JSON"); the standard
    library where the two differ, so that the same lines are read either way: orjson refuses NaN and lone
    surrogate escapes, and reads an integer past 64 bits as a float (an ``id`` json reads as an int)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)
    if isinstance(record, dict) and isinstance(record.get("id"), float):
        return json.loads(line)
    return record


register(Format("jsonl", (".jsonl",), load_jsonl))
