"""Sentences a person reads: split text into units with their kind, and show one without markup.

:func:`split` cuts a text into :class:`Unit` spans of the text itself (so that a passage or a
justification keeps its true character offsets) and says what each is:

- ``text``: a sentence of prose. A period ends it only where a sentence can end: not after an
  abbreviation (Dr., Inc., U.S., e.g.), an initial (J. R. R.), inside a number (3.5, 1,200.00), or
  after a list marker ("1.", "(a)", "iv."); and only before something that can start one (a
  capital, a digit, a quote or bracket). Hard-wrapped lines are joined; a blank line, a heading or
  a new list item ends a sentence whatever its punctuation;
- ``item``: a list item (``- ...``, ``* ...``, ``1. ...``, ``(a) ...``), with its wrapped lines;
- ``heading``: a Markdown heading, or a short line standing alone without sentence punctuation;
- ``row``: a line of a table (cells split by ``|`` or tabs, or a label with numbers after it);
- ``meta``: a mail or form header block (``From:``, ``Subject:`` and their continuation lines), and
  lines of attachment references only (``<<Gas GTC otc b.doc>>``, wrapped or not);
- ``social``: a greeting or a sign-off and the name lines under it ("Hi all,", "Thanks, Zoë");
- ``rule``: separator lines (``-----Original Message-----``, ``====``).

Only ``text``, ``item`` and ``row`` units are evidence a person reads (:func:`readable`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from c1.index.chunking import hard_split
from c1.retrieval.memo import per_text
from c1.store.keywords import CJK

CJK_END = rf"(?:[。｡！？]|[!?](?<=[{CJK}][!?]))+[」』”’）)\]\"']*"
"""Where a sentence of Chinese or Japanese ends: at 。！？ (or ! ? after an ideograph or kana), spaces
after it or not, closing quotes and brackets with it."""
_CJK_END = re.compile(CJK_END)
_CJK_START = re.compile(f"[{CJK}]")
_CJK_RUNS = re.compile(f"[{CJK}]+")
_CJK_WRAPPED = re.compile(f"(?<=[{CJK}，、])[ \t]*\n\\s*(?=[{CJK}])")
"""A line break inside a sentence of Chinese or Japanese: read without a space."""
MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "januar jänner februar märz mai juni juli oktober dezember "
    "janvier février mars avril juin juillet août septembre octobre novembre décembre "
    "jan feb mar apr jun jul aug sep sept oct nov dec jän mär okt dez janv févr avr juil déc".split())
"""Month names (English, German, French) and their abbreviations: "1. März" is a date, not an end."""
ORDINAL_BEFORE = frozenset("am im vom zum zur bis ab seit dem den der des das ein einem einen eines jeden jedem".split())
"""German words a day or an ordinal number follows ("am 1.", "zum 3. Mal", "bis 31."): its period ends nothing."""

ABBREVIATIONS = frozenset(
    "mr mrs ms mx dr prof sr jr st mt rev hon gen col lt sgt capt gov sen rep messrs mme mlle "
    "inc ltd co corp llc llp plc bros assn dept univ est govt intl natl "
    "no nos vs etc al cf viz ca approx incl excl resp fig figs sec secs art arts para paras pp vol vols ed eds "
    "ch chap cl subsec exh ex sched app op ibid id "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri sat sun "
    "ave blvd rd ft oz lb lbs hr hrs min max sq yr yrs mo mos".split()
)
"""Words that a period follows without ending a sentence (compared lower-cased, periods removed)."""
NUMBERED = frozenset("section sections article articles clause clauses schedule exhibit item items part rule note notes "
                     "chapter paragraph annex appendix §".split())
"""Words that a number with a period after them refers to ("Section 5.") rather than ends."""
DOTTED = re.compile(r"(?:[A-Za-z]\.){2,}$")
"""U.S., e.g., i.e., N.A.: letters each with a period."""
_END = re.compile(rf"[.!?…]+[\"'”’)\]]*(?=\s)|{CJK_END}")
_STARTS = re.compile(r"[\"'“‘(\[]*[A-Z0-9$€£§¶]|\((?:[a-z]|[ivx]{1,4})\)\s")
"""What can start a sentence: a capital, a digit, a quote or bracket before one, or an enumerator "(b) "."""
_MARKER = re.compile(r"^\s*(?:[-*•‣◦▪–]\s+|(?:\d{1,3}(?:\.\d{1,3})+\.?|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|"
                     r"\(?[ivxlcIVXLC]{1,6}[.)]|\([a-zA-Z0-9]{1,4}\))\s+)")
"""The start of a list item: a bullet, or an enumerator ``1.``, ``2)``, ``(a)``, ``iv.``."""
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_META = re.compile(r"^[ \t>]*(?:[A-Za-z][A-Za-z-]{0,24}(?: [A-Za-z-]{1,20})?):(?:\s|$)")
_META_NAMES = frozenset("from to cc bcc sent date subject reply-to x-from x-to x-cc x-bcc x-folder x-origin "
                        "x-filename message-id mime-version content-type content-transfer-encoding importance "
                        "attachments re fw fwd by name title its attn attention address phone tel fax email e-mail "
                        "signature signed".split())
"""Header fields of mail, and the fields of a form or a signature block ("By:", "Name:", "Title:")."""
_ADDRESS_FIELDS = frozenset("from to cc bcc reply-to x-from x-to x-cc x-bcc".split())
"""Header fields that list people: as long as the list is (a mail to 60 people has a 5,000-character To: line)."""
_ADDRESS = re.compile(r"[^\s@<>,;]+@[^\s@<>,;]+|</?O=[^>]*>")
_RULE = re.compile(r"^[\s\W_]*(?:-{3,}|_{3,}|={3,}|\*{3,}|~{3,})|-----\s*original message|forwarded by", re.I)
_GREETING = re.compile(r"^\s*(?:hi|hello|hey|dear|greetings|good (?:morning|afternoon|evening))\b[^.!?]{0,40}[,!:]?\s*$",
                       re.I)
_SIGNOFF = re.compile(r"^\s*(?:thanks|thank you|many thanks|regards|best|best regards|kind regards|warm regards|"
                      r"cheers|sincerely|cordially|respectfully|yours(?: truly| sincerely)?|love|talk soon|ciao)\b[^.!?]{0,30}[,!.]?\s*$", re.I)
_WROTE = re.compile(r"^[\s>]*(?:on\b.{0,200}?|\S.{0,120}?)\bwrote:\s*$", re.I)
"""The line that introduces a quoted reply: "On Tue, Nov 16, 1999, Jeff Dasovich <jdasovic@enron.com> wrote:"."""
_PHONE = re.compile(r"(?:\+?\d{1,3}[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}\b")
CONTACT_LINE = 80
"""A line this short holding a mail address or a telephone number, and no sentence end, is a signature's."""
_ATTACHED = re.compile(r"<<[^<>]*>>|<<[^<>]*$|^[^<>]*>>")
"""An attachment reference of a mail (``<<name.doc>>``), or the part of one a hard wrap left on a line."""
_CELLS = re.compile(r"\s\|\s|\t|\|$|^\|")
_NUMBERS_ROW = re.compile(r"^\D{2,}?(?:\.{3}|\s)\(?[$€£]?\s?[\d,.]++\)?%?(?:\s++\(?[$€£]?\s?[\d,.]++\)?%?)++\s*$")
"""A label followed by two or more figures: a row of a financial table as PDF text gives it. The label
ends in three dots or a space (a longer leader is the label's own), and the figures never give back a
character (possessive): what follows each can only be a space or the end, so no match is lost, and a
200-character dot leader is read once, not once for every way of cutting it."""
_TWO_FIGURES = re.compile(r"[\d,.]\)?%?\s+\(?[$€£]?\s?[\d,.]")
"""What every such row holds: a figure, space, a figure (a quick test before the whole pattern)."""


def _numbers_row(s: str) -> bool:
    return _TWO_FIGURES.search(s) is not None and _NUMBERS_ROW.match(s) is not None
SHORT_LINE = 48
"""A line this short without sentence punctuation, followed by a capitalised line, stands alone (a title)."""
SHORT_CJK = 20
"""... in Chinese or Japanese, this short (a line a PDF wrapped is as long as its page is wide)."""
UNIT_MAX = 800
"""A longer run without a sentence end is cut at a word."""


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    kind: str

    def text(self, source: str) -> str:
        return source[self.start : self.end]


def words(text: str) -> int:
    """How many words ``text`` has: those between spaces, a run of Chinese or Japanese counted a word
    for each two characters (about a word's length there: those scripts put no spaces between words)."""
    n = len(text.split())
    if text.isascii():
        return n
    runs = _CJK_RUNS.findall(text)
    if not runs:
        return n
    rest = [w for w in _CJK_RUNS.sub(" ", text).split() if re.search(r"\w", w)]
    return len(rest) + sum((len(r) + 1) // 2 for r in runs)


def line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, without its newline."""
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, pos + len(line)))
        pos += len(line) + 1
    return out


@functools.lru_cache(maxsize=1 << 16)
def line_kind(line: str) -> str:
    """What one line is on its own: blank, heading, rule, meta, row, item, social or text (cached: the
    passages, a read and the policy's evidence classify the same chunks' lines again and again)."""
    s = line.strip()
    if not s:
        return "blank"
    if _HEADING.match(line):
        return "heading"
    if _RULE.search(s):
        return "rule"
    m = _META.match(line)
    if len(s) <= 300 and "wrote:" in s.lower() and _WROTE.match(s):
        return "meta"
    name = m.group(0).strip(" \t>:").lower() if m else ""
    if name in _META_NAMES and (len(s) <= 300 or name in _ADDRESS_FIELDS):
        return "meta"
    if ("<<" in s or ">>" in s) and not re.search(r"\w", _ATTACHED.sub("", s)):
        return "meta"  # attachment references, nothing else
    if _CELLS.search(line) and s.count("|") + line.count("\t") >= 1 and not _END.search(s + " "):
        return "row"
    if _CELLS.search(line) and (s.count("|") >= 2 or line.count("\t") >= 2):
        return "row"
    if len(s) <= 200 and _numbers_row(s):
        return "row"
    if _GREETING.match(s) or _SIGNOFF.match(s) or _contact(s):
        return "social"
    if _MARKER.match(line):
        return "item"
    return "text"


def is_row(line: str) -> bool:
    """A line of a table by itself (what :func:`line_kind` calls a row: cells split by ``|`` or tabs,
    or a label with two or more figures after it), without the other kinds' tests."""
    s = line.strip()
    if "|" not in s and "\t" not in line and not (s and (s[-1].isdigit() or s[-1] in ")%")):
        return False  # no cell and no figure at its end: no row (the regular expressions are most of the time)
    if _CELLS.search(line) and (s.count("|") + line.count("\t") >= 1 and not _END.search(s + " ")
                                or s.count("|") >= 2 or line.count("\t") >= 2):
        return True
    return len(s) <= 200 and _numbers_row(s)


def _contact(s: str) -> bool:
    """A signature's contact line: short, a mail address or a telephone number in it, no sentence end."""
    return (len(s) <= CONTACT_LINE and bool(_ADDRESS.search(s) or _PHONE.search(s)) and len(s.split()) <= 8
            and not _END.search(s + " "))


def _signature_blocks(text: str, lines: list[tuple[int, int]], kinds: list[str]) -> None:
    """A paragraph of short lines with a contact line among them (name, title, street, telephone,
    address) is a signature, every line of it; and the line before "... wrote:" that begins "On ..."
    (the reply's introduction, wrapped) is header. In place, on ``kinds``."""
    i = 0
    while i < len(lines):
        if kinds[i] == "blank":
            i += 1
            continue
        j = i
        while j < len(lines) and kinds[j] != "blank":
            j += 1
        block = [text[a:b].strip() for a, b in lines[i:j]]
        own = [(b, kinds[k]) for k, b in zip(range(i, j), block)]
        if (any(kind == "social" and _contact(b) for b, kind in own)
                and all(len(b) <= CONTACT_LINE and not _END.search(b + " ") for b, kind in own if kind in ("text", "item"))):
            for k in range(i, j):
                if kinds[k] in ("text", "item"):
                    kinds[k] = "social"
        for k in range(i + 1, j):
            if kinds[k] == "meta" and _WROTE.match(block[k - i]) and re.match(r"[\s>]*on\b", block[k - i - 1], re.I):
                kinds[k - 1] = "meta"
        i = j


@per_text
def split(text: str) -> list[Unit]:
    """The units of ``text`` in order (see the module docstring); blank space belongs to none."""
    units: list[Unit] = []
    lines = line_spans(text)
    kinds = [line_kind(text[a:b]) for a, b in lines]
    _signature_blocks(text, lines, kinds)
    block: list[int] | None = None  # [start, end] of the run of lines being joined
    block_kind = ""
    in_meta = after_signoff = False

    def flush() -> None:
        nonlocal block
        if block is not None:
            units.extend(_sentences(text, block[0], block[1], block_kind))
            block = None

    for i, (start, end) in enumerate(lines):
        line = text[start:end]
        kind = kinds[i]
        s = line.strip()
        if kind == "blank":
            flush()
            in_meta = after_signoff = False
            continue
        if in_meta and (kind in ("text", "item", "row") or kind == "social" and _contact(s)) and (
                (not _END.search(s + " ") and len(s) <= 300) or _addresses(s)):
            kind = "meta"  # a wrapped header value (more addresses)
        in_meta = kind == "meta"
        if after_signoff and kind == "text" and len(s.split()) <= 4 and not _END.search(s + " "):
            kind = "social"  # the name under "Thanks,"
        after_signoff = kind == "social" and (after_signoff or bool(_SIGNOFF.match(s)))
        if kind == "text":
            nxt = text[lines[i + 1][0]:lines[i + 1][1]].strip() if i + 1 < len(lines) else ""
            if _stands_alone(s) and not nxt[:1].islower():
                flush()
                units.append(Unit(start + _lead(line), end - _trail(line), "heading"))
                continue
            if block is not None:  # a hard wrap: the sentence goes on (its end is found by punctuation)
                block[1] = end
                continue
        flush()
        if kind in ("text", "item"):
            block, block_kind = [start, end], kind
        else:
            units.append(Unit(start + _lead(line), end - _trail(line), kind))
    flush()
    return [u for u in units if u.end > u.start]


def _addresses(line: str) -> bool:
    """A line that lists mail addresses: one at least for every two commas."""
    found = len(_ADDRESS.findall(line))
    return found > 0 and found >= (line.count(",") + line.count(";")) / 2


def _lead(line: str) -> int:
    return len(line) - len(line.lstrip())


def _trail(line: str) -> int:
    return len(line) - len(line.rstrip())


def _stands_alone(line: str) -> bool:
    """A short line without sentence punctuation that starts with a capital: a title or a caption; in
    Chinese or Japanese, a line of at most ``SHORT_CJK`` characters ("第一条 保密义务")."""
    if _CJK_START.match(line):
        return len(line) <= SHORT_CJK and not re.search(r"[.!?,;:。｡！？，、；：]\s*$", line)
    return (len(line) <= SHORT_LINE and not re.search(r"[.!?,;:]\s*$", line) and line[:1].isupper()
            and len(line.split()) <= 8)


_GAP_NUMBER = re.compile(r"[ \t]{2,}(?=(?:(?:Section|SECTION|Article|ARTICLE)\s+)?\d{1,3}(?:\.\d{1,3})*\.?\s+[A-Z])")
"""A run of spaces before a section number ("... Fax:     13.7 Choice of Law.  This Agreement is ..."):
a line break that flattened text lost. A new section starts there, whatever punctuation precedes it."""


def _sentences(text: str, start: int, end: int, kind: str) -> list[Unit]:
    """The sentences of one joined block ``text[start:end]``: those of each of its parts between
    breaks before a section number (:data:`_GAP_NUMBER`)."""
    out: list[Unit] = []
    cuts = [m.end() for m in _GAP_NUMBER.finditer(text, start, end)]
    for a, b in zip([start] + cuts, cuts + [end]):
        out += _part_sentences(text, a, b, kind if not out else ("text" if kind == "item" else kind))
    return out


_SPACES = re.compile(r"\s+")


def _part_sentences(text: str, start: int, end: int, kind: str) -> list[Unit]:
    out: list[Unit] = []
    pos = start
    for m in _END.finditer(text, start, end):
        cut = m.end()
        nxt = _SPACES.match(text, cut, end)
        after = nxt.end() if nxt else cut
        if after >= end or not (_STARTS.match(text, after, end) or _CJK_END.match(text, m.start(), end)):
            continue
        if text[m.start()] == "." and m.end() - m.start() == 1 and not _period_ends(text, pos, m.start()):
            continue
        out.extend(_cut(text, pos, cut, kind if not out else ("text" if kind == "item" else kind)))
        pos = after
    out.extend(_cut(text, pos, end, kind if not out else ("text" if kind == "item" else kind)))
    return out


def _period_ends(text: str, sent_start: int, dot: int) -> bool:
    """Whether the period at ``dot`` ends the sentence that began at ``sent_start``."""
    sentence = text[sent_start:dot]
    if sentence.endswith("\n"):
        sentence = sentence[:-1]  # as ``(\S+)$`` read it: "$" matches before a last newline too
    # its last word and the one before it (white space as ``\s`` reads it: str.split's); split from the
    # right, not searched for with a regular expression, which tried every position of the sentence
    words = sentence.rsplit(None, 2) if sentence and not sentence[-1].isspace() else []
    word = words[-1] if words else ""
    bare = word.strip("\"'“”‘’([{").lower()
    if not bare:
        return True
    if bare.replace(".", "") in ABBREVIATIONS:
        return False
    if DOTTED.search(bare + ".") or (len(bare) == 1 and bare.isalpha()):
        return False  # U.S. / e.g. / an initial
    before = words[-2] if len(words) >= 2 else ""
    if bare.isdigit() and before.strip("(").lower() in NUMBERED:
        return False  # "Section 5. Confidentiality": a reference, not an end
    if bare.isdigit() and ordinal(text, dot, before):
        return False  # "am 1. März", "zum 3. Mal"
    if dot - len(word) <= sent_start + _marker_len(text, sent_start) and re.fullmatch(r"\(?[\divxlc]{1,4}\)?|[a-z]|\d{1,3}(?:\.\d{1,3})+", bare):
        return False  # the list marker "1.", "iv." or "5.4." itself
    return True


def ordinal(text: str, dot: int, before: str) -> bool:
    """Whether the number before the period at ``dot`` is a day or an ordinal: a month name follows it
    ("1. März", "15. janvier", "1. January"), or it follows a German word that such a number follows
    ("am 1.", "zum 3. Mal"; ``before``: the word before the number)."""
    number = re.search(r"(?<![\d.,])\d{1,3}$", text[max(0, dot - 4):dot])
    if not number:
        return False
    if before.lower() in ORDINAL_BEFORE:
        return True
    following = re.match(r"\s+([^\W\d_]+)", text[dot + 1:dot + 40])
    return bool(following and len(number.group()) <= 2 and following.group(1).lower() in MONTHS)


def _marker_len(text: str, start: int) -> int:
    m = _MARKER.match(text, start)
    return (m.end() - start) if m else 0


def _cut(text: str, start: int, end: int, kind: str) -> list[Unit]:
    """``text[start:end]`` trimmed, as units of at most ``UNIT_MAX`` characters (cut at whitespace)."""
    return [Unit(s.start, s.end, kind) for s in hard_split(text, start, end, UNIT_MAX)]


READABLE = ("text", "item", "row")
"""The kinds of unit that are evidence a person reads."""

_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`+)(?=\S)(.+?)(?<=\S)\1")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"</?[A-Za-z][^>]{0,200}>")


def readable(text: str) -> str:
    """A unit's text as a person reads it: one line, no Markdown marks (``#``, ``**``, ``[..](..)``,
    ``>``), no HTML tags, no list bullet (an enumerator stays: it numbers the item)."""
    out = []
    for line in text.split("\n"):
        line = re.sub(r"^\s{0,3}#{1,6}\s+", "", line)
        line = re.sub(r"^\s*>+\s?", "", line)
        line = re.sub(r"^\s*[-*•‣◦▪]\s+", "", line)
        out.append(line)
    s = "\n".join(out)
    s = " ".join((s if s.isascii() else _CJK_WRAPPED.sub("", s)).split())
    s = _LINK.sub(r"\1", s)
    s = _TAG.sub("", s)
    s = _EMPHASIS.sub(r"\2", s)
    return " ".join(s.split())


def row_with_header(text: str, units: list[Unit], i: int) -> str:
    """A table row as a person reads it: with its column names. A row whose cells are already
    labelled (``Region: West | Sales: 1,200``) is itself; a row of one cell (a label and its figures,
    as a PDF's text gives a statement's row) is read with the years above it (:func:`with_years`), or
    alone; otherwise the first row of its table (the run of rows it belongs to) names the columns."""
    row = units[i].text(text)
    cells = [c.strip() for c in re.split(r"\s\|\s|\t|\|", row) if c.strip()]
    if not cells or all(":" in c for c in cells):
        return readable(row)
    if len(cells) == 1:  # a PDF's row: a label and its figures, the columns named by the years above
        return with_years(text, units, i) or readable(row)
    j = i
    while j > 0 and units[j - 1].kind == "row" and "\n\n" not in text[units[j - 1].end : units[j].start]:
        j -= 1
    if j == i:
        return readable(" | ".join(cells))
    names = [c.strip() for c in re.split(r"\s\|\s|\t|\|", units[j].text(text)) if c.strip()]
    if len(names) != len(cells):
        return readable(units[j].text(text) + " — " + row)
    return readable(" | ".join(f"{n}: {c}" if n and n != c else c for n, c in zip(names, cells)))


_FIGURE = r"(?:[$€£]\s?)?\(?\d[\d,.]*\)?%?|[—–]"
_FIGURES = re.compile(rf"(?:\s+(?:{_FIGURE}))+\s*$")
_YEARS = re.compile(r"(?:(?<!\S)(?:19|20)\d{2}(?!\S)\s*)+$")
YEARS_BACK = 60
"""Units above a row searched for the line that names its columns."""


def with_years(text: str, units: list[Unit], i: int) -> str | None:
    """A row of one cell ("Accounts payable $ 302,578 $ 255,028") with its columns named by the
    nearest line above it, within ``YEARS_BACK`` units, that ends in as many years as the row has
    figures ("December 31, 2018 2017"): "Accounts payable — 2018: $ 302,578 | 2017: $ 255,028"; None
    when there is no such line (a column of changes, of percentages: the row is shown alone)."""
    row = readable(units[i].text(text))
    m = _FIGURES.search(" " + row)
    if not m:
        return None
    figures = re.findall(_FIGURE, m.group())
    label = row[: max(0, m.start() - 1)].strip()
    if len(figures) < 2 or not label or _YEARS.fullmatch(" ".join(figures)):
        return None  # no figures to name, or the line that names the columns itself
    for j in range(i - 1, max(-1, i - 1 - YEARS_BACK), -1):
        for line in reversed(units[j].text(text).split("\n")):
            years = _YEARS.search(line.strip())
            if years and len(years.group().split()) == len(figures):
                return f"{label} — " + " | ".join(f"{y}: {f}" for y, f in zip(years.group().split(), figures))
    return None
