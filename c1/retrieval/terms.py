"""The words of a query that carry meaning, and how much of them a text covers; and the one form of
a text that keyword terms are read from (:func:`keyword_form`), for the index and the query alike."""

from __future__ import annotations

import functools
import re
import unicodedata
from decimal import Decimal, InvalidOperation

STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have he her his how in is it its of on or "
    "she that the their them they this to was were what when where which who whom whose why will with "
    "you your i we our us not no than then there these those been being into about also can could "
    "would should may might must shall one ones name named called".split()
)
_WORD = re.compile(r"[\w']+")

CJK = ("\u1100-\u11ff\u3040-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3005-\u3007\u3130-\u318f\u31f0-\u31ff"
       "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f")
"""Characters of scripts written without spaces between words: Han ideographs, kana, Hangul."""
_CJK_RUN = re.compile(f"[{CJK}]+")
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
_DIGIT = re.compile("[0-9]")


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
    if _DIGIT.search(text):
        text = _GROUPED.sub(_joined, text)
        text = _SCALED.sub(_with_value, text)
    if not text.isascii():
        text = _CJK_RUN.sub(_pairs, text)
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
    return _CJK_RUN.search(text) is not None


def content_terms(text: str) -> list[str]:
    """Lower-cased words that carry meaning (no stopwords, no 1-letter tokens but a lone ideograph),
    read from :func:`keyword_form`, in order, unique."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(keyword_form(text).lower()):
        w = w.strip("'")
        if (len(w) > 1 or w and _CJK_RUN.match(w)) and w not in STOPWORDS:
            seen.setdefault(w, None)
    return list(seen)


def coverage(terms: list[str], text: str) -> float:
    """Share of query terms that occur in ``text`` (prefix match, a cheap stand-in for stemming); the
    text read in its :func:`keyword_form` where a term has a digit or a character of Chinese or Japanese
    (the form changes nothing else that terms can match)."""
    if any(_DIGIT.search(t) or not t.isascii() for t in terms):
        text = keyword_form(text)
    words = set(_WORD.findall(text.lower()))
    stems = {w[:5] for w in words if len(w) > 4}
    hit = sum(1 for t in terms if t in words or (len(t) > 4 and t[:5] in stems))
    return hit / len(terms)


# --- which language ---------------------------------------------------------------------------

ENGLISH = frozenset("the of and to in is that for it with as was on be by this are or from at which have not has "
                    "but they you we their been were".split())
"""The commonest English function words: a quarter to a third of the words of English prose."""
OTHERS = frozenset(
    "der das und ist nicht mit von den des dem zu auf für sich ein eine einer eines wird werden sind auch oder "
    "aus bei nach wie über "  # German
    "le la les est une du pour pas que qui dans sur avec sont ce cette aux être "  # French
    "del para por su como pero más "  # Spanish
    "che di della sono gli "  # Italian
    "het een van niet zijn voor met "  # Dutch
    "não uma das dos pelo".split())  # Portuguese
"""Function words of other languages written in Latin script that English text does not use (not "el",
"los", "die", "com", "et": El Paso, Los Angeles, .com and "et al." are English text's)."""
_LETTERS = re.compile(r"[^\W\d_]+")


def foreign_share(texts) -> float:
    """The share of the letters of ``texts`` that are in another language than English: a text is
    foreign when most of its letters are in another script than Latin, or when it holds more function
    words of another language (:data:`OTHERS`) than of English; one with too few function words to
    tell (a table, a list of names) counts for neither."""
    english = foreign = 0
    for text in texts:
        words = _LETTERS.findall(text.lower())
        letters = sum(len(w) for w in words)
        if not letters:
            continue
        latin = sum(1 for w in words for ch in w if ch <= "\u024f" or "\u1e00" <= ch <= "\u1eff")
        if latin < letters / 2:
            foreign += letters
            continue
        en = sum(1 for w in words if w in ENGLISH)
        other = sum(1 for w in words if w in OTHERS)
        if en + other < 3:
            continue
        if other > en:
            foreign += letters
        else:
            english += letters
    return foreign / (english + foreign) if english + foreign else 0.0
