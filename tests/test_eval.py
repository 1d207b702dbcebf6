"""c1 eval: dataset loaders, scoring and aggregation against hand-computed numbers, the run
directory (resume, config check, --force), reports, compare, and end-to-end runs on real
HotpotQA records and on generated FinanceBench-style PDFs (real indexer, embedder, Chroma, tantivy).

The metric functions themselves are covered in test_metrics.py.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from c1.config import Settings
from c1.errors import C1Error
from c1.eval import report
from c1.eval.datasets import Question, load_dataset, page_key, select
from c1.eval.run_dir import RowWriter, load_rows, prepare_run_dir
from c1.eval.scoring import Keys, answer_found, score_row
from c1.eval.systems import System, parse_systems
from c1.commands.eval_flags import EvalFlags
from c1.eval.settings import EvalOptions

HOTPOT = "hotpotqa/hotpotqa_dev_distractor_200.jsonl"


def write_jsonl(path: Path, records) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- aggregation -------------------------------------------------------------------------------


def test_percentile_hand_computed():
    assert report.percentile([4, 1, 3, 2], 50) == 2.5  # between 2 and 3
    assert report.percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)  # pos 2.85: 3 + 0.85
    assert report.percentile([1, 2, 3, 4], 0) == 1 and report.percentile([1, 2, 3, 4], 100) == 4
    assert report.percentile([7.0], 95) == 7.0
    assert report.percentile([], 50) is None
    assert report.percentile(range(1, 21), 95) == pytest.approx(19.05)  # pos 18.05 → 19 + 0.05
    with pytest.raises(ValueError):
        report.percentile([1], 101)


def row(system="s", *, found=True, recall=1.0, precision=0.5, f1=2 / 3, full=True, traj=1.0, prune=None,
        turns=None, calls=None, prompt=0, completion=0, seconds=1.0):
    return {"system": system, "qid": "q", "metrics": {
        "answer_found": found, "recall": recall, "precision": precision, "f1": f1, "full_recall": full,
        "trajectory_recall": traj, "prune_accuracy": prune},
        "cost": {"turns": turns, "tool_calls": calls, "prompt_tokens": prompt, "completion_tokens": completion,
                 "seconds": seconds}}


def test_aggregate_hand_computed():
    rows = [
        row(found=True, recall=1.0, precision=0.5, f1=2 / 3, full=True, traj=1.0, prune=1.0, turns=4, calls=8,
            prompt=100, completion=10, seconds=1.0),
        row(found=False, recall=0.5, precision=0.25, f1=1 / 3, full=False, traj=1.0, prune=None, turns=2, calls=3,
            prompt=300, completion=30, seconds=3.0),
        row(found=True, recall=0.0, precision=0.0, f1=0.0, full=False, traj=0.5, prune=0.5, turns=0, calls=0,
            prompt=200, completion=20, seconds=2.0),
        row(found=False, recall=0.5, precision=0.25, f1=1 / 3, full=False, traj=0.5, prune=None, turns=3, calls=3,
            prompt=0, completion=0, seconds=10.0),
    ]
    a = report.aggregate(rows)
    assert a["n"] == 4
    assert a["answer_found"] == 0.5
    assert a["recall"] == 0.5
    assert a["precision"] == 0.25
    assert a["f1"] == pytest.approx(1 / 3, abs=1e-6)
    assert a["full_recall"] == 0.25
    assert a["trajectory_recall"] == 0.75
    assert a["prune_accuracy"] == 0.75  # over the two questions that pruned: (1.0 + 0.5) / 2
    assert a["turns"] == pytest.approx(9 / 4)
    # mean of per-question ratios, questions without turns left out: (8/4 + 3/2 + 3/3) / 3
    assert a["tool_calls_per_turn"] == pytest.approx(1.5)
    assert a["prompt_tokens"] == 150 and a["completion_tokens"] == 15
    assert a["latency_p50"] == 2.5  # seconds 1, 2, 3, 10
    assert a["latency_p95"] == pytest.approx(8.95)  # pos 2.85: 3 + 0.85 × 7
    assert a["latency_mean"] == 4.0


def test_aggregate_baseline_rows_and_empty():
    a = report.aggregate([row(turns=None, calls=None, seconds=0.1), row(turns=None, calls=None, seconds=0.3)])
    assert a["turns"] is None and a["tool_calls_per_turn"] is None and a["prune_accuracy"] is None
    assert a["latency_p50"] == pytest.approx(0.2)
    empty = report.aggregate([])
    assert empty["n"] == 0 and empty["recall"] is None and empty["latency_p95"] is None
    assert report.calls_per_turn(6, 3) == 2.0 and report.calls_per_turn(0, 0) is None
    assert report.calls_per_turn(None, None) is None


# --- systems and question selection ------------------------------------------------------------


def test_parse_systems():
    got = parse_systems("builtin, builtin@4,BM25,dense,hybrid,builtin@1", default_parallel=1)
    assert [s.label for s in got] == ["builtin", "builtin@4", "bm25", "dense", "hybrid"]
    assert got[1] == System("builtin@4", "agent", "builtin", 4)
    assert got[2].kind == "bm25"
    assert [s.label for s in parse_systems("builtin", default_parallel=3)] == ["builtin@3"]
    for bad, fragment in (("bm25@2", "baselines"), ("builtin@x", "number"), ("builtin@99", "1..32"),
                          ("colbert", "unknown system"), (" , ", "empty")):
        with pytest.raises(C1Error, match=fragment):
            parse_systems(bad)


def test_select_seed_and_limit_prefix():
    qs = [Question(str(i), f"q{i}", (), ()) for i in range(20)]
    assert [q.id for q in select(qs, 3, None)] == ["0", "1", "2"]
    a, b = select(qs, 4, 7), select(qs, 8, 7)
    assert [q.id for q in b[:4]] == [q.id for q in a]  # a longer run continues the shorter one
    assert [q.id for q in select(qs, None, 7)] != [q.id for q in qs]
    assert sorted(q.id for q in select(qs, None, 7)) == sorted(q.id for q in qs)
    # a resumed run (another process, another hash seed) picks the same questions; another seed others
    import os
    import subprocess
    import sys

    code = ("from c1.eval.datasets import Question, select; "
            "print(','.join(q.id for q in select([Question(str(i), f'q{i}', (), ()) for i in range(20)], 5, 7)))")
    for hash_seed in ("1", "999"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert out.stdout.strip().split(",") == [q.id for q in select(qs, 5, 7)]
    assert [q.id for q in select(qs, 5, 8)] != [q.id for q in select(qs, 5, 7)]


# --- loaders on hand-written files in each public schema ---------------------------------------


def hotpot_record(qid, question, answer, support, context):
    return {"_id": qid, "question": question, "answer": answer, "type": "bridge", "level": "easy",
            "supporting_facts": support, "context": context}


HOTPOT_RECORDS = [
    hotpot_record("h1", "Which band had drummer Neil Peart?", "Rush", [["Neil Peart", 0], ["Rush (band)", 1], ["Neil Peart", 1]],
                  [["Neil Peart", ["Neil Peart was a drummer.", " He played in Rush."]],
                   ["Rush (band)", ["Rush was a Canadian band.", " It formed in 1968."]],
                   ["Toto", ["Toto is an American band."]]]),
    hotpot_record("h2", "Were Toto and Rush both bands?", "yes", [["Toto", 0], ["Rush (band)", 0]],
                  [["Toto", ["Toto is an American band."]],
                   ["Rush (band)", ["Rush was a Canadian band.", " It formed in 1968."]],
                   ["Empty", []]]),
]


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_hotpotqa_loader(tmp_path, layout):
    path = tmp_path / f"hp.{layout}"
    if layout == "json":
        path.write_text(json.dumps(HOTPOT_RECORDS))
    else:
        write_jsonl(path, HOTPOT_RECORDS)
    ds = load_dataset("hotpotqa", path)
    assert [q.id for q in ds.questions] == ["h1", "h2"]
    q1, q2 = ds.questions
    assert q1.answers == ("Rush",) and q1.gold == ("Neil Peart", "Rush (band)")  # unique, in order
    assert q1.meta == {"type": "bridge", "level": "easy"}
    assert [p.id for p in q1.passages] == ["Neil Peart", "Rush (band)", "Toto"]
    assert q1.passages[0].text == "Neil Peart was a drummer. He played in Rush."
    assert [p.id for p in q2.passages] == ["Toto", "Rush (band)"]  # the empty paragraph is dropped
    assert [p.id for p in ds.passages] == ["Neil Peart", "Rush (band)", "Toto"]  # pooled: deduplicated by title
    assert ds.per_question and ds.gold_kind == "source_id"


def test_two_wiki_loader_same_title_different_text(tmp_path):
    records = [
        {"_id": "w1", "type": "comparison", "question": "Who was born first, A or B?", "answer": "A",
         "supporting_facts": [["A", 0], ["B", 0]], "context": [["A", ["A was born in 1900."]], ["B", ["B was born in 1950."]]],
         "evidences": [["A", "date of birth", "1900"]]},
        {"_id": "w2", "type": "inference", "question": "Where did B live?", "answer": "Paris",
         "supporting_facts": [["B", 0]], "context": [["B", ["B lived in Paris."]], ["C", ["C is a town."]]]},
    ]
    ds = load_dataset("2wiki", write_jsonl(tmp_path / "dev.jsonl", records))
    assert ds.name == "2wiki"
    # two different paragraphs titled "B": distinct ids, and each question's gold points to its own
    assert [p.id for p in ds.passages] == ["A", "B #1", "B #2", "C"]
    assert ds.questions[0].gold == ("A", "B #1") and ds.questions[1].gold == ("B #2",)


def test_musique_loader(tmp_path):
    records = [
        {"id": "2hop__1", "question": "Who founded the label of Album X?", "answer": "Jane Roe",
         "answer_aliases": ["J. Roe"], "answerable": True,
         "paragraphs": [
             {"idx": 0, "title": "Album X", "paragraph_text": "Album X was released on Label Y.", "is_supporting": True},
             {"idx": 1, "title": "Label Y", "paragraph_text": "Label Y was founded by Jane Roe.", "is_supporting": True},
             {"idx": 2, "title": "Other", "paragraph_text": "Unrelated text.", "is_supporting": False}]},
        {"id": "2hop__2", "question": "Unanswerable?", "answer": "", "answerable": False,
         "paragraphs": [{"idx": 0, "title": "Other", "paragraph_text": "Unrelated text.", "is_supporting": False}]},
    ]
    ds = load_dataset("musique", write_jsonl(tmp_path / "musique.jsonl", records))
    assert [q.id for q in ds.questions] == ["2hop__1"]
    q = ds.questions[0]
    assert q.answers == ("Jane Roe", "J. Roe") and q.gold == ("Album X", "Label Y")
    assert len(q.passages) == 3 and ds.per_question
    assert any("unanswerable" in n for n in ds.notes)


def test_beir_loader(tmp_path):
    root = tmp_path / "scifact"
    write_jsonl(root / "corpus.jsonl", [
        {"_id": "d1", "title": "Vitamin D", "text": "Vitamin D helps bones.", "metadata": {}},
        {"_id": "d2", "title": "", "text": "Zinc and colds.", "metadata": {}},
        {"_id": "d3", "title": "Empty", "text": ""},
    ])
    write_jsonl(root / "queries.jsonl", [
        {"_id": "q1", "text": "Does vitamin D help bones?", "metadata": {}},
        {"_id": "q2", "text": "Zinc for colds?"},
        {"_id": "q3", "text": "Not judged"},
    ])
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td1\t0\n")
    ds = load_dataset("beir", root)
    assert [(q.id, q.question, q.gold, q.answers) for q in ds.questions] == [
        ("q1", "Does vitamin D help bones?", ("d1",), ()), ("q2", "Zinc for colds?", ("d2",), ())]
    assert [p.id for p in ds.passages] == ["d1", "d2"]  # the empty document is not indexed
    assert not ds.per_question
    (root / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\nq3\td1\t1\n")
    assert [q.id for q in load_dataset("beir", root, split="dev").questions] == ["q3"]
    assert [q.id for q in load_dataset("beir", root).questions] == ["q1", "q2"]  # test is the default
    with pytest.raises(C1Error, match="no qrels/train.tsv"):
        load_dataset("beir", root, split="train")


def test_financebench_loader_pages_are_one_based(tmp_path):
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    (pdfs / "ACME_2022_10K.pdf").write_bytes(b"%PDF-1.4\n")
    records = [
        {"financebench_id": "fb1", "company": "ACME", "doc_name": "ACME_2022_10K", "question": "Capex in FY2022?",
         "answer": "$4,321 million", "evidence": [{"evidence_text": "...", "evidence_page_num": 2},
                                                  {"evidence_text": "...", "evidence_page_num": 0}]},
        {"financebench_id": "fb2", "doc_name": "MISSING_2020_10K", "question": "Revenue?", "answer": "1",
         "evidence": [{"evidence_page_num": 5}]},
    ]
    path = write_jsonl(tmp_path / "financebench_open_source.jsonl", records)
    ds = load_dataset("financebench", path)  # pdfs/ beside the file is the default folder
    assert [q.id for q in ds.questions] == ["fb1"]
    q = ds.questions[0]
    assert q.gold == ("ACME_2022_10K.pdf#p3", "ACME_2022_10K.pdf#p1")
    assert q.answers == ()  # found = an evidence page returned
    assert q.files == (str((pdfs / "ACME_2022_10K.pdf").resolve()),)
    assert ds.gold_kind == "page" and ds.files == list(q.files)
    assert any("missing" in n for n in ds.notes)
    with pytest.raises(C1Error, match="not a folder"):
        load_dataset("financebench", path, docs=tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["jsonl", "frames", "browsecomp-plus"])
def test_generic_loader(tmp_path, name):
    root = tmp_path / "set"
    write_jsonl(root / "corpus.jsonl", [{"id": "a", "title": "A", "text": "Alpha."}, {"id": 7, "title": "B", "text": "Beta."}])
    write_jsonl(root / "queries.jsonl", [
        {"id": "1", "question": "Alpha?", "answer": "Alpha", "gold_ids": ["a"]},
        {"id": "2", "question": "Beta?", "answers": ["Beta", "B"], "gold_ids": ["7", "zz"]},
        {"id": "3", "question": "No answer?", "gold_ids": ["a"]},
    ])
    for where in (root, root / "queries.jsonl"):
        ds = load_dataset(name, where)
        assert ds.name == name and [p.id for p in ds.passages] == ["a", "7"]
        assert [(q.answers, q.gold) for q in ds.questions] == [
            (("Alpha",), ("a",)), (("Beta", "B"), ("7", "zz")), ((), ("a",))]
        assert any("not in corpus.jsonl" in n for n in ds.notes)


def test_loader_errors(tmp_path):
    with pytest.raises(C1Error, match="unknown dataset"):
        load_dataset("squad", tmp_path)
    with pytest.raises(C1Error, match="no such file"):
        load_dataset("hotpotqa", tmp_path / "nope.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"_id": "x", "question": "q?"}\n')
    with pytest.raises(C1Error, match="missing field 'context'"):
        load_dataset("hotpotqa", bad)
    bad.write_text('{"_id": "x"\n')
    with pytest.raises(C1Error, match="line 1: invalid JSON"):
        load_dataset("hotpotqa", bad)
    write_jsonl(tmp_path / "g" / "corpus.jsonl", [{"id": "a", "text": "x"}])
    write_jsonl(tmp_path / "g" / "queries.jsonl", [{"id": "1", "question": "q", "gold_ids": "a"}])
    with pytest.raises(C1Error, match="must be a list"):
        load_dataset("jsonl", tmp_path / "g")
    with pytest.raises(C1Error, match="BEIR"):
        load_dataset("beir", bad)
    write_jsonl(tmp_path / "g" / "queries.jsonl", [{"id": "1", "question": "q", "gold_ids": ["a"]}] * 2)
    with pytest.raises(C1Error, match="appears twice"):
        load_dataset("jsonl", tmp_path / "g")


# --- scoring rows ------------------------------------------------------------------------------


class FakeCorpus:
    """Just enough of c1.retrieval.corpus.Corpus for Keys: documents and their chunks (start, end, page)."""

    def __init__(self, docs: dict[str, tuple[str | None, str, list[tuple[int, int, int | None]]]]):
        self.docs = {d: SimpleNamespace(doc_id=d, source_id=sid, path=path) for d, (sid, path, _) in docs.items()}
        self._chunks = {f"{d}_{n}": SimpleNamespace(id=f"{d}_{n}", doc_id=d, n=n, start=s, end=e, page=p, text="")
                        for d, (_, _, spans) in docs.items() for n, (s, e, p) in enumerate(spans)}

    def doc(self, doc_id):
        return self.docs.get(doc_id)

    def chunks(self, ids):
        return [self._chunks[i] for i in ids if i in self._chunks]

    def doc_chunks(self, doc_id):
        return [c for c in self._chunks.values() if c.doc_id == doc_id]


def doc(doc_id, source_id=None, title="", texts=(), path="", spans=()):
    chunks = [{"id": f"{doc_id}_{i}", "text": t, "span": list(s[:2]) if s else None, "page": s[2] if s else None}
              for i, (t, s) in enumerate(zip(texts or [""] * len(spans), spans or [None] * len(texts)))]
    return {"id": doc_id, "source_id": source_id, "title": title, "path": path, "chunks": chunks}


def test_score_row_passages_hand_computed():
    corpus = FakeCorpus({"d1": ("Neil Peart", "/c.jsonl", [(0, 10, None)]), "d2": ("Toto", "/c.jsonl", [(0, 10, None)]),
                         "d3": ("Rush (band)", "/c.jsonl", [(0, 10, None)]), "d4": ("Other", "/c.jsonl", [(0, 10, None)])})
    q = Question("h1", "Which band had drummer Neil Peart?", ("Rush",), ("Neil Peart", "Rush (band)"))
    docs = [doc("d1", "Neil Peart", "Neil Peart", ["He played in Rush."]), doc("d2", "Toto", "Toto", ["A band."]),
            doc("d1", "Neil Peart", "Neil Peart", ["again"])]
    r = score_row(q, System("builtin", "agent", "builtin"), docs, Keys(corpus, q.gold, "source_id"),
                  seen_chunks=["d1_0", "d2_0", "d3_0"], pruned_chunks=["d3_0", "d4_0", "d2_0"],
                  cost={"turns": 2, "tool_calls": 4, "seconds": 0.5})
    m = r["metrics"]
    assert r["returned"] == ["Neil Peart", "Toto"]  # a repeated document counts once
    assert m["recall"] == 0.5 and m["precision"] == 0.5 and m["f1"] == 0.5 and m["full_recall"] is False
    assert m["answer_found"] is True  # "Rush" is in a returned chunk
    assert m["trajectory_recall"] == 1.0  # Rush (band) was seen (then pruned)
    assert m["prune_accuracy"] == pytest.approx(2 / 3)  # d3 was gold; d4, d2 were not
    assert r["system"] == "builtin" and r["qid"] == "h1" and r["gold"] == ["Neil Peart", "Rush (band)"]


def test_answer_found_rules():
    assert answer_found(("Jane Roe", "J. Roe"), ["founded by J.  ROE in 1990"], ["a"], ("a", "b"))
    assert not answer_found(("Jane Roe",), ["nothing"], ["a"], ("a",))
    assert answer_found(("yes",), ["no yes here"], ["a", "b"], ("a", "b"))  # yes/no: all gold returned
    assert not answer_found(("yes",), ["yes"], ["a"], ("a", "b"))
    assert answer_found((), [], ["x", "a"], ("a", "b"))  # no answer strings: a gold document returned
    assert not answer_found((), ["a"], ["x"], ("a",))


def test_keys_pages_of_financebench_documents():
    # doc p: chunks [0,100) page 2, [90,200) page 2, [190,300) page 3; doc o: one chunk on page 1
    corpus = FakeCorpus({"p": (None, "/pdfs/ACME.pdf", [(0, 100, 2), (90, 200, 2), (190, 300, 3)]),
                         "o": (None, "/pdfs/OTHER.pdf", [(0, 50, 1)])})
    gold = (page_key("ACME.pdf", 3),)
    keys = Keys(corpus, gold, "page")
    # the second chunk starts on page 2 but the third chunk (page 3) starts inside it: it covers page 3
    assert keys.document(doc("p", path="/pdfs/ACME.pdf", texts=["x"], spans=[(90, 200, 2)])) == ["ACME.pdf#p3"]
    assert keys.document(doc("p", path="/pdfs/ACME.pdf", texts=["x"], spans=[(0, 100, 2)])) == ["p"]
    assert keys.document(doc("o", path="/pdfs/OTHER.pdf", texts=["x"], spans=[(0, 50, 1)])) == ["o"]
    assert keys.chunks(["p_2", "p_0", "o_0"]) == {"p_2": ["ACME.pdf#p3"], "p_0": ["p"], "o_0": ["o"]}
    q = Question("fb1", "Capex?", (), gold)
    docs = [doc("p", path="/pdfs/ACME.pdf", texts=["x"], spans=[(190, 300, 3)]),
            doc("o", path="/pdfs/OTHER.pdf", texts=["y"], spans=[(0, 50, 1)])]
    r = score_row(q, System("bm25", "bm25"), docs, keys, cost={"seconds": 0.1})
    assert r["returned"] == ["ACME.pdf#p3", "o"]
    assert r["metrics"]["recall"] == 1.0 and r["metrics"]["precision"] == 0.5 and r["metrics"]["answer_found"] is True


# --- run directory -----------------------------------------------------------------------------


def test_run_dir_config_check_and_force(tmp_path):
    key = {"dataset": "hotpotqa", "k": 5, "data": "abc"}
    assert prepare_run_dir(tmp_path / "run", key, False, "/data") == []
    (tmp_path / "run" / "results.jsonl").write_text('{"system": "bm25", "qid": "1"}\n')
    assert prepare_run_dir(tmp_path / "run", key, False, "/data") == []  # same config: resumes
    with pytest.raises(C1Error, match=r"another config \(k: 5 → 10\)"):
        prepare_run_dir(tmp_path / "run", {**key, "k": 10}, False, "/data")
    with pytest.raises(C1Error, match="dataset content differs"):
        prepare_run_dir(tmp_path / "run", {**key, "data": "xyz"}, False, "/data")
    notes = prepare_run_dir(tmp_path / "run", {**key, "k": 10}, True, "/data")
    assert "moved" in notes[0] and not (tmp_path / "run" / "results.jsonl").exists()
    assert len(list((tmp_path / "run").glob("results.replaced-*.jsonl"))) == 1
    assert json.loads((tmp_path / "run" / "config.json").read_text())["key"]["k"] == 10


def test_results_file_survives_a_cut_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"system": "a", "qid": "1"}\n{"system": "a", "qid": "2", "metr')  # crash mid-write
    assert [r["qid"] for r in load_rows(path)] == ["1"]
    w = RowWriter(path)
    w.write({"system": "a", "qid": "2"})
    w.close()
    assert [r["qid"] for r in load_rows(path)] == ["1", "2"]
    assert load_rows(tmp_path / "none.jsonl") == []


# --- reports and compare -----------------------------------------------------------------------


def summary(systems, dataset="hotpotqa", k=5):
    return {"dataset": dataset, "path": "/d", "setting": "pooled", "k": k, "questions": 4, "corpus": "pooled: x",
            "run_dir": "/r", "config": {"budget": 32768, "max_turns": 24, "embedder": "e", "data": "d"},
            "systems": systems, "notes": [], "plot": None}


def sys_summary(name, **kw):
    base = {"system": name, "kind": "agent", "n": 4, **{k: None for k, _, _ in report.METRICS}}
    return {**base, **kw}


def test_compare_hand_computed(tmp_path, capsys):
    from c1.commands.eval import run_compare_command

    a = summary([sys_summary("builtin", f1=0.5, recall=0.6, latency_p50=1.0, turns=4.0), sys_summary("bm25", f1=0.4)])
    b = summary([sys_summary("builtin", f1=0.75, recall=0.5, latency_p50=0.5, turns=None), sys_summary("hybrid", f1=0.45)])
    cmp = report.compare(a, b)
    assert [(s["system"], s["in"]) for s in cmp["systems"]] == [("builtin", "both"), ("bm25", "a"), ("hybrid", "b")]
    m = cmp["systems"][0]["metrics"]
    assert m["f1"] == {"a": 0.5, "b": 0.75, "delta": 0.25}
    assert m["recall"]["delta"] == pytest.approx(-0.1)
    assert m["latency_p50"]["delta"] == -0.5
    assert m["turns"] == {"a": 4.0, "b": None, "delta": None}
    assert cmp["systems"][1]["metrics"]["f1"] == {"a": 0.4, "b": None, "delta": None}
    # through the command: summary.json files or run directories
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "summary.json").write_text(json.dumps(a))
    (tmp_path / "B.json").write_text(json.dumps(b))
    assert run_compare_command(tmp_path / "A", tmp_path / "B.json", json_out=True) == 0
    out, err = capsys.readouterr()
    got = json.loads(out)
    assert got["systems"][0]["metrics"]["f1"]["delta"] == 0.25
    assert "B − A" in err and "+0.250" in err
    with pytest.raises(C1Error, match="no such file"):
        run_compare_command(tmp_path / "nope.json", tmp_path / "B.json")
    (tmp_path / "C.json").write_text("[1, 2]")
    with pytest.raises(C1Error, match="not a c1 eval summary"):
        run_compare_command(tmp_path / "C.json", tmp_path / "B.json")


def test_markdown_and_tables():
    from rich.console import Console

    s = summary([sys_summary("builtin", recall=0.5, f1=0.25, latency_p50=0.4, prompt_tokens=1234.0, note="why"),
                 sys_summary("bm25", kind="bm25", recall=0.75)])
    md = report.markdown(s)
    assert "| builtin | 4 | – | 0.500 |" in md and "| bm25 | 4 |" in md and "1,234" in md and "builtin: why" in md
    con = Console(record=True, width=80)
    for table in report.summary_tables(s):
        con.print(table)
    text = con.export_text()
    assert "builtin" in text and "0.500" in text and "p95 s" in text
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.slow
def test_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    s = summary([sys_summary("builtin", f1=0.5, full_recall=0.4, latency_p50=1.2),
                 sys_summary("bm25", f1=0.3, full_recall=0.2, latency_p50=0.003)])
    assert report.plot(s, tmp_path / "plot.png") is None
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- end to end: HotpotQA ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def hotpot8(shared_data: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("eval-hotpot")
    lines = (shared_data / HOTPOT).read_text(encoding="utf-8").splitlines()[:8]
    (root / "hp8.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root / "hp8.jsonl"


@pytest.fixture(scope="module")
def pooled_runs(hotpot8: Path, tmp_path_factory):
    """Pooled over the 8 records' 80 paragraphs, builtin + hybrid + bm25 at k=5: 4 questions, then
    8 into the same run directory (resume), then 8 again (nothing to do)."""
    from c1.commands.eval import run_eval_command
    from c1.eval.runner import run_eval

    root = tmp_path_factory.mktemp("eval-pooled")
    settings = Settings(home=root / "home", max_docs=5)
    out = root / "run"
    common = dict(systems="builtin,hybrid,bm25", out=out)
    first = run_eval(settings, EvalOptions("hotpotqa", str(hotpot8), limit=4, **common))
    rows_after_first = load_rows(out / "results.jsonl")
    shutil.copy(out / "summary.json", root / "first.json")
    marker = next((root / "home" / "collections").glob("eval-hotpotqa-*")) / "eval-ready.json"
    marker_mtime = marker.stat().st_mtime_ns
    second = run_eval(settings, EvalOptions("hotpotqa", str(hotpot8), limit=8, **common))
    rows_after_second = load_rows(out / "results.jsonl")
    return SimpleNamespace(root=root, settings=settings, out=out, first=first, second=second, hotpot8=hotpot8,
                           rows_after_first=rows_after_first, rows_after_second=rows_after_second,
                           marker=marker, marker_mtime=marker_mtime, run_eval_command=run_eval_command)


@pytest.mark.slow
def test_e2e_pooled_scores(pooled_runs):
    s = pooled_runs.second.summary
    records = [json.loads(line) for line in pooled_runs.hotpot8.read_text().splitlines()]
    assert s["questions"] == 8 and s["setting"] == "pooled" and s["k"] == 5
    assert "80 passages" in s["corpus"]
    assert [x["system"] for x in s["systems"]] == ["builtin", "hybrid", "bm25"]
    by = {x["system"]: x for x in s["systems"]}
    assert all(x["n"] == 8 for x in s["systems"])
    assert by["hybrid"]["recall"] >= 0.5 and by["bm25"]["recall"] >= 0.4 and by["builtin"]["trajectory_recall"] >= 0.5
    assert by["builtin"]["turns"] >= 1 and by["builtin"]["tool_calls_per_turn"] > 0
    assert by["hybrid"]["turns"] is None and by["hybrid"]["latency_p50"] <= by["hybrid"]["latency_p95"]
    assert by["builtin"]["note"].startswith("using the built-in policy")
    gold = {r["_id"]: {t for t, _ in r["supporting_facts"]} for r in records}
    rows = pooled_runs.rows_after_second
    for r in rows:
        assert set(r["gold"]) == gold[r["qid"]]
        assert 1 <= len(r["returned"]) <= 5
        hit = len(set(r["returned"]) & gold[r["qid"]])
        assert r["metrics"]["recall"] == hit / len(gold[r["qid"]])
        assert r["metrics"]["precision"] == hit / len(r["returned"])
        assert r["metrics"]["full_recall"] == (hit == len(gold[r["qid"]]))
        assert r["metrics"]["trajectory_recall"] >= r["metrics"]["recall"]
    # averages in the summary are the means of the rows
    for name in ("builtin", "hybrid", "bm25"):
        mine = [r for r in rows if r["system"] == name]
        assert by[name]["f1"] == pytest.approx(sum(r["metrics"]["f1"] for r in mine) / 8, abs=1e-6)


@pytest.mark.slow
def test_e2e_resume_computes_only_new_questions(pooled_runs):
    p = pooled_runs
    assert p.first.computed == 12 and len(p.rows_after_first) == 12
    assert p.second.computed == 12 and len(p.rows_after_second) == 24  # only the 4 new questions × 3 systems
    assert p.rows_after_second[:12] == p.rows_after_first  # earlier rows untouched
    assert len({(r["system"], r["qid"]) for r in p.rows_after_second}) == 24
    assert [x["computed"] for x in p.second.summary["systems"]] == [4, 4, 4]
    assert p.marker.stat().st_mtime_ns == p.marker_mtime  # the collection was reused, not rebuilt


@pytest.mark.slow
def test_e2e_rerun_is_a_no_op_and_prints(pooled_runs, capsys):
    p = pooled_runs
    code = p.run_eval_command(p.settings, "hotpotqa", str(p.hotpot8), EvalFlags(systems="builtin,hybrid,bm25", limit=8,
                                                                                 out=p.out), json_out=True)
    out, err = capsys.readouterr()
    assert code == 0
    s = json.loads(out)
    assert [x["computed"] for x in s["systems"]] == [0, 0, 0]
    assert len(load_rows(p.out / "results.jsonl")) == 24
    assert "quality" in err and "0 reused" not in err and "24 reused" in err
    md = (p.out / "report.md").read_text()
    assert "| builtin | 8 |" in md and "| hybrid | 8 |" in md
    assert json.loads((p.out / "summary.json").read_text())["systems"] == s["systems"]
    if s["plot"]:
        assert (p.out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    else:
        assert "matplotlib is not installed" in err


@pytest.mark.slow
def test_e2e_other_config_refused_then_forced_and_compared(pooled_runs, capsys):
    from c1.commands.eval import run_compare_command
    from c1.eval.runner import run_eval

    p = pooled_runs
    k3 = Settings(home=p.settings.home, max_docs=3)
    with pytest.raises(C1Error, match="k: 5 → 3"):
        run_eval(k3, EvalOptions("hotpotqa", str(p.hotpot8), systems="bm25", out=p.out))
    forced = run_eval(k3, EvalOptions("hotpotqa", str(p.hotpot8), systems="bm25", out=p.out, force=True, plot=False))
    assert forced.computed == 8 and len(load_rows(p.out / "results.jsonl")) == 8
    assert all(len(r["returned"]) <= 3 for r in load_rows(p.out / "results.jsonl"))
    assert len(list(p.out.glob("results.replaced-*.jsonl"))) == 1
    capsys.readouterr()
    run_compare_command(p.root / "first.json", p.out / "summary.json", json_out=True)
    cmp = json.loads(capsys.readouterr().out)
    bm25 = next(x for x in cmp["systems"] if x["system"] == "bm25")
    assert bm25["in"] == "both" and bm25["metrics"]["n"] == {"a": 4, "b": 8, "delta": 4}
    assert next(x for x in cmp["systems"] if x["system"] == "builtin")["in"] == "a"


@pytest.mark.slow
def test_e2e_per_question_setting(hotpot8, tmp_path):
    from c1.eval.runner import run_eval

    settings = Settings(home=tmp_path / "home", max_docs=2)
    run = run_eval(settings, EvalOptions("hotpotqa", str(hotpot8), setting="per-question", systems="bm25,hybrid",
                                         limit=2, concurrency=2, plot=False))
    assert run.computed == 4 and run.run_dir.parent == tmp_path / "home" / "eval" / "runs"
    assert len(list((tmp_path / "home" / "collections").glob("eval-hotpotqa-q*"))) == 2
    records = [json.loads(line) for line in hotpot8.read_text().splitlines()[:2]]
    titles = {r["_id"]: {t for t, _ in r["context"]} for r in records}
    for r in load_rows(run.run_dir / "results.jsonl"):
        assert set(r["returned"]) <= titles[r["qid"]]  # each question searched only its own 10 paragraphs
    with pytest.raises(C1Error, match="no per-question corpus"):
        beir = tmp_path / "beir"
        write_jsonl(beir / "corpus.jsonl", [{"_id": "d", "text": "x"}])
        write_jsonl(beir / "queries.jsonl", [{"_id": "q", "text": "x"}])
        (beir / "qrels").mkdir()
        (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\td\t1\n")
        run_eval(settings, EvalOptions("beir", str(beir), setting="per-question", systems="bm25"))


@pytest.mark.slow
def test_e2e_llm_system_costs(pooled_runs, tmp_path):
    """An llm system against a scripted OpenAI-compatible server: one search, then an answer that
    names no document (the loop then ranks what the run saw). Its tokens, turns and tool calls
    are counted per question."""
    from model_servers import ScriptedServer, Step, completion

    from c1.eval.runner import run_eval

    records = [json.loads(line) for line in pooled_runs.hotpot8.read_text().splitlines()[:2]]
    script = []
    for r in records:
        script += [Step(body=completion(tool_calls=[("search_corpus", {"query": r["question"]})],
                                        prompt_tokens=1000, completion_tokens=20)),
                   Step(body=completion("I found nothing useful.", prompt_tokens=1500, completion_tokens=30))]
    with ScriptedServer(script) as server:
        settings = Settings(home=pooled_runs.settings.home, max_docs=5, base_urls=(server.base_url,))
        run = run_eval(settings, EvalOptions("hotpotqa", str(pooled_runs.hotpot8), systems="llm,bm25", limit=2,
                                             out=tmp_path / "run", plot=False))
    llm = run.summary["systems"][0]
    assert llm["system"] == "llm" and llm["note"].startswith("using the llm policy: model scripted")
    assert run.summary["config"]["model"] == "scripted"
    assert llm["n"] == 2 and llm["turns"] == 2 and llm["tool_calls_per_turn"] == 0.5
    assert llm["prompt_tokens"] == 2500 and llm["completion_tokens"] == 50
    assert 0 < llm["trajectory_recall"] and llm["recall"] <= llm["trajectory_recall"]
    rows = [r for r in load_rows(tmp_path / "run" / "results.jsonl") if r["system"] == "llm"]
    assert [r["cost"]["prompt_tokens"] for r in rows] == [2500, 2500] and all(r["stop_reasons"] for r in rows)
    assert run.summary["systems"][1]["recall"] > 0


# --- end to end: FinanceBench pages ------------------------------------------------------------


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A minimal valid PDF: one Helvetica text stream per page, one line per string."""

    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    n = len(pages)
    objs = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: f"<< /Type /Pages /Kids [{' '.join(f'{4 + 2 * i} 0 R' for i in range(n))}] /Count {n} >>".encode(),
            3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
    for i, lines in enumerate(pages):
        stream = ("BT /F1 9 Tf 36 770 Td 11 TL " + " ".join(f"({esc(line)}) Tj T*" for line in lines) + " ET").encode()
        objs[4 + 2 * i] = (f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                           f"/Contents {5 + 2 * i} 0 R >>").encode()
        objs[5 + 2 * i] = f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream"
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for num in sorted(objs):
        offsets[num] = len(out)
        out += f"{num} 0 obj\n".encode() + objs[num] + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offsets[num]:010d} 00000 n \n".encode() for num in sorted(objs))
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def filler(rng: random.Random, lines: int) -> list[str]:
    words = ("segment operating lease goodwill inventory receivable margin dividend liquidity tax deferred "
             "amortization subsidiary pension hedge covenant warranty backlog impairment").split()
    return [" ".join(rng.choice(words) for _ in range(12)) for _ in range(lines)]


@pytest.mark.slow
def test_e2e_financebench_pages(tmp_path, capsys):
    from c1.retrieval.corpus import Corpus
    from c1.commands.eval import run_eval_command

    rng = random.Random(5)
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    fact = "ACME Corporation capital expenditures were 4,321 million dollars in fiscal year 2022."
    # pages longer than a chunk, so the chunk holding the fact (mid page 3) starts on page 3
    acme = [filler(rng, 60), filler(rng, 60), filler(rng, 30) + [fact] + filler(rng, 30)]
    write_pdf(pdfs / "ACME_2022_10K.pdf", acme)
    write_pdf(pdfs / "ZENITH_2021_10K.pdf", [["Zenith Incorporated paid a quarterly dividend of 12 cents per share."]])
    path = write_jsonl(tmp_path / "financebench.jsonl", [
        {"financebench_id": "fb1", "doc_name": "ACME_2022_10K", "question": "What were ACME capital expenditures in fiscal year 2022?",
         "answer": "$4,321 million", "evidence": [{"evidence_text": fact, "evidence_page_num": 2}]},
        {"financebench_id": "fb2", "doc_name": "ZENITH_2021_10K", "question": "What quarterly dividend did Zenith pay per share?",
         "answer": "12 cents", "evidence": [{"evidence_text": "...", "evidence_page_num": 0}]},
    ])
    settings = Settings(home=tmp_path / "home", max_docs=1)
    assert run_eval_command(settings, "financebench", str(path), EvalFlags(systems="bm25", out=tmp_path / "run",
                                                                           no_plot=True), json_out=True, quiet=True) == 0
    s = json.loads(capsys.readouterr().out)
    rows = {r["qid"]: r for r in load_rows(tmp_path / "run" / "results.jsonl")}
    assert rows["fb1"]["gold"] == ["ACME_2022_10K.pdf#p3"] and rows["fb2"]["gold"] == ["ZENITH_2021_10K.pdf#p1"]
    assert rows["fb1"]["returned"] == ["ACME_2022_10K.pdf#p3"]  # c1's page 3 is FinanceBench's page 2
    assert rows["fb2"]["returned"] == ["ZENITH_2021_10K.pdf#p1"]
    assert s["systems"][0]["recall"] == 1.0 and s["systems"][0]["answer_found"] == 1.0
    # the indexed chunk that holds the fact starts on c1's (1-based) page 3
    name = next((tmp_path / "home" / "collections").glob("eval-financebench-*")).name
    corpus = Corpus(Settings(home=tmp_path / "home", collection=name))
    try:
        pages = {c.page for c in corpus.store.manifest.iter_chunks() if "4,321 million" in c.text}
    finally:
        corpus.close()
    assert pages == {3}


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_eval_compare(invoke_c1, tmp_path):
    a = summary([sys_summary("bm25", f1=0.5)])
    b = summary([sys_summary("bm25", f1=0.25)])
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    res = invoke_c1("eval", "compare", tmp_path / "a.json", tmp_path / "b.json", "--json")
    assert res.rc == 0, res.stderr
    assert res.json()["systems"][0]["metrics"]["f1"]["delta"] == -0.25
    res = invoke_c1("eval", "compare", tmp_path / "a.json", tmp_path / "missing.json")
    res.assert_one_line_error(2, "missing.json")


def test_cli_eval_commands_match_the_loaders():
    import typer.main

    from c1.cli import app
    from c1.eval.datasets import DATASETS

    group = typer.main.get_command(app)
    ev = group.commands["eval"]
    assert set(ev.commands) == set(DATASETS) | {"compare"}
    for name, summary in DATASETS.items():
        assert ev.commands[name].help == summary
