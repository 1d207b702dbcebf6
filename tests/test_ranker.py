"""The fitted document ranker (c1/retrieval/ranker.py), its questions (c1/train/extractive.py) and
``c1 train ranker``."""

from __future__ import annotations

import json
import random

import pytest

from c1.retrieval import ranker as rk


def _row(**values) -> dict:
    return {f: float(values.get(f, 0.0)) for f in rk.FEATURES}


def test_fit_weights_the_feature_that_tells_gold_from_the_rest():
    rng = random.Random(3)
    groups = []
    for _ in range(60):  # the gold document is the named one; similarity is noise
        rows = [_row(sim=rng.random(), named=float(i == 0), own=1.0) for i in range(5)]
        groups.append(rk.Group(rows, [True] + [False] * 4))
    w = rk.fit(groups, l2=0.1)
    assert w["named"] > 2.0
    assert abs(w["sim"]) < 0.5 * w["named"]
    assert w["own"] == pytest.approx(0.0, abs=1e-6)  # the same for every document: nothing to learn


def test_fit_learns_nothing_from_questions_without_a_contrast():
    rows = [_row(sim=0.9, named=1.0), _row(sim=0.1)]
    only_gold = rk.Group(rows, [True, True])
    no_gold = rk.Group(rows, [False, False])
    assert all(v == 0.0 for v in rk.fit([only_gold, no_gold]).values())


def test_a_fit_from_a_prior_moves_only_as_far_as_its_questions_show():
    prior = {f: 0.0 for f in rk.FEATURES} | {"sim": 3.0, "first": 1.0}
    rows = [_row(sim=0.9, named=1.0), _row(sim=0.1)]
    assert rk.fit([rk.Group(rows, [True, True])], prior=prior) == pytest.approx(prior)  # nothing to learn
    rng = random.Random(4)
    groups = [rk.Group([_row(sim=rng.random(), named=float(i == 0)) for i in range(4)], [True, False, False, False])
              for _ in range(40)]
    moved = rk.fit(groups, l2=1.0, prior=prior)
    assert moved["named"] > 1.0 and moved["first"] == pytest.approx(1.0)  # "first" is 0 everywhere: it stays


def test_order_follows_the_score_and_ties_keep_the_question_s_own_search():
    zero = rk.RankerWeights({f: 0.0 for f in rk.FEATURES})
    feats = {"c": {"sim": 0.9}, "a": {"sim": 0.1}, "b": {"sim": 0.5}}
    assert rk.order(zero, feats, ["b", "a"], k=5) == ["b", "a", "c"]  # c: not in the own search, last
    by_sim = rk.RankerWeights({**{f: 0.0 for f in rk.FEATURES}, "sim": 1.0})
    assert rk.order(by_sim, feats, ["b", "a"], k=5) == ["c", "b", "a"]


def test_features_place_the_document_in_the_question_s_own_search():
    assert rk.features({}, 1, 5) | {} == _row(own=1, first=1, top=1)
    assert rk.features({}, 7, 5)["top"] == 0.0
    assert rk.features({}, None, 5)["own"] == 0.0


def test_a_weights_file_without_every_feature_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "ranker.json"
    bad.write_text(json.dumps({"weights": {"sim": 1.0}}))
    with pytest.raises(rk.RankerError, match="not a ranker weights file"):
        rk.load(bad)
    bad.write_text("{")
    with pytest.raises(rk.RankerError, match=str(bad)):
        rk.load(bad)


def test_a_collection_s_own_weights_are_read_from_its_folder(tmp_path):
    assert rk.own_weights(tmp_path) is None
    own = rk.RankerWeights({f: 0.5 for f in rk.FEATURES}, "collection", {"questions": 12})
    rk.save(own, tmp_path / rk.FILE_NAME)
    got = rk.own_weights(tmp_path)
    assert got.weights == own.weights and got.fitted == {"questions": 12}


def test_the_shipped_weights_rank_the_own_search_s_first_document_up():
    """What one search puts first is evidence for any kind: the fit must have found it so."""
    w = rk.load()
    assert w.weights["first"] > 0 and w.weights["anchor"] + w.weights["first"] > 0
    assert w.fitted.get("command") == "python bench/ranker_fit.py --write"


# --- on a real collection ----------------------------------------------------------------------

from conftest import hotpot_paragraphs, shared_data_dir, write_jsonl  # noqa: E402


@pytest.fixture(scope="module")
def hotpot(tmp_path_factory):
    from c1.config import Settings
    from c1.index.indexer import Indexer
    from c1.retrieval.corpus import Corpus
    from c1.store.embedders import MiniLMEmbedder

    data = shared_data_dir()
    if not (data / "hotpotqa").is_dir():
        pytest.skip(f"shared data not found at {data} (set C1_SHARED_DATA)")
    root = tmp_path_factory.mktemp("ranker")
    write_jsonl(root / "paras.jsonl", hotpot_paragraphs(data, 6, 40))
    settings = Settings(home=root / "home", max_docs=5)
    embedder = MiniLMEmbedder()
    Indexer(settings, embedder).run([str(root / "paras.jsonl")])
    corpus = Corpus(settings, embedder)
    yield settings, corpus
    corpus.close()


def test_generated_questions_come_from_a_sentence_of_their_gold_document(hotpot):
    from c1.retrieval.terms import content_terms
    from c1.train.extractive import make

    _, corpus = hotpot
    made = make(corpus, 25, seed=5)
    assert len(made) == 25
    assert len({m.question for m in made}) == 25
    for m in made:
        text = " ".join(" ".join(c.text.split()) for c in corpus.doc_chunks(m.gold[0]))
        assert " ".join(m.sentence.split()) in text
        asked = set(content_terms(m.question.lower()))
        assert asked, m.question
        if m.answer:
            assert m.answer.lower() not in m.question.lower().split(), (m.answer, m.question)
    assert make(corpus, 25, seed=5) == made  # seeded: the same collection gives the same questions


def test_a_fit_on_the_collection_s_own_questions_ranks_their_documents_first(hotpot):
    from c1.train.extractive import make
    from c1.train.ranking import fit_collection, held_rows

    settings, corpus = hotpot
    fitted = fit_collection(corpus, settings, 40, k=5, seed=1)
    assert fitted.questions == 40 and fitted.informative >= 10
    w = fitted.weights
    hits = total = 0
    for m in make(corpus, 20, seed=99):  # other questions than those fitted on
        rows = held_rows(corpus, settings, m.question, set(m.gold).__contains__, 5)
        if any(r["gold"] for r in rows):
            total += 1
            hits += max(rows, key=lambda r: w.score(r["x"]))["gold"]
    assert total >= 10 and hits / total >= 0.7


@pytest.mark.slow
def test_train_ranker_writes_the_collection_s_weights_and_search_uses_them(tmp_path, run_c1):
    data = shared_data_dir()
    folder = tmp_path / "notes"
    folder.mkdir()
    write_jsonl(folder / "paras.jsonl", hotpot_paragraphs(data, 4, 60))
    assert run_c1("index", folder, "--quiet").rc == 0
    got = run_c1("train", "ranker", "-n", "30", "--json")
    assert got.rc == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["questions"] == 30 and set(out["weights"]) == set(rk.FEATURES)
    written = json.loads(open(out["path"]).read())
    assert written["weights"] == out["weights"]
    assert "fitted on 30 questions" in got.stderr
    too_few = run_c1("train", "ranker", "-n", "3")
    assert too_few.rc == 2 and "at least 10" in too_few.stderr and "Traceback" not in too_few.stderr
    open(out["path"], "w").write("{")
    broken = run_c1("search", "who", "--policy", "builtin", "--no-daemon")
    assert broken.rc == 2 and "not a ranker weights file" in broken.stderr


def test_the_policy_keeps_the_evidence_s_documents_in_the_ranker_s_order(hotpot):
    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.agent.search import run_search

    settings, corpus = hotpot
    question = "which band released the album that was recorded in the studio"

    def answer(**fields):
        held = []

        def make(v):
            held.append(BuiltinPolicy(max_docs=5, variant=v, **fields))
            return held[-1]

        ids = [d["id"] for d in run_search(corpus, settings, question, make).documents]
        return ids, held[0]

    anchored, _ = answer(order="anchored")
    assert len(anchored) >= 3
    last_first = rk.RankerWeights({**{f: 0.0 for f in rk.FEATURES}, "anchor": -5.0, "own": -5.0})
    fitted, policy = answer(order="fitted", ranker=last_first)
    assert set(fitted) == set(anchored)  # which documents: the evidence's
    place = {d: i for i, d in enumerate(policy._own)}
    assert fitted != anchored and [d for d in fitted if d in place] == sorted(
        [d for d in fitted if d in place], key=lambda d: -place[d])  # where they stand: the weights'
    shipped, policy = answer()
    assert policy.ranker is not None and policy.ranker.source == "shipped"
    assert set(shipped) == set(anchored)
