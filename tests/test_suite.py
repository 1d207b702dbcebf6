"""bench/suite.py's infrastructure: natural-question files, the scifact split, what counts as found,
the interval and difference tables, saved runs (--vs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import suite, suite_natural, suite_tables  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "natural"
BOSCH = "contractnli/01_Bosch-Automotive-Service-Solutions-Mutual-Non-Disclosure-Agreement-7-12-17.txt"


# --- natural questions -----------------------------------------------------------------------


def test_natural_items_carry_spans_answers_and_copies():
    items = suite_natural.items("legal", suite.Item, FIXTURES)
    assert [i.qid for i in items] == ["legal-nat-01", "legal-nat-02"]
    assert items[0].spans == ((BOSCH, 3305, 3717),)
    assert items[0].answers == () and items[0].gold == (BOSCH,)
    assert items[1].answers == ("Michigan",)
    assert items[1].copies == {BOSCH: ("copies/bosch.txt",)}
    assert suite_natural.items("musique", suite.Item, FIXTURES) is None


GOOD = {"id": "x-1", "question": "what is it", "gold": ["a.txt"], "style": ["lower"]}


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2: not JSON"),
    (json.dumps([1, 2]), "line 2: not a JSON object"),
    (json.dumps({"id": "x-2", "question": "q"}), "line 2: missing field 'gold'"),
    (json.dumps({**GOOD, "id": "x-2", "gold": []}), "line 2: 'gold' must be a non-empty list of strings"),
    (json.dumps({**GOOD, "id": "x-2", "gold": "a.txt"}), "line 2: 'gold' must be a non-empty list of strings"),
    (json.dumps({**GOOD, "id": "x-2", "question": "  "}), "line 2: 'question' must be a non-empty string"),
    (json.dumps({**GOOD, "id": "x-2", "golds": ["a"]}), "line 2: unknown field 'golds'"),
    (json.dumps({**GOOD, "id": "x-2", "spans": [["a.txt", 10, 5]]}), "line 2: 'spans' must be a list of [relpath, start, end]"),
    (json.dumps({**GOOD, "id": "x-2", "spans": [["a.txt", 1]]}), "line 2: 'spans' must be a list of [relpath, start, end]"),
    (json.dumps({**GOOD, "id": "x-2", "pages": ["a.pdf p3"]}), "line 2: 'pages' must be a list of '<file>#p<page>'"),
    (json.dumps({**GOOD, "id": "x-2", "answers": "42"}), "line 2: 'answers' must be a list of strings"),
    (json.dumps({**GOOD, "id": "x-2", "copies": {"a.txt": "b.txt"}}), "line 2: 'copies' must map a gold key"),
    (json.dumps(GOOD), "line 2: id 'x-1' already on line 1"),
])
def test_a_bad_natural_line_is_named_with_its_file_and_line(tmp_path, line, message):
    path = tmp_path / "legal.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n")
    with pytest.raises(suite_natural.NaturalError) as err:
        suite_natural.read(path)
    text = str(err.value)
    assert text.startswith(f"{path}, ") and message in text and "\n" not in text


def test_an_empty_natural_file_is_refused(tmp_path):
    (tmp_path / "mail.jsonl").write_text("\n")
    with pytest.raises(suite_natural.NaturalError, match="no questions"):
        suite_natural.read(tmp_path / "mail.jsonl")


def test_the_suite_refuses_a_bad_natural_file_before_building_anything(tmp_path, monkeypatch, capsys):
    (tmp_path / "legal.jsonl").write_text(json.dumps(GOOD) + "\n" + json.dumps({"id": "x-2"}) + "\n")
    monkeypatch.setattr(suite_natural, "NATURAL", tmp_path)
    monkeypatch.setattr(suite, "_embedder", lambda name="": pytest.fail("an embedder was made"))
    assert suite.main(["--kinds", "legal"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"suite: {tmp_path / 'legal.jsonl'}, line 2: missing field 'question'"
    assert suite.main(["--kinds", "legal", "--natural", "no", "--vs", "nothing-saved"]) == 2


def test_an_unknown_saved_run_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(suite, "RUNS", tmp_path)
    (tmp_path / "before.jsonl").write_text("")
    assert suite.main(["--kinds", "legal", "--natural", "no", "--vs", "nope"]) == 2
    assert capsys.readouterr().err.strip() == "suite: no saved run 'nope' (saved: before; or give a --rows file)"


# --- scifact ---------------------------------------------------------------------------------


def test_scifact_split_by_the_claims_number():
    assert suite.scifact_split("train-12") == "dev"
    assert suite.scifact_split("train-9") == "held"
    assert suite.scifact_split("train-0") == "dev"


def test_scifact_halves_partition_the_claims(shared_data):
    ids = [json.loads(x)["id"] for x in (shared_data / "scifact" / "claims_train.jsonl").read_text().splitlines() if x]
    dev = [q for q in ids if suite.scifact_split(q) == "dev"]
    held = [q for q in ids if suite.scifact_split(q) == "held"]
    assert len(dev) + len(held) == len(ids) == 505
    assert 240 <= len(dev) <= 265 and not set(dev) & set(held)


# --- what counts as found --------------------------------------------------------------------


def _doc(path: str, *spans: tuple[int, int], text: str = "") -> dict:
    return {"id": path, "path": f"/root/{path}", "title": "", "chunks": [{"span": list(s), "text": text} for s in spans]}


def test_a_chunk_inside_a_gold_span_is_found_and_one_beside_it_is_not():
    case = suite.Case("legal", Path("."), "suite", [], key="relpath", root="/root")
    it = suite.Item("q", "?", (BOSCH,), spans=((BOSCH, 3305, 3717),))
    near = [_doc(BOSCH, (0, 3305), (3717, 5000))]
    assert not suite.found(it, suite.keys_of(case, it, near), near, None)
    hit = [_doc("other.txt", (3300, 3400)), _doc(BOSCH, (3700, 4000))]
    assert suite.found(it, suite.keys_of(case, it, hit), hit, None)
    elsewhere = [_doc("other.txt", (3300, 3400))]  # the right offsets in another file
    assert not suite.found(it, suite.keys_of(case, it, elsewhere), elsewhere, None)


def test_a_copy_counts_as_its_gold_document():
    case = suite.Case("mail", Path("."), "suite", [], key="relpath", root="/root")
    it = suite.Item("q", "?", ("a/inbox/1.",), copies={"a/inbox/1.": ("a/all_documents/7.",)})
    docs = [_doc("a/all_documents/7.", (0, 10)), _doc("b/sent/3.", (0, 10))]
    keys = suite.keys_of(case, it, docs)
    assert keys == ["a/inbox/1.", "b/sent/3."]
    assert suite.found(it, keys, docs, None)


def test_answers_are_looked_for_in_the_returned_texts():
    case = suite.Case("sheets", Path("."), "suite", [], key="relpath", root="/root")
    it = suite.Item("q", "?", ("contacts.csv",), ("555 1234",))
    docs = [_doc("contacts.csv", (0, 5), text="Dana, +1 555 1234")]
    assert suite.found(it, suite.keys_of(case, it, docs), docs, None)
    docs[0]["chunks"][0]["text"] = "Dana, +1 555 9999"
    assert not suite.found(it, suite.keys_of(case, it, docs), docs, None)


# --- the tables ------------------------------------------------------------------------------


def _rows(kind: str, system: str, right: list[int], n: int = 100) -> list[dict]:
    return [{"kind": kind, "system": system, "qid": f"q{i}", "found": i in right, "full": i in right,
             "rank1": i in right, "seconds": 0.1, "returned": ["a"], "scores": [0.5], "gold_flags": [i in right]}
            for i in range(n)]


def test_the_tables_give_intervals_and_mark_a_difference_that_excludes_zero():
    rows = (_rows("legal", "hybrid", list(range(50))) + _rows("legal", "builtin", list(range(60)))
            + _rows("legal-lc", "hybrid", list(range(49))) + _rows("legal-lc", "builtin", list(range(60))))
    text, summary = suite_tables.tables(rows, ["hybrid", "builtin"])
    assert summary["legal"]["hybrid"]["found"] == 0.5
    lo, hi = summary["legal"]["hybrid"]["found_ci"]
    assert 0.39 <= lo <= 0.41 and 0.59 <= hi <= 0.61
    diffs = {(d["kind"], d["what"]): d for d in summary["differences"]}
    gain = diffs[("legal", "builtin − hybrid")]
    assert gain["n"] == 100 and gain["rank1"][0] == pytest.approx(0.10)
    assert gain["rank1"][1] in (0.04, 0.05)  # 10 questions gained, none lost: Binomial(100, 0.1)
    assert "| legal | 100 | builtin − hybrid | +0.100 [+0.05, +0.16] *" in text
    lc = diffs[("legal", "hybrid: lower-cased − typed")]
    assert lc["found"][0] == pytest.approx(-0.01) and lc["found"][1:] == [-0.03, 0.0]
    assert "| legal | 100 | hybrid: lower-cased − typed | -0.010 [-0.03, +0.00] |" in text


def test_against_a_saved_run_pairs_by_question_id():
    now = _rows("mail", "builtin", list(range(30)), n=40)
    before = [r for r in _rows("mail", "builtin", list(range(10)), n=40) if r["qid"] != "q39"][::-1]
    text, summary = suite_tables.tables(now, ["builtin"], ("before", before))
    vs = [d for d in summary["differences"] if d["what"] == "builtin: this − before"]
    assert len(vs) == 1 and vs[0]["n"] == 39
    assert vs[0]["found"][0] == pytest.approx(20 / 39)
    assert "against the saved run 'before'" in text and " *" in text


def test_a_saved_run_round_trips_and_a_bad_one_is_named(tmp_path):
    rows = _rows("legal", "hybrid", [1, 2], n=3)
    path = suite_tables.run_path(tmp_path, "")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert path.name == "last.jsonl"
    assert suite_tables.load_run(tmp_path, "last") == rows
    assert suite_tables.load_run(tmp_path, str(path)) == rows
    path.write_text(json.dumps({"kind": "legal"}) + "\n")
    with pytest.raises(ValueError, match=r"last.jsonl, line 1: not a suite row"):
        suite_tables.load_run(tmp_path, "last")


def test_a_saved_run_of_other_kinds_is_said_so():
    text, summary = suite_tables.tables(_rows("mail", "hybrid", [1]), ["hybrid"], ("old", _rows("legal", "hybrid", [1])))
    assert "(the saved run 'old' holds none of this run's kinds and systems)" in text
    assert summary["differences"] == [] and "\n\n\n" not in text


def test_the_agent_runs_costs_and_stop_reasons_are_tabled_per_kind_and_system():
    """Issue 31: turns, calls, pruned chunks, tokens and how the runs ended, per kind, beside the built-in
    policy; hybrid rows (one search, no agent) have none."""
    rows = _rows("legal", "hybrid", [1], n=2) + _rows("legal", "llm", [1], n=2) + _rows("legal", "builtin", [1], n=2)
    for r, turns, stop in zip(rows[2:4], (2, 4), ("answer", "truncated")):
        r["cost"] = {"turns": turns, "tool_calls": 3, "pruned": 1, "prompt_tokens": 1000, "completion_tokens": 50,
                     "cut_retries": turns // 2 - 1}
        r["stop"] = [stop]
    for r in rows[4:]:
        r["cost"], r["stop"] = {"turns": 3, "tool_calls": 2, "pruned": 0, "prompt_tokens": 0}, ["answer"]
    text, _ = suite_tables.tables(rows, ["hybrid", "llm", "builtin"])
    assert "| legal | llm | 2 | 3.0 | 3.0 | 1.0 | 1000 | 50 | 0.5 | answer 1, truncated 1 |" in text
    assert "| legal | builtin | 2 | 3.0 | 2.0 | 0.0 | 0 | 0 | 0.0 | answer 2 |" in text
    assert "| legal | hybrid |" not in text


def test_the_llm_system_without_a_server_is_one_line(capsys):
    assert suite.main(["--kinds", "legal", "--systems", "builtin,llm"]) == 2
    assert "needs --base-url" in capsys.readouterr().err


def test_a_searchs_tokens_are_read_where_its_stats_keep_them():
    stats = {"turns": 2, "tool_calls": 1, "pruned": 0, "errors": 0, "cut_retries": 1,
             "tokens": {"prompt": 1500, "completion": 40}}
    assert suite._cost(stats) == {"turns": 2, "tool_calls": 1, "pruned": 0, "prompt_tokens": 1500,
                                  "completion_tokens": 40, "errors": 0, "cut_retries": 1}
