"""Reading chunk text for the built-in policy: what is content, which names it holds, its sentences.

A chunk of real files is not all content. Mail carries header blocks (its own, and those of the
messages it quotes or forwards: ``From:``, ``Sent:``, ``Subject:`` lines with addresses on
continuation lines), separator lines (``-----Original Message-----``), greetings and signatures
("Hi Tom,", "Thanks, Zoë"); filings carry page headers and table rows. Names found there are not
bridges to anything the question asks about, and a header line is no justification. This module
keeps:

- :func:`units`: the sentences of a text as ``(start, end)`` spans of the text itself (so that a
  justification is verbatim), with metadata lines, separators and address lines left out; hard
  line wraps are joined, table rows and short lines stand alone;
- :func:`entities`: capitalised names and years in content (never in a header block), without
  leading function words;
- :func:`question_entities`: the names a question mentions (quoted titles first);
- :func:`bare_first_names`: single capitalised words that the text uses as a greeting, a
  signature, or the first word of a longer name — a person's first name on its own links nothing.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from c1.retrieval.memo import TEXTS, per_text
from c1.retrieval.terms import STOPWORDS
from c1.store.keywords import CJK
from c1.retrieval.sentences import CJK_END, SHORT_CJK, line_spans, ordinal

_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,80})[\"“”]")
_CAPS = re.compile(
    r"(?<![\w-])(?:[A-Z][\w'’.&-]*|\d{4})(?:[ \t]+(?:(?:of|the|de|del|da|di|van|von|der|den|du|la|le|for|&|v\.|vs\.)[ \t]+)*"
    r"(?:[A-Z][\w'’.&-]*|\d+\b))*"
)
"""A run of capitalised words (and years), with the particles names carry; never across a line break
(a signature above the next line's first word is not one name)."""
_ADJECTIVE = re.compile(r"^[A-Z][a-z]+(?:ian|ean|can|ish|ese|ch)$")
"""A single capitalised word like "Canadian" or "English": a nationality adjective when a lower-case word follows."""
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")
YEAR = re.compile(r"^\d{4}$")
_COMBINING = re.compile(r"[\u0300-\u036f]")
LEADING = {"The", "A", "An", "In", "On", "At", "What", "Which", "Who", "When", "Where", "How", "Is", "Are",
           "Was", "Were", "Did", "Do", "Does", "This", "That", "These", "Those", "It", "He", "She", "They", "His",
           "Her", "Its", "Their", "As", "Of", "For", "By", "From", "With", "And", "But", "Or", "If", "After",
           "Before", "During", "Since", "Not", "No", "Yes", "Both", "Also", "Whose", "Whom", "Why", "Name",
           "Between", "Among", "Although", "While", "According", "Despite", "Until", "Then", "There",
           "Here", "Some", "Many", "Most", "One", "Two", "Three", "First", "Second", "Last", "New",
           "Please", "Thanks", "Thank", "Hi", "Hello", "Dear", "Regards", "Best", "Cheers", "Re", "Fw", "Fwd",
           "I", "We", "You", "Our", "My", "Your", "Any", "All", "Each", "Every", "Other", "Such", "Note", "See",
           "I'm", "I'll", "I've", "I'd", "I’m", "I’ll", "I’ve", "I’d"}
CALENDAR = {"January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
            "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
            "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec",
            "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "AM", "PM"}
"""Month and day names: a date is not an entity to follow ("Tuesday's" meeting)."""
_GREETING = re.compile(r"^\s*(?:hi|hello|hey|dear|thanks|thank you|regards|best|cheers|love|sincerely|yours)\b[\s,!]*",
                       re.IGNORECASE)

_META = re.compile(r"^[ \t>|]*[A-Z][A-Za-z-]{0,24}(?: [A-Za-z-]{1,20})?:(?:\s|$)")
"""``Label: value`` — a header field (From:, Sent:, Subject:, X-Folder:, Cc:) or a form field."""
META_MAX = 200
"""Longer lines are text that happens to start with a label ("Note: …" paragraphs), not metadata."""
_SEPARATOR = re.compile(r"^[\s\W_]*(?:-{3,}|_{3,}|={3,}|\*{3,}|(?:[-_.=*/\\]\s?){5,})|original message|forwarded by",
                        re.IGNORECASE)
_ADDRESS = re.compile(r"\S+@\S+\.\w+|https?://\S+|www\.\S+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"“'(\[]?[A-Z0-9])")
_NUMBER_END = re.compile(r"[\d%)\]]\s*$")
_CJK_END = re.compile(CJK_END)
_CJK_WRAP = (re.compile(f"[{CJK}，、]\\s*$"), re.compile(f"[{CJK}]"))
"""A line of Chinese or Japanese that a hard wrap cut: longer than a title (``SHORT_CJK``), it ends in
a character or a comma, and the next line starts with a character."""
UNIT_MAX = 400
"""A longer run without sentence punctuation (a table flattened into prose) is cut at a word."""


# --- normalising --------------------------------------------------------------------------


def norm(text: str) -> str:
    """Lower case, accents and possessives removed, words joined by single spaces."""
    text = text.lower()
    if not text.isascii():
        text = _COMBINING.sub("", unicodedata.normalize("NFKD", text))
    return " ".join(re.findall(r"\w+", re.sub(r"['’]s\b", "", text)))


def without_suffix(title: str) -> str:
    """A title without its disambiguation suffix, as written ("Tom Smith (actor)" → "Tom Smith")."""
    return _PAREN.sub("", title or "").strip()


def clean_title(title: str) -> str:
    """A title without its disambiguation suffix ("Tom Smith (actor)" → "tom smith"), normalised."""
    return norm(without_suffix(title))


def strip_article(text_norm: str) -> str:
    for article in ("the ", "a ", "an "):
        if text_norm.startswith(article):
            return text_norm[len(article):]
    return text_norm


# --- lines and sentences --------------------------------------------------------------------


@per_text
def content_lines(text: str) -> list[tuple[int, int]]:
    """Spans of the lines that are content: not a header block (a ``Label:`` line and its
    continuation lines up to the next blank line), not a separator, not an address or link line."""
    out = []
    in_header = False
    for start, end in line_spans(text):
        line = text[start:end]
        stripped = line.strip()
        if not stripped:
            in_header = False
            continue
        if _META.match(line) and len(stripped) <= META_MAX:
            in_header = True
            continue
        if in_header:
            if len(stripped) <= META_MAX and not _SENTENCE_END.search(stripped + " X"):
                continue  # a wrapped header value (more addresses)
            in_header = False
        if _SEPARATOR.search(stripped):
            continue
        rest = _ADDRESS.sub("", stripped)
        if len(re.findall(r"[^\W\d_]{2,}", rest)) < max(1, len(stripped.split()) // 3):
            continue  # mostly addresses, links or symbols
        out.append((start, end))
    return out


@per_text
def units(text: str) -> list[tuple[int, int]]:
    """Sentences of the content of ``text`` as (start, end) spans of ``text``: hard-wrapped lines
    are joined (a line that goes on in lower case, or ends mid-phrase), a table row or a short
    line stands alone, and each paragraph is split after sentence punctuation."""
    blocks: list[list[int]] = []  # [start, end] of runs of joined lines
    prev_end = -2
    prev_line = ""
    for start, end in content_lines(text):
        line = text[start:end].strip()
        joined = False
        if blocks and text[prev_end:start].count("\n") == 1:  # consecutive lines
            ends_open = not re.search(r"[.!?:;。｡！？：；]\s*$", prev_line) and not _NUMBER_END.search(prev_line)
            goes_on = (line[:1].islower() or re.search(r"[a-z,(&-]\s*$", prev_line) is not None
                       or bool(len(prev_line) > SHORT_CJK and _CJK_WRAP[0].search(prev_line) and _CJK_WRAP[1].match(line)))
            joined = ends_open and goes_on
        if joined:
            blocks[-1][1] = end
        else:
            blocks.append([start, end])
        prev_end, prev_line = end, line
    out = []
    for b_start, b_end in blocks:
        block = text[b_start:b_end]
        pos = 0
        for m in _SENTENCE_END.finditer(block):
            dot = b_start + m.start() - 1
            while text[dot] != "." and text[dot] in "\"'”’)]":
                dot -= 1
            if text[dot] == "." and _ordinal_at(text, b_start, dot):
                continue  # "am 1. März"
            out.extend(_cut_cjk(text, b_start + pos, b_start + m.start()))
            pos = m.end()
        out.extend(_cut_cjk(text, b_start + pos, b_end))
    return out


def _ordinal_at(text: str, start: int, dot: int) -> bool:
    """Whether the period at ``dot`` follows a day or an ordinal (:func:`c1.retrieval.sentences.ordinal`)."""
    before = re.search(r"(\S+)\s+\S+$", text[max(start, dot - 60):dot])
    return ordinal(text, dot, before.group(1) if before else "")


def _cut_cjk(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """:func:`_cut` of each sentence of Chinese or Japanese in ``text[start:end]`` (ended by 。！？ with no
    space after them)."""
    out, pos = [], start
    for m in _CJK_END.finditer(text, start, end):
        out.extend(_cut(text, pos, m.end()))
        pos = m.end()
    return out + _cut(text, pos, end)


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The span without surrounding blanks; a run longer than ``UNIT_MAX`` is cut at a word."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end <= start:
        return []
    if end - start > UNIT_MAX:
        cut = text.rfind(" ", start, start + UNIT_MAX)
        end = cut if cut > start else start + UNIT_MAX
    return [(start, end)]


@functools.lru_cache(maxsize=TEXTS)
def content(text: str) -> str:
    """The content lines of ``text`` joined by newlines (what names are read from)."""
    return "\n".join(text[s:e] for s, e in content_lines(text))


# --- names ------------------------------------------------------------------------------------


def entities_with_next(text: str) -> list[tuple[str, str]]:
    """(entity, the text right after it) for each capitalised phrase or year."""
    out = []
    for m in _CAPS.finditer(text):
        words = m.group(0).split()
        while words and words[0] in LEADING:
            words = words[1:]
        while words and words[-1].lower() in STOPWORDS:
            words = words[:-1]
        if words:
            phrase = " ".join(words).strip(".,'’")
            if phrase and (not phrase.isdigit() or len(phrase) == 4):
                out.append((phrase, text[m.end():m.end() + 40].lstrip(" ,;:")))  # what follows (a bounded look)
    return out


def entities(text: str) -> list[str]:
    """Capitalised phrases and years, without a leading function word."""
    return list(dict.fromkeys(e for e, _ in entities_with_next(text)))


def question_entities(question: str) -> list[str]:
    """Quoted titles, then capitalised names of several words, then single names; no nationality
    adjectives ("Canadian rock band"), no years."""
    quoted = [q.strip(" ?!.,") for q in _QUOTED.findall(question)]
    multi, single = [], []
    for e, after in entities_with_next(question):
        if len(e) <= 2 or YEAR.match(e) or any(e.lower() in o.lower() for o in quoted):
            continue
        if _ADJECTIVE.match(e.split()[-1]) and after[:1].islower():
            continue
        (multi if " " in e else single).append(e)
    return list(dict.fromkeys(q for q in quoted + multi + single if q))[:4]


def quoted(question: str) -> list[str]:
    """Phrases the question puts in quotes."""
    return [q.strip(" ?!.,") for q in _QUOTED.findall(question) if q.strip(" ?!.,")]


def bare_first_names(text: str) -> set[str]:
    """Single capitalised words the text uses as a person's first name on its own: the first word
    of a longer capitalised name in the same text ("Tom" beside "Tom Alonso"), or a word alone in
    a greeting or a signature line ("Hi Zoë,", "Thanks, Tom", a line that is just "Mery")."""
    out: set[str] = set()
    for name in entities(text):
        words = name.split()
        if len(words) > 1 and words[0][:1].isupper() and words[0].isalpha():
            out.add(words[0])
    for line in text.split("\n"):
        rest = _GREETING.sub("", line).strip(" ,.!-")
        if rest and len(rest.split()) <= 2 and (rest != line.strip(" ,.!-") or len(line.split()) <= 2):
            for word in rest.split():
                if word[:1].isupper():
                    out.add(word.strip(",.!"))
    return out


# --- case ---------------------------------------------------------------------------------------

_WORD_AT = re.compile(r"[^\W_][\w&.-]*[^\W_]|[^\W_]")
TRUECASE_MIN = 2
"""A question word takes the corpus's form when the corpus writes it at least this many times."""


def truecase(question: str, texts: list[str], names: list = ()) -> str:
    """``question`` with its lower-case words written as ``texts`` (the corpus's chunks that match it)
    write them: "ceii" → "CEII", "tom hanks" → "Tom Hanks", "q4" → "Q4". A word takes the form the texts
    use for it most often away from the start of a sentence, when that form has a capital and it is
    used at least ``TRUECASE_MIN`` times. A question with no lower-case letter (typed in capitals) is
    read lower-cased first. Words the question writes with capitals and stopwords are kept as written;
    quoted words are truecased too ('"glacier bancorp, inc."' names Glacier Bancorp), while what is
    matched as written stays what was typed (``Ranker(typed=...)``): names are found by what the corpus
    calls them, not by how the question was typed.
    ``names``: what documents are called (titles, file-name words), each alone or as (name, what the named
    document itself writes): a capitalised form there counts ``TRUECASE_MIN`` times, unless the document's
    own text writes the word in lower case (a paper's title in title case, "… Amino Acid Usage and …",
    over an abstract that says "usage": the capital was the title's convention, not a name's) ("bosch" → "Bosch" from ``01_Bosch-Automotive-…-Agreement.txt``), and a word
    that only names write, all in lower case, and no text does is a name ("ingram" → "Ingram" from
    ``ingram-non-disclosure.txt``, whose text never says it). A form in
    capitals throughout ("NON-DISCLOSURE", a heading) gives way to the same word with an initial capital
    where the texts have that too."""
    if not any(ch.islower() for ch in question):
        question = question.lower()
    question = _sentence_case(question, texts)
    wanted = {m.group(0) for m in _WORD_AT.finditer(question)
              if m.group(0).islower() and len(m.group(0)) > 1 and m.group(0) not in STOPWORDS}
    if not wanted:
        return question
    pairs = [n if isinstance(n, tuple) else (n, "") for n in names]
    names = [n for n, _ in pairs]
    forms: dict[str, dict[str, int]] = {}
    written: set[str] = set()  # the wanted words the texts write anywhere, in any case
    for weight, group in ((1, [(t, "") for t in texts]), (TRUECASE_MIN, pairs)):
        for text, own in group:
            folded = text.lower()
            if not any(w in folded for w in wanted):
                continue  # no word of it is wanted (a word's lower case is within the text's)
            matches, lows = _words(text)
            lower = _lower_words(own, wanted) if own else set()
            # only a word that is wanted, or whose hyphen's parts may be, can be a hit: the rest are passed
            # over without a step in Python each (a search's 50 chunks hold some 12,000 words)
            for i in [i for i, low in enumerate(lows) if low in wanted or "-" in low]:
                m = matches[i]
                token = m.group(0)
                parts = [token] + (token.split("-") if "-" in token else [])  # "Coca-Cola" also writes "coca"
                hits = [(word, low) for word in parts if (low := word.lower()) in wanted]
                if not hits:
                    continue
                if weight == 1 and (low := token.lower()) in wanted:
                    written.add(low)
                if _at_start(text, m.start()) and (weight == 1 or not _proper_after(matches, i)):
                    continue
                for word, low in hits:
                    if not (word != low and low in lower):
                        counts = forms.setdefault(low, {})
                        counts[word] = counts.get(word, 0) + weight
    named = {w for name in names for w in re.split(r"[\W_]+", name) if w in wanted}  # lower case only

    def form(m: re.Match) -> str:
        word = m.group(0)
        if word not in wanted:
            return word
        counts = forms.get(word)
        if word in named and word not in written and all(w.islower() for w in counts or ()):
            # only a document's name writes it, in lower case ("ingram" of ingram-non-disclosure.txt,
            # whose text never says it): it names that document
            return word.capitalize()
        if not counts:
            return word
        lower = counts.get(word, 0)
        capital = sum(n for w, n in counts.items() if not w.islower())
        if capital < TRUECASE_MIN or capital <= lower:
            return word
        best = max((w for w in counts if not w.islower()), key=lambda w: (not w.isupper() or len(w) <= 5, counts[w]))
        return best

    return _WORD_AT.sub(form, question)


def _lower_words(text: str, wanted: set[str]) -> set[str]:
    """The words of ``wanted`` (lower-case words) that ``text`` writes in lower case away from a sentence's
    start (no other word is asked about)."""
    matches, lows = _words(text)
    return {low for m, low in zip(matches, lows)
            if low in wanted and m.group(0) == low and not _at_start(text, m.start())}


def _words(text: str) -> tuple[list[re.Match], list[str]]:
    """``text``'s words (``_WORD_AT``) and each one's lower case, read in bulk: the loops over a search's
    chunks then take a step in Python only for the words they ask about."""
    matches = list(_WORD_AT.finditer(text))
    return matches, list(map(str.lower, map(re.Match.group, matches)))


def _sentence_case(question: str, texts: list[str]) -> str:
    """``question`` with each word that a sentence's start alone capitalises ("Antimicrobial agents are…",
    "Female carriers of…") in lower case, where ``texts`` write it in lower case away from a sentence's
    start more often than with a capital, and at least ``TRUECASE_MIN`` times: a capital there says
    nothing, so the corpus says whether it is a name ("Enron's CEO…" keeps its capital). Words with
    capitals inside or throughout ("APOE4", "FedEx") and words whose next word (stopwords aside) has a
    capital ("Scott Derrickson", "Bank of America") are kept."""
    starts = [m for m in _WORD_AT.finditer(question)
              if _at_start(question, m.start()) and m.group(0)[:1].isupper() and m.group(0)[1:].islower()
              and m.group(0).isalpha() and len(m.group(0)) > 2]
    if not starts:
        return question
    words = list(_WORD_AT.finditer(question))

    def next_capital(m: re.Match) -> bool:  # "Bank of America": the next word that is not a stopword
        after = [w.group(0) for w in words if w.start() > m.start() and w.group(0).lower() not in STOPWORDS]
        return bool(after) and after[0][:1].isupper()

    starts = [m for m in starts if not next_capital(m)]
    counts = {m.group(0).lower(): [0, 0] for m in starts}  # [lower, capitalised], away from sentence starts
    for text in texts:
        matches, lows = _words(text)
        for i in [i for i, low in enumerate(lows) if low in counts]:  # the rest without a step each
            m = matches[i]
            if not _at_start(text, m.start()):
                counts[lows[i]][0 if m.group(0).islower() else 1] += 1
    out = question
    for m in reversed(starts):
        lower, capital = counts[m.group(0).lower()]
        if lower >= TRUECASE_MIN and lower > capital:
            out = out[:m.start()] + m.group(0).lower() + out[m.end():]
    return out


def _proper_after(words: list[re.Match], i: int) -> bool:
    """Whether a word of a name after the ``i``-th is capitalised: "Craig Westcarr", "FA Cup" are names
    from their first word; "Political party" is a title's capital on a common noun (titles capitalise
    their first word as sentences do, which says nothing)."""
    return any(w.group(0)[:1].isupper() for w in words[i + 1:] if w.group(0).lower() not in STOPWORDS)


def _at_start(text: str, pos: int) -> bool:
    """Whether ``pos`` starts a sentence or a line (a capital there says nothing about the word)."""
    before = text[max(0, pos - 3):pos].rstrip(" \t\"“'(")
    return not before or before[-1] in ".?!:\n"
