"""The final answer: a ranked ``<Document id=...><Justification>...</Justification></Document>``
list, parsed leniently (other id shapes, missing justifications, chunk ids, stray prose), and
rendered back in the same format by policies that write it."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

_DOC_TAG = re.compile(
    r"<\s*document\b[^>]*?\bid\s*[=:]\s*[\"'`]?\s*([\w.-]+)[\"'`]?[^>]*>(.*?)(?=<\s*document\b|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_JUSTIFICATION = re.compile(r"<\s*justification\s*>(.*?)(?:<\s*/\s*justification\s*>|<\s*/\s*document\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<[^>]+>")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:_\d+)?")


@dataclass
class Ranked:
    doc_id: str
    justification: str = ""
    score: float | None = None
    """The policy's confidence in [0, 1] that the document supports an answer (None: it gives none)."""


def parse_final(text: str, resolve: Callable[[str], str | None]) -> list[Ranked]:
    """Ranked documents named in ``text``. ``resolve`` maps an id the model wrote (document id,
    chunk id, maybe in other case) to a known document id, or None. Duplicates keep the first."""
    out: list[Ranked] = []
    seen: set[str] = set()

    def push(raw: str, why: str) -> None:
        doc = resolve(raw.strip())
        if doc and doc not in seen:
            seen.add(doc)
            out.append(Ranked(doc, _clean(why)))

    for m in _DOC_TAG.finditer(text or ""):
        body = m.group(2)
        j = _JUSTIFICATION.search(body)
        push(m.group(1), j.group(1) if j else _TAGS.sub(" ", body))
    if out:
        return out
    # No tags: take known ids in order of appearance, with the rest of their line as justification.
    for line in (text or "").splitlines():
        for tok in _TOKEN.findall(line):
            if resolve(tok):
                push(tok, line.split(tok, 1)[1].lstrip(" :-—–)*]"))
    return out


def _clean(text: str) -> str:
    return " ".join(html.unescape(_TAGS.sub(" ", text)).split())[:500]


def render_final(items: list[Ranked]) -> str:
    return "\n".join(
        f'<Document id="{r.doc_id}"><Justification>{html.escape(r.justification, quote=False)}</Justification></Document>'
        for r in items
    )
