"""Passages: the few spans of each returned document that bear on the question, best first, within
a token budget — and the one sentence that justifies the document.

A run sees whole chunks (~2,000 characters each, dozens per question); the answer to a question is
a clause, a row, a sentence. For the returned documents (in rank order):

1. each document's chunks are ranked against the question (:func:`rank_in_document`: the stored
   vectors' similarity fused by RRF with BM25 among the document's own chunks) and opened: all of
   the first document's (``CHUNKS``), the best two of each other's;
2. their readable sentences (:mod:`c1.retrieval.sentences`: no headers, greetings, signatures or
   separators) are ranked by BM25 among the document's own sentences, so that the words its every
   page repeats (the company, the parties) count for nothing; the best of them (``SHORTLIST``) and
   those of its best chunks (``LEAD_CHUNKS``) are scored by one :data:`Scorer`
   (``(question, [texts]) -> scores`` in [0, 1]): the cross-encoder where the corpus re-ranks a
   document's chunks, else terms and the embedder's cosine (:class:`TermDenseScorer`). With them, the
   sentences of the sections whose numbered titles ("10. LIMITATION ON LIABILITY.", in the first
   document's best ``SECTION_CHUNKS``; a clause title under its section's: :func:`_under`) score best
   by themselves: a clause that shares no word with the question reaches the scorer through its
   title, and a section is read from its title on (:func:`_openings`). Each sentence is read under
   the last heading or title before it; a title is not evidence itself, but a passage from its
   section's first sentence starts at it;
3. the best two sentences the scorer is sure of (``SURE``) are taken first; then the best row of each
   of the first document's best ``TABLE_PAGES`` table pages (:mod:`c1.retrieval.pages`: a statement's
   rows, read under its title, join the scored sentences), the best sentence of each of its best
   ``ANCHORS`` chunks (the likeliest pages each give one), and the best sentence of each of the next
   documents among the first ``GIVEN`` (a two-hop answer's second document); then sentences best first,
   each weighted by its document's confidence relative to the first document's: each grows into a
   passage with its neighbours that score nearly as well (up to ``WINDOW_CHARS``), none overlapping
   another of its document, at most ``PER_DOC`` a document (the first document's best five; another's
   only near the best: ``KEEP``; none ending on a lead-in: :func:`_past_lead_in`), until the budget
   (``--evidence-tokens``) is spent. The first document is scored first: a document after the
   ``GIVEN`` first whose relative confidence is under ``KEEP`` of the best weighted score yet could keep
   nothing (a score is at most 1), and is not scored at all (the cross-encoder's pairs are most of the
   passages' time).

The justification of a document is the best readable sentence of its best passage, shown without
markup; a table row with its column names. Within a run (before passages exist) the built-in policy
picks its justification from the chunks it holds with :func:`justify`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from c1.retrieval import sentences as sx
from c1.retrieval.pages import TABLE_PAGES, best_table_pages, is_header_row, page_of, table_pages
from c1.retrieval.scorers import HEADING_CHARS, PAIR_CHARS, Scorer, TermDenseScorer, make_scorer

DEFAULT_EVIDENCE_TOKENS = 2000
"""What a downstream model is handed by default: a few passages fit its context beside its own work."""
WINDOW_CHARS = 700
"""A passage joins consecutive sentences up to this many characters (one longer sentence stands alone)."""
CHUNKS = (400, 2)
"""Chunks opened for the first document (all of a 200-page filing), and for each of the others."""
LEAD_CHUNKS = (2, 0)
"""Of those, the best chunks (by ``rank_in_document``) whose every sentence is scored."""
NEAR_CHUNKS = (1, 0)
"""The chunks nearest the question by their stored vectors alone (no new embedding) whose every
sentence is scored too: a clause that shares no word with the question ("cap on liability" for a
question on limits of damages) reaches the scorer."""
PER_DOC = (5, 1)
"""Passages kept for the first document, and for each of the others."""
KEEP = 0.5
"""A passage of a document after the first scoring (times its document's relative confidence) under
this share of the question's best is not kept (but for the best passage of the ``GIVEN`` first)."""
GIVEN = 3
"""The first documents that each keep their best passage whatever their confidence relative to the
first's: the second hop of a two-hop question (the club's paragraph that names the region asked
about: "FC Cartagena ... in the autonomous community of Murcia") is returned at a fifth to a third of
the first's confidence and its best sentence scores below the first's, so under ``KEEP`` alone it
kept nothing, and the answer it holds was not handed over."""
SHORTLIST = (24, 3)
"""Sentences scored by the scorer: a document's best by their terms (BM25 among its own sentences),
with the sentences of its lead chunks (the rest rank below them, by their terms). 24 found the gold
span among the first document's best 5 as often as 80 did (legal, 60 questions: 0.683 both), at a
third of the cross-encoder's pairs."""
PER_PAGE = 2
"""Passages of one document kept from one page at most: a filing's best five then span several of its
pages (the page that holds the figure is not always the one whose rows read best)."""

SECTION_CHUNKS = (12, 0)
"""The first document's best chunks (by ``rank_in_document``) whose headings are scored by themselves:
a short pair each, so that the clause the question means but does not word ("a cap on liability":
"10. LIMITATION ON LIABILITY.", "the No-Shop Clause": "Section 7.03 No Solicitation") reaches the
scorer through the title its drafter gave it."""
SECTION_HEADINGS = 48
"""At most this many distinct headings of those chunks are scored (in the chunks' order)."""
SECTIONS = 2
"""The best-scoring headings whose sections' sentences join the scored ones ..."""
SECTION_UNITS = 6
"""... at most this many of each section: those holding the question's terms first, then in order."""
TITLE_WORDS = 12
"""A numbered unit of at most this many words, mostly capitalised ("13. Termination.", "Section 5.10
Absence of Certain Changes."), is a section's title: the heading of the sentences after it."""

SURE = (0.5, 2)
"""Passages scoring at least this (the cross-encoder's probability of relevance), the best two, are
taken before the anchors and table rows below: a prose answer the scorer is sure of is not
displaced by a filing's statements. FinanceBench 18: gold page among the passages 1.000 either way;
taking every passage above half the best first instead: 0.889."""
ANCHORS = 3
"""The first document's best chunks (by ``rank_in_document``: the whole chunk against the question,
its page and heading in its indexed header) that each give their best sentence before the rest are
taken by score: the page that holds a filing's figure is often its second or third chunk's while
the scorer prefers a prose sentence elsewhere (FinanceBench 18: gold page among the passages 0.500
-> 0.611; 4 anchors: 0.500, 5: 0.444; legal 60: span hit 0.733 -> 0.750)."""
NOTHING = 0.001
"""A sentence scoring under this share of the best sentence's score (or nothing at all) answers
nothing: it is no passage, wherever it ranks. A share, not a bound: on a long question the
cross-encoder is unsure of everything (a merger agreement's No-Shop clause at 0.0014, the best at
0.02). Larger shares lost gold clauses the cross-encoder scores near 0 (docs/search.md)."""

@dataclass
class Passage:
    doc_id: str
    chunk_id: str
    start: int
    end: int
    """Character span in the document's text."""
    page: int | None
    text: str
    score: float
    sentence: tuple[int, int] | None = None
    """The span of its best sentence (the justification when this is the document's best passage)."""
    why: str = ""
    """That sentence as a person reads it (no markup; a table row with its column names)."""

    def to_json(self) -> dict:
        return {"text": self.text, "span": [self.start, self.end], "page": self.page, "score": round(self.score, 4),
                "chunk": self.chunk_id}


# --- candidates --------------------------------------------------------------------------------------
@dataclass
class _Sentence:
    doc_rank: int
    doc_id: str
    chunk_id: str
    index: int
    """Its place among the chunk's units."""
    start: int
    end: int
    """In document offsets."""
    text: str
    score: float = 0.0
    heading: str = ""
    """The last heading before it in its chunk ("12.1 GOVERNING LAW.", "CONSOLIDATED STATEMENTS OF CASH
    FLOWS"): the scorer reads it with the sentence, which often does not name its own subject."""
    title: int | None = None
    """Where the title it directly follows starts (document offsets): a passage from it starts there."""
    columns: str = ""
    """A table row's header row (:func:`c1.retrieval.pages.is_header_row`: "(Millions) 2022 2021 2020"):
    what its figures are, read with it."""

    def scored_text(self) -> str:
        """What the scorer reads: the heading (up to ``HEADING_CHARS``), a row's columns and the sentence,
        together at most ``PAIR_CHARS`` (~128 word pieces: a cross-encoder's time grows with the pair's
        length)."""
        text = "\n".join(t for t in (self.heading[:HEADING_CHARS], self.columns[:HEADING_CHARS], self.text) if t)
        return text[:PAIR_CHARS]


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


_NUMBERED_TITLE = re.compile(r"^\s*(?:(?:section|article|item|part|§)\s+)?(?:[0-9]{1,3}(?:\.[0-9]{1,3})*|[IVXLC]{1,6}"
                             r"|\(?[a-zA-Z0-9]{1,3}\))[.):]?\s+\S", re.IGNORECASE)
_SMALL = frozenset("a an and as at by for from in of on or the to with without under upon".split())


def is_title(text: str) -> bool:
    """A numbered section title: "13. Termination.", "10. LIMITATION ON LIABILITY.", "Section 7.03 No
    Solicitation; Other Offers." — at most ``TITLE_WORDS`` words after its number, the words that are
    not small ones capitalised, no sentence inside it (no period before its end)."""
    m = _NUMBERED_TITLE.match(text)
    if not m:
        return False
    return _titled(text[m.end() - 1:])


def _titled(rest: str) -> bool:
    """Words that read as a title: at most ``TITLE_WORDS``, those that are not small ones capitalised,
    no sentence inside."""
    rest = rest.strip().rstrip(".:;")
    words = re.findall(r"[A-Za-z][\w'’-]*", rest)
    if not words or len(rest.split()) > TITLE_WORDS or re.search(r"[.!?]\s", rest):
        return False
    big = [w for w in words if w.lower() not in _SMALL]
    return bool(big) and sum(1 for w in big if w[0].isupper()) >= 0.8 * len(big)


def rank_in_document(corpus, question: str, chunks: list, vector=None, rerank: bool = False,
                     holding: set | None = None, nearest: list | None = None) -> list[tuple[object, float]]:
    """A document's ``chunks`` (Chunk objects), best first, each with its similarity to the question
    (``Corpus.rank_chunks``: in [0, 1]). The order is the RRF of that similarity's order and BM25 among
    the document's own chunks — a term rare within the document ("employees" in a 10-K that names its
    company on every page) weighs most — so that the chunk holding the figure asked about comes up
    even when its embedding is no closer to the question than a hundred others. ``rerank``: that
    similarity's first chunks re-ordered by the cross-encoder where the corpus re-ranks a document's
    chunks (``Corpus.rank_chunks``). ``holding``: a set given is filled with the ids of the chunks
    that hold a term of the question (as the document reads it: :func:`within`); ``nearest``: a list
    given gets the chunks' ids in the order of their similarity alone (the stored vectors: a chunk
    that shares no word with the question can still be near it)."""
    from c1.retrieval.fusion import rrf

    if not chunks:
        return []
    dense = corpus.rank_chunks(chunks, question, vector, rerank=True) if rerank else corpus.rank_chunks(chunks, question, vector)
    if len(chunks) == 1:
        return dense
    similarity = {c.id: s for c, s in dense}
    if nearest is not None:
        nearest.extend(c.id for c, _ in dense)
    terms = TermDenseScorer().terms(within(corpus, question, chunks[0].doc_id), [c.text for c in chunks])
    lexical = [chunks[i].id for i in sorted(range(len(chunks)), key=lambda i: -terms[i]) if terms[i] > 0]
    if holding is not None:
        holding.update(lexical)
    by_id = {c.id: c for c in chunks}
    return [(by_id[cid], similarity[cid]) for cid, _ in rrf([[c.id for c, _ in dense], lexical])]


def _page_rows(scorer: Scorer, question: str, doc, chunks: list, n: int) -> dict[int, tuple[str, int]]:
    """Where the rows start that the ``n`` best table pages of a document give to the scored
    sentences (:func:`best_table_pages`), each with its page's title (the heading it is read under)
    and its page's place among them (0: the best page)."""
    if n <= 0:
        return {}
    best = best_table_pages(scorer, question, table_pages(doc, chunks), n)
    return {span[0]: (page.title, place) for place, (page, _, spans) in enumerate(best) for span in spans}


def choose(corpus, question: str, doc_ids: list[str], budget: int = DEFAULT_EVIDENCE_TOKENS,
           scorer: Scorer | None = None, count: Callable[[str], int] | None = None,
           chunks: tuple[int, int] = CHUNKS, per_doc: tuple[int, int] = PER_DOC, keep: float = KEEP,
           window: int = WINDOW_CHARS, shortlist: tuple[int, int] = SHORTLIST,
           weights: dict[str, float] | None = None, per_page: int = PER_PAGE,
           lead_chunks: tuple[int, int] = LEAD_CHUNKS,
           seen: dict[str, list[str]] | None = None,
           near_chunks: tuple[int, int] = NEAR_CHUNKS,
           section_chunks: tuple[int, int] = SECTION_CHUNKS, anchors: int = ANCHORS,
           tables: int = TABLE_PAGES, sure: tuple[float, int] = SURE, given: int = GIVEN) -> dict[str, list[Passage]]:
    """Each document's passages, best first, all of them together within ``budget`` tokens (0: none).

    A document's readable sentences (those of its opened chunks) are ranked by their terms among
    themselves; its ``shortlist`` best, and those of its lead chunks, are scored by ``scorer``; the best
    sentences of all the documents, in order, each
    become a passage, grown by the neighbouring sentences that score at least ``keep`` of it (the
    better neighbour first) up to ``window`` characters.

    ``seen``: a document's chunks the search already found for the question (their ids), best first:
    a document after the first opens its best chunks among those alone (ranking the 400 chunks of a
    filing to open two took longer than its passages), the first document all of its own."""
    out: dict[str, list[Passage]] = {d: [] for d in doc_ids}
    if budget <= 0 or not doc_ids:
        return out
    scorer = scorer or make_scorer(corpus)
    count = count or _count
    vector = corpus.embed_query(question)
    cands: list[_Sentence] = []
    short: list = []
    records, chunk_of, units_of = {}, {}, {}
    titled: dict[int, float] = {}  # a best section's first sentence → its title's score
    anchored: list[str] = []  # the first document's best chunks, each of which gives its best sentence first
    page_of_row: dict[int, int] = {}  # such a row → its page's place among them: each page's best row is taken first
    for rank, doc_id in enumerate(doc_ids):
        records[doc_id] = corpus.doc(doc_id)
        spans: set[tuple[int, int]] = set()
        mine: list[_Sentence] = []
        lead: list[_Sentence] = []
        sections: dict[str, list[_Sentence]] = {}  # a heading of a section chunk → its sentences there
        apart: list[_Sentence] = []  # sentences of section chunks that no term of the question shortlists
        pool = corpus.chunks(seen[doc_id]) if rank and seen and seen.get(doc_id) else corpus.doc_chunks(doc_id)
        holding: set[str] = set()
        nearest: list[str] = []
        opened = [c for c, _ in rank_in_document(corpus, question, pool, vector, holding=holding, nearest=nearest)][: chunks[0] if rank == 0 else chunks[1]]
        near = set(nearest[: near_chunks[0] if rank == 0 else near_chunks[1]])
        by_n = {c.n: c for c in pool} if rank == 0 and section_chunks[0] else {}
        openings = _openings(by_n, opened[: section_chunks[0]]) if by_n else {}
        if rank == 0:
            anchored += [c.id for c in opened[:anchors]]
        page_rows = _page_rows(scorer, within(corpus, question, doc_id), records[doc_id], pool, tables) if rank == 0 else {}
        row_chunks = {c.id for c in opened if any(c.start <= a < c.end for a in page_rows)}
        in_pages: list[_Sentence] = []  # the best rows of its best table pages, read under their page's title
        for place, chunk in enumerate(opened):
            is_lead = place < lead_chunks[0 if rank == 0 else 1] or chunk.id in near
            is_section = place < section_chunks[0 if rank == 0 else 1] or chunk.id in openings
            listed = is_lead or chunk.id in holding or len(pool) <= 1 or chunk.id in row_chunks
            if not listed and not is_section:
                continue  # none of its sentences holds a term of the question: none is shortlisted
            chunk_of[chunk.id] = chunk
            units = units_of[chunk.id] = []
            section, _, parent = _carried_from(by_n, chunk) if is_section else ("", None, "")
            heading, title = section, None
            previous = columns = ""
            for u in sx.split(chunk.text):
                text = u.text(chunk.text)
                after, previous = previous, u.kind
                if u.kind == "row" and is_header_row(text, after != "row"):
                    title = chunk.start + u.start if title is None else title
                    columns = sx.readable(text)
                    continue  # it names the columns of the rows below it: it answers nothing by itself
                if u.kind in sx.READABLE and u.kind != "row":
                    columns = ""
                if u.kind == "heading" or u.kind in sx.READABLE and is_title(text):
                    heading = sx.readable(text)  # a title heads what follows; it is not evidence itself
                    title = chunk.start + u.start
                    if _section_title(u, text):
                        parent = heading if not _clause_title(heading) else parent
                        heading = section = _under(parent, heading)
                    else:
                        section = ""
                    continue
                if u.kind not in sx.READABLE:
                    title = None
                    continue
                span = (chunk.start + u.start, chunk.start + u.end)
                sent = _Sentence(rank, doc_id, chunk.id, len(units), *span, text, heading=heading, title=title,
                                 columns=columns if u.kind == "row" else "")
                title = None
                units.append(sent)
                if span not in spans and sx.words(sent.text) >= 3:
                    spans.add(span)
                    row = next((r for a, r in page_rows.items() if span[0] <= a < span[1]), None)
                    if row is not None:  # a best row of a best table page
                        sent.heading = row[0]
                        in_pages.append(sent)
                        page_of_row[id(sent)] = row[1]
                    (mine if listed else apart).append(sent)
                    if is_lead:
                        lead.append(sent)
                    if is_section and section and openings.get(chunk.id, section) == section:
                        sections.setdefault(section, []).append(sent)
        if not mine and not sections:
            continue
        # BM25 among the document's own sentences: a term its every page repeats (the company, the
        # parties) weighs nothing, the one term that singles out the clause weighs most
        asked_here = within(corpus, question, doc_id)
        lexical = TermDenseScorer().terms(asked_here, [c.text for c in mine])
        for c, v in zip(mine, lexical):
            c.score = v
        by_terms = sorted(mine, key=lambda c: -c.score)[: shortlist[0] if rank == 0 else shortlist[1]]
        in_sections = _sections(scorer, asked_here, sections, titled)
        picked = list({id(c): c for c in by_terms + lead + in_sections + in_pages}.values())
        mine += [c for c in apart if any(c is p for p in picked)]
        short.append((asked_here, picked))
        cands += mine
    if not cands:
        return out
    lexical_of = {id(c): c.score for c in cands}
    # a passage counts as much as its document is likely to be wanted: its score times the document's
    # confidence relative to the first document's (all alike without confidences)
    top_w = (weights or {}).get(doc_ids[0]) or 0.0
    factor = {d: (min(1.0, (weights or {}).get(d, 0.0) / top_w) if top_w > 0 else 1.0) for d in doc_ids}
    groups: dict[tuple[bool, str], list[_Sentence]] = {}
    for asked_here, picked in short:  # the first document's call, then one per wording of the question
        for c in picked:
            groups.setdefault((c.doc_rank > 0, asked_here), []).append(c)
    best_yet, dropped = 0.0, set()
    for (_, asked_here), picked in sorted(groups.items(), key=lambda g: g[0][0]):
        # a document whose relative confidence is under ``keep`` of the best weighted score yet can keep
        # no passage (a score is at most 1): its sentences are not scored (the cross-encoder's pairs
        # are most of the passages' time)
        gone = {c.doc_id for c in picked if c.doc_rank >= given and factor[c.doc_id] < keep * best_yet}
        if gone:
            dropped |= gone
            picked = [c for c in picked if c.doc_id not in gone]
        for c, v in zip(picked, scorer(asked_here, [c.scored_text() for c in picked])):
            c.score = max(float(v), titled.get(id(c), 0.0))
            best_yet = max(best_yet, c.score * factor[c.doc_id])
    if dropped:
        cands = [c for c in cands if c.doc_id not in dropped]
    short = [c for _, picked in short for c in picked if c.doc_id not in dropped]
    floor = min((c.score for c in short), default=0.0)
    listed = {id(c) for c in short}
    for c in cands:  # below the shortlist: under its worst, in their lexical order
        if id(c) not in listed:
            c.score = floor * lexical_of[id(c)] * 0.5
    by_span = {(c.doc_id, c.start, c.end): c.score for c in cands}
    for units in units_of.values():  # a sentence repeated in an overlapping chunk has its one score
        for u in units:
            u.score = by_span.get((u.doc_id, u.start, u.end), 0.0)
    cands.sort(key=lambda c: (-c.score * factor[c.doc_id], c.doc_rank, c.start))
    best = cands[0].score * factor[cands[0].doc_id]
    top = max(c.score for c in cands)
    taken: dict[str, list[Passage]] = {d: [] for d in doc_ids}
    spent = 0
    first_of: dict[str, _Sentence] = {}  # an anchor chunk → its best sentence (cands are best first)
    for c in cands:
        if c.chunk_id in anchored:
            first_of.setdefault(c.chunk_id, c)
    ahead = [first_of[cid] for cid in anchored if cid in first_of]
    page_best: dict[int, _Sentence] = {}  # each best table page's best row (cands are best first)
    for c in cands:
        if id(c) in page_of_row:
            page_best.setdefault(page_of_row[id(c)], c)
    firsts = [page_best[k] for k in sorted(page_best)]
    ahead = firsts + [c for c in ahead if all(c is not f for f in firsts)]
    # the best passages the scorer is sure of (``SURE``) come first, then the anchors, then the rest by
    # score: "How many employees did Coca-Cola have?" kept a statement's row at 0.004 and anchors at
    # 0.01 in place of "our Company had approximately 61,800 employees" at 1.00
    strong = [c for c in cands if c.score * factor[c.doc_id] >= max(sure[0], keep * best)][: sure[1]]
    taken_first = {id(c) for c in strong}
    ahead = [c for c in ahead if id(c) not in taken_first]
    taken_first |= {id(c) for c in ahead}
    owed = _best_of_each(cands, given, taken_first)  # then the best of each of the next GIVEN documents
    taken_first |= {id(c) for c in owed}
    for c in strong + ahead + owed + [c for c in cands if id(c) not in taken_first]:
        if spent >= budget:
            break
        if c.doc_rank and c.score * factor[c.doc_id] < keep * best and all(c is not o for o in owed):
            continue  # the first document (the likeliest) gives its best whatever they score (above NOTHING)
        if c.score <= 0 or c.score < NOTHING * top:
            continue
        mine = taken[c.doc_id]
        if len(mine) >= (per_doc[0] if c.doc_rank == 0 else per_doc[1]):
            continue
        if any(c.start < p.end and p.start < c.end for p in mine):
            continue
        page = page_of(records[c.doc_id], chunk_of[c.chunk_id], c.start)
        if page is not None and sum(1 for p in mine if p.page == page) >= per_page:
            continue
        first, last = _grow(units_of[c.chunk_id], c.index, keep * c.score, window)
        last = _past_lead_in(units_of[c.chunk_id], first, last, window)
        lo, hi = first.start, last.end
        if first.title is not None and hi - first.title <= window:
            lo = first.title  # a section's first sentence with its title
        if any(lo < p.end and p.start < hi for p in mine):
            lo, hi = c.start, c.end
        chunk = chunk_of[c.chunk_id]
        text = chunk.text[lo - chunk.start : hi - chunk.start]
        cost = count(text)
        if spent + cost > budget:
            continue
        spent += cost
        mine.append(Passage(c.doc_id, c.chunk_id, lo, hi, page, text, c.score,
                            (c.start, c.end), _shown(chunk, c)))
    for doc_id, picks in taken.items():
        out[doc_id] = sorted(picks, key=lambda p: (-p.score, p.start))
    return out


def _best_of_each(cands: list[_Sentence], given: int, taken: set[int]) -> list[_Sentence]:
    """The best sentence (``cands`` are best first) of each document after the first among the first
    ``given``, in their order, unless one of its sentences is already ``taken`` ahead."""
    best: dict[int, _Sentence] = {}
    for c in cands:
        if 0 < c.doc_rank < given:
            best.setdefault(c.doc_rank, c)
    ahead = {c.doc_rank for c in cands if id(c) in taken}
    return [best[r] for r in sorted(best) if r not in ahead]


PARENT_CHUNKS = 12
"""How far back (in chunks) a clause title's section title is looked for: a section's clauses can
run over many chunks ("Section 6.06 No Solicitation of Transactions." over six)."""


def _carried_from(by_n: dict, chunk, back: int = 3) -> tuple[str, object, str]:
    """The section a chunk starts in: the last section title (:func:`_section_title`) of the chunks
    before it (up to ``back`` of them; ``by_n``: the document's chunks by their number; "" when none),
    a clause title read under its section's (looked for up to ``PARENT_CHUNKS`` chunks further back:
    :func:`_under`); the chunk that holds it (None when none); and the title a clause title after it
    in the chunk is read under."""
    last, holder = "", None
    for n in range(chunk.n - 1, chunk.n - 1 - back - PARENT_CHUNKS, -1):
        if not last and n <= chunk.n - 1 - back:
            break
        prev = by_n.get(n)
        if prev is None:
            break
        for u in reversed(sx.split(prev.text)):
            text = u.text(prev.text)
            if (u.kind == "heading" or u.kind in sx.READABLE) and _section_title(u, text):
                name = sx.readable(text)
                if not last:
                    last, holder = name, prev
                    if not _clause_title(name):
                        return name, holder, name
                elif not _clause_title(name):
                    return _under(name, last), holder, name
    return last, holder, ""


def _clause_title(name: str) -> bool:
    """A title of a lettered clause inside a section ("(b) Exceptions.")."""
    return name.startswith("(")


def _under(parent: str, name: str) -> str:
    """A clause title as it reads: under its section's title ("Section 7.03 No Solicitation; Other
    Offers. (b) Exceptions."): "(b) Exceptions." by itself does not say of what."""
    return f"{parent} {name}" if parent and _clause_title(name) else name


def _openings(by_n: dict, chunks: list) -> dict[str, str]:
    """Where the sections begin that ``chunks`` (the section chunks) start inside of: the ids of the
    chunks from the one holding such a section's title up to the section chunk → that title (a chunk
    that opens with its own title starts inside no earlier section). A best section is read from its
    title on: its first sentences say what it is ("Section 6.06 No Solicitation of Transactions. (a)
    The Company agrees that ... shall not ... solicit"), while the chunks the question ranks best are
    often its later provisos."""
    out: dict[str, str] = {}
    ids = {c.id for c in chunks}
    for chunk in chunks:
        units = [u for u in sx.split(chunk.text) if u.kind == "heading" or u.kind in sx.READABLE]
        if not units or _section_title(units[0], units[0].text(chunk.text)):
            continue
        title, holder, _ = _carried_from(by_n, chunk)
        if holder is None:
            continue
        for n in range(holder.n, chunk.n):
            if by_n[n].id not in ids:
                out.setdefault(by_n[n].id, title)
    return out


def _section_title(unit: sx.Unit, text: str) -> bool:
    """A section's own title: numbered (:func:`is_title`) or a Markdown heading — not the short lines
    a PDF's text stands alone (a running header, a table's caption, "December"), which map nothing."""
    return is_title(text) or unit.kind == "heading" and text.lstrip().startswith("#")


def _sections(scorer: Scorer, question: str, sections: dict[str, list[_Sentence]],
              titled: dict[int, float]) -> list[_Sentence]:
    """The sentences of the sections whose headings alone score best for ``question`` (one scorer call
    on at most ``SECTION_HEADINGS`` short texts): ``SECTIONS`` of them, each its ``SECTION_UNITS``
    sentences holding most of the question's terms (their lexical scores), then the first ones. A
    section's first sentence after its title scores at least what the title did (``titled``): "Where
    is the No-Shop Clause?" is answered by the title "Section 6.06 No Solicitation of Transactions."
    and what follows it, whatever the scorer makes of the sentence alone."""
    names = list(sections)[:SECTION_HEADINGS]
    if not names:
        return []
    got = scorer(question, [n[:HEADING_CHARS] for n in names])
    out: list[_Sentence] = []
    for i in sorted(range(len(names)), key=lambda i: -got[i])[:SECTIONS]:
        under = sections[names[i]]
        out += sorted(under, key=lambda c: (-c.score, c.start))[:SECTION_UNITS]
        # its first sentence: the one after its title, else (the title lies further back) the earliest read
        first = next((c for c in under if c.title is not None), None) or min(under, key=lambda c: c.start)
        titled[id(first)] = float(got[i])
        out.append(first)
    return out


def _shown(chunk, sent: _Sentence) -> str:
    """A sentence of a chunk as a person reads it: a table row with its column names, else without markup."""
    units = list(sx.split(chunk.text))
    for i, u in enumerate(units):
        if chunk.start + u.start == sent.start and u.kind == "row":
            return sx.row_with_header(chunk.text, units, i)
    return sx.readable(sent.text)


def _grow(units: list[_Sentence], i: int, floor: float, window: int) -> tuple[_Sentence, _Sentence]:
    """The run of consecutive sentences around ``units[i]``: neighbours scoring at least ``floor``
    joined, the better first, while the run spans at most ``window`` characters."""
    lo = hi = i
    while True:
        options = []
        if lo > 0 and units[lo - 1].score >= floor and units[hi].end - units[lo - 1].start <= window:
            options.append((units[lo - 1].score, lo - 1, hi))
        if hi + 1 < len(units) and units[hi + 1].score >= floor and units[hi + 1].end - units[lo].start <= window:
            options.append((units[hi + 1].score, lo, hi + 1))
        if not options:
            return units[lo], units[hi]
        _, lo, hi = max(options)


def _past_lead_in(units: list[_Sentence], first: _Sentence, last: _Sentence, window: int) -> _Sentence:
    """A passage does not end on a lead-in: a line that reads as a title ("Governing Law; Submission To
    Jurisdiction; Venue.", unnumbered, so not taken for one) or a sentence ending in a colon ("Subject to
    the provisions of this Agreement, as of the Effective Date:"). What it introduces is the clause:
    the sentence after it joins, while the passage spans at most ``window`` characters."""
    i = last.index
    while (_titled(units[i].text) or units[i].text.rstrip().endswith(":")) and i + 1 < len(units) \
            and units[i + 1].end - first.start <= window:
        i += 1
    return units[i]


def _count(text: str) -> int:
    from c1.tokens import TokenizerError, count_tokens

    try:
        return count_tokens(text)
    except TokenizerError:
        return max(1, len(text) // 4)


# --- justification ------------------------------------------------------------------------------------
def justify(ranker, doc, qsim: dict[str, float], ranking=None) -> str:
    """The built-in policy's justification of a document from the chunks it holds (``doc``: an
    ``evidence.DocView``): the readable sentence holding most of the question's terms, each weighted by
    its rarity in the corpus (and, for a document a bridge brought in, the bridge's name), best chunk
    first on ties; never a header, greeting, signature or separator, and a sentence that many chunks
    hold word for word (a mailing list's footer, a disclaimer) is boilerplate, passed over."""
    from c1.retrieval.terms import content_terms
    from c1.store.lexical import stems

    weights = dict(ranker.asked.weights)
    if ranking is not None and ranking.features.get(doc.doc_id, {}).get("bridge"):
        for p in ranking.pivots:
            for e in ranking.bridges.get(p, [])[:3]:
                for w in content_terms(e):
                    weights.setdefault(w, 1.0)
    wanted = {(stems(t) or [t])[0]: w for t, w in weights.items()}
    cands = []
    for cid, text in doc.chunks:
        units = sx.split(text)
        for i, u in enumerate(units):
            if u.kind not in sx.READABLE:
                continue
            unit = u.text(text)
            have = set(stems(unit))
            hit = sum(w for t, w in wanted.items() if t in have)
            n_words = sx.words(unit)
            fit = hit + 0.1 * qsim.get(cid, 0.0) + min(n_words, 30) / 300 - (0.5 if n_words < 4 else 0.0)
            shown = sx.row_with_header(text, units, i) if u.kind == "row" else sx.readable(unit)
            cands.append((fit, shown, unit))
    cands.sort(key=lambda c: -c[0])
    for _, shown, unit in cands[:6]:
        if not _boilerplate(ranker.searcher, unit):
            return shown
    return cands[0][1] if cands else ""


def _boilerplate(corpus, unit: str, copies: int = 5) -> bool:
    """A sentence whose first words more than ``copies`` chunks hold word for word (a list footer, a
    disclaimer, one message filed in several folders) justifies nothing."""
    if corpus is None or not hasattr(corpus, "mentions"):
        return False
    head = " ".join(re.findall(r"\w+", unit)[:10])
    return len(head.split()) >= 4 and corpus.mentions(head) > copies


# --- the result ------------------------------------------------------------------------------------------
def attach(corpus, question: str, documents: list[dict], budget: int, scorer: Scorer | None = None,
           replace_justification: bool = True) -> None:
    """Give each result document (``search._document`` dicts) its ``passages`` (JSON) and, with
    ``replace_justification``, the best sentence of its best passage as its justification."""
    if budget <= 0 or not documents:
        for d in documents:
            d["passages"] = []
        return
    scorer = scorer or make_scorer(corpus)
    chosen = choose(corpus, question, [d["id"] for d in documents], budget, scorer,
                    weights={d["id"]: d.get("score") or 0.0 for d in documents},
                    seen={d["id"]: [c["id"] for c in d.get("chunks") or [] if c.get("id")] for d in documents})
    for d in documents:
        got = chosen.get(d["id"], [])
        d["passages"] = [p.to_json() for p in got]
        if got and got[0].why and (replace_justification or not d.get("justification")):
            d["justification"] = got[0].why
            d["justification_span"] = list(got[0].sentence)


# --- what a person sees ------------------------------------------------------------------------------------
EXCERPT = 220
"""Characters of a passage shown in the human output."""


def excerpt(text: str, question: str, limit: int = EXCERPT) -> tuple[str, list[tuple[int, int]]]:
    """A short, one-line excerpt of ``text`` around the question's terms, and the spans in it of the
    words that match a term of the question (same stem): the part of the passage that holds most
    of them, cut at words, with "…" where text was left out."""
    from c1.retrieval.terms import content_terms
    from c1.store.lexical import stems

    flat = sx.readable(text)
    wanted = {s for t in content_terms(question) for s in (stems(t) or [t])}
    words = [(m.start(), m.end()) for m in re.finditer(r"[\w'’$%.,-]*\w", flat)]
    marks = [(a, b) for a, b in words if set(stems(flat[a:b])) & wanted]
    if len(flat) > limit:
        best_start, best_hits = 0, -1
        for a, _ in [(0, 0)] + marks:  # the window of ``limit`` characters holding most marked words
            start = max(0, a - limit // 5) if a else 0
            hits = sum(1 for m in marks if start <= m[0] and m[1] <= start + limit)
            if hits > best_hits:
                best_start, best_hits = start, hits
        start = best_start
        if start:
            start = flat.find(" ", start) + 1 or start
        end = start + limit
        if end < len(flat):
            end = flat.rfind(" ", start, end) if flat.rfind(" ", start, end) > start else end
        pre, post = ("…" if start else ""), ("…" if end < len(flat) else "")
        shown = pre + flat[start:end].strip() + post
        shift = len(pre) - start - (len(flat[start:end]) - len(flat[start:end].lstrip()))
        marks = [(a + shift, b + shift) for a, b in marks if start <= a and b <= end]
        return shown, marks
    return flat, marks
