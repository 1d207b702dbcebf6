"""What a policy may look up in a collection besides its tool calls: a read-only view of a Corpus.

The built-in policy ranks documents on evidence it gathers outside the context (the question's own
search, each visible chunk's similarity to the question, how often a name occurs, document
identity). None of it is shown to the model or counted against the budget, so it does not go
through a tool; it goes through this narrow view, which the tools hand to the policy
(``Tools.searcher`` → ``AgentState.searcher``) in place of the Corpus itself: no store, no refresh,
no close, nothing that writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from c1.retrieval.corpus import Corpus, Hit
    from c1.store.manifest import Chunk, DocRecord


class Searcher:
    """The lookups of :class:`~c1.retrieval.corpus.Corpus` a policy (and ``evidence.Ranker``) reads."""

    __slots__ = ("_corpus",)

    def __init__(self, corpus: "Corpus"):
        self._corpus = corpus

    @property
    def CANDIDATES(self) -> int:  # noqa: N802 (the Corpus's constant, read the same way)
        return self._corpus.CANDIDATES

    @property
    def size(self) -> int:
        """Chunks in the collection."""
        return self._corpus.size

    @property
    def embedder(self):
        """The collection's embedder (its ``support_sim`` calibrates the evidence)."""
        return self._corpus.embedder

    def hybrid(self, query: str, k: int, exclude: set[str] = frozenset(), vector=None) -> list["Hit"]:
        return self._corpus.hybrid(query, k, exclude, vector=vector)

    def embed_query(self, text: str):
        return self._corpus.embed_query(text)

    def rank_chunks(self, chunks: list["Chunk"], query: str, vector=None, rerank: bool = False):
        return self._corpus.rank_chunks(chunks, query, vector, rerank)

    def doc(self, doc_id: str) -> "DocRecord | None":
        return self._corpus.doc(doc_id)

    def chunks(self, ids: list[str]) -> list["Chunk"]:
        return self._corpus.chunks(ids)

    def mentions(self, phrase: str) -> int:
        return self._corpus.mentions(phrase)

    def name_mentions(self, phrase: str) -> int:
        return self._corpus.name_mentions(phrase)

    def doc_evidence(self, question: str, doc_ids) -> dict[str, float]:
        return self._corpus.doc_evidence(question, doc_ids)
