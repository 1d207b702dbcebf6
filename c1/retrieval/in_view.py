"""The documents a run holds, read once for each ranking of them (:class:`InView`)."""

from __future__ import annotations

import functools
from collections import Counter

from c1.retrieval import text as tx
from c1.retrieval.memo import TEXTS


@functools.lru_cache(maxsize=TEXTS)
def _words(normed: str) -> frozenset[str]:
    return frozenset(normed.split())


def _joined(ranker, chunks: list[tuple[str, str]]) -> str:
    """The normal form of a document's text in view, chunk by chunk: the same as the normal form of the chunks
    joined by spaces (``norm`` keeps no word across a space), but each chunk's is worked out once a search,
    not again at every turn that shows the document one more chunk."""
    return " ".join(n for n in (ranker.normed(t) for _, t in chunks) if n)


class Lazy(dict):
    """Values by key, each worked out by ``make(key)`` when first asked for."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, d: str):
        self[d] = got = self._make(d)
        return got


class InView:
    """The documents in view as :meth:`c1.retrieval.evidence.Ranker.rank` compares them (``ranker``: that
    Ranker, for its normal forms; ``docs``: document id → ``DocView``): titles as written (``raw``) and as
    names (``titles``: "" for a title several documents share), each one's text in view (``texts``: only a
    question with an exact phrase reads it), its normalised form with its title (``norms``), its content
    words (``bodies``: its chunks' content lines', each chunk's remembered; only documents that hold all
    the question's terms, and those a pivot relates to, are checked for copies) and whether all of it is in
    view. ``texts`` and ``bodies`` are worked out for a document when first asked for."""

    def __init__(self, ranker, docs: dict):
        self.raw = {d: v.title or "" for d, v in docs.items()}
        shared = {tx.clean_title(t) for t, n in Counter(self.raw.values()).items() if n > 1}
        self.titles = {d: ("" if tx.clean_title(t) in shared else tx.clean_title(t)) for d, t in self.raw.items()}
        self.texts = Lazy(lambda d: " ".join(t for _, t in docs[d].chunks))
        self.norms = {d: f" {ranker.normed(self.raw[d])} {_joined(ranker, v.chunks)} " for d, v in docs.items()}
        self.bodies = Lazy(lambda d: frozenset().union(*(_words(ranker.normed(tx.content(t))) for _, t in docs[d].chunks)))
        self.whole = {d: ranker._whole(d, len(v.chunks)) for d, v in docs.items()}
