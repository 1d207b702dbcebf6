"""`c1 search --batch FILE`: one JSON result per question, in input order, the same result as one search."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import c1_argv, hotpot_records, indexed_hotpot, shared_data_dir

RECORDS = 3


@pytest.fixture(scope="module")
def home(new_c1_env):
    return indexed_hotpot(new_c1_env, "batch", records=RECORDS)


@pytest.fixture(scope="module")
def questions() -> list[str]:
    return [r["question"] for r in hotpot_records(shared_data_dir(), RECORDS)]


def one_search(home, question: str, **flags) -> dict:
    """What `c1 search QUESTION --json` gives, computed in this process."""
    from c1.service.search_service import search_here
    from c1.config import Settings

    settings = Settings(home=home.home, **flags)
    return search_here(settings, question, lambda *said: None).to_json()


def untimed(doc: dict) -> dict:
    return {**doc, "stats": {k: v for k, v in doc["stats"].items() if k != "seconds"}}


def batch(home, *args, stdin: str | None = None):
    proc = subprocess.run(c1_argv("search", "--batch", *args), input=stdin, capture_output=True, text=True,
                          env=home.env, timeout=600)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


@pytest.mark.slow
def test_lines_and_json_lines_in_input_order_as_single_searches(home, questions, tmp_path):
    path = tmp_path / "questions.txt"
    path.write_text(f"{questions[0]}\n\n" + json.dumps({"id": "q-b", "query": questions[1]}) + "\n"
                    + json.dumps({"query": questions[2]}) + "\n")
    rc, rows, stderr = batch(home, path, "-k", "3")
    assert rc == 0, stderr
    assert [r["id"] for r in rows] == [1, "q-b", 4], "line numbers where no id is given (blank lines count)"
    for row, q in zip(rows, questions):
        expected = one_search(home, q, max_docs=3)
        assert untimed({k: v for k, v in row.items() if k != "id"}) == untimed(expected)
    assert "3 questions" in stderr


@pytest.mark.slow
def test_jobs_keep_the_input_order(home, questions):
    many = [q for q in questions for _ in range(3)] + [q.lower() for q in questions]
    text = "".join(q + "\n" for q in many)
    rc, one, _ = batch(home, "-", stdin=text)
    rc4, four, _ = batch(home, "-", "--jobs", "4", stdin=text)
    assert rc == rc4 == 0
    assert [r["query"] for r in four] == many
    assert [untimed(r) for r in four] == [untimed(r) for r in one]


@pytest.mark.slow
def test_bad_lines_are_answered_in_place_and_exit_2(home, questions):
    text = "\n".join([questions[0], "{not json", json.dumps({"id": 7, "query": "  "}), json.dumps({"id": 8}), questions[1]])
    rc, rows, stderr = batch(home, "-", stdin=text + "\n")
    assert rc == 2
    assert [r["id"] for r in rows] == [1, 2, 7, 8, 5]
    assert rows[0]["documents"] and rows[4]["documents"]
    assert rows[1]["error"].startswith("line 2: not valid JSON")
    assert rows[2]["error"] == 'line 3: a JSON line needs "query", a non-empty string'
    assert rows[3]["error"] == 'line 4: a JSON line needs "query", a non-empty string'
    assert "Traceback" not in stderr and stderr.count("warning") == 3


@pytest.mark.slow
def test_answers_stream_while_the_input_is_still_open(home, questions):
    """A question is answered before the next one is written (a script feeding c1 one question at a time)."""
    proc = subprocess.Popen(c1_argv("search", "--batch", "-", "-q"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=home.env)
    try:
        for q in questions[:2]:
            proc.stdin.write(q + "\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["query"] == q
        proc.stdin.close()
        assert proc.wait(120) == 0 and proc.stdout.read() == ""
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("args,fragment", [
    (["--batch", "/no/such/file"], "no such file"),
    (["a question", "--batch", "-"], "not both"),
    (["--batch", "-", "--jsonl"], "--jsonl"),
    (["a question", "--jobs", "2"], "--jobs goes with --batch"),
    ([], "give a QUESTION"),
])
def test_usage_errors_are_one_line(invoke_c1, args, fragment):
    invoke_c1("search", *args).assert_one_line_error(2, fragment)


@pytest.mark.slow
def test_a_named_server_that_does_not_answer_is_said_for_the_batch_as_for_one_search(home, questions):
    """--batch with --base-url of a server that is down and --policy auto: the built-in policy runs, the warning is on
    stderr even with --quiet, and every row's stats carry it (policy_warning), as a single search's do."""
    from llm_server import closed_port_url

    url = closed_port_url()
    rc, rows, stderr = batch(home, "-", "--base-url", url, "--policy", "auto", "-q", "--max-turns", "2", stdin=questions[0] + "\n")
    assert rc == 0, stderr
    assert url in stderr
    assert rows and all(url in r["stats"]["policy_warning"] for r in rows)


@pytest.mark.slow
def test_a_search_of_its_own_loads_its_models_in_a_thread_beside_its_first_turns(home, questions, monkeypatch, tmp_path):
    """A cold `c1 search --no-daemon` loaded the embedder when its first turn embedded the question (after
    the o200k encoding, which holds the interpreter lock) and the cross-encoder when its first read or its
    passages asked for it; a thread now loads both once the collection is open (docs/performance.md).
    Not the cross-encoder under --rerank off, nothing where there is no collection (its error comes at once),
    and the answer is the one the search gives without the thread."""
    import threading

    from c1.retrieval import rerankers
    from c1.store.embedders import OnnxEmbedder

    real, embed = rerankers.make_reranker, OnnxEmbedder.embed_queries
    callers: list[tuple[str, str]] = []

    def spy(setting, *args, **kwargs):
        callers.append((threading.current_thread().name, setting))
        return real(setting, *args, **kwargs)

    def embedding(self, texts):
        callers.append((threading.current_thread().name, "embed " + texts[0]))
        return embed(self, texts)

    monkeypatch.setattr(rerankers, "make_reranker", spy)
    monkeypatch.setattr(OnnxEmbedder, "embed_queries", embedding)
    got = one_search(home, questions[0])
    assert [c for c in callers if c[0] == "c1-load-models"] == [("c1-load-models", "embed warm up"), ("c1-load-models", "auto")], callers
    callers.clear()
    one_search(home, questions[0], rerank="off")
    assert [c for c in callers if c[0] == "c1-load-models"] == [("c1-load-models", "embed warm up")], callers
    callers.clear()
    from c1.config import Settings
    from c1.errors import C1Error
    from c1.service.search_service import search_here

    with pytest.raises(C1Error, match="no index named"):  # the one line at once: no model loaded before it
        search_here(Settings(home=tmp_path), questions[0], lambda *said: None)
    assert callers == [], callers
    monkeypatch.setattr("c1.service.models.load_models_aside", lambda settings: None)
    assert untimed(one_search(home, questions[0])) == untimed(got)
