"""The fitted passage order (c1/retrieval/passage_order.py): its weights file, its features, and the order
``passages.choose`` takes its candidates in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from c1.retrieval import passage_order as po
from c1.retrieval import ranker as rk
from c1.retrieval.passages import choose, read
from c1.store.manifest import Chunk

TEXTS = [f"Clause {i} sets the renewal term of the lease at {i + 2} years for the tenant and landlord." for i in range(8)]


class _Corpus:
    """One document of eight chunks, ranked against the question in their order."""

    def __init__(self, docs: str = "d"):
        self.store = {f"{d}_{i}": Chunk(f"{d}_{i}", d, i, 1000 * i, 1000 * i + len(t), None, t)
                      for d in docs for i, t in enumerate(TEXTS)}

    def embed_query(self, text):
        return [1.0]

    def doc(self, doc_id):
        return SimpleNamespace(meta={}, n_chunks=len(TEXTS), title=doc_id, path=doc_id, key=doc_id)

    def doc_chunks(self, doc_id):
        return [c for c in self.store.values() if c.doc_id == doc_id]

    def chunks(self, ids):
        return [self.store[i] for i in ids]

    def rank_chunks(self, chunks, query, vector=None, rerank=False):
        return [(c, 1.0 / (1 + c.n)) for c in chunks]


def _late_best(question, texts):
    """The scorer likes the last clauses best (the chunks' own ranking puts the first ones first)."""
    return [0.1 + 0.1 * int(t.split("Clause ")[1].split()[0]) for t in texts]


def _weights(path, **w) -> None:
    path.write_text(json.dumps({"weights": {f: float(w.get(f, 0.0)) for f in po.FEATURES}}))


def test_the_shipped_weights_hold_every_feature_and_the_command_that_fitted_them():
    weights = po.load()
    assert set(weights.weights) == set(po.FEATURES)
    assert weights.fitted["command"].startswith("python bench/passage_fit.py") and "--write" in weights.fitted["command"]
    assert len(weights.fitted["kinds"]) >= 3, "fitted on the generated questions of several kinds"


def test_a_passage_weights_file_without_every_feature_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "passages.json"
    bad.write_text(json.dumps({"weights": {"score": 1.0}}))
    with pytest.raises(rk.RankerError, match="not a ranker weights file") as got:
        po.load(bad)
    assert "\n" not in str(got.value)


def test_the_fitted_order_takes_the_candidates_its_weights_prefer(tmp_path, monkeypatch):
    """The same reading, two sets of weights: on the scorer's score the first document's five passages are
    its five best-scored clauses; on the chunks' own ranking they are the five first chunks'."""
    monkeypatch.setattr(po, "SHIPPED", tmp_path / "passages.json")
    question = "What is the renewal term of the lease?"

    def clauses() -> set[int]:
        got = choose(_Corpus(), question, ["d"], 4000, scorer=_late_best, lead_chunks=(8, 0), order="fitted")["d"]
        return {int(p.text.split("Clause ")[1].split()[0]) for p in got}

    _weights(po.SHIPPED, score=5.0)
    assert clauses() == {3, 4, 5, 6, 7}
    monkeypatch.setattr(po, "SHIPPED", tmp_path / "other.json")  # another file: weights are read once per file version
    _weights(po.SHIPPED, chunk_place=5.0)
    assert clauses() == {0, 1, 2, 3, 4}
    default = choose(_Corpus(), question, ["d"], 4000, scorer=_late_best, lead_chunks=(8, 0))["d"]
    rules = choose(_Corpus(), question, ["d"], 4000, scorer=_late_best, lead_chunks=(8, 0), order="rules")["d"]
    assert [p.text for p in default] == [p.text for p in rules], "c1 takes its passages in the hand order"
    assert {int(p.text.split("Clause ")[1].split()[0]) for p in rules} == {0, 1, 2, 6, 7}, \
        "the scorer's sure two, then the three best chunks' best sentences"


def test_each_candidate_s_features_are_shares_and_mark_its_document_s_best():
    reading = read(_Corpus("ab"), "What is the renewal term of the lease?", ["a", "b"], _late_best,
                   weights={"a": 1.0, "b": 0.5}, lead_chunks=(8, 2))
    rows = po.features(reading)
    assert len(rows) == len(reading.cands) and set(rows[0]) == set(po.FEATURES)
    assert all(0.0 <= v <= 1.0 for x in rows for v in x.values())
    for doc in "ab":
        mine = [x for c, x in zip(reading.cands, rows) if c.doc_id == doc]
        assert sum(x["doc_best"] for x in mine) == 1 and mine[0]["doc_best"] == 1.0
        assert all(x["first_doc"] == float(doc == "a") for x in mine)
        assert all(x["conf"] == (1.0 if doc == "a" else 0.5) for x in mine)
    assert max(x["share"] for x in rows) == 1.0 and rows[0]["weighted"] == 1.0


NOTE = """# Supply agreement between Acme and Globex

1. Definitions. In this agreement the products are the widgets that Acme makes for Globex in Ohio.

2. Governing Law. This agreement is governed by the laws of the State of Delaware without regard to conflicts.

3. Termination. Either party may end this agreement on ninety days notice given in writing to the other.

| Item | 2022 | 2021 |
|---|---|---|
| Net widget sales | 34,229 | 35,355 |
| Freight and handling costs | 1,204 | 1,190 |
"""


def test_generated_row_and_title_questions_ask_as_people_do_and_point_at_their_passage(new_c1_env):
    """bench/passage_fit.py's question shapes that are not written from their answer's words: a table row
    by its label and a column's year, a clause by its section's name; each one's gold sentence is the row
    or the section's first sentence, found in its document."""
    import sys

    from c1.config import load_settings
    from c1.retrieval.corpus import Corpus

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import passage_fit
    from bench.passages import original_span

    env = new_c1_env("shapes")
    folder = env.root / "corpus"
    folder.mkdir()
    (folder / "supply agreement.md").write_text(NOTE)
    done = env.run("index", folder, "--quiet")
    assert done.rc == 0, done.stderr
    corpus = Corpus(load_settings().with_flags(home=env.env["C1_HOME"], daemon=False))
    try:
        rows = passage_fit.row_questions(corpus, 6, seed=1)
        titles = passage_fit.title_questions(corpus, 6, seed=1)
        assert rows and titles
        for m in rows:
            label = "net widget sales" if "Net widget" in m.sentence else "freight and handling costs"
            assert label in m.question and re.search(r"\b202[12]\b", m.question), m.question
            assert original_span(corpus, m.gold[0], m.sentence) is not None
        for m in titles:
            name, first = (("governing law", "This agreement is governed") if "governing" in m.question else
                           ("termination", "Either party") if "termination" in m.question else ("definitions", "In this"))
            assert m.sentence.startswith(first), (m.question, m.sentence)
            assert original_span(corpus, m.gold[0], m.sentence) is not None
            assert "delaware" not in m.question.lower() and "ninety" not in m.question.lower()
    finally:
        corpus.close()
