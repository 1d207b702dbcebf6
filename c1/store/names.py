"""Words from a file name: ``3M_2018_10K.pdf`` → ``3M 2018 10K``.

A file name often says exactly what a document is (company, year, kind) where its text and its
metadata title do not. Titles that fall back on the file name and the identity used for ranking
both read it through :func:`file_name_words`.
"""

from __future__ import annotations

import os
import re

_SEPARATORS = re.compile(r"[\s_.+,;()\[\]{}]+|(?<![\dA-Z])-|-(?![\dA-Z])|(?<=\d)-(?=\d)|(?<=[A-Z]{2})-|-(?=[A-Z]{2})")
"""Spaces, underscores, dots and brackets; a hyphen too, except in form names such as ``10-K`` or ``S-1``."""
_CASE_CHANGE = re.compile(r"(?<=[a-z])(?=[A-Z])")
_YEAR_GLUE = re.compile(r"(?<=[A-Za-z])(?=(?:19|20)\d\d(?!\d))|(?<=(?:19|20)\d\d)(?=[A-Za-z])")
_NO_WORDS = re.compile(r"^\d*$")


def file_name_words(path: str) -> str:
    """The file name without its extension, split on separators, case changes and glued years.

    Digits glued to letters stay together when they read as one token (``3M``, ``10K``, ``Q2``);
    a four-digit year glued to a word is split off (``report2019`` → ``report 2019``). A name with no
    letters (``1.``, ``23``: numbered mail files) gives ``""``.
    """
    base = os.path.basename(path.rstrip("/\\"))
    stem, ext = os.path.splitext(base)
    if not stem or (ext and not re.fullmatch(r"\.[A-Za-z][A-Za-z0-9]{0,5}", ext)):
        stem = base  # "1." or a dotted name that has no real extension
    words: list[str] = []
    for part in _SEPARATORS.split(stem):
        if not part:
            continue
        part = _YEAR_GLUE.sub(" ", _CASE_CHANGE.sub(" ", part))
        words.extend(part.split())
    if all(_NO_WORDS.match(w) for w in words):
        return ""
    return " ".join(words)
