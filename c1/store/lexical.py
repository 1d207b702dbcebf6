"""The lexical index: BM25 over chunk text and document title, with tantivy.

What goes into the fields is the chunk's context (c1.index.headers): ``title`` holds the
document's identity (title and file-name words), ``text`` the section heading and the chunk.

tantivy was chosen by measurement (bench/lexical_engines.py, 100k real-text chunks; docs/benchmarks.md,
"Why these components"): its BM25 top-50 is far faster than SQLite FTS5's, and it is persistent and
incremental. Queries are built from word tokens only, never handed raw to tantivy's query parser,
which rejects quotes, colons and parentheses that real questions contain.

Text goes in, and queries are read, through one function (:func:`c1.store.keywords.keyword_form`:
numbers without thousands separators, Chinese and Japanese as pairs of characters). ``FORMAT`` names
that form; an index written in another (by an older c1) is refilled from the manifest by the next
writer, and read as it is until then.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from c1.store.keywords import keyword_form

_WORD = re.compile(r"\w+", re.UNICODE)
_OPERATORS = {"and", "or", "not", "in"}


_GLUED_YEAR = re.compile(r"^[a-z]{1,6}((?:19|20)\d\d)$|^((?:19|20)\d\d)[a-z]\w{0,3}$")
"""A year glued to a short prefix or suffix: "fy2018", "2022q2" (text says "2018", "2022")."""


def query_terms(text: str) -> list[str]:
    """Lower-case word tokens without tantivy's operators; a year glued to a word ("FY2018")
    is also searched alone."""
    out = []
    for w in (m.group(0).lower() for m in _WORD.finditer(keyword_form(text))):
        if w in _OPERATORS:
            continue
        out.append(w)
        glued = _GLUED_YEAR.match(w)
        if glued:
            out.append(glued.group(1) or glued.group(2))
    return out


_ANALYZER = None


def stems(text: str) -> list[str]:
    """The words of ``text`` as the index stores them: its :func:`keyword_form`, lower case, English-stemmed
    (tantivy's own analyzer, so that a word matches what BM25 matched: "Herons" → "heron", "predicted" →
    "predict")."""
    marked = _stemmed(text)
    return marked[2:-2].split("\0\0") if marked else []


def stem_counts(text: str, wanted) -> tuple[int, dict[str, int]]:
    """How many words ``text`` has as :func:`stems` gives them, and how often each stem of ``wanted`` is
    among them (those it holds): counted in the remembered form, not in a list made for each call (a read
    counts a question's few terms in every chunk of a filing)."""
    marked = _stemmed(text)
    if not marked:
        return 0, {}
    return marked.count("\0\0") - 1, {w: n for w in wanted if w and (n := marked.count(f"\0{w}\0"))}


SENTENCE_CHARS = 600
"""Texts up to this long (sentences, titles, rows) are remembered apart from longer ones (chunks)."""


def _stemmed(text: str) -> str:
    """The stems of a text, each between two NULs of its own ("\\0\\0heron\\0\\0sale\\0\\0": a word's
    occurrences are counted without overlap), remembered: reads, passages and every turn and ``--parallel``
    run rank the same chunks and sentences by their terms. The last 8,192 chunks (some 2.5 KB each) and the
    last 32,768 shorter texts: a resident process's passages read some 9,000 sentences of the drive's three
    filings, which 8,192 texts in all did not hold from one question to the next (a third of the lookups of
    a question asked again missed)."""
    return (_stemmed_sentence if len(text) <= SENTENCE_CHARS else _stemmed_chunk)(text)


def _analyzed(text: str) -> str:
    global _ANALYZER
    if _ANALYZER is None:
        from tantivy import Filter, TextAnalyzerBuilder, Tokenizer

        _ANALYZER = TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.lowercase()).filter(
            Filter.stemmer("english")).build()
    words = _ANALYZER.analyze(keyword_form(text))
    return "\0\0" + "\0\0".join(words) + "\0\0" if words else ""


_stemmed_sentence = functools.lru_cache(maxsize=32768)(_analyzed)
_stemmed_chunk = functools.lru_cache(maxsize=8192)(_analyzed)


FORMAT = "2"
"""The form of the text the index holds: 1 (no mark) as tantivy's tokenizer cut the raw text; 2 through
:func:`keyword_form`."""
_FORMAT_FILE = "c1-format"


class LexicalIndex:
    TITLE_BOOST = 2.0
    TIES, TIES_MAX = 8, 256
    """Hits fetched past the ``k`` asked for (at most ``TIES_MAX`` in all), so that chunks scoring the same are
    ranked by their id: tantivy orders a tie by where a chunk sits in its segments, which differs from one build
    of the same folder to the next (two copies of a contract swapped places, and a question's confidence
    moved 0.58 ↔ 0.62)."""

    def __init__(self, path: Path, readonly: bool = False):
        """Open (or create) the index in ``path``; ``readonly``: a home that cannot be written (tantivy
        needs a lock file even to read, so a private copy is opened). A damaged index raises ValueError."""
        import tantivy

        self._tantivy = tantivy
        if readonly:
            from c1.store.readonly import private_copy

            path = private_copy(path, "lexical")
        fresh = not (path / "meta.json").exists()
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw")
        builder.add_text_field("doc", stored=False, tokenizer_name="raw")
        builder.add_text_field("title", stored=False, tokenizer_name="en_stem")
        builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
        self.index = tantivy.Index(builder.build(), path=str(path))
        self._writer = None
        self._refilled = False
        if fresh and not readonly:
            self._mark()

    def _mark(self) -> None:
        (self.path / _FORMAT_FILE).write_text(FORMAT + "\n", encoding="utf-8")

    @property
    def outdated(self) -> bool:
        """Whether the index holds text in another form than ``FORMAT`` (written by an older c1)."""
        try:
            return (self.path / _FORMAT_FILE).read_text(encoding="utf-8").strip() != FORMAT
        except OSError:
            return True

    # writing -----------------------------------------------------------------------------
    @property
    def writer(self):
        if self._writer is None:
            self._writer = self.index.writer(heap_size=64_000_000, num_threads=1)
        return self._writer

    def delete_docs(self, doc_ids: Iterable[str]) -> None:
        for doc_id in doc_ids:
            self.writer.delete_documents_by_term("doc", doc_id)

    def add(self, chunk_id: str, doc_id: str, title: str, text: str) -> None:
        self.writer.add_document(self._tantivy.Document(id=chunk_id, doc=doc_id, title=keyword_form(title),
                                                        text=keyword_form(text)))

    def clear(self) -> None:
        """Remove every chunk; the commit after it marks the index as of ``FORMAT`` (it is refilled)."""
        self.writer.delete_all_documents()
        self._refilled = True

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.commit()
            if self._refilled:
                self._mark()
                self._refilled = False

    def close(self) -> None:
        if self._writer is not None:
            self.commit()
            self._writer.wait_merging_threads()
            self._writer = None

    # reading -----------------------------------------------------------------------------
    def search(self, text: str, k: int) -> list[tuple[str, float]]:
        terms = query_terms(text)
        if not terms or k <= 0:
            return []
        self.index.reload()
        query = self.index.parse_query(
            " ".join(terms), ["title", "text"], field_boosts={"title": self.TITLE_BOOST}
        )
        searcher = self.index.searcher()
        hits = searcher.search(query, k + self.TIES).hits
        if len(hits) == k + self.TIES and hits[-1][0] == hits[k - 1][0]:  # a tie runs past what was fetched
            hits = searcher.search(query, k + self.TIES_MAX).hits
        got = sorted(((searcher.doc(addr)["id"][0], float(score)) for score, addr in hits), key=lambda h: (-h[1], h[0]))
        return got[:k]

    def phrase_count(self, text: str, field: str = "text") -> int:
        """How many chunks hold the words of ``text`` in a row (stemmed, as searched) in ``field``:
        ``text`` (the chunk) or ``title`` (its document's identity: title and file-name words)."""
        words = [m.group(0).lower() for m in _WORD.finditer(keyword_form(text))]
        if not words:
            return 0
        self.index.reload()
        query = self.index.parse_query('"' + " ".join(words) + '"', [field])
        return self.index.searcher().search(query, 1, count=True).count

    def count(self) -> int:
        self.index.reload()
        return self.index.searcher().num_docs

    def all_ids(self) -> list[str]:
        """Every stored chunk id, duplicates included (for consistency checks; a set hides them)."""
        self.index.reload()
        searcher = self.index.searcher()
        n = searcher.num_docs
        if n == 0:
            return []
        hits = searcher.search(self._tantivy.Query.all_query(), n).hits
        return [searcher.doc(addr)["id"][0] for _, addr in hits]
