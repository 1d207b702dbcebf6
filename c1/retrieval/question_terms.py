"""What a question gives to score documents against (:func:`question_terms`): its terms weighted by their
rarity in the collection, its rare terms, the phrases it quotes or is, its names, and whether it is a
keyword query (a few words, not a question: "heron", a subject line)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from c1.retrieval import text as tx
from c1.retrieval.terms import content_terms

RARE_MIN = 3
RARE_SHARE = 0.005
"""A question term is rare when at most max(RARE_MIN, RARE_SHARE × chunks) chunks hold it."""
KEYWORDS = 6
"""A query of at most this many words, no question word and no question mark is a keyword query: a
document holding all its terms is what it asks for ("heron", "on-call engineer", a subject line); of
more than one word, it is also a phrase to find as written (a separate bound of four words for that was
deleted: it changed no suite figure, and mail's confidences came out better calibrated)."""
_QUESTION_WORD = re.compile(r"^\s*(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|did|does|do|can|could|"
                            r"should|would|will|has|have|had|name|list|find|show|tell|give|explain|describe)\b", re.I)



@dataclass
class QuestionTerms:
    """What a question gives to score against."""

    text: str
    norm: str
    """Normalised, padded with spaces."""
    terms: list[str]
    entities: set[str]
    """Normalised names the question mentions (leading article dropped)."""
    weights: dict[str, float]
    """Every term → its inverse document frequency in the corpus (1.0 each without a corpus)."""
    rare: dict[str, float]
    """Rare terms → inverse document frequency."""
    phrases: list[str]
    """Normalised phrases to find as written (quoted, or a short keyword query)."""
    quoted: list[str]
    """Normalised phrases the question quotes."""
    keywords: list[str]
    """The terms of a keyword query (a few words, not a question): every one of them is wanted."""
    exact: list = None
    """Patterns of the quoted phrases written with a capital: held as written (case and all), not only
    lower-cased ("Counterparts", the album, is not the word "counterparts" of a mail)."""
    unseen: int = 0
    """How many of its content words no chunk of the corpus holds: a document holding "all its rare
    terms" then holds only part of what it asks ("quantum sourdough starters on Mars": only "quantum")."""


def question_terms(question: str, typed: str, searcher=None) -> QuestionTerms:
    """What ``question`` gives to score against; ``typed``: as the user wrote it (its capitals), where
    ``question`` has its names truecased; ``searcher``: the collection's counts (None: text alone)."""
    terms = content_terms(question)
    rare, weights, unseen = {}, {t: 1.0 for t in terms}, 0
    size = getattr(searcher, "size", 0)
    if size and hasattr(searcher, "mentions"):
        limit = max(RARE_MIN, RARE_SHARE * size)
        for t in terms:
            base = t[:-2] if t.endswith("'s") else t  # "ingram's": the corpus counts "ingram"
            df = searcher.mentions(base)
            if df == 0 and hasattr(searcher, "name_mentions"):
                # only documents' names hold it ("ingram" of ingram-non-disclosure.txt, whose text
                # never says it): as rare as the chunks of the documents so named
                df = searcher.name_mentions(base)
            weights[t] = math.log(1 + size / (df + 1))
            if 0 < df <= limit and len(t) >= 3 and not t.isdigit():
                rare[t] = math.log(1 + size / df)
            unseen += df == 0 and len(t) >= 3 and not t.isdigit()
    phrases = [tx.norm(q) for q in tx.quoted(question)]
    words = tx.norm(question).split()
    keywords = len(words) <= KEYWORDS and not _QUESTION_WORD.match(question) and not question.rstrip().endswith("?")
    if not phrases and keywords and len(words) > 1:
        phrases = [tx.norm(question)]
    exact = [re.compile(r"(?<!\w)" + r"\W+".join(re.escape(w) for w in q.split()) + r"(?!\w)")
             for q in tx.quoted(typed) if any(ch.isupper() for ch in q) and q.split()]
    return QuestionTerms(question, f" {tx.norm(question)} ", terms,
                 {tx.strip_article(tx.norm(e)) for e in tx.question_entities(question)}, weights, rare,
                 [p for p in phrases if p], [n for q in tx.quoted(question) if (n := tx.norm(q))],
                 terms if keywords else [], exact, unseen)
