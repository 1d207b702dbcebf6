"""The one form of a text that keyword terms are read from (:func:`keyword_form`), for the index and the
query alike: the lexical index (c1/store/lexical.py) stores it, and the retrieval side reads queries
through it (c1/retrieval/terms.py)."""

from __future__ import annotations

import functools
import re
import unicodedata
from decimal import Decimal, InvalidOperation

CJK = ("\u1100-\u11ff\u3040-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3005-\u3007\u3130-\u318f\u31f0-\u31ff"
       "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f")
"""Characters of scripts written without spaces between words: Han ideographs, kana, Hangul."""
CJK_RUN = re.compile(f"[{CJK}]+")
_HIRAGANA = re.compile("[\u3040-\u309f]+")
_GROUPED = re.compile(
    r"[0-9](?<![0-9]{2})(?<![0-9][.,][0-9])[0-9]{0,2}(?:"  # a first digit, with no number before it
    r"(?:,[0-9]{3})+(?![0-9])(?!,[0-9])"  # 97,640 · 1,200,000.50
    r"|(?:\.[0-9]{3}){2,}(?![0-9])(?!\.[0-9])"  # 1.200.000 (one group alone is a decimal: 97.640)
    r"|(?:\.[0-9]{3})+(?=,[0-9])"  # 1.234,56
    r"|(?:['’][0-9]{3})+(?![0-9])"  # 1'200'000
    r")")
"""A number written with thousands separators (patterns open on a digit: a search for it is quick)."""
_SPACES = "\u00a0\u202f\u2009"
_SPACED = re.compile(f"[0-9](?<![0-9]{{2}})[0-9]{{0,2}}(?:[{_SPACES}][0-9]{{3}})+(?![0-9])")
"""... or with no-break or thin spaces between its groups; an ordinary space is no separator ("in 18 100
cases")."""
_SEPARATORS = re.compile(f"[,.'’{_SPACES}](?=[0-9]{{3}})")
_SCALES = {"thousand": 3, "k": 3, "million": 6, "millions": 6, "mn": 6, "m": 6, "mm": 6, "mio": 6, "millionen": 6,
           "billion": 9, "billions": 9, "bn": 9, "b": 9, "milliard": 9, "milliards": 9, "milliarde": 9,
           "milliarden": 9, "mrd": 9, "trillion": 12, "万": 4, "萬": 4, "亿": 8, "億": 8}
_SCALED = re.compile(
    r"[0-9](?<![0-9.,][0-9])[0-9]*(?:[.,][0-9]+)?\s?"
    r"(?:(?P<word>[Tt]housand|[Mm]illions?|[Mm]n|[Mm]io|[Mm]illionen|[Bb]illions?|[Bb]n|[Mm]illiard(?:e|en|s)?|[Mm]rd|"
    r"[Tt]rillion)\b|(?P<cjk>[万萬亿億])|(?P<short>[kK]|MM|mm|[mM]|[bB])\b)")
"""A figure with its scale in words: "1.2 million", "1,2 Millionen", "9.764万"; "$1.2m" (a letter alone
scales a figure only after a currency sign: "5 m" is a length)."""
_CURRENCY = "$€£¥"
DIGIT = re.compile("[0-9]")


@functools.lru_cache(maxsize=4096)
def keyword_form(text: str) -> str:
    """``text`` as keyword terms are read from it, on both sides of the keyword index: compatibility
    forms folded (full-width digits and letters), thousands separators dropped ("97,640", "1.200.000",
    "1 200 000" with no-break spaces → one number), a scaled figure followed by its value ("$1.2
    million" → "$1.2 million 1200000"), and each run of Han, kana or Hangul written as its
    overlapping pairs of characters ("合同终止" → "合同 同终 终止"), as Lucene's CJK analyzer does:
    those scripts put no spaces between words, and a pair matches without a dictionary. A currency
    sign is no word character: it drops out."""
    if not text.isascii():
        if any(ch in text for ch in _SPACES):  # before NFKC, which makes a no-break space a space
            text = _SPACED.sub(_joined, text)
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
    if DIGIT.search(text):
        text = _GROUPED.sub(_joined, text)
        text = _SCALED.sub(_with_value, text)
    if not text.isascii():
        text = CJK_RUN.sub(_pairs, text)
    return text


def _joined(m: re.Match) -> str:
    return _SEPARATORS.sub("", m.group(0))


def _with_value(m: re.Match) -> str:
    """A scaled figure followed by its value, when the value is a whole number."""
    scale = (m.group("word") or m.group("cjk") or m.group("short")).lower()
    sign = m.string[max(0, m.start() - 2):m.start()].rstrip()[-1:]
    if m.group("short") and not (sign and sign in _CURRENCY):
        return m.group(0)
    figure = re.match(r"[0-9.,]+", m.group(0)).group(0)
    try:
        value = Decimal(figure.replace(",", ".")).scaleb(_SCALES[scale])
    except (InvalidOperation, KeyError):
        return m.group(0)
    if value != value.to_integral_value():
        return m.group(0)
    return f"{m.group(0)} {int(value)} "


def _pairs(m: re.Match) -> str:
    """A run's overlapping pairs; in Japanese, without the pairs of two hiragana where the run has
    other characters: those are endings and particles ("です", "する", "から"), which matched a note
    ending "予定です" to a question ending "ですか" better than a contract holding its "報酬"."""
    run = m.group(0)
    if len(run) == 1:
        return f" {run} "
    pairs = [run[i:i + 2] for i in range(len(run) - 1)]
    kept = [p for p in pairs if not _HIRAGANA.fullmatch(p)]
    return " " + " ".join(kept or pairs) + " "


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None
