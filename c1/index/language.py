"""Which language a collection's text is in: enough to warn that an English-only embedder cannot read it."""

from __future__ import annotations

import re

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
