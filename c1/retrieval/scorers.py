"""Scorers of short texts against a question: ``(question, [texts]) -> scores`` in [0, 1].

The passages (:mod:`c1.retrieval.passages`) and a read's table pages (:mod:`c1.retrieval.pages`)
rank sentences, rows and titles with one of these: the corpus's cross-encoder where it has one
(:class:`RerankerScorer`), else the question's terms and the embedder's cosine (:class:`TermDenseScorer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

HEADING_CHARS = 120
PAIR_CHARS = 560

Scorer = Callable[[str, list[str]], list[float]]
"""(question, passage texts) → one relevance score per text, in [0, 1], higher is better."""


class TermDenseScorer:
    """Half BM25 of the question's terms among the texts scored together (each term weighted by how few
    of them hold it, so that the party names a whole contract repeats count little), scaled to the best
    text; half the cosine of the corpus's embedder between the question and each text."""

    K1, B = 1.2, 0.75

    def __init__(self, corpus=None, dense: bool = True):
        self.corpus = corpus
        self.dense = dense

    def __call__(self, question: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        lexical = self.terms(question, texts)
        dense = self.cosines(question, texts) if self.dense else None
        if dense is None:
            return lexical
        return [round(0.5 * a + 0.5 * max(0.0, b), 4) for a, b in zip(lexical, dense)]

    def terms(self, question: str, texts: list[str]) -> list[float]:
        from c1.retrieval.terms import content_terms
        from c1.store.lexical import stem_counts, stems

        wanted = list(dict.fromkeys(s for t in content_terms(question) for s in (stems(t) or [t])))
        if not wanted:
            return [0.0] * len(texts)
        lengths, held = [], []  # each text's length in words, and the counts of the question's terms in it
        for t in texts:
            length, counts = stem_counts(t, wanted)
            lengths.append(length)
            held.append(counts)
        n = len(texts)
        avg = sum(lengths) / n or 1.0
        df = {w: sum(1 for c in held if w in c) for w in wanted}
        idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in wanted}
        raw = []
        for length, counts in zip(lengths, held):
            norm = self.K1 * (1 - self.B + self.B * length / avg)
            raw.append(sum(idf[w] * c * (self.K1 + 1) / (c + norm) for w, c in counts.items()))
        top = max(raw) or 1.0
        return [r / top for r in raw]

    def cosines(self, question: str, texts: list[str]) -> list[float] | None:
        corpus = self.corpus
        if corpus is None or not hasattr(corpus, "embedder"):
            return None
        import numpy as np

        q = np.asarray(corpus.embed_query(question), dtype=np.float32)
        m = np.asarray(corpus.embedder.embed(texts), dtype=np.float32)
        return [float(v) for v in m @ q]


class RerankerScorer:
    """A cross-encoder's logits as probabilities (logistic): one scale whatever the question.
    ``score``: (question, texts) → logits, or None when re-ranking is off (then ``fallback`` scores)."""

    def __init__(self, score, fallback: Scorer | None = None):
        self.score = score
        self.fallback = fallback

    def __call__(self, question: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        unique = list(dict.fromkeys(texts))  # a text met twice (a row a filing repeats) is one pair: each scores alone
        got = self.score(question, unique)
        if got is None:
            return self.fallback(question, texts) if self.fallback else [0.0] * len(texts)
        of = {t: round(1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, float(v))))), 4) for t, v in zip(unique, got)}
        return [of[t] for t in texts]


def make_scorer(corpus=None, kind: str = "auto") -> Scorer:
    """The passage scorer: ``terms`` (:class:`TermDenseScorer`; ``lexical``: its terms alone), ``reranker`` (the cross-encoder, an
    ImportError where c1 has none), or ``auto``: the corpus's cross-encoder (measured the better for
    passages: bench/passages.py, whatever ``--rerank auto`` does for chunks), terms under ``--rerank off``."""
    if kind == "reranker":
        from c1.retrieval.rerankers import make_reranker

        return RerankerScorer(make_reranker("onnx", None).score)
    if kind == "auto" and hasattr(corpus, "score_passages"):  # None under --rerank off: then terms
        return RerankerScorer(corpus.score_passages, TermDenseScorer(corpus))
    return TermDenseScorer(corpus, dense=kind != "lexical")
