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
(more than ``common_share`` of its chunks and ``common_mentions``).

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
from collections import Counter
from dataclasses import dataclass, field

from c1.retrieval.terms import STOPWORDS, content_terms
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
SUPPORTED_SIM = 0.45
"""The default of ``support_sim`` for an embedder that declares none (an --embed-url server)."""
UNSUPPORTED_MAX = 2
"""A question is unsupported when no document held is closer to it than its embedder's ``support_sim``
(``SUPPORTED_SIM`` where it declares none) and none
is named by it, holds a phrase it quotes or all its rare terms: at most ``UNSUPPORTED_MAX``
documents are returned for it (each embedder's value and how it was measured: c1/store/embedders.py)."""
PIVOT_SIM = (0.25, 0.55)
"""A pivot's similarity to the question from which its links count nothing, and fully."""
BRIDGE_SHARE = 0.005
"""A name held by more of the corpus's chunks than this (and than ``common_mentions``) is no bridge:
a section heading of every filing ("Management's Discussion"), a colleague's first name in a mailbox."""
BRIDGES_PER_PIVOT = 3
BRIDGE_RANK = (1.0, 0.6, 0.4)
RARE_MIN = 3
RARE_SHARE = 0.005
"""A question term is rare when at most max(RARE_MIN, RARE_SHARE × chunks) chunks hold it."""
SHORT_QUERY = 4
"""A query of at most this many words and no question word is a phrase to find as written."""
KEYWORDS = 6
"""A query of at most this many words, no question word and no question mark is a keyword query: a
document holding all its terms is what it asks for ("heron", "on-call engineer", a subject line)."""
_QUESTION_WORD = re.compile(r"^\s*(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|did|does|do|can|could|"
                            r"should|would|will|has|have|had|name|list|find|show|tell|give|explain|describe)\b", re.I)


def logistic(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, x))))


def logit(p: float) -> float:
    """The inverse of :func:`logistic` (``p`` held inside (0, 1))."""
    p = min(max(p, 1e-9), 1 - 1e-9)
    return math.log(p / (1 - p))


@dataclass
class DocView:
    """What a run holds of one document: its title and visible chunks (id, text)."""

    doc_id: str
    title: str
    chunks: list[tuple[str, str]]


@dataclass
class Ranking:
    scores: dict[str, float]
    """Logits (see the module docstring); higher is better."""
    features: dict[str, dict[str, float]]
    pivots: list[str]
    bridges: dict[str, list[str]]
    """Each pivot's bridge entities, best first (what the policy follows next)."""
    evidence_of: dict[str, float] = field(default_factory=dict)
    """What the ``EVIDENCE`` features add to each document's logit."""
    relational: dict[str, float] = field(default_factory=dict)
    """The part of it that links, back-links and bridges from pivots give."""
    sources: dict[str, set] = field(default_factory=dict)
    """The pivots each document's links, back-links and bridges came from."""

    offset: float = 0.0
    """Added to every logit for the confidences (see ``Ranker.rank``): a question that something held
    supports needs at least one document."""

    def confidence(self, doc_id: str) -> float:
        return logistic(self.scores[doc_id] + self.offset)

    def fitted(self, doc_id: str) -> float:
        """The evidence model's own probability, unshifted: what ``FLOOR`` and pruning compare."""
        return logistic(self.scores[doc_id])

    quoted_missing: bool = False
    """The question quotes a phrase that no document held holds."""
    support_sim: float = SUPPORTED_SIM
    """The similarity that supports a question, for the embedder that made the similarities."""
    unseen: int = 0
    """The question's content words that no chunk holds (:attr:`Asked.unseen`)."""
    rare_weight: float = 0.0
    """What holding all the question's rare terms is worth to the search's first document (the weight
    of a name: see ``FIRST_RARE``)."""
    written_found: bool = False
    """Some document held holds the question's phrase, or all its keywords, as asked: one that lacks
    them (``miss``) is not what the question asks for."""

    def supported(self) -> bool:
        """Whether anything held supports the question (see ``SUPPORTED_SIM``): a document the question
        names, or one that holds its phrase, all its keywords or all its rare terms, or that is close to it
        — unless the question quotes a phrase that nothing held holds (the words as written are what it asks)."""
        if any(f["named"] >= 1.0 or f["phrase"] for f in self.features.values()):
            return True
        if self.quoted_missing:
            return False
        rare_ok = not self.unseen  # all its rare terms, of a question whose every word the corpus holds
        return any(f["sim"] >= self.support_sim or f["keywords"] or (rare_ok and f["rare"] >= 1.0)
                   for f in self.features.values())

    def order(self) -> list[str]:
        return sorted(self.scores, key=lambda d: -self.scores[d])

    def evidence(self, doc_id: str) -> float:
        """The part of the document's logit that ``EVIDENCE`` features give (see ``Ranker.evidence``)."""
        return self.evidence_of.get(doc_id, 0.0)


def anchored_order(ranking: Ranking, anchor: list[str], docs: list[str]) -> list[str]:
    """``docs`` in the order of the question's own search (``anchor``; documents it did not return
    after it, by score), departing from it only on evidence: a document moves above one ranked
    higher only when its score is higher *and* its evidence (``EVIDENCE``: named, linked, bridged,
    identity, a rare term, a phrase, all the keywords — or the other's miss) is higher. Similarity
    alone never reorders what one search returned, so the run cannot end below that search because
    a sub-search brought in something merely similar; the reason for every departure is a feature
    a test can name."""
    pos = {d: i for i, d in enumerate(anchor)}
    scores = ranking.scores
    start = sorted(docs, key=lambda d: (pos.get(d, len(pos)), -scores.get(d, 0.0)))
    first = anchor[0] if anchor else None
    guard = (ranking.rare_weight * FIRST_RARE * ranking.features.get(first, {}).get("rare", 0.0)) if first else 0.0
    out: list[str] = []
    for d in start:
        i = len(out)
        while i > 0 and _beats(ranking, d, out[i - 1], guard if out[i - 1] == first else 0.0):
            i -= 1
        out.insert(i, d)
    return out


FIRST_RARE = 1.0
"""The question's own first document keeps the first place against a document with more evidence unless
that one's lead also beats ``FIRST_RARE`` × the weight of a name for each share of the question's rare
terms the first holds ("Bansaan", "WDXQ": words few chunks hold). The logistic fit gave ``rare`` no
weight in the logit (over every document held, the similarity and the search's rank carry it), and as
evidence for *every* place it would lift the distractors that a multi-hop question's words retrieve above
the second hop that a link found (measured: HotpotQA full recall 0.940 → 0.890). For the first place it
is what tells the first hop from a document whose title the question merely mentions ("Nobel Prize in
Physics", "FA Cup"). Measured on the suite (``bench/suite.py --limit 100``, bge-small): rank 1 of
HotpotQA 0.850 → 0.870, MuSiQue 0.737 → 0.778, full recall unchanged (0.940, 0.404), no other kind
changed."""

EVIDENCE_MARGIN = 0.25
"""How much more evidence (in logit units: half a bridge, a sixth of a full identity match) a document
needs to go above one ranked higher by the question's own search; smaller differences are ties, and a
tie keeps the search's order."""


def _beats(ranking: Ranking, d: str, other: str, guard: float = 0.0) -> bool:
    """``d`` goes above ``other``: a higher score and more evidence. What ``d`` owes to ``other`` (a link
    or a bridge from it: it is needed *beside* ``other``) does not count against ``other``, nor what
    ``other`` owes to ``d`` against ``d``."""
    if ranking.scores.get(d, -1e9) <= ranking.scores.get(other, -1e9):
        return False
    mine, theirs = ranking.evidence(d), ranking.evidence(other)
    if other in ranking.sources.get(d, ()):
        mine -= ranking.relational.get(d, 0.0)
    if d in ranking.sources.get(other, ()):  # and the other way round: two filings of one company bridge to each other
        theirs -= ranking.relational.get(other, 0.0)
    return mine > theirs + guard + EVIDENCE_MARGIN


NEEDED = 1.0
"""A question that what the run holds supports needs at least this many documents: the confidences of all
the documents held add up to at least it (``needed_offset``)."""


def needed_offset(logits: list[float], needed: float = NEEDED) -> float:
    """The smallest c ≥ 0 with Σ logistic(logit + c) ≥ ``needed``: the evidence model's logits were fitted
    on multi-hop sets, where most documents a run holds are distractors; on a corpus of another kind the
    same features give lower logits to every document alike. Shifting them all keeps their order and
    their odds ratios, and makes the probabilities mean what they say: a question that something supports
    needs at least one document."""
    if not logits or sum(logistic(x) for x in logits) >= needed or len(logits) < needed:
        return 0.0
    lo, hi = 0.0, 30.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if sum(logistic(x + mid) for x in logits) >= needed:
            hi = mid
        else:
            lo = mid
    return hi


CALIBRATION = (0.666, -0.902, 1.848)
"""The answer's calibration, ``(slope, bias, first)``: see :func:`calibrated` (fitted by
``python bench/calibration_fit.py`` over the development suite's kinds)."""


def calibrated(confidence: float, place: int, params: tuple[float, float, float] = CALIBRATION) -> float:
    """The probability that the document at ``place`` (0 = first) of an answer is needed, from the evidence
    model's ``confidence``: ``σ(slope × logit(confidence) + bias + first × [place = 0])``. The evidence
    model scores each document alone and was fitted on multi-hop questions; what it cannot see is that the
    document a whole answer puts first is the one a known-item question asks for (a contract, a filing,
    a mail: right at rank 1 for nearly every question at confidences of 0.2-0.5). Increasing in
    ``confidence`` and lifting only the first place, it keeps a ranked answer's order and its confidences
    non-increasing."""
    slope, bias, first = params
    return logistic(slope * logit(confidence) + bias + (first if place == 0 else 0.0))


def uncalibrated(confidence: float, place: int, params: tuple[float, float, float] = CALIBRATION) -> float:
    """The inverse of :func:`calibrated` (for refitting from saved answers)."""
    slope, bias, first = params
    return logistic((logit(confidence) - bias - (first if place == 0 else 0.0)) / slope)


def answer_confidences(values: list[float]) -> list[float]:
    """A ranked answer's confidences from the evidence model's: non-increasing (:func:`monotone`), then
    calibrated by place (:func:`calibrated`)."""
    return [calibrated(v, i) for i, v in enumerate(monotone(values))]


def monotone(values: list[float]) -> list[float]:
    """The closest non-increasing sequence to ``values`` (pool adjacent violators, equal weights): the
    confidences of a ranked list, so that a document ranked higher is never less likely than one below it."""
    blocks: list[list[float]] = []  # [sum, count]
    for v in values:
        blocks.append([v, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    out = []
    for s, n in blocks:
        out += [s / n] * n
    return out


@dataclass
class Asked:
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


class Ranker:
    def __init__(self, question: str, searcher=None, common_mentions: int = 10, common_share: float = 0.02,
                 weights: dict | None = None, bias: float | None = None, typed: str | None = None):
        """``searcher``: what the ranker looks up in the collection (a :class:`~c1.retrieval.searcher.Searcher`,
        or the Corpus itself: the same lookups); None for text alone. ``typed``: the question as the user wrote it, where ``question`` has its names truecased: a
        quoted phrase is held as written (case and all) only where the user wrote it with a capital."""
        self.searcher = searcher
        self.common_mentions = common_mentions
        self.common_share = common_share
        self.weights = dict(WEIGHTS if weights is None else weights)
        self.bias = BIAS if bias is None else bias
        self.asked = self._analyse(question, question if typed is None else typed)
        self._stem = {t: (stems(t) or [t])[0] for t in self.asked.weights}
        self._norms: dict[str, str] = {}
        self._words: dict[str, tuple[str, frozenset[str]]] = {}  # chunk id (or title) → (its text, its stems)
        self._bridges: dict[tuple, list[str]] = {}
        self._units: dict[str, list[tuple[str, int]]] = {}

    # the question ---------------------------------------------------------------------------
    def _analyse(self, question: str, typed: str) -> Asked:
        terms = content_terms(question)
        rare, weights, unseen = {}, {t: 1.0 for t in terms}, 0
        size = getattr(self.searcher, "size", 0)
        if size and hasattr(self.searcher, "mentions"):
            limit = max(RARE_MIN, RARE_SHARE * size)
            for t in terms:
                base = t[:-2] if t.endswith("'s") else t  # "ingram's": the corpus counts "ingram"
                df = self.searcher.mentions(base)
                if df == 0 and hasattr(self.searcher, "name_mentions"):
                    # only documents' names hold it ("ingram" of ingram-non-disclosure.txt, whose text
                    # never says it): as rare as the chunks of the documents so named
                    df = self.searcher.name_mentions(base)
                weights[t] = math.log(1 + size / (df + 1))
                if 0 < df <= limit and len(t) >= 3 and not t.isdigit():
                    rare[t] = math.log(1 + size / df)
                unseen += df == 0 and len(t) >= 3 and not t.isdigit()
        phrases = [tx.norm(q) for q in tx.quoted(question)]
        words = tx.norm(question).split()
        keywords = len(words) <= KEYWORDS and not _QUESTION_WORD.match(question) and not question.rstrip().endswith("?")
        if not phrases and keywords and 1 < len(words) <= SHORT_QUERY:
            phrases = [tx.norm(question)]
        exact = [re.compile(r"(?<!\w)" + r"\W+".join(re.escape(w) for w in q.split()) + r"(?!\w)")
                 for q in tx.quoted(typed) if any(ch.isupper() for ch in q) and q.split()]
        return Asked(question, f" {tx.norm(question)} ", terms,
                     {tx.strip_article(tx.norm(e)) for e in tx.question_entities(question)}, weights, rare,
                     [p for p in phrases if p], [n for q in tx.quoted(question) if (n := tx.norm(q))],
                     terms if keywords else [], exact, unseen)

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
        nothing in particular. ``share``: of the corpus's chunks (default ``common_share``)."""
        searcher = self.searcher
        if searcher is None or not hasattr(searcher, "mentions"):
            return False
        share = self.common_share if share is None else share
        return searcher.mentions(phrase) > max(self.common_mentions, share * searcher.size)

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
        ``qsim``: each chunk's similarity to the question."""
        asked = self.asked
        raw = {d: v.title or "" for d, v in docs.items()}
        shared = {tx.clean_title(t) for t, n in Counter(raw.values()).items() if n > 1}
        titles = {d: ("" if tx.clean_title(t) in shared else tx.clean_title(t)) for d, t in raw.items()}
        texts = {d: " ".join(t for _, t in v.chunks) for d, v in docs.items()}
        norms = {d: f" {self.normed(raw[d])} {self.normed(texts[d])} " for d in docs}
        bodies = {d: frozenset(self.normed(tx.content(texts[d])).split()) for d in docs}
        first_rank = {d: i for i, d in enumerate(own, start=1)}
        whole = {d: self._whole(d, len(v.chunks)) for d, v in docs.items()}  # all of it is in view
        identity = self.searcher.doc_evidence(asked.text, list(docs)) if hasattr(self.searcher, "doc_evidence") else {}
        have = {d: self._stems(v) | self._name_stems(d) for d, v in docs.items()} if asked.rare else {d: set() for d in docs}
        feats: dict[str, dict[str, float]] = {}
        for d, view in docs.items():
            rank = first_rank.get(d)
            feats[d] = {
                "sim": max((qsim.get(c, 0.0) for c, _ in view.chunks), default=0.0),
                "anchor": 1.0 / math.sqrt(rank) if rank else 0.0,
                "named": self._named(titles[d], raw[d]),
                "rare": self._rare(have[d]),
                "phrase": float(any(f" {p} " in norms[d] for p in asked.phrases)
                                and all(e.search(f"{raw[d]}\n{texts[d]}") for e in asked.exact)),
                "keywords": self._all_terms(view),
                "identity": identity.get(d, 0.0),
                "link": 0.0, "back": 0.0, "bridge": 0.0, "miss": 0.0,
            }
        if any(f["phrase"] for f in feats.values()):  # the words as written beat the words scattered
            for f in feats.values():
                f["keywords"] = f["keywords"] if f["phrase"] else 0.0
        distinct: list[frozenset] = []  # what all the terms single out: one message (in copies), or one of many
        for d, f in feats.items():
            if f["keywords"] and not any(_copies(bodies[d], b) for b in distinct):
                distinct.append(bodies[d])
        for f in feats.values():
            f["keywords"] /= max(1, len(distinct))
        by_title: dict[str, list[str]] = {}
        for d in docs:
            if feats[d]["named"]:
                by_title.setdefault(tx.strip_article(titles[d]), []).append(d)
        for same in by_title.values():  # "The Deep Blue Sea" names the play and two films: the closest fully
            same.sort(key=lambda d: -feats[d]["sim"])
            for d in same[1:]:
                feats[d]["named"] = 0.5
        support = max((f["sim"] for f in feats.values()), default=0.0)
        for f in feats.values():
            f["support"] = support
        first = {d: self.score(f) for d, f in feats.items()}
        order = sorted(docs, key=lambda d: -first[d])
        linkable = {d: t for d, t in titles.items() if _mentions_ok(t) and not self.common(t)}
        pivots = order[:3] + [d for d in order[3:] if feats[d]["named"]]
        bridges: dict[str, list[str]] = {}
        scores = first
        sources: dict[str, set] = {}
        for _ in range(2):  # links from the first pivots, then from the documents those links lifted
            sources = {d: set() for d in docs}
            for d in docs:
                feats[d]["link"] = feats[d]["back"] = feats[d]["bridge"] = 0.0
            for i, p in enumerate(pivots):
                strength = (1.0 if feats[p]["named"] or i == 0 else 0.6) * self._quality(feats[p])
                sents = [u for c, t in docs[p].chunks for u in self.units(c, t)]
                top_rel = max((r for _, r in sents), default=0) or 1
                if p not in bridges:
                    bridges[p] = self.bridges(docs[p], titles[p])
                ents = [(f" {self.normed(e)} ", BRIDGE_RANK[j]) for j, e in enumerate(bridges[p][:BRIDGES_PER_PIVOT])]
                for d in docs:
                    if d == p or _copies(bodies[d], bodies[p]):  # itself, or a copy (a message in several folders)
                        continue
                    t = linkable.get(d)
                    fwd = 0.0
                    if t and f" {t} " in norms[p]:
                        for n, rel in sents:
                            if f" {t} " in f" {n} ":
                                fwd = max(fwd, 0.5 + 0.5 * rel / top_rel)
                    f = feats[d]
                    f["link"] = max(f["link"], strength * fwd)
                    related = strength * fwd > 0
                    if p in linkable and f" {linkable[p]} " in norms[d]:
                        f["back"] = max(f["back"], strength)
                        related = related or strength > 0
                    for e, w in ents:
                        if e in norms[d]:
                            f["bridge"] = max(f["bridge"], strength * w)
                            related = related or strength * w > 0
                            break
                    if related:
                        sources[d].add(p)
            found = any(f["phrase"] or f["keywords"] for f in feats.values())
            for d, f in feats.items():
                lacks = (bool(asked.rare) and not f["rare"]) or found
                f["miss"] = float(lacks and not f["phrase"] and not f["keywords"] and whole[d]
                                  and not (f["named"] or f["link"] or f["back"] or f["bridge"]))
            scores = {d: self.score(feats[d]) for d in docs}
            lifted = [d for d in sorted(docs, key=lambda d: -scores[d])[:3] if d not in pivots]
            if not lifted:
                break
            pivots += lifted
        ranking = Ranking(scores, feats, pivots, bridges)
        ranking.evidence_of = {d: self.evidence(f) for d, f in feats.items()}
        ranking.relational = {d: self.relational(f) for d, f in feats.items()}
        ranking.sources = sources
        ranking.quoted_missing = bool(asked.quoted) and not any(f["phrase"] for f in feats.values())
        ranking.support_sim = getattr(getattr(self.searcher, "embedder", None), "support_sim", SUPPORTED_SIM)
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

    # justification --------------------------------------------------------------------------
    def justification(self, doc: DocView, qsim: dict[str, float], ranking: Ranking | None = None) -> str:
        """One readable sentence of one of the document's visible chunks (:func:`c1.retrieval.passages.justify`)."""
        from c1.retrieval.passages import justify

        return justify(self, doc, qsim, ranking)

    # bridges --------------------------------------------------------------------------------
    def bridges(self, doc: DocView, title: str) -> list[str]:
        """Names in the document's content that the question lacks, best sentence first: not its
        own title, not a date, a year, a bare first name, a capitalised word that only starts
        sentences, or a name written all over the corpus."""
        key = (doc.doc_id, tuple(c for c, _ in doc.chunks))
        got = self._bridges.get(key)
        if got is not None:
            return got
        q_lower = self.asked.text.lower()
        terms = set(self.asked.terms)
        body = "\n".join(tx.content(t) for _, t in doc.chunks)
        firsts = tx.bare_first_names(body)
        scored: dict[str, float] = {}
        pos = 0
        for _, text in doc.chunks:
            for s, e in tx.units(text):
                sent = text[s:e]
                words = set(re.findall(r"[\w']+", sent.lower()))
                rel = sum(1 for t in terms if t in words)
                for ent in tx.entities(sent):
                    low = ent.lower()
                    first = ent.split()[0]
                    if low in q_lower or len(ent) < 3 or tx.YEAR.match(ent) or any(w in tx.CALENDAR for w in ent.split()):
                        continue
                    n = self.normed(ent)
                    if not n or n == title or n in title or n in STOPWORDS:
                        continue
                    if " " not in ent and (ent in firsts or not _mid_sentence(body, ent)):
                        continue
                    score = rel - 0.1 * pos
                    if score > scored.get(ent, -1e9):
                        scored[ent] = score
                pos += 1
        picks = sorted(scored, key=lambda e: -scored[e])
        out = [e for e in picks[: 4 * BRIDGES_PER_PIVOT] if not self.common(e, BRIDGE_SHARE)][:BRIDGES_PER_PIVOT + 1]
        self._bridges[key] = out
        return out


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


_BEFORE_NAME = frozenset("abcdefghijklmnopqrstuvwxyz0123456789,;:)")


def _mid_sentence(text: str, word: str) -> bool:
    r"""``word`` occurs capitalised after a lower-case word or a comma somewhere in ``text``: a name,
    not a capitalised word that only starts sentences ("Effective January 1, …"). The same as
    ``re.search(r"[a-z0-9,;:)]\s+WORD(?!\w)")``, read from the word's own occurrences (a filing's text is
    long and a run asks this of every one-word name in it)."""
    n, i = len(word), text.find(word)
    while i != -1:
        after = text[i + n:i + n + 1]
        if not (after.isalnum() or after == "_"):
            j = i - 1
            while j >= 0 and text[j].isspace():
                j -= 1
            if 0 <= j < i - 1 and text[j] in _BEFORE_NAME:
                return True
        i = text.find(word, i + 1)
    return False


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
