"""Retrieval metrics against hand-computed values."""

from __future__ import annotations

import pytest

from c1.eval import metrics as m


def test_recall_precision_f1_by_hand():
    returned, gold = ["a", "b", "c", "d", "e"], {"b", "x"}
    assert m.recall(returned, gold) == 0.5  # 1 of 2 gold
    assert m.precision(returned, gold) == 0.2  # 1 of 5 returned
    assert m.f1(returned, gold) == pytest.approx(2 * 0.2 * 0.5 / 0.7)  # 0.2857...
    assert not m.full_recall(returned, gold)
    both = ["x", "b", "c", "d", "e"]
    assert m.recall(both, gold) == 1.0 and m.full_recall(both, gold)
    assert m.precision(both, gold) == 0.4
    assert m.f1(both, gold) == pytest.approx(2 * 0.4 / 1.4)  # 0.5714...


def test_duplicates_count_once_and_edge_cases():
    assert m.precision(["a", "a", "b"], {"a"}) == 0.5  # distinct: a, b
    assert m.f1(["a", "a"], {"a"}) == 1.0
    assert m.precision([], {"a"}) == 0.0 and m.recall([], {"a"}) == 0.0 and m.f1([], {"a"}) == 0.0
    assert m.recall(["a"], set()) == 1.0 and m.full_recall([], set())
    assert m.f1(["z"], {"a"}) == 0.0


def test_answer_found_string_and_yes_no():
    texts = ["Rush is a Canadian rock band.", "Neil  Peart\nwas its drummer."]
    assert m.contains_answer("rush", texts)
    assert m.contains_answer("neil peart was", texts), "whitespace is normalised"
    assert not m.contains_answer("Toto", texts)
    assert not m.contains_answer("  ", texts), "an empty answer is never found"
    # A yes/no answer is in no document: found when every gold document is returned.
    assert m.is_yes_no(" Yes ") and m.is_yes_no("no") and not m.is_yes_no("Norway")
    assert m.answer_found("yes", ["yes, yes"], ["a"], {"a", "b"}) is False
    assert m.answer_found("no", [], ["b", "a", "c"], {"a", "b"}) is True
    assert m.answer_found("Rush", texts, ["a", "b"], {"z"}) is True


def test_trajectory_recall_and_prune_accuracy():
    assert m.trajectory_recall(["a", "b", "c"], {"a", "z"}) == 0.5
    assert m.prune_accuracy(["p", "q", "g", "q"], {"g"}) == pytest.approx(2 / 3)
    assert m.prune_accuracy([], {"g"}) is None


def test_score_and_summary():
    s1 = m.score("Rush", ["a", "b"], ["Rush band", "x"], {"a", "c"})
    assert s1 == m.Scores(True, 0.5, False, 0.5, 0.5)
    s2 = m.score("no", ["a", "c"], ["", ""], ["a", "c"])
    assert s2 == m.Scores(True, 1.0, True, 1.0, 1.0)
    out = m.summarise([s1, s2])
    assert out == {"n": 2, "answer_found": 1.0, "recall": 0.75, "full_recall": 0.5, "precision": 0.75, "f1": 0.75}
    assert m.summarise([])["n"] == 0 and m.summarise([])["f1"] == 0.0
