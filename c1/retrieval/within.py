"""Reading inside one document: the question without the words that picked the document out
(:func:`within`), and the document's chunks best first for it (:func:`rank_in_document`).

Inside a long contract or filing, the words that name it (its parties, its company, its title) are on
every page and tell no clause from another; what is asked is the rest. The passages and a read's pages
read the question this way.
"""

from __future__ import annotations

import re

from c1.retrieval.scorers import TermDenseScorer

_CLAUSE = re.compile(r";\s*|(?<=[.?!])\s+(?=[\"“(]?[A-Z])")
"""Where a question's clauses part: a semicolon, or a sentence end before a capital."""
NAMING = 0.5
"""A clause whose content words the document's identity holds at least this share names the document ..."""
MARGIN = 0.2
"""... when another clause of the question, that asks, has a share this much smaller."""


def within(corpus, question: str, doc_id: str) -> str:
    """The question as it reads inside one long document: without what picked the document out.
    "Consider the Maintenance Agreement between Universal Access, Inc. and CityNet; what is the
    governing law?" names the contract in its first clause: inside it, only "what is the governing
    law?" tells one clause from another. So a clause whose content words the document's identity
    (``Corpus.identity``: title, file-name words, first page) mostly holds (``NAMING``) is left out
    while another, that it holds clearly less (``MARGIN``: an NDA's first page also holds the terms of
    a question about it), remains, and a name that the document's own name holds (its title or file-name
    words: "Coca-Cola" in "How many employees did Coca-Cola have", COCACOLA_2017_10K.pdf; its 10-K
    says Coca-Cola on every page) is left out of the rest. Terms of the clause itself stay, though
    its first page holds them ("Confidential Information" in an NDA): they say what is asked. A
    one-chunk document, or a question left with no content word, keeps the question whole."""
    from c1.retrieval.terms import content_terms

    rec = corpus.doc(doc_id) if hasattr(corpus, "doc") else None
    if rec is None or rec.n_chunks <= 1 or not hasattr(corpus, "identity"):
        return question
    from c1.retrieval.identity import asked, identity
    from c1.store.names import file_name_words

    ident = corpus.identity(doc_id)
    clauses = [c for c in _CLAUSE.split(question) if c.strip()]
    if len(clauses) > 1:
        def naming(clause: str) -> float:
            terms = [re.sub(r"['’]s$", "", t) for t in content_terms(clause)]  # "UALR's": the name "ualr"
            return sum(1 for t in terms if t in ident.words or t.replace("-", "") in ident.words) / len(terms) if terms else 1.0

        shares = [naming(c) for c in clauses]
        least = min(shares)
        # the one clause that ends in a question mark asks: it stays though the first page holds its words
        # ("What is the renewal term for this contract? Answer in years." inside a franchise agreement
        # whose first page says "renewal term" was read as "Answer in years."), and beside it a clause
        # that names the document goes whatever the asking clause's share
        asks = [c.rstrip().endswith("?") for c in clauses]
        sole = sum(asks) == 1
        out = " ".join(c for c, s, a in zip(clauses, shares, asks) if s < NAMING or (a if sole else s < least + MARGIN))
    else:
        out = question
    wanted = asked(out)
    own = identity(rec.title or "", file_name_words(rec.path) if rec.key == rec.path else "", "")
    for phrase in wanted.names:
        if own.has_name(phrase, phrase[0] in wanted.acronyms):
            out = _without(out, phrase)
        elif len(phrase) > 1:
            # a run that holds a name of the document's own, the rest of whose words its first page holds,
            # names it as a whole: "the Microgenics–Achaogen agreement" (each its own name holds), "the
            # Technohubs–GWI Project Managers agreement" (the file name holds Technohubs and GWI; its first
            # page names "GWI Project Managers")
            mine = [own.has_name((w,), w in wanted.acronyms) for w in phrase]
            if any(mine) and all(m or ident.has_name((w,), w in wanted.acronyms) for w, m in zip(phrase, mine)):
                for w in phrase:
                    out = _without(out, (w,))
    for phrase in _title_runs(out, own):  # "the governing law of the maintenance agreement": its title
        out = _without(out, phrase)
    out = " ".join(out.split())
    return out if content_terms(out) else question


def _without(text: str, phrase: tuple[str, ...]) -> str:
    """``text`` without the words of ``phrase`` (in any case, with at most 3 non-word characters between
    them, and a possessive)."""
    pattern = r"(?<!\w)" + r"\W{0,3}".join(re.escape(w) for w in phrase) + r"(?:['’]s)?(?!\w)"
    return re.sub(pattern, " ", text, flags=re.IGNORECASE)


def _title_runs(question: str, own) -> list[tuple[str, ...]]:
    """Runs of two or more words of ``question`` (letters only, not starting or ending with a stopword; in
    any case) that the document's own name (``own``: its title and file-name words) holds as
    consecutive words: "maintenance agreement" in "what is the governing law of the maintenance
    agreement?" inside MAINTENANCE AGREEMENT (a lower-cased name that
    :func:`c1.retrieval.identity.asked` does not read as one)."""
    from c1.retrieval.terms import STOPWORDS

    words = [w.lower() for w in re.findall(r"[^\W_]+(?:['’][^\W_]+)*", question)]
    out, i = [], 0
    while i < len(words):
        best = 0
        for j in range(len(words), i + 1, -1):
            run = tuple(words[i:j])
            if run[0] not in STOPWORDS and run[-1] not in STOPWORDS and all(w.isalpha() for w in run) \
                    and own.has_name(run, False):
                best = j - i
                break
        if best:
            out.append(tuple(words[i : i + best]))
            i += best
        else:
            i += 1
    return out


def rank_in_document(corpus, question: str, chunks: list, vector=None, rerank: bool = False,
                     holding: set | None = None) -> list[tuple[object, float]]:
    """A document's ``chunks`` (Chunk objects), best first, each with its similarity to the question
    (``Corpus.rank_chunks``: in [0, 1]). The order is the RRF of that similarity's order and BM25 among
    the document's own chunks — a term rare within the document ("employees" in a 10-K that names its
    company on every page) weighs most — so that the chunk holding the figure asked about comes up
    even when its embedding is no closer to the question than a hundred others. ``rerank``: that
    similarity's first chunks re-ordered by the cross-encoder where the corpus re-ranks a document's
    chunks (``Corpus.rank_chunks``). ``holding``: a set given is filled with the ids of the chunks
    that hold a term of the question (as the document reads it: :func:`within`)."""
    from c1.retrieval.fusion import rrf

    if not chunks:
        return []
    dense = corpus.rank_chunks(chunks, question, vector, rerank=True) if rerank else corpus.rank_chunks(chunks, question, vector)
    if len(chunks) == 1:
        return dense
    similarity = {c.id: s for c, s in dense}
    terms = TermDenseScorer().terms(within(corpus, question, chunks[0].doc_id), [c.text for c in chunks])
    lexical = [chunks[i].id for i in sorted(range(len(chunks)), key=lambda i: -terms[i]) if terms[i] > 0]
    if holding is not None:
        holding.update(lexical)
    by_id = {c.id: c for c in chunks}
    return [(by_id[cid], similarity[cid]) for cid, _ in rrf([[c.id for c, _ in dense], lexical])]
