"""Document-level evidence: does this document's identity match what the question asks about?

A question about a long document usually says *whose* document it wants and *when*: "What is the
FY2018 capital expenditure amount for 3M?", "In 2022 Q2, which of JPM's segments…". A chunk deep
inside a 300-page filing says neither, so chunk scores alone cannot tell 3M's 2018 report from
3M's 2022 report or from another company's 2018 report. The document can: its identity is its
title, the words of its file name (``3M_2018_10K.pdf`` → "3M 2018 10K") and its first page.

:func:`asked` reads from the question its names (capitalised words and phrases, acronyms, words
with digits such as "3M"), its years ("2018", "FY2018", "fiscal 2019", "FY18") and its quarters
("Q2", "second quarter"); :func:`evidence` scores each document's :class:`Identity` against them
in [0, 1]:

- names weigh 2, the period (year and quarter) 1: the name says whose document, the period which
  of that entity's documents;
- a document matches the years when it is *of the latest year asked*, because a report describes
  its own period and earlier ones ("from FY2015 to FY2016" is in the 2016 report), half when it
  is of an earlier year asked;
- only what some of the candidate documents match and some do not counts: a name every candidate
  carries (a folder of one company's reports) or none carries (a capitalised word that names no
  document) says nothing about which document is meant.

Nothing here knows about companies or filings: the same reading serves papers ("the 2019 report
of the Climate Council"), manuals ("Q3 release notes") and mail.
"""

from __future__ import annotations


import re
from dataclasses import dataclass

from c1.retrieval.terms import STOPWORDS

W_NAME = 2.0
"""What the question's names weigh beside its years and quarters (which weigh 1): a match is a share of the
weights of what tells the documents apart, so only this ratio counts."""

_POSSESSIVE = re.compile(r"['’]s$")
_TOKEN = re.compile(r"[^\W_]+(?:[&'’][^\W_]+)*")
_YEAR = re.compile(r"(?<![\d.,$])((?:19|20)\d\d)(?![\d%])")
"""A year, alone or glued to a word ("FY2018", "2022Q2"); not part of a number, an amount or a share."""
_SHORT_FY = re.compile(r"\b(?:FY|fy|Fy)'?(\d\d)\b")
_QUARTER = re.compile(r"\b(?:Q([1-4])|([1-4])Q)(?![\w])|\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\b",
                      re.IGNORECASE)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_DATE = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{1,2},?\s+"
    r"((?:19|20)\d\d)\b|\b\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December)\s+((?:19|20)\d\d)\b|\b((?:19|20)\d\d)-[01]\d-[0-3]\d\b"
)
_NOT_NAMES = STOPWORDS | {
    "what", "which", "who", "how", "why", "when", "where", "does", "did", "is", "are", "was", "were", "has", "have",
    "give", "list", "find", "show", "tell", "explain", "describe", "compare", "compute", "calculate", "provide",
    "respond", "answer", "round", "please", "using", "use", "based", "basing", "looking", "according", "considering",
    "assuming", "among", "between", "in", "on", "at", "for", "from", "by", "if", "here", "here's", "there", "you",
    "your", "i", "we", "our", "my", "they", "it", "its", "fy", "cy", "q1", "q2", "q3", "q4", "fiscal", "year",
    "quarter", "total", "net", "annual", "quarterly", "report", "yes", "no",
}
_CONNECTORS = {"of", "&", "de", "the", "for"}
FIRST_PAGE_CHARS = 3000
"""How much of the first chunk counts as the document's first page."""


@dataclass(frozen=True)
class Asked:
    """What a question says about the document it wants."""

    names: tuple[tuple[str, ...], ...]
    """Name phrases, each as lower-case tokens: ("american", "water", "works"), ("3m",), ("jpm",)."""
    acronyms: frozenset[str]
    """Names written in capitals ("JPM", "AMD"): they also match a word they begin ("JPMorgan")."""
    years: frozenset[int]
    quarters: frozenset[int]

    def __bool__(self) -> bool:
        return bool(self.names or self.years or self.quarters)


@dataclass(frozen=True)
class Identity:
    """What a document says it is: the words of its title, file-name words and first page."""

    words: frozenset[str]
    """Its words, and each run of up to ``NAME_WORDS`` consecutive words glued ("coca cola" → "cocacola")."""
    text: str
    """Its words joined by single spaces, padded with one space at each end."""
    years: frozenset[int]
    quarters: frozenset[int]
    initials: frozenset[str] = frozenset()
    """The initials of each run of up to ``NAME_WORDS`` consecutive words ("non disclosure agreement" → "nda")."""

    def has_name(self, phrase: tuple[str, ...], acronym: bool) -> bool:
        """The phrase occurs as consecutive words, or glued into fewer words ("Coca Cola" ~
        "COCACOLA", "American Water Works" ~ "AMERICANWATERWORKS", "CocaCola" ~ "Coca Cola"); an
        acronym also as the start of a word ("JPM" ~ "JPMorgan") or as the initials of as many
        consecutive words ("NDA" ~ "Non-Disclosure Agreement", "AMD" ~ "Advanced Micro Devices")."""
        if f" {' '.join(phrase)} " in self.text or "".join(phrase) in self.words:
            return True
        return acronym and len(phrase[0]) >= 3 and (f" {phrase[0]}" in self.text or phrase[0] in self.initials)


NAME_WORDS = 5
"""A name runs over at most this many words: a document's identity holds each run of up to as many of its
words glued ("coca cola" → "cocacola") and their initials ("non disclosure agreement" → "nda"; a
question's acronym has three letters at least, so shorter runs' initials match nothing)."""


def asked(question: str) -> Asked:
    names, acronyms = _names(question)
    return Asked(tuple(names), frozenset(acronyms), frozenset(_years(question)), frozenset(_quarters(question)))


def _names(question: str) -> tuple[list[tuple[str, ...]], set[str]]:
    """Runs of capitalised (or letter-and-digit) words, common question words and periods left out;
    punctuation ends a run. A plain capitalised word that starts a sentence ("Inventory turnover
    is…") is taken only when the question writes it capitalised elsewhere too, or as a possessive."""
    names: list[tuple[str, ...]] = []
    acronyms: set[str] = set()
    run: list[str] = []
    mid_caps = {m.group(0).lower() for m in _TOKEN.finditer(question)
                if m.group(0)[:1].isupper() and not _starts_sentence(question, m.start())}

    def close():
        if run:
            phrase = tuple(w.lower() for w in run)
            if phrase not in names:
                names.append(phrase)
            run.clear()

    held: list[str] = []  # a connector ("of", "and", "&") inside a run, kept if a name follows
    for m in _TOKEN.finditer(question):
        raw = m.group(0)
        word = _POSSESSIVE.sub("", raw)
        low = word.lower()
        if m.start() and any(ch in question[m.start() - 2 : m.start()] for ch in ".?!:;,()\"“”"):
            close()
            held.clear()
        if run and low in _CONNECTORS and not held:
            held.append(word)
            continue
        special = word.isupper() or any(c.isdigit() for c in word)
        name_like = (word[:1].isupper() or (any(c.isdigit() for c in word) and any(c.isalpha() for c in word)))
        if name_like and (_is_period(word) or low in _NOT_NAMES):
            name_like = False
        if name_like and not special and raw == word and _starts_sentence(question, m.start()) and low not in mid_caps:
            name_like = False
        if name_like:
            run.extend(held)
            run.append(word)
            if word.isupper() and word.isalpha() and len(word) >= 2:
                acronyms.add(low)
            if raw != word:  # a possessive ends the name: "Walmart's DPO"
                close()
        else:
            close()
        held.clear()
    close()
    return names, acronyms


def _starts_sentence(text: str, pos: int) -> bool:
    before = text[:pos].rstrip(" \t\"“'(")
    return not before or before[-1] in ".?!\n"


def _is_period(word: str) -> bool:
    return bool(re.fullmatch(r"(?:FY|CY|Q[1-4]|[1-4]Q|H[12])?'?(?:\d\d|(?:19|20)\d\d)?(?:Q[1-4])?", word, re.IGNORECASE)) \
        and any(c.isdigit() for c in word)


def identity(title: str, name_words: str, first_page: str) -> Identity:
    """The identity of a document from its title, its file-name words and its first page.

    Its years come from the first of these that holds any: the file name (what the owner called
    it), the title (metadata titles also carry filing or printing dates: "10-K - 02/08/2023"), the
    first full date of the first page ("For the fiscal year ended December 25, 2021")."""
    head = f"{title} {name_words}"
    page = first_page[:FIRST_PAGE_CHARS]
    tokens = [_POSSESSIVE.sub("", t).lower() for t in _TOKEN.findall(f"{head} {page}")]  # as the question's names
    runs = [tokens[i : i + n] for n in range(1, NAME_WORDS + 1) for i in range(len(tokens) - n + 1)]
    words = {"".join(run) for run in runs}
    years = _years(name_words) or _years(title)
    if not years:
        m = _DATE.search(page)
        if m:
            years = {int(next(g for g in m.groups() if g))}
    initials = {"".join(t[0] for t in run) for run in runs}
    return Identity(frozenset(words), f" {' '.join(tokens)} ", frozenset(years), frozenset(_quarters(head)), frozenset(initials))


def _years(text: str) -> set[int]:
    return {int(m.group(1)) for m in _YEAR.finditer(text)} | {2000 + int(m.group(1)) for m in _SHORT_FY.finditer(text)}


def _quarters(text: str) -> set[int]:
    out = set()
    for m in _QUARTER.finditer(text):
        q = m.group(1) or m.group(2)
        out.add(int(q) if q else _ORDINAL[m.group(3).lower()])
    return out


def evidence(question: Asked, identities: dict[str, Identity], rarity=None) -> dict[str, float]:
    """Each document's match with what the question asks, in [0, 1] (see the module docstring);
    all zeros when nothing asked tells the documents apart. ``rarity``: a name phrase (its words
    joined by spaces) → its weight, e.g. its inverse document frequency in the corpus, so that the
    question's one rare name ("CEII") outweighs its common capitalised words ("Confidential
    Information", written in every agreement); default: all names alike."""
    out = {d: 0.0 for d in identities}
    if not question or not identities:
        return out
    parts: list[tuple[float, float, dict[str, float]]] = []  # (weight, how much it singles out, values)
    names = _held_names(question, identities)
    weights = [max(0.0, rarity(" ".join(p))) if rarity else 1.0 for p in names]
    total_w = sum(weights) or 1.0
    n = len(identities)
    for phrase, w in zip(names, weights):
        acronym = len(phrase) == 1 and phrase[0] in question.acronyms
        got = {d: float(i.has_name(phrase, acronym)) for d, i in identities.items()}
        parts.append((W_NAME * w / total_w, _singles_out(sum(got.values()), n), got))
    if question.years or question.quarters:
        parts.append((1.0, 1.0, {d: _period(question, i) for d, i in identities.items()}))
    total = 0.0
    for weight, share, got in parts:
        values = set(got.values())
        if len(values) < 2:  # every candidate matches alike: no evidence either way
            continue
        total += weight
        for d, v in got.items():
            out[d] += weight * share * v
    if total == 0:
        return out
    return {d: v / total for d, v in out.items()}


def _held_names(question: Asked, identities: dict[str, "Identity"]) -> list[tuple[str, ...]]:
    """The question's name phrases as the candidates hold them: a phrase of several words that no
    candidate holds whole, but each of whose words some candidate holds, stands for its words, each a
    name of its own. A run of capitalised words can join two names ("the Bosch NDA": the party, and
    the kind of agreement); the file 01_Bosch-...-Non-Disclosure-Agreement.txt holds "bosch", another's
    Roundhouse-Creative-Mutual-NDA.txt holds "nda", and the phrase whole tells them apart no more than
    an unknown word does. A word that no candidate holds ("Fairbanks" of "Elena Fairbanks") says the
    run is one name: the others' first name alone is no evidence."""
    out: list[tuple[str, ...]] = []
    for phrase in question.names:
        words = [w for w in phrase if w not in _CONNECTORS]
        whole = len(words) < 2 or any(i.has_name(phrase, False) for i in identities.values()) or not all(
            any(i.has_name((w,), w in question.acronyms) for i in identities.values()) for w in words)
        for part in [phrase] if whole else [(w,) for w in words]:
            if part not in out:
                out.append(part)
    return out


def _singles_out(holders: float, n: int) -> float:
    """How much holding a name tells a document apart from the ``n`` given, when ``holders`` of them hold
    it: the share of the others that it rules out, (n − holders) / (n − 1) — 1 for a name one document
    holds ("CEII", "Coca-Cola"), near 0 for one nearly all hold ("Receiving Party" in a folder of NDAs,
    which a lower-cased question's "receiving party" is read as): a name every other agreement holds is
    no evidence that this one is not the one asked about."""
    if n < 2 or holders <= 0:
        return 1.0
    return max(0.0, (n - holders) / (n - 1))


def _period(question: Asked, ident: Identity) -> float:
    score, parts = 0.0, 0
    if question.years:
        parts += 1
        if ident.years:
            latest = max(question.years)
            if latest in ident.years:
                score += 1.0
            elif question.years & ident.years:
                score += 0.5
    if question.quarters:
        parts += 1
        if question.quarters & ident.quarters:
            score += 1.0
    return score / parts if parts else 0.0
