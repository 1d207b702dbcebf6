"""Scoring documents against a question from what a run has seen: evidence, confidence, pivots.

Every document a run holds gets features, each in [0, 1]:

- ``sim``: its best visible chunk against the question (the corpus's chunk ranking: 0.7 × cosine of
  the stored vector + 0.3 × term coverage);
- ``anchor``: 1/√rank in the question's own search (``Corpus.hybrid``), 0 if that search did not find it;
- ``named``: the question names it — its title is a name the question mentions, or a title of
  several words that the question writes (capitalised: "political party" names nothing);
- ``rare``: the share (weighted by inverse document frequency) of the question's rare terms — words
  that few chunks of the corpus hold ("proclivity"), or only documents' names ("ingram" of
  ingram-non-disclosure.txt, whose text never says it) — that it contains, its file name included;
- ``phrase``: it contains a phrase the question quotes, or the whole of a short keyword query;
- ``keywords``: the question is a keyword query (a few words, not a question: "heron", a subject
  line) and the document holds every one of its terms — 1/m when m documents held (copies counted
  once) hold them all: a common word singles out nothing;
- ``identity``: its identity (title, file-name words, first page) matches the names and period the
  question asks about (``Corpus.doc_evidence``, long documents only);
- ``link``: a pivot's content mentions its title, weighted by how well the mentioning sentence
  matches the question (the hop of a multi-hop question);
- ``back``: it mentions a pivot's title;
- ``bridge``: it contains a bridge entity of a pivot: a name in a pivot's content that the
  question lacks, the one in the sentence closest to the question first ("Mach's principle … the
  physicist Ernst Mach" → the paragraph that says where Ernst Mach taught);
- ``miss``: the document — all of it in view — holds none of the question's rare terms, or not
  the phrase or all the keywords that another document held does, and nothing above links it to
  the question;
- ``support``: the best similarity of any document held (the same for all: how well the corpus
  answers the question at all; it moves confidences, not the order).

Pivots are the best documents by the features that need no pivot, plus every named document, then
the documents that links lifted. A title that several documents share ("Table of Contents", "UNITED
STATES") names nothing and links nothing; so does a title or name written all over the corpus
(more than ``COMMON`` of its chunks, and more than ``COMMON_MENTIONS`` of them).

The score is a logit, ``BIAS + Σ WEIGHTS[f] × f``, and the confidence is its logistic: the
probability that the document is one a question of this kind needs. The weights were fitted by
logistic regression on the tuning halves of the shared HotpotQA and MuSiQue sets (what the policy
held at the end of each run, gold or not; ``python bench/confidence_fit.py``) and the calibration
is reported on the held-out halves (``python bench/multihop.py``). Documents under ``FLOOR`` are
not returned. The answer's confidences are then calibrated by place over every kind of the development
suite (:func:`answer_confidences`, ``python bench/calibration_fit.py``): the model scores each document
alone and cannot see that the one an answer puts first is what a known-item question asks for.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from c1.retrieval.bridges import BRIDGE_RANK, bridges
from c1.retrieval.confidence import needed_offset
from c1.retrieval.in_view import InView
from c1.retrieval.question_terms import question_terms
from c1.retrieval.ranking import Ranking
from c1.retrieval.terms import STOPWORDS
from c1.retrieval import text as tx
from c1.store.ids import chunk_id
from c1.store.lexical import stems

WEIGHTS = {"sim": 1.48, "anchor": 0.29, "named": 4.14, "rare": 0.0, "phrase": 4.14, "keywords": 4.14, "identity": 1.48,
           "link": 2.36,
           "back": 0.16, "bridge": 0.50, "miss": -1.31, "support": 1.62}
FEATURES = tuple(WEIGHTS)
EVIDENCE = ("named", "rare", "phrase", "keywords", "identity", "link", "back", "bridge")
RELATIONAL = ("link", "back", "bridge")
"""The evidence a document owes to the pivots (see ``_beats``)."""
"""The features that name why a document belongs beyond its similarity to the question and its place in
the question's own search: only these may move a document above one that the question's own search
ranked higher (:func:`anchored_order`). ``miss`` (evidence against) lowers a score, but a document that
lacks something is no reason to put any other above it."""
BIAS = -5.26
FLOOR = 0.02
"""Documents with a lower confidence are not returned."""
COMMON = 0.02
COMMON_MENTIONS = 10
"""A title or name held by more of the corpus's chunks than ``COMMON`` (a share) and ``COMMON_MENTIONS`` is
too common to be a link (:meth:`Ranker.common`)."""
UNSUPPORTED_MAX = 2
"""A question is unsupported when no document held is closer to it than its embedder's ``support_sim``
(never by similarity, for an embedder that declares none) and none is named by it, holds a phrase it
quotes or all its rare terms: at most ``UNSUPPORTED_MAX`` documents are returned for it (each embedder's
value and how it was measured: c1/store/embedders.py)."""
PIVOT_SIM = (0.25, 0.55)
"""A pivot's similarity to the question from which its links count nothing, and fully."""


@dataclass
class DocView:
    """What a run holds of one document: its title and visible chunks (id, text)."""

    doc_id: str
    title: str
    chunks: list[tuple[str, str]]


class Ranker:
    def __init__(self, question: str, searcher=None, weights: dict | None = None, bias: float | None = None,
                 typed: str | None = None):
        """``searcher``: what the ranker looks up in the collection (a :class:`~c1.retrieval.searcher.Searcher`,
        or the Corpus itself: the same lookups); None for text alone. ``typed``: the question as the user wrote it, where ``question`` has its names truecased: a
        quoted phrase is held as written (case and all) only where the user wrote it with a capital."""
        self.searcher = searcher
        self.weights = dict(WEIGHTS if weights is None else weights)
        self.bias = BIAS if bias is None else bias
        self.asked = question_terms(question, question if typed is None else typed, searcher)
        self._stem = {t: (stems(t) or [t])[0] for t in self.asked.weights}
        self._norms: dict[str, str] = {}
        self._words: dict[str, tuple[str, frozenset[str]]] = {}  # chunk id (or title) → (its text, its stems)
        self._bridges: dict[tuple, list[str]] = {}
        self._units: dict[str, list[tuple[str, int]]] = {}
        self.chunk_names: dict[str, tuple] = {}
        """What a chunk gives as bridges (:func:`c1.retrieval.bridges._chunk_names`), by chunk id."""

    # helpers --------------------------------------------------------------------------------
    def normed(self, text: str) -> str:
        got = self._norms.get(text)
        if got is None:
            if len(self._norms) > 4096:
                self._norms.clear()
            got = self._norms[text] = tx.norm(text)
        return got

    def common(self, phrase: str, share: float | None = None) -> bool:
        """A phrase written all over the corpus ("United", "Subject", a page header): its mention links
        nothing in particular. ``share``: of the corpus's chunks (default ``COMMON``)."""
        searcher = self.searcher
        if searcher is None or not hasattr(searcher, "mentions"):
            return False
        share = COMMON if share is None else share
        return searcher.mentions(phrase) > max(COMMON_MENTIONS, share * searcher.size)

    def _stems(self, view: DocView) -> set[str]:
        """The stems of what the run holds of a document now: its title and its visible chunks (each
        chunk stemmed once; the document's set follows the chunks as they are shown, read or pruned)."""
        got = set(self._stemmed("\0" + (view.title or ""), view.title or ""))
        for cid, text in view.chunks:
            got |= self._stemmed(cid, text)
        return got

    def _name_stems(self, doc_id: str) -> frozenset[str]:
        """The stems of the document's file name ("01_Bosch-Automotive-…txt" holds "bosch")."""
        doc = self.searcher.doc(doc_id) if self.searcher is not None and hasattr(self.searcher, "doc") else None
        if doc is None or not doc.path or doc.key != doc.path:
            return frozenset()
        from c1.store.names import file_name_words

        return self._stemmed("\0path\0" + doc_id, file_name_words(doc.path))

    def _stemmed(self, key: str, text: str) -> frozenset[str]:
        got = self._words.get(key)
        if got is None or got[0] != text:
            got = self._words[key] = (text, frozenset(stems(text)))
        return got[1]

    def units(self, chunk_id: str, text: str) -> list[tuple[str, int]]:
        """(normalised sentence, question terms it holds) of a chunk's content."""
        got = self._units.get(chunk_id)
        if got is None:
            q_terms = set(self.asked.terms)
            got = []
            for s, e in tx.units(text):
                n = self.normed(text[s:e])
                got.append((n, len(q_terms & set(n.split()))))
            self._units[chunk_id] = got
        return got

    # scoring --------------------------------------------------------------------------------
    def score(self, f: dict[str, float]) -> float:
        return self.bias + sum(self.weights.get(k, 0.0) * v for k, v in f.items())

    def evidence(self, f: dict[str, float]) -> float:
        """The evidence that may move a document above another (:func:`anchored_order`): what the
        ``EVIDENCE`` features add to the logit, except that a pivot's mention of a document the question
        names (``link``) adds nothing: the question's own mention explains it (the pivots were found by
        the question's words)."""
        own = sum(self.weights.get(k, 0.0) * f.get(k, 0.0) for k in EVIDENCE if k not in RELATIONAL)
        return own + self.relational(f)

    def relational(self, f: dict[str, float]) -> float:
        """The part of :meth:`evidence` that links, back-links and bridges from pivots give."""
        return sum(self.weights.get(k, 0.0) * f.get(k, 0.0) for k in RELATIONAL if not (k == "link" and f.get("named")))

    def rank(self, docs: dict[str, DocView], own: list[str], qsim: dict[str, float]) -> Ranking:
        """Score every document of ``docs``; ``own``: the question's own search, in document order;
        ``qsim``: each chunk's similarity to the question. Each document's own features first
        (:meth:`_own_features`), then the links, back-links and bridges from the best of them
        (:meth:`_linked`), which can lift others."""
        read = InView(self, docs)
        feats = self._own_features(docs, own, qsim, read)
        scores, pivots, bridges, sources = self._linked(docs, feats, read)
        return self._ranking(scores, feats, pivots, bridges, sources)

    def _own_features(self, docs: dict[str, DocView], own: list[str], qsim: dict[str, float],
                      read: "InView") -> dict[str, dict[str, float]]:
        """Each document's features by itself: its similarity, its place in the question's own search, the
        names, rare terms, phrases and keywords of the question it holds, its identity evidence."""
        asked = self.asked
        first_rank = {d: i for i, d in enumerate(own, start=1)}
        identity = self.searcher.doc_evidence(asked.text, list(docs)) if hasattr(self.searcher, "doc_evidence") else {}
        have = {d: self._stems(v) | self._name_stems(d) for d, v in docs.items()} if asked.rare else {d: set() for d in docs}
        feats: dict[str, dict[str, float]] = {}
        for d, view in docs.items():
            rank = first_rank.get(d)
            feats[d] = {
                "sim": max((qsim.get(c, 0.0) for c, _ in view.chunks), default=0.0),
                "anchor": 1.0 / math.sqrt(rank) if rank else 0.0,
                "named": self._named(read.titles[d], read.raw[d]),
                "rare": self._rare(have[d]),
                "phrase": float(any(f" {p} " in read.norms[d] for p in asked.phrases)
                                and all(e.search(f"{read.raw[d]}\n{read.texts[d]}") for e in asked.exact)),
                "keywords": self._all_terms(view),
                "identity": identity.get(d, 0.0),
                "link": 0.0, "back": 0.0, "bridge": 0.0, "miss": 0.0,
            }
        if any(f["phrase"] for f in feats.values()):  # the words as written beat the words scattered
            for f in feats.values():
                f["keywords"] = f["keywords"] if f["phrase"] else 0.0
        distinct: list[frozenset] = []  # what all the terms single out: one message (in copies), or one of many
        for d, f in feats.items():
            if f["keywords"] and not any(_copies(read.bodies[d], b) for b in distinct):
                distinct.append(read.bodies[d])
        for f in feats.values():
            f["keywords"] /= max(1, len(distinct))
        by_title: dict[str, list[str]] = {}
        for d in docs:
            if feats[d]["named"]:
                by_title.setdefault(tx.strip_article(read.titles[d]), []).append(d)
        for same in by_title.values():  # "The Deep Blue Sea" names the play and two films: the closest fully
            same.sort(key=lambda d: -feats[d]["sim"])
            for d in same[1:]:
                feats[d]["named"] = 0.5
        support = max((f["sim"] for f in feats.values()), default=0.0)
        for f in feats.values():
            f["support"] = support
        return feats

    def _linked(self, docs: dict[str, DocView], feats: dict[str, dict[str, float]], read: "InView"):
        """The documents' scores with the links, back-links and bridges from the pivots (the best three by
        their own features, and those the question names), twice: from the first pivots, then from the
        documents those links lifted. Returns (scores, pivots, bridges of each pivot, each document's
        pivots that relate to it)."""
        first = {d: self.score(f) for d, f in feats.items()}
        order = sorted(docs, key=lambda d: -first[d])
        linkable = {d: t for d, t in read.titles.items() if _mentions_ok(t) and not self.common(t)}
        pivots = order[:3] + [d for d in order[3:] if feats[d]["named"]]
        bridges: dict[str, list[str]] = {}
        scores = first
        sources: dict[str, set] = {}
        for _ in range(2):
            sources = {d: set() for d in docs}
            for d in docs:
                feats[d]["link"] = feats[d]["back"] = feats[d]["bridge"] = 0.0
            for i, p in enumerate(pivots):
                if p not in bridges:
                    bridges[p] = self.bridges(docs[p], read.titles[p])
                self._from_pivot(docs, feats, read, linkable, p, i, bridges[p], sources)
            self._misses(feats, read.whole)
            scores = {d: self.score(feats[d]) for d in docs}
            lifted = [d for d in sorted(docs, key=lambda d: -scores[d])[:3] if d not in pivots]
            if not lifted:
                break
            pivots += lifted
        return scores, pivots, bridges, sources

    def _from_pivot(self, docs: dict[str, DocView], feats: dict[str, dict[str, float]], read: "InView",
                    linkable: dict[str, str], p: str, i: int, bridges: list[str], sources: dict[str, set]) -> None:
        """What pivot ``p`` (the ``i``-th) gives each other document: a link where its sentences mention the
        document's title, a back-link where the document mentions the pivot's, a bridge where the document
        holds one of the pivot's names the question lacks."""
        strength = (1.0 if feats[p]["named"] or i == 0 else 0.6) * self._quality(feats[p])
        sents: list[tuple[str, int]] | None = None  # the pivot's sentences, read where one mentions a title
        ents = [(f" {self.normed(e)} ", w) for w, e in zip(BRIDGE_RANK, bridges)]
        for d in docs:
            if d == p:
                continue
            t = linkable.get(d)
            fwd = 0.0
            if t and f" {t} " in read.norms[p]:
                if sents is None:
                    sents = [u for c, text in docs[p].chunks for u in self.units(c, text)]
                    top_rel = max((r for _, r in sents), default=0) or 1
                for n, rel in sents:
                    if f" {t} " in f" {n} ":
                        fwd = max(fwd, 0.5 + 0.5 * rel / top_rel)
            back = p in linkable and f" {linkable[p]} " in read.norms[d]
            bridge = next((w for e, w in ents if e in read.norms[d]), None)
            if not (fwd or back or bridge is not None) or _copies(read.bodies[d], read.bodies[p]):
                continue  # nothing from this pivot, or a copy of it (a message in several folders)
            f = feats[d]
            f["link"] = max(f["link"], strength * fwd)
            related = strength * fwd > 0
            if back:
                f["back"] = max(f["back"], strength)
                related = related or strength > 0
            if bridge is not None:
                f["bridge"] = max(f["bridge"], strength * bridge)
                related = related or strength * bridge > 0
            if related:
                sources[d].add(p)

    def _misses(self, feats: dict[str, dict[str, float]], whole: dict[str, bool]) -> None:
        """``miss``: a document wholly in view that holds none of what the question asks for (its rare
        terms, where another at least as close to the question holds some; its phrase, its keywords, where
        another holds them) and that nothing links to."""
        asked = self.asked
        found = any(f["phrase"] or f["keywords"] for f in feats.values())
        for d, f in feats.items():
            held = any(g["rare"] and g["sim"] >= f["sim"] for g in feats.values())  # by one at least as close
            lacks = (bool(asked.rare) and not f["rare"] and held) or found
            f["miss"] = float(lacks and not f["phrase"] and not f["keywords"] and whole[d]
                              and not (f["named"] or f["link"] or f["back"] or f["bridge"]))

    def _ranking(self, scores: dict[str, float], feats: dict[str, dict[str, float]], pivots: list[str],
                 bridges: dict[str, list[str]], sources: dict[str, set]) -> Ranking:
        asked = self.asked
        ranking = Ranking(scores, feats, pivots, bridges)
        ranking.evidence_of = {d: self.evidence(f) for d, f in feats.items()}
        ranking.relational = {d: self.relational(f) for d, f in feats.items()}
        ranking.sources = sources
        ranking.quoted_missing = bool(asked.quoted) and not any(f["phrase"] for f in feats.values())
        ranking.support_sim = getattr(getattr(self.searcher, "embedder", None), "support_sim", None)
        ranking.unseen = asked.unseen
        ranking.rare_weight = self.weights.get("named", 0.0)
        ranking.written_found = any(f["phrase"] or f["keywords"] for f in feats.values())
        if ranking.supported():
            ranking.offset = needed_offset(list(scores.values()))
        return ranking

    @staticmethod
    def _quality(f: dict[str, float]) -> float:
        """How far a pivot's links and bridges can be trusted: a document the question names fully, else
        by its own similarity to the question (nothing under ``PIVOT_SIM[0]``, fully from ``PIVOT_SIM[1]``):
        a nonsense question's best match leads nowhere."""
        if f["named"] >= 1.0 or f["phrase"]:
            return 1.0
        low, high = PIVOT_SIM
        return min(1.0, max(0.0, (f["sim"] - low) / (high - low)))

    def _named(self, title: str, written: str = "") -> float:
        """The question names the document: its (cleaned) title is one of the question's names, or a
        title of several words that the question writes with a capital (half when the title is only a
        part of a longer name the question gives: "Lynn Turner" in "Joe Lynn Turner"). ``written``: the
        title as the document writes it (its capitals)."""
        if not title or self.common(title):  # "CONFIDENTIAL INFORMATION", the first line of every NDA, names none
            return 0.0
        bare = tx.strip_article(title)
        if bare in self.asked.entities:
            return 1.0
        if " " not in title or f" {title} " not in self.asked.norm:
            return 0.0
        pattern = r"\W+".join(re.escape(w) for w in title.split())
        folded = _fold(self.asked.text)
        m = re.search(pattern, folded, re.IGNORECASE)
        if not m:
            return 0.0
        title_words = re.findall(r"\w+", _fold(tx.without_suffix(written) or title))
        asked_words = re.findall(r"\w+", folded[m.start():m.end()])
        if not _capital_in_common(title_words, asked_words, at_start=not folded[:m.start()].strip()):
            return 0.0
        longer = any(f" {bare} " in f" {e} " and e != bare for e in self.asked.entities)
        return 0.5 if longer else 1.0

    def _whole(self, doc_id: str, seen: int) -> bool:
        doc = self.searcher.doc(doc_id) if self.searcher is not None and hasattr(self.searcher, "doc") else None
        return doc is None or doc.n_chunks <= seen

    def _all_terms(self, view: DocView) -> float:
        """1 when the question is a keyword query and one visible chunk of the document (with its title)
        holds every one of its terms: together, not scattered over a long newsletter."""
        terms = self.asked.keywords
        if not terms:
            return 0.0
        title = self._stemmed("\0" + (view.title or ""), view.title or "")
        return float(any(all(self._stem[t] in title or self._stem[t] in self._stemmed(cid, text) for t in terms)
                         for cid, text in view.chunks))

    def _rare(self, have: set[str]) -> float:
        rare = self.asked.rare
        if not rare:
            return 0.0
        hit = sum(w for t, w in rare.items() if self._stem[t] in have)
        return hit / sum(rare.values())

    def bridges(self, doc: DocView, title: str) -> list[str]:
        """The document's bridges (:func:`c1.retrieval.bridges.bridges`), once for each title and set of its chunks."""
        key = (doc.doc_id, title, tuple(c for c, _ in doc.chunks))
        if key not in self._bridges:
            self._bridges[key] = bridges(self, doc, title)
        return self._bridges[key]

    # justification --------------------------------------------------------------------------
    def justification(self, doc: DocView, qsim: dict[str, float], ranking: Ranking | None = None) -> str:
        """One readable sentence of one of the document's visible chunks (:func:`c1.retrieval.justification.justify`)."""
        from c1.retrieval.justification import justify

        return justify(self, doc, qsim, ranking)

COPY = 0.8
"""Two documents whose content words overlap this much (Jaccard) are copies: they evidence nothing
about each other."""


def _copies(a: frozenset, b: frozenset) -> bool:
    if not a or not b:
        return a == b
    small, large = sorted((len(a), len(b)))
    if small < COPY * large:
        return False
    return len(a & b) >= COPY * len(a | b)


def _mentions_ok(title_norm: str) -> bool:
    """A title specific enough that its mention in a text is a link."""
    return bool(title_norm) and len(title_norm) >= 4 and title_norm not in STOPWORDS


def _capital_in_common(title: list[str], written: list[str], at_start: bool) -> bool:
    """Whether the question writes one of a title's words with a capital where the title does too: the
    capital of a title's first word is a title's, not a name's ("Political party" is named neither by
    "political Party", whose capital comes from "Socialist Party", nor at the question's start)."""
    proper = any(x[:1].isupper() for x in title[1:])  # a name of several capitalised words
    return any(t[:1].isupper() and w[:1].isupper() and (i > 0 or (proper and not at_start))
               for i, (t, w) in enumerate(zip(title, written)))


def _fold(text: str) -> str:
    """Accents removed, apostrophe-s kept apart (so that word patterns of a normalised title match)."""
    if not text.isascii():
        import unicodedata

        text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    return re.sub(r"['’]s\b", " ", text)


@dataclass
class ChunkText:
    """What ``Corpus.rank_chunks`` needs of a chunk."""

    id: str
    text: str


def views_of(visible: dict, titles: dict[str, str] | None = None) -> dict[str, DocView]:
    """A run's visible chunks (chunk id → ``context.Shown``) as one view per document; ``titles``:
    the titles to use where known (else the chunk's)."""
    views: dict[str, DocView] = {}
    for cid, s in visible.items():
        view = views.get(s.doc_id)
        if view is None:
            view = views[s.doc_id] = DocView(s.doc_id, (titles or {}).get(s.doc_id, s.title or ""), [])
        view.chunks.append((cid, s.text))
    return views


def similarities(corpus, question: str, vector, chunks: list[tuple[str, str, str]]) -> dict[str, float]:
    """Each (chunk id, title, text)'s similarity to the question: the corpus's own re-ranker over
    "title. text", the form in which the policy scores what it holds."""
    items = [ChunkText(cid, f"{title}. {text}") for cid, title, text in chunks]
    return {item.id: score for item, score in corpus.rank_chunks(items, question, vector)}


def document_order(hits) -> list[str]:
    """The documents of a search's hits, in the order of their first hit."""
    return list(dict.fromkeys(h.doc.doc_id for h in hits))


def confidences(question: str, corpus, visible: dict, doc_ids: list[str]) -> dict[str, float]:
    """Confidences for documents a run returned without any (a model's answer): the evidence model
    over what that run saw (``visible``: chunk id → ``context.Shown``), as the built-in policy
    would have scored them. A returned document the run never saw is scored from its first chunk."""
    if not doc_ids or corpus is None or not hasattr(corpus, "rank_chunks"):
        return {}
    views = views_of(visible)
    for d in doc_ids:
        if d not in views and (rec := corpus.doc(d)) is not None:
            views[d] = DocView(d, rec.title, [(c.id, c.text) for c in corpus.chunks([chunk_id(d, 0)])])
    vector = corpus.embed_query(question)
    qsim = similarities(corpus, question, vector, [(cid, v.title, text) for v in views.values() for cid, text in v.chunks])
    own = document_order(corpus.hybrid(question, corpus.CANDIDATES, vector=vector))
    ranking = Ranker(question, corpus).rank(views, own, qsim)
    return {d: round(ranking.confidence(d), 4) for d in doc_ids if d in ranking.scores}
