"""Natural questions for bench/suite.py: ``bench/natural/<kind>.jsonl`` read and checked for form.

One JSON object a line (bench/natural/README.md): ``id``, ``question``, ``gold`` (the documents'
keys as the kind's ``Case.key`` gives them), and optionally ``answers``, ``pages``
(``<file>#p<page>``), ``spans`` (``[relpath, start, end]``), ``copies`` (a gold key → the keys of
its copies, each of which counts as it), ``style`` (tags) and ``note``. Only the form is checked here;
bench/natural/check.py also checks the keys against each kind's corpus.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

NATURAL = Path(__file__).resolve().parent / "natural"
FIELDS = ("id", "question", "gold", "answers", "pages", "spans", "copies", "style", "note")


class NaturalError(ValueError):
    """A natural-question file that cannot be read; the message is one line naming file and line."""


def _strings(value, nonempty: bool = False) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) and x for x in value) and (bool(value) or not nonempty)


def _problem(r) -> str:
    """What is wrong with one record's form ('' when nothing)."""
    if not isinstance(r, dict):
        return "not a JSON object"
    for name in ("id", "question", "gold"):
        if name not in r:
            return f"missing field {name!r}"
    unknown = [k for k in r if k not in FIELDS]
    if unknown:
        return f"unknown field {unknown[0]!r} (fields: {', '.join(FIELDS)})"
    if not isinstance(r["id"], str) or not r["id"].strip():
        return "'id' must be a non-empty string"
    if not isinstance(r["question"], str) or not r["question"].strip():
        return "'question' must be a non-empty string"
    if not _strings(r["gold"], nonempty=True):
        return "'gold' must be a non-empty list of strings"
    for name in ("answers", "style"):
        if name in r and not _strings(r[name]):
            return f"{name!r} must be a list of strings"
    if "note" in r and not isinstance(r["note"], str):
        return "'note' must be a string"
    if "pages" in r and not (_strings(r["pages"]) and all(re.fullmatch(r".+#p\d+", p) for p in r["pages"])):
        return "'pages' must be a list of '<file>#p<page>' strings"
    for s in r.get("spans", []) if isinstance(r.get("spans", []), list) else [None]:
        if not (isinstance(s, list) and len(s) == 3 and isinstance(s[0], str)
                and all(isinstance(x, int) and not isinstance(x, bool) for x in s[1:]) and 0 <= s[1] < s[2]):
            return f"'spans' must be a list of [relpath, start, end] with 0 <= start < end (got {s!r})"
    copies = r.get("copies", {})
    if not (isinstance(copies, dict) and all(isinstance(k, str) and _strings(v) for k, v in copies.items())):
        return "'copies' must map a gold key to a list of keys"
    return ""


def read(path: Path) -> list[dict]:
    """The records of one file, checked for form; raises NaturalError naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise NaturalError(f"{path}: cannot read ({exc})") from None
    out, seen = [], {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except ValueError as exc:
            raise NaturalError(f"{path}, line {number}: not JSON ({exc})") from None
        problem = _problem(r)
        if not problem and r["id"] in seen:
            problem = f"id {r['id']!r} already on line {seen[r['id']]}"
        if problem:
            raise NaturalError(f"{path}, line {number}: {problem}")
        seen[r["id"]] = number
        out.append(r)
    if not out:
        raise NaturalError(f"{path}: no questions")
    return out


def path_for(kind: str, folder: Path | None = None) -> Path:
    return (folder or NATURAL) / f"{kind}.jsonl"


def items(kind: str, item_type, folder: Path | None = None) -> list | None:
    """The kind's natural questions as ``item_type`` (bench/suite.py's ``Item``), or None without a file."""
    path = path_for(kind, folder)
    if not path.is_file():
        return None
    return [item_type(r["id"], r["question"], tuple(r["gold"]), tuple(r.get("answers", ())),
                      tuple(r.get("pages", ())), spans=tuple(tuple(s) for s in r.get("spans", ())),
                      copies={k: tuple(v) for k, v in r.get("copies", {}).items()})
            for r in read(path)]
