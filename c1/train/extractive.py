"""Questions made from any collection without a model: a sentence is the answer, its document the gold.

The generator picks documents at random (each document alike, so that a few long filings do not make
every question), a chunk of it, and one of its sentences with enough content words. The sentence's
answer (a number, a date, a name, else its last content word) is taken out, and the question is written
from what is left, as people type into a search box: a few of the sentence's content words in their
order (the rarer ones kept first), a question word that fits the answer, sometimes a word of the
document's title (a question that names the party), sometimes all in lower case or with one typo. Where
the collection's documents name each other by title (a multi-hop corpus), some questions need two
documents (:func:`_two_doc`). The questions train the document ranker (``c1 train ranker``, bench/ranker_fit.py): they cost nothing, come
from the user's own collection, and never come from the questions a benchmark measures on.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass

from c1.retrieval.terms import content_terms
from c1.store.ids import doc_of

_NUMBER = re.compile(r"^\$?\d[\d,.]*%?$")
_MONTHS = {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december"}
MIN_TERMS = 6
"""A sentence with fewer content words says too little to write a question about."""
ATTEMPTS = 4
"""Documents drawn per question wanted, at most (a draw whose chunk has no usable sentence gives none)."""
LINK_SCAN = 3000
"""Documents looked through for a sentence that names another document (two-document questions)."""


@dataclass(frozen=True)
class Made:
    question: str
    gold: tuple[str, ...]
    """The document ids of the sentence's document (and of its copies: the same text under other ids)."""
    sentence: str
    answer: str


def make(corpus, n: int, seed: int = 0, max_terms: int = 7, two_doc: float = 0.3) -> list[Made]:
    """``n`` questions from ``corpus`` (fewer when it has too few usable sentences); up to ``two_doc`` of
    them need two documents, where some of the collection's titles are linkable (:func:`_linkable_titles`)."""
    rng = random.Random(seed)
    docs = [d for d in corpus.store.manifest.all_docs() if d.n_chunks]
    rng.shuffle(docs)
    df = _document_frequency(corpus)
    titles = _linkable_titles(corpus, docs)
    out: list[Made] = []
    if titles:
        for doc in docs[:LINK_SCAN]:
            if len(out) >= round(n * two_doc):
                break
            made = _two_doc(corpus, doc, _sentences(corpus, doc.doc_id, rng), titles, df, rng)
            if made is not None:
                out.append(made)
    texts: dict[str, list[str]] = {}
    for doc in itertools.islice(itertools.cycle(docs), ATTEMPTS * n):  # a small corpus: several per document
        if len(out) >= n:
            break
        sentences = _sentences(corpus, doc.doc_id, rng)
        if not sentences:
            continue
        sentence = rng.choice(sentences)
        made = _question(sentence, doc.title or "", df, rng, max_terms)
        if made is None:
            continue
        question, answer = made
        gold = _copies(corpus, doc.doc_id, sentence, texts)
        out.append(Made(question, gold, sentence, answer))
    rng.shuffle(out)
    return out


def _sentences(corpus, doc_id: str, rng: random.Random) -> list[str]:
    """The sentences of one chunk of the document, drawn at random, that have enough to ask about."""
    from c1.retrieval.sentences import split

    chunk = rng.choice(corpus.doc_chunks(doc_id))
    sentences = [chunk.text[u.start:u.end] for u in split(chunk.text)]
    return [s for s in sentences if len(content_terms(s)) >= MIN_TERMS and len(s) < 600]


def _linkable_titles(corpus, docs) -> dict[str, list[str]]:
    """Titles (lower-cased) that name one document and that few chunks mention: the links between
    documents that a two-document question can follow (a multi-hop corpus has many; a folder of
    contracts or mail, next to none)."""
    counts: dict[str, list[str]] = {}
    for d in docs:
        t = " ".join((d.title or "").split())
        if 1 <= len(t.split()) <= 6 and t[:1].isupper() and len(t) > 3:
            counts.setdefault(t.lower(), []).append(d.doc_id)
    return {t: ids for t, ids in counts.items() if len(ids) <= 3 and 0 < corpus.mentions(t) <= 20}


def _two_doc(corpus, doc, sentences: list[str], titles: dict[str, list[str]], df, rng: random.Random) -> Made | None:
    """A question that needs two documents: a sentence of ``doc`` names a bridge — another document B's
    title, or a name that only a few other documents hold — and gives half the words; a sentence of B
    the other half; the bridge is left out (what the search has to find, as in "where was the director
    of <film> born"). Titles first: a multi-hop corpus links by them; a shared rare name links the rest."""
    for sentence in rng.sample(sentences, len(sentences)):
        words = re.findall(r"\w+", sentence.lower())
        grams = {" ".join(words[i:i + n]) for n in range(1, 7) for i in range(len(words) - n + 1)}
        named = [t for t in grams & titles.keys() if doc.doc_id not in titles[t]]
        if named:
            bridge = max(named, key=len)
            others = titles[bridge]  # the document so named, and its copies
        else:
            bridge, others = _shared_name(corpus, doc.doc_id, sentence)
            if not others:
                continue
        theirs = _sentences(corpus, others[0], rng)
        if not theirs:
            return None
        hidden = set(bridge.lower().split())
        mine = [t for t in content_terms(sentence) if t not in hidden]
        yours = [t for t in content_terms(rng.choice(theirs)) if t not in hidden]
        if len(mine) < 2 or len(yours) < 2:
            return None
        # A's rarest words say which document starts the chain; B's commonest few say what is asked of the
        # document the bridge leads to ("born", "founded"): B is reached through the bridge
        a = set(sorted(mine, key=lambda t: (df(t), rng.random()))[: rng.randint(3, 5)])
        b = set(sorted(yours, key=lambda t: (-df(t), rng.random()))[: rng.randint(1, 2)])
        words = [t for t in yours if t in b] + [t for t in mine if t in a]
        question = " ".join(["what"] + list(dict.fromkeys(words)))
        return Made(question if rng.random() < 0.5 else question + "?", (doc.doc_id, *others), sentence, bridge)
    return None


_NAME = re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
SHARED = (2, 6)
"""A bridge name is held by this many chunks of the collection (fewer: nothing to bridge to; more: common)."""


def _shared_name(corpus, doc_id: str, sentence: str) -> tuple[str, list[str]]:
    """A capitalised name of ``sentence`` (not its first word) that a few other documents also hold, and
    those documents (by the lexical index)."""
    for name in sorted(set(_NAME.findall(sentence)), key=len, reverse=True):
        if len(name) < 4 or not SHARED[0] <= corpus.mentions(name) <= SHARED[1]:
            continue
        others = []
        for chunk_id, _ in corpus.bm25(name, 10):
            other = doc_of(chunk_id)
            if other != doc_id and other not in others and any(name in c.text for c in corpus.chunks([chunk_id])):
                others.append(other)
        if others:
            return name, others[:1]
    return "", []


def _document_frequency(corpus):
    """How many chunks hold a word (the lexical index's count), cached per word."""
    seen: dict[str, int] = {}

    def df(word: str) -> int:
        if word not in seen:
            seen[word] = corpus.mentions(word)
        return seen[word]

    return df


def _question(sentence: str, title: str, df, rng: random.Random, max_terms: int) -> tuple[str, str] | None:
    words = re.findall(r"[\w$][\w$.,%'-]*[\w%]|[\w$]", sentence)
    answer = _answer(words)
    terms = [t for t in content_terms(sentence) if t.lower() != answer.lower() and len(t) > 1]
    terms = list(dict.fromkeys(terms))
    if len(terms) < 3:
        return None
    keep = set(sorted(terms, key=lambda t: (df(t), rng.random()))[: rng.randint(3, max_terms)])
    picked = [t for t in terms if t in keep]
    if title and rng.random() < 0.3:  # a question that names the party or the subject
        extra = [t for t in content_terms(title) if t not in keep and t != answer.lower()][:2]
        picked = extra + picked
    question = " ".join([_asking(answer)] + picked)
    if rng.random() < 0.5:
        question = question.lower()
    else:
        question += "?"
    if rng.random() < 0.15:
        question = _typo(question, rng)
    return question, answer


def _answer(words: list[str]) -> str:
    """What the sentence answers: its first number or date, else its first capitalised name past the
    first word, else its last long word."""
    for w in words:
        if _NUMBER.match(w) or w.lower() in _MONTHS:
            return w
    for w in words[1:]:
        if w[:1].isupper() and len(w) > 2:
            return w
    long = [w for w in words if len(w) > 4]
    return long[-1] if long else ""


def _asking(answer: str) -> str:
    if answer.lower() in _MONTHS or re.fullmatch(r"(1[5-9]|20)\d\d", answer):
        return "when"
    if _NUMBER.match(answer):
        return "how much"
    if answer[:1].isupper():
        return "who"
    return "what"


def _typo(question: str, rng: random.Random) -> str:
    """One adjacent pair of letters swapped in one longer word."""
    words = question.split()
    long = [i for i, w in enumerate(words) if len(w) > 5 and w.isalpha()]
    if not long:
        return question
    i = rng.choice(long)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


def _copies(corpus, doc_id: str, sentence: str, cache: dict) -> tuple[str, ...]:
    """The document and every other document the lexical index finds holding the same sentence (a mail
    in several folders, a contract filed twice)."""
    probe = " ".join(content_terms(sentence)[:12])
    same = [doc_id]
    norm = " ".join(sentence.split())
    for chunk_id, _ in corpus.bm25(probe, 10):
        other = doc_of(chunk_id)
        if other in same:
            continue
        if other not in cache:
            cache[other] = [" ".join(c.text.split()) for c in corpus.doc_chunks(other)]
        if any(norm in t for t in cache[other]):
            same.append(other)
    return tuple(same)
