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
   document's best ``SECTION_CHUNKS``; :mod:`c1.retrieval.sections`) score best by themselves: a
   clause that shares no word with the question reaches the scorer through its title, and a section
   is read from its title on. Each sentence is read under
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
   only near the best: ``KEEP``; none ending on a lead-in: :func:`c1.retrieval.candidates.past_lead_in`), until the budget
   (``--evidence-tokens``) is spent. The first document is scored first: a document after the
   ``GIVEN`` first whose relative confidence is under ``KEEP`` of the best weighted score yet could keep
   nothing (a score is at most 1), and is not scored at all (the cross-encoder's pairs are most of the
   passages' time).

The justification of a document is the best readable sentence of its best passage, shown without
markup; a table row with its column names. Within a run (before passages exist) the built-in policy
picks its justification from the chunks it holds (:mod:`c1.retrieval.justification`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from c1.config import Settings
from c1.retrieval import sentences as sx
from c1.retrieval.pages import TABLE_PAGES, best_table_pages, is_header_row, page_of, table_pages
from c1.retrieval.candidates import Candidate, grow, past_lead_in, shown
from c1.retrieval.scorers import Scorer, TermDenseScorer, make_scorer
from c1.retrieval.sections import (carried_from, clause_title, is_title, openings, section_sentences, section_title,
                                   under)
from c1.retrieval.within import rank_in_document, within

WINDOW_CHARS = 700
"""A passage joins consecutive sentences up to this many characters (one longer sentence stands alone)."""
CHUNKS = (400, 2)
"""Chunks opened for the first document (all of a 200-page filing), and for each of the others."""
LEAD_CHUNKS = (2, 0)
"""Of those, the best chunks (by ``rank_in_document``) whose every sentence is scored."""
PER_DOC = (5, 1)
"""Passages kept for the first document, and for each of the others."""
KEEP = 0.5
"""A passage of a document after the first scoring (times its document's relative confidence) under
this share of the question's best is not kept (but for the best passage of the ``GIVEN`` first)."""
GIVEN = 3
"""The first documents that each keep their best passage whatever their confidence relative to the
first's: the second hop of a two-hop question (the club's paragraph that names the region asked
about: "FC Cartagena ... in the autonomous community of Murcia") is returned well below the
first's confidence (docs/relevance.md, "Figures that were in the code") and its best sentence scores
below the first's, so under ``KEEP`` alone it kept nothing, and the answer it holds was not handed over."""
SHORTLIST = (24, 3)
"""Sentences scored by the scorer: a document's best by their terms (BM25 among its own sentences; only
those that hold a term of the question, where any does), with the sentences of its lead chunks (the rest rank below them, by their terms). More found the gold
span no more often, at more of the cross-encoder's pairs (docs/relevance.md)."""

SECTION_CHUNKS = (12, 0)
"""The first document's best chunks (by ``rank_in_document``) whose headings are scored by themselves:
a short pair each, so that the clause the question means but does not word ("a cap on liability":
"10. LIMITATION ON LIABILITY.", "the No-Shop Clause": "Section 7.03 No Solicitation") reaches the
scorer through the title its drafter gave it."""

SURE = (0.5, 2)
"""Passages scoring at least this (the cross-encoder's probability of relevance), the best two, are
taken before the anchors and table rows below: a prose answer the scorer is sure of is not
displaced by a filing's statements."""
ANCHORS = 3
"""The first document's best chunks (by ``rank_in_document``: the whole chunk against the question,
its page and heading in its indexed header) that each give their best sentence before the rest are
taken by score: the page that holds a filing's figure is often its second or third chunk's while
the scorer prefers a prose sentence elsewhere."""
NOTHING = 0.001
"""A sentence scoring under this share of the best sentence's score (or nothing at all) answers
nothing: it is no passage, wherever it ranks. A share, not a bound: on a long question the
cross-encoder is unsure of everything (a merger agreement's No-Shop clause can score far below the
best, itself near 0: docs/relevance.md). Larger shares lost gold clauses the cross-encoder scores near 0
(docs/search.md)."""


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


@dataclass(frozen=True)
class Knobs:
    """The settings of :func:`choose`, each a pair where it differs for the first document and the others
    (the constants above say what each does)."""

    chunks: tuple[int, int] = CHUNKS
    per_doc: tuple[int, int] = PER_DOC
    keep: float = KEEP
    window: int = WINDOW_CHARS
    shortlist: tuple[int, int] = SHORTLIST
    lead_chunks: tuple[int, int] = LEAD_CHUNKS
    section_chunks: tuple[int, int] = SECTION_CHUNKS
    anchors: int = ANCHORS
    tables: int = TABLE_PAGES
    sure: tuple[float, int] = SURE
    given: int = GIVEN
    order: str = "rules"
    """``rules``: the hand order (:meth:`_Reading._hand_order`); ``fitted``: :mod:`c1.retrieval.passage_order`'s,
    measured and not used: it lost gold spans and pages of contracts and filings (docs/relevance.md)."""


KNOBS = Knobs()


def choose(corpus, question: str, doc_ids: list[str], budget: int = Settings.evidence_tokens,
           scorer: Scorer | None = None, count: Callable[[str], int] | None = None,
           weights: dict[str, float] | None = None, seen: dict[str, list[str]] | None = None,
           **knobs) -> dict[str, list[Passage]]:
    """Each document's passages, best first, all of them together within ``budget`` tokens (0: none).

    A document's readable sentences (those of its opened chunks) are ranked by their terms among
    themselves; its ``shortlist`` best, and those of its lead chunks, are scored by ``scorer``; the best
    sentences of all the documents, in order, each become a passage, grown by the neighbouring sentences
    that score at least ``keep`` of it (the better neighbour first) up to ``window`` characters.

    ``weights``: each document's confidence (a passage counts as much as its document is likely to be
    wanted). ``seen``: a document's chunks the search already found for the question (their ids), best
    first: a document after the first opens its best chunks among those alone (ranking the 400 chunks of
    a filing to open two took longer than its passages), the first document all of its own. ``knobs``:
    fields of :class:`Knobs` to set otherwise than :data:`KNOBS`."""
    if budget <= 0 or not doc_ids:
        return {d: [] for d in doc_ids}
    reading = read(corpus, question, doc_ids, scorer, weights, seen, **knobs)
    if reading is None:
        return {d: [] for d in doc_ids}
    return reading.take(doc_ids, budget, count or _count)


def read(corpus, question: str, doc_ids: list[str], scorer: Scorer | None = None,
         weights: dict[str, float] | None = None, seen: dict[str, list[str]] | None = None,
         **knobs) -> _Reading | None:
    """The documents' candidate sentences read and scored (:func:`choose` before it takes its passages;
    bench/passage_fit.py fits the passage order on their features); None where none was read."""
    reading = _Reading(corpus, question, scorer or make_scorer(corpus), replace(KNOBS, **knobs))
    vector = corpus.embed_query(question)
    for rank, doc_id in enumerate(doc_ids):
        reading.read_document(rank, doc_id, vector, seen)
    if not reading.cands:
        return None
    reading.score(_relative(doc_ids, weights))
    return reading


def _relative(doc_ids: list[str], weights: dict[str, float] | None) -> dict[str, float]:
    """Each document's confidence relative to the first document's (all alike without confidences)."""
    top = (weights or {}).get(doc_ids[0]) or 0.0
    return {d: (min(1.0, (weights or {}).get(d, 0.0) / top) if top > 0 else 1.0) for d in doc_ids}


@dataclass
class _Document:
    """The sentences read of one document, by the way they reach the scorer."""

    rank: int
    doc_id: str
    by_n: dict = field(default_factory=dict)
    """Its chunks by number, where its sections are read (the first document)."""
    page_rows: dict = field(default_factory=dict)
    """Where its best table pages' rows start → (the page's title, its place): :func:`_page_rows`."""
    mine: list = field(default_factory=list)
    """Sentences of chunks that hold a term of the question, or that are read whole."""
    apart: list = field(default_factory=list)
    """Sentences of section chunks that no term of the question shortlists."""
    lead: list = field(default_factory=list)
    sections: dict = field(default_factory=dict)
    """A heading of a section chunk → its sentences there."""
    in_pages: list = field(default_factory=list)
    """The best rows of its best table pages, read under their page's title."""
    spans: set = field(default_factory=set)


class _Reading:
    """One :func:`choose`: the documents' sentences read (:meth:`read_document`), scored (:meth:`score`),
    then taken in order within the budget (:meth:`take`)."""

    def __init__(self, corpus, question: str, scorer: Scorer, knobs: Knobs):
        self.corpus, self.question, self.scorer, self.k = corpus, question, scorer, knobs
        self.cands: list[Candidate] = []
        self.short: list[tuple[str, list[Candidate]]] = []  # (the question inside a document, its scored sentences)
        self.records: dict = {}
        self.chunk_of: dict = {}
        self.units_of: dict[str, list[Candidate]] = {}
        self.titled: dict[int, float] = {}  # a best section's first sentence → its title's score
        self.anchored: list[str] = []  # the first document's best chunks, each of which gives its best sentence first
        self.page_of_row: dict[int, int] = {}  # such a row → its page's place among them: each page's best row first
        self.factor: dict[str, float] = {}
        self.place: dict[str, int] = {}  # an opened chunk → its place in its document's ranking against the question
        self.lexical: dict[int, float] = {}  # a candidate → its terms' score (BM25 among its document's sentences)
        self.scored: set[int] = set()  # the candidates the scorer read

    # reading ------------------------------------------------------------------------------------------
    def read_document(self, rank: int, doc_id: str, vector, seen: dict[str, list[str]] | None) -> None:
        corpus, k, first = self.corpus, self.k, rank == 0
        self.records[doc_id] = corpus.doc(doc_id)
        pool = corpus.chunks(seen[doc_id]) if rank and seen and seen.get(doc_id) else corpus.doc_chunks(doc_id)
        holding: set[str] = set()
        ranked = rank_in_document(corpus, self.question, pool, vector, holding=holding)
        opened = [c for c, _ in ranked][: _of(k.chunks, rank)]
        self.place.update((c.id, place) for place, c in enumerate(opened))
        doc = _Document(rank, doc_id, by_n={c.n: c for c in pool} if first and k.section_chunks[0] else {})
        opening = openings(doc.by_n, opened[: k.section_chunks[0]]) if doc.by_n else {}
        if first:
            self.anchored += [c.id for c in opened[: k.anchors]]
            doc.page_rows = _page_rows(self.scorer, within(corpus, self.question, doc_id), self.records[doc_id], pool,
                                       k.tables)
        row_chunks = {c.id for c in opened if any(c.start <= a < c.end for a in doc.page_rows)}
        for place, chunk in enumerate(opened):
            is_lead = place < _of(k.lead_chunks, rank)
            is_section = place < _of(k.section_chunks, rank) or chunk.id in opening
            listed = is_lead or chunk.id in holding or len(pool) <= 1 or chunk.id in row_chunks
            if listed or is_section:  # else none of its sentences holds a term of the question
                self._read_chunk(doc, chunk, listed, is_lead, is_section, opening)
        if doc.mine or doc.sections:
            self._shortlist(doc)

    def _read_chunk(self, doc: _Document, chunk, listed: bool, is_lead: bool, is_section: bool,
                    opening: dict[str, str]) -> None:
        """A chunk's readable sentences, each read under the last heading or title before it."""
        self.chunk_of[chunk.id] = chunk
        units = self.units_of[chunk.id] = []
        section, _, parent = carried_from(doc.by_n, chunk) if is_section else ("", None, "")
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
                if section_title(u, text):
                    parent = heading if not clause_title(heading) else parent
                    heading = section = under(parent, heading)
                else:
                    section = ""
                continue
            if u.kind not in sx.READABLE:
                title = None
                continue
            span = (chunk.start + u.start, chunk.start + u.end)
            sent = Candidate(doc.rank, doc.doc_id, chunk.id, len(units), *span, text, heading=heading, title=title,
                             columns=columns if u.kind == "row" else "")
            title = None
            units.append(sent)
            if span in doc.spans or sx.words(sent.text) < 3:
                continue
            doc.spans.add(span)
            row = next((r for a, r in doc.page_rows.items() if span[0] <= a < span[1]), None)
            if row is not None:  # a best row of a best table page
                sent.heading = row[0]
                doc.in_pages.append(sent)
                self.page_of_row[id(sent)] = row[1]
            (doc.mine if listed else doc.apart).append(sent)
            if is_lead:
                doc.lead.append(sent)
            if is_section and section and opening.get(chunk.id, section) == section:
                doc.sections.setdefault(section, []).append(sent)

    def _shortlist(self, doc: _Document) -> None:
        """The sentences of a document that the scorer reads: its best by BM25 among its own sentences (a
        term its every page repeats, the company, the parties, weighs nothing; the one term that singles
        out the clause weighs most), its lead chunks', its best section's and its best table rows."""
        asked_here = within(self.corpus, self.question, doc.doc_id)
        lexical = TermDenseScorer().terms(asked_here, [c.text for c in doc.mine])
        for c, v in zip(doc.mine, lexical):
            c.score = v
        by_terms = sorted(doc.mine, key=lambda c: -c.score)[: _of(self.k.shortlist, doc.rank)]
        by_terms = [c for c in by_terms if c.score > 0] or by_terms
        in_sections = section_sentences(self.scorer, asked_here, doc.sections, self.titled,
                                         _of(self.k.per_doc, doc.rank))
        picked = list({id(c): c for c in by_terms + doc.lead + in_sections + doc.in_pages}.values())
        doc.mine += [c for c in doc.apart if any(c is p for p in picked)]
        self.short.append((asked_here, picked))
        self.cands += doc.mine

    # scoring ------------------------------------------------------------------------------------------
    def score(self, factor: dict[str, float]) -> None:
        """The shortlisted sentences' scores by the scorer, the first document's first; the rest of the
        sentences under the worst of them, in their lexical order; the candidates best first, each
        weighted by its document's relative confidence (``factor``)."""
        self.factor = factor
        lexical_of = self.lexical = {id(c): c.score for c in self.cands}
        groups: dict[tuple[bool, str], list[Candidate]] = {}
        for asked_here, picked in self.short:  # the first document's call, then one per wording of the question
            for c in picked:
                groups.setdefault((c.doc_rank > 0, asked_here), []).append(c)
        best_yet, dropped = 0.0, set()
        for (_, asked_here), picked in sorted(groups.items(), key=lambda g: g[0][0]):
            # a document whose relative confidence is under ``keep`` of the best weighted score yet can keep
            # no passage (a score is at most 1): its sentences are not scored (the cross-encoder's pairs
            # are most of the passages' time)
            gone = {c.doc_id for c in picked if c.doc_rank >= self.k.given and factor[c.doc_id] < self.k.keep * best_yet}
            if gone:
                dropped |= gone
                picked = [c for c in picked if c.doc_id not in gone]
            for c, v in zip(picked, self.scorer(asked_here, [c.scored_text() for c in picked])):
                c.score = max(float(v), self.titled.get(id(c), 0.0))
                best_yet = max(best_yet, c.score * factor[c.doc_id])
        if dropped:
            self.cands = [c for c in self.cands if c.doc_id not in dropped]
        short = [c for _, picked in self.short for c in picked if c.doc_id not in dropped]
        floor = min((c.score for c in short), default=0.0)
        listed = self.scored = {id(c) for c in short}
        for c in self.cands:  # below the shortlist: under its worst, in their lexical order
            if id(c) not in listed:
                c.score = floor * lexical_of[id(c)] * 0.5
        by_span = {(c.doc_id, c.start, c.end): c.score for c in self.cands}
        for units in self.units_of.values():  # a sentence repeated in an overlapping chunk has its one score
            for u in units:
                u.score = by_span.get((u.doc_id, u.start, u.end), 0.0)
        self.cands.sort(key=lambda c: (-c.score * factor[c.doc_id], c.doc_rank, c.start))

    # taking -------------------------------------------------------------------------------------------
    def _order(self) -> tuple[list[Candidate], list[Candidate]]:
        """The candidates in the order they are taken, and those owed a place whatever their confidence (the
        best of each of the next ``given`` documents): the hand order, or (``order="fitted"``) by the fitted
        passage order (:mod:`c1.retrieval.passage_order`)."""
        if self.k.order == "fitted":
            from c1.retrieval import passage_order

            weights = passage_order.load()
            score = {id(c): weights.score(x) for c, x in zip(self.cands, passage_order.features(self))}
            ordered = sorted(self.cands, key=lambda c: (-score[id(c)], c.doc_rank, c.start))
            return ordered, _best_of_each(self.cands, self.k.given, set())
        return self._hand_order()

    def _hand_order(self) -> tuple[list[Candidate], list[Candidate]]:
        """The hand order (``rules``): the best passages the scorer is sure of (``SURE``) first, then each best
        table page's best row and each anchor chunk's best sentence, then the owed, then the rest by score.
        Before the sure came first, "How many employees did Coca-Cola have?" kept a statement's rows and
        anchors the scorer was unsure of in place of "our Company had approximately 61,800 employees"."""
        cands, factor, k = self.cands, self.factor, self.k
        best = cands[0].score * factor[cands[0].doc_id]
        first_of: dict[str, Candidate] = {}  # an anchor chunk → its best sentence (cands are best first)
        page_best: dict[int, Candidate] = {}  # each best table page's best row
        for c in cands:
            if c.chunk_id in self.anchored:
                first_of.setdefault(c.chunk_id, c)
            if id(c) in self.page_of_row:
                page_best.setdefault(self.page_of_row[id(c)], c)
        firsts = [page_best[p] for p in sorted(page_best)]
        ahead = firsts + [first_of[cid] for cid in self.anchored if cid in first_of
                          and all(first_of[cid] is not f for f in firsts)]
        strong = [c for c in cands if c.score * factor[c.doc_id] >= max(k.sure[0], k.keep * best)][: k.sure[1]]
        taken_first = {id(c) for c in strong}
        ahead = [c for c in ahead if id(c) not in taken_first]
        taken_first |= {id(c) for c in ahead}
        owed = _best_of_each(cands, k.given, taken_first)
        taken_first |= {id(c) for c in owed}
        return strong + ahead + owed + [c for c in cands if id(c) not in taken_first], owed

    def take(self, doc_ids: list[str], budget: int, count: Callable[[str], int]) -> dict[str, list[Passage]]:
        """Passages from the candidates in order, each grown by its neighbours, none overlapping another of
        its document, at most ``per_doc`` a document, within ``budget`` tokens."""
        k, factor = self.k, self.factor
        order, owed = self._order()
        best = self.cands[0].score * factor[self.cands[0].doc_id]
        top = max(c.score for c in self.cands)
        taken: dict[str, list[Passage]] = {d: [] for d in doc_ids}
        spent = 0
        for c in order:
            if spent >= budget:
                break
            if c.doc_rank and c.score * factor[c.doc_id] < k.keep * best and all(c is not o for o in owed):
                continue  # the first document (the likeliest) gives its best whatever they score (above NOTHING)
            mine = taken[c.doc_id]
            if c.score <= 0 or c.score < NOTHING * top or len(mine) >= _of(k.per_doc, c.doc_rank):
                continue
            if any(c.start < p.end and p.start < c.end for p in mine):
                continue
            page = page_of(self.records[c.doc_id], self.chunk_of[c.chunk_id], c.start)
            passage = self._passage(c, mine, page)
            cost = count(passage.text)
            if spent + cost > budget:
                continue
            spent += cost
            mine.append(passage)
        return {d: sorted(picks, key=lambda p: (-p.score, p.start)) for d, picks in taken.items()}

    def _passage(self, c: Candidate, mine: list[Passage], page: int | None) -> Passage:
        """The passage a sentence grows into: with its neighbours that score nearly as well, not ending on
        a lead-in, from its section's title when it is the section's first; alone where that would
        overlap a passage its document already gives."""
        units, window = self.units_of[c.chunk_id], self.k.window
        first, last = grow(units, c.index, self.k.keep * c.score, window)
        last = past_lead_in(units, first, last, window)
        lo, hi = first.start, last.end
        if first.title is not None and hi - first.title <= window:
            lo = first.title  # a section's first sentence with its title
        if any(lo < p.end and p.start < hi for p in mine):
            lo, hi = c.start, c.end
        chunk = self.chunk_of[c.chunk_id]
        text = chunk.text[lo - chunk.start : hi - chunk.start]
        return Passage(c.doc_id, c.chunk_id, lo, hi, page, text, c.score, (c.start, c.end), shown(chunk, c))


def _of(pair: tuple, rank: int):
    """A knob's value for the first document (``rank`` 0) or for another."""
    return pair[0] if rank == 0 else pair[1]


def _page_rows(scorer: Scorer, question: str, doc, chunks: list, n: int) -> dict[int, tuple[str, int]]:
    """Where the rows start that the ``n`` best table pages of a document give to the scored
    sentences (:func:`best_table_pages`), each with its page's title (the heading it is read under)
    and its page's place among them (0: the best page)."""
    if n <= 0:
        return {}
    best = best_table_pages(scorer, question, table_pages(doc, chunks), n)
    return {span[0]: (page.title, place) for place, (page, _, spans) in enumerate(best) for span in spans}


def _best_of_each(cands: list[Candidate], given: int, taken: set[int]) -> list[Candidate]:
    """The best sentence (``cands`` are best first) of each document after the first among the first
    ``given``, in their order, unless one of its sentences is already ``taken`` ahead."""
    best: dict[int, Candidate] = {}
    for c in cands:
        if 0 < c.doc_rank < given:
            best.setdefault(c.doc_rank, c)
    ahead = {c.doc_rank for c in cands if id(c) in taken}
    return [best[r] for r in sorted(best) if r not in ahead]


def _count(text: str) -> int:
    from c1.tokens import TokenizerError, count_tokens

    try:
        return count_tokens(text)
    except TokenizerError:
        return max(1, len(text) // 4)


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
