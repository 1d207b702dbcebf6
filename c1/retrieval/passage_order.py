"""The fitted passage order: which of a question's candidate sentences become passages first.

:mod:`c1.retrieval.passages` reads the returned documents' sentences and scores them (the cross-encoder);
the order in which they are then taken (each grown into a passage, at most five for the first document,
within the token budget) is a score ``Σ w_f × x_f`` over :data:`FEATURES`, all of them things the
reading already knows of a sentence. The weights are fitted, not set: a conditional logit (the same fit
as the document ranker's, :func:`c1.retrieval.ranker.fit`) of the gold sentence against every other
candidate of its question, on questions generated from the collections themselves
(a table row asked for by its label and year, a clause by its section's name: bench/passage_fit.py), and
written to ``c1/data/passages.json`` by ``python bench/passage_fit.py --shapes rows,titles --write``.

It is not the order c1 uses (``passages.Knobs.order`` is ``rules``): against the hand order (the scorer's
sure passages, then the best table rows, then the anchor chunks' best sentences, then the rest) on the
real questions of contracts and filings it gained nothing beyond its interval (contracts +0.006 and
+0.041, filings' pages −0.056 and −0.049, all inside). Fitted on questions written from their sentence's
own words instead, it lost beyond the intervals: what such a fit learns (the terms first, rows last) is
how the questions were made (docs/relevance.md, "The passages' order, fitted").
"""

from __future__ import annotations

from pathlib import Path

from c1.retrieval import ranker as rk

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "passages.json"

FEATURES = ("score", "share", "weighted", "conf", "first_doc", "doc_best", "chunk_best", "chunk_place",
            "chunk_lead", "row", "row_best", "page_place", "titled", "scored", "lexical", "early")
"""Of one candidate sentence, each in [0, 1]:

- ``score``: the scorer's (the cross-encoder's probability of relevance); ``share``: of the question's
  best score; ``weighted``: times its document's relative confidence, of the best such;
- ``conf``: its document's confidence relative to the first's; ``first_doc``: it is of the first document;
- ``doc_best``, ``chunk_best``: the best-scored sentence of its document, of its chunk;
- ``chunk_place``: 1 / (1 + its chunk's place in the document's own ranking of its chunks against the
  question); ``chunk_lead``: ``chunk_place`` where it is its chunk's best sentence (the anchors);
- ``row``: a row of one of the document's best table pages; ``row_best``: its page's best row;
  ``page_place``: 1 / (1 + that page's place among them);
- ``titled``: it scored through its section's title; ``scored``: the scorer read it (the rest rank under
  the worst the scorer read, by their terms); ``lexical``: its terms' score among its document's sentences,
  of the best; ``early``: 1 / (1 + its chunk's number in the document)."""


def features(reading) -> list[dict[str, float]]:
    """Each candidate's inputs (:data:`FEATURES`) of a passages' reading (``passages._Reading``, scored), in
    the order of its ``cands``."""
    cands, factor = reading.cands, reading.factor
    best = max(cands[0].score * factor[cands[0].doc_id], 1e-9)
    top = max(max(c.score for c in cands), 1e-9)
    lexical_top: dict[str, float] = {}
    for c in cands:
        lexical_top[c.doc_id] = max(lexical_top.get(c.doc_id, 0.0), reading.lexical.get(id(c), 0.0))
    seen_doc: set[str] = set()
    seen_chunk: set[str] = set()
    row_pages: set[int] = set()
    out = []
    for c in cands:  # best first: the first of a document, a chunk or a page is its best
        doc_best, chunk_best = c.doc_id not in seen_doc, c.chunk_id not in seen_chunk
        seen_doc.add(c.doc_id)
        seen_chunk.add(c.chunk_id)
        page = reading.page_of_row.get(id(c))
        row_best = page is not None and page not in row_pages
        if page is not None:
            row_pages.add(page)
        chunk_place = 1.0 / (1 + reading.place.get(c.chunk_id, len(reading.place)))
        out.append({
            "score": c.score, "share": c.score / top, "weighted": c.score * factor[c.doc_id] / best,
            "conf": factor[c.doc_id], "first_doc": float(c.doc_rank == 0), "doc_best": float(doc_best),
            "chunk_best": float(chunk_best), "chunk_place": chunk_place,
            "chunk_lead": chunk_place * chunk_best, "row": float(page is not None), "row_best": float(row_best),
            "page_place": 1.0 / (1 + page) if page is not None else 0.0, "titled": float(id(c) in reading.titled),
            "scored": float(id(c) in reading.scored),
            "lexical": reading.lexical.get(id(c), 0.0) / lexical_top[c.doc_id] if lexical_top[c.doc_id] > 0 else 0.0,
            "early": 1.0 / (1 + reading.chunk_of[c.chunk_id].n)})
    return out


def load(path: str | Path | None = None) -> rk.RankerWeights:
    """The passage order's weights in ``path`` (default: the shipped ones)."""
    return rk.load(path, SHIPPED, FEATURES)
