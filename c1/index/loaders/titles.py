"""Titles that say what a document is.

Measured on the shared files (86 PDFs, the 18 FinanceBench filings; ``python bench/titles.py``),
titles went wrong three ways: the metadata title was a placeholder or a file-system name
("Document", "Microsoft Word - 151201DSP-Fond-581-90D", "905_Precinct_NoOU", "10811.exe", a
filing's accession number "0001410636-21-000101", a generated "CORP Q2 2023-2023-08-03-16-07");
the fallback, the first line of text, was form boilerplate or a running head ("UNITED STATES",
"Table of Contents", "UNITED", the bare page number "1"); and the file name, which often says
exactly what a long document is (``3M_2018_10K.pdf``), took no part.

So for long documents (PDFs and other paged formats): the metadata title when it is a real
title; else the most salient heading of the first page (the largest type, boilerplate and
running heads left out); else the words of the file name. When the file name carries words the
title lacks, they come first: "3M 2022 10K — 3M Company". Nothing here knows any company or
form: the boilerplate list is short and generic, and running heads are found per document.
A title must also read as one (issue 33): garbled text (mojibake, control or unmapped
characters), a path, or a line of running text (a sentence's middle, two sentences) is none.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter

from c1.index.headers import MD_HEADING
from c1.index.loaders.common import TITLE_MAX, clip
from c1.store.names import file_name_words

Line = tuple[str, float | None]
"""A line of the first page and its type size (None when the reader does not know it)."""

_PLACEHOLDERS = {"untitled", "title", "document", "untitled document", "no title", "slide 1",
                 "microsoft word", "pdf", "anonymous", "unknown", "none", "null"}
_BOILERPLATE = {"united states", "united", "securities and exchange commission",
                "united states securities and exchange commission", "washington, d.c. 20549",
                "washington d.c. 20549", "table of contents", "contents", "index", "mark one",
                "page", "confidential", "draft"}
"""Lines seen first on real documents that say nothing about which document it is."""
_BOILERPLATE_PHRASES = {p for p in _BOILERPLATE if " " in p}
_GENERIC_NAME_WORDS = {"document", "untitled", "scan", "file", "new", "copy", "final", "draft",
                       "doc", "pdf", "image", "img", "dsc", "page", "print", "export", "download"}
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d-\d\d-\d\d")  # "…-2022-08-03-15-21": a generated name
_FILE_LIKE = re.compile(r"[^\W_][_.\-]+[^\W_]")  # in one token: "905_Precinct", "issue-987-test"
_EXTENSION = re.compile(r"\.(pdf|docx?|odt|rtf|txt|tex|dvi|ps|indd|pptx?|xlsx?|html?|exe|tmp)$", re.I)
_HEX_ID = re.compile(r"^[0-9a-f\-]{16,}$", re.I)
_URL = re.compile(r"://|^www\.", re.I)
_PATH = re.compile(r"(?:^|\s)(?:[A-Za-z]:)?[\\/][^\s\\/]+[\\/]|[A-Za-z][\w.~-]*[\\/][A-Za-z][\w.~-]*[\\/]")
"""A file-system path: ``/home/anna/x``, ``C:\\Users\\anna``, ``Users/anna/Desktop`` (not "Q1/Q2", "12/3/2014")."""
_NOT_TEXT = {"Cc", "Cs", "Co", "Cn"}  # control, surrogate, private-use (unmapped glyphs), unassigned
_UTF16_BOM_AS_LATIN1 = ("\u00fe\u00ff", "\u00ff\u00fe")  # "þÿ": a UTF-16 string read as PDFDocEncoding
_SENTENCES = re.compile(r"[a-z]{3,}[.!?]\s+[A-Z][a-z]*\s+[a-z]")  # "…a meaning. This text…": two sentences
_HEADING_WORDS = 15  # a line of more words is running text
_UNSIZED_LINES = 5  # without type sizes, a heading is among the first lines with words
_ENDS = " \t.:;,-–—_*•·|()[]"
_RUNNING_HEAD_LINES = 2  # lines at the top and at the bottom of a page that may repeat
_SALIENT_LINES = 40  # lines of the first page looked at for a heading


def normal(line: str) -> str:
    """Lower case, spaces collapsed, punctuation trimmed at both ends: the form compared."""
    return " ".join(line.split()).strip(_ENDS).lower()


def is_junk(title: str) -> bool:
    """A metadata title that is no title: a placeholder, boilerplate, a file name or a generated
    name, too short, or without letters."""
    text = " ".join(title.split())
    return (
        _says_nothing(text)
        or normal(text).startswith("microsoft word - ")
        or bool(_EXTENSION.search(text))
        or bool(_TIMESTAMP.search(text))
        or bool(" " not in text and _FILE_LIKE.search(text))
    )


def _says_nothing(text: str) -> bool:
    lowered = normal(text)
    return (
        len(lowered) < 3
        or sum(ch.isalpha() for ch in text) < 2
        or lowered in _PLACEHOLDERS
        or lowered in _BOILERPLATE
        or garbled(text)
        or letter_spaced(text)
        or bool(_PATH.search(text))
        or sum(ch.isalpha() for ch in text) < len(text.replace(" ", "")) / 2
    )


def letter_spaced(text: str) -> bool:
    """A line set with a space between its letters ("N o n- d i s c l o s u re A g re e m e n t", as a
    PDF's spaced capitals come out as text): most of its words are one or two characters long. Such a
    line matches no word a person types, so it is no title."""
    words = [w.strip("-.,:;") for w in text.split()]
    return len(words) >= 6 and sum(len(w) <= 2 for w in words) >= 0.75 * len(words)


_SENTENCE_THEN_MORE = re.compile(r"([a-z]{2,}[.!?])\s+[A-Z][a-z]")
LINE_TITLE_WORDS = 12
"""A first line that is prose gives its first sentence as the title when it is this short at most."""


def line_title(line: str) -> str:
    """What a text's first line gives as its title: the line itself; its first sentence where the line is
    prose (a sentence, then another: "Quarterly review notes. Marketing spent 75000 in Q2 ..."), when
    that sentence is short; nothing where it is a long sentence or letter-spaced (then the file name)."""
    if letter_spaced(line):
        return ""
    m = _SENTENCE_THEN_MORE.search(line)
    if m is None:
        return line
    head = line[: m.end(1)].rstrip(".!?").strip()
    return head if len(head.split()) <= LINE_TITLE_WORDS else ""


def garbled(text: str) -> bool:
    """Text that did not decode right: control or private-use characters (glyphs with no
    Unicode mapping), U+FFFD, a UTF-16 byte-order mark read as Latin-1 ("þÿ…"), or mojibake,
    UTF-8 read as Windows-1252 ("MÃ¼nchen" for "München")."""
    if "\ufffd" in text or text.startswith(_UTF16_BOM_AS_LATIN1):
        return True
    if any(unicodedata.category(ch) in _NOT_TEXT for ch in text if ch not in "\t\n\r"):
        return True
    return any(_is_utf8(run) for run in _NON_ASCII_RUN.findall(text))


_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]{2,}")


def _is_utf8(run: str) -> bool:
    """Whether these characters, as Windows-1252 bytes, are UTF-8 text ("Ã¼" is "ü"): one such
    run is mojibake (a real word's accented letters are not valid UTF-8 as such bytes)."""
    try:
        run.encode("cp1252").decode("utf-8")
    except UnicodeError:
        return False
    return True


def strip_heading_marks(title: str) -> str:
    """``## Intro ##`` → ``Intro`` (a Markdown heading taken as a title; ``#hashtag`` stays)."""
    match = MD_HEADING.match(title)
    return match.group(1) if match else title


def lines_of(text: str, size: float | None = None) -> list[Line]:
    """The non-blank lines of a page's text, each with ``size`` (None: not known)."""
    return [(line, size) for line in text.split("\n") if line.strip()]


def running_heads(pages: list[str]) -> set[str]:
    """Lines repeated at the top or bottom of at least a third of the pages (three at least):
    "Table of Contents" links, a company's name in every header, "Confidential"..."""
    if len(pages) < 3:
        return set()
    seen: Counter = Counter()
    for page in pages:
        lines = [normal(line) for line in page.split("\n") if line.strip()]
        seen.update(set(lines[:_RUNNING_HEAD_LINES] + lines[-_RUNNING_HEAD_LINES:]))
    floor = max(3, len(pages) // 3)
    return {line for line, count in seen.items() if count >= floor and line}


def salient_heading(lines: list[Line], running: set[str] = frozenset()) -> str:
    """The first page's heading. Its first lines in the largest type, when that is larger than
    the page's usual type: adjacent ones joined (a title on two lines), boilerplate and running
    heads taken out, the first two such runs kept ("FORM 10-K — 3M COMPANY"). Without a larger
    type, the first line that could be a title."""
    lines = [(" ".join(text.split()), size) for text, size in lines[:_SALIENT_LINES]]
    usual = Counter(size for _, size in lines if size).most_common(1)
    largest = max((size for text, size in lines if size and _could_be_heading(text)), default=None)
    if largest is None or largest <= usual[0][0]:  # no type larger than the body's: no signal
        worded = [text for text, _ in lines if sum(ch.isalpha() for ch in text) >= 2][:_UNSIZED_LINES]
        return next((text for text in worded if _could_be_heading(text) and normal(text) not in running), "")
    runs: list[list[str]] = []
    last = -2
    for i, (text, size) in enumerate(lines):
        if len(text) < 2 or not any(ch.isalnum() for ch in text):
            continue  # a check box, a bullet: breaks a run
        if size and size >= largest - 0.5 and normal(text) not in running:
            if i == last + 1:
                runs[-1].append(text)
            else:
                runs.append([text])
            last = i
    headings = [h for h in (clip(_without_boilerplate(" ".join(run))) for run in runs) if _could_be_heading(h)]
    return clip(" — ".join(headings[:2]))


def _without_boilerplate(text: str) -> str:
    """``text`` without the boilerplate phrases in it (a heading may run them together with
    its own words, or split them over lines: "UNITED" / "STATES")."""
    for phrase in sorted(_BOILERPLATE_PHRASES, key=len, reverse=True):
        text = re.sub(rf"(?i)(?<!\w){re.escape(phrase)}(?!\w)", " ", text)
    return " ".join(text.split()).strip(_ENDS)


def _could_be_heading(text: str) -> bool:
    text = " ".join(text.split())
    return (
        3 <= len(text) <= TITLE_MAX
        and not _says_nothing(text)
        and not (text.startswith("(") and text.endswith(")"))  # "(Exact name of registrant ...)"
        and not _URL.search(text)
        and not _reads_as_body_text(text)
    )


def _reads_as_body_text(text: str) -> bool:
    """A line of running text rather than a heading: a sentence's middle (it starts in lower
    case, or opens a bracket it does not close), two sentences, or a long clause with commas."""
    words = text.split()
    first = next((ch for ch in text if ch.isalpha()), "")
    return (
        (first.islower() and (len(words) >= 3 or text[-1] in ".,;:"))
        or text.count("(") != text.count(")")
        or bool(_SENTENCES.search(text))
        or len(words) > _HEADING_WORDS
        or (len(words) >= 10 and text.count(",") >= 2)
    )


def name_words(path: str) -> str:
    """The file name's words when they say something ("" for ``scan0001.pdf``, ``1.``...)."""
    words = file_name_words(path)
    alphabetic = [w for w in words.split() if any(ch.isalpha() for ch in w)]
    if not alphabetic or all(re.sub(r"\d+", "", w.lower()) in _GENERIC_NAME_WORDS or _HEX_ID.match(w)
                             for w in alphabetic):
        return ""
    return words


def with_name_words(title: str, path: str, *, related_only: bool = False) -> str:
    """``title``, led by the file name's words when they add any: "3M 2022 10K — 3M Company".
    With ``related_only``, only when the two share a word too (a real title and a file name
    about something else, "issue-982-example.pdf", do not mix)."""
    words = name_words(path)
    if not words:
        return title
    if not title:
        return words
    have = {_token(t) for t in title.split()} | {_token(t) for t in re.split(r"[\s_\-–—/.,]+", title)}
    named = {_token(w) for w in words.split()}
    if named <= have or (related_only and not named & have):
        return title
    return clip(f"{words} — {title}")


def _is_file_name(title: str, path: str) -> bool:
    """The metadata title is the file's own name (as converters write it): it adds nothing."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return normal(title) in {normal(stem), normal(file_name_words(path))}


def _token(text: str) -> str:
    return re.sub(r"\W", "", text).lower()


def document_title(metadata: str, first_page: list[Line], pages: list[str], path: str) -> str:
    """The title of a long (paged) document; see the module's docstring."""
    if metadata and not is_junk(metadata) and not _is_file_name(metadata, path):
        return with_name_words(clip(metadata), path, related_only=True)
    title = salient_heading(first_page, running_heads(pages))
    return with_name_words(title, path) or os.path.basename(path)
