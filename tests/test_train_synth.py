"""``c1 train synth`` on a real index: an algorithmic teacher behind a real HTTP server (honest or
fabricating, deterministic) for the pipeline's rules, and the real llama.cpp teacher (``llm``)."""

from __future__ import annotations

import json
import re
import time

import pytest

from llm_server import HotpotIndex, hotpot_index, llama_server  # noqa: F401
from model_servers import FakeServer, ScriptedServer, Step, completion

from c1.retrieval.corpus import Corpus
from c1.config import Settings
from c1.train.settings import SynthConfig
from c1.train.synth import Synth, check_task_against_corpus, entities
from c1.train.tasks import iter_jsonl, read_tasks, validate_task
from c1.train.teacher import RateLimiter, Teacher, TeacherError, first_json_object

_CHUNK = re.compile(r'<chunk id="([^"]+)" title="[^"]*">\n(.*?)\n</chunk>', re.DOTALL)


class AlgoTeacher(FakeServer):
    """An OpenAI-compatible server that writes exercises by rule from the chunks it is shown:
    quotes copied from them (``honest``) or invented (``fabricate``). Serving from the start."""

    def __init__(self, mode: str = "honest"):
        super().__init__(models=["algo"])
        self.mode = mode
        self.start()

    def answer(self, method: str, path: str, body):
        if method != "POST":
            return super().answer(method, path, body)
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        answer = self.extend(user) if system.startswith("You extend") else self.explore(user)
        # like llama.cpp: the JSON arrives as text, here inside a fence
        return Step(body={"choices": [{"message": {"role": "assistant", "content": "```json\n" + json.dumps(answer) + "\n```"}}],
                          "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": 50}})

    def quote(self, words: list[str], i: int) -> str:
        if self.mode == "fabricate":
            return f"this sentence was never written anywhere number {i}"
        return " ".join(words)

    def explore(self, user: str) -> dict:
        chunks = [(cid, text.split()) for cid, text in _CHUNK.findall(user)]
        seed_words = chunks[0][1]
        truth = next((e for e in entities(" ".join(seed_words)) if len(e.split()) <= 4), None)
        if truth is None:  # a seed that names nothing: a refusal (never an exception in the handler)
            return {}
        items = [{"chunk_id": cid, "quotes": [self.quote(w[:8], i)]} for i, (cid, w) in enumerate(chunks[:3])]
        clues = [{"chunk_id": cid, "quote": self.quote(w[2:10], i), "text": f"a passage about something notable, part {i}"}
                 for i, (cid, w) in enumerate(chunks[:3])]
        return {"truth": truth, "truth_type": "other", "supporting_items": items, "clues": clues,
                "question": "Which name do these clues point to?"}

    def extend(self, user: str) -> dict:
        """The next hop from the first candidate chunk (by id: the order the prompt lists them in
        follows the index build) that names a new entity; ``{}`` (a refusal the pipeline rejects)
        when none does. It used to take the first listed candidate only and raise StopIteration
        inside the handler when that one named nothing usable (1 run in 3)."""
        earlier = re.search(r"Earlier answers \(never name them\): (.*)\n", user).group(1).split(", ")
        cands = re.findall(r'\(link: ([^)]*)\)\n<chunk id="([^"]+)" title="[^"]*">\n(.*?)\n</chunk>', user, re.DOTALL)
        for link, cid, text in sorted(cands, key=lambda c: c[1]):
            words = text.split()
            for truth in entities(text):
                if truth == link or truth in earlier or len(truth.split()) > 4 or link in truth or truth in link:
                    continue
                first = truth.split()[0]
                at = next((i for i, w in enumerate(words) if w.strip(".,;:()'\"").startswith(first)), None)
                if at is None:
                    continue
                return {"chunk_id": cid, "link": link, "truth": truth, "truth_type": "other",
                        "quotes": [self.quote(words[max(0, at - 3): at + 6], 0)],
                        "clue": {"text": "another passage, about what came next", "quote": self.quote(words[:8], 1)},
                        "question": "Following that thread one step further, which name comes up?"}
        return {}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def corpus(hotpot_index: HotpotIndex):
    c = Corpus(Settings(home=hotpot_index.home))
    yield c
    c.close()


def _synth(corpus, url, out, **cfg):
    teacher = Teacher(url, concurrency=2)
    try:
        return Synth(corpus, teacher, out, SynthConfig(**{"seeds": 3, "levels": 2, "concurrency": 2, **cfg})).run()
    finally:
        teacher.close()


@pytest.mark.slow
def test_synth_writes_verified_multi_hop_tasks(corpus, tmp_path):
    server = AlgoTeacher("honest")
    try:
        report = _synth(corpus, server.base_url, tmp_path / "tasks.jsonl")
    finally:
        server.close()
    tasks = read_tasks(tmp_path / "tasks.jsonl")  # raises on any schema error
    assert report.tasks_written == len(tasks) >= 3, report.to_json()
    assert report.usage["requests"] == len(server.posts()) and report.usage["prompt_tokens"] > 0
    assert report.teacher_model == "algo"
    levels = {t["level"] for t in tasks}
    assert levels == {0, 1}, report.to_json()
    by_id = {t["id"]: t for t in tasks}
    for t in tasks:
        assert validate_task(t) == [] and check_task_against_corpus(t, corpus) == [], t["id"]
        assert t["verification"]["ratio"] >= 2 / 3
        assert len({i["chunk_id"] for i in t["supporting_items"] if i["level"] == 0}) >= 2
        gold = set(t["gold_docs"])
        assert all(d["doc_id"] not in gold for d in t["distractors"])
        if t["level"] == 1:
            parent = by_id[t["parent"]]
            b = t["bridging_item"]
            assert b["from_chunk_id"] in {i["chunk_id"] for i in parent["supporting_items"]}
            assert t["truths"] == parent["truths"] + [t["truth"]]
            assert t["truth_docs"] == [b["doc_id"]] and b["doc_id"] not in parent["gold_docs"]
    log = list(iter_jsonl(str(tmp_path / "tasks.jsonl") + ".log.jsonl"))
    assert len(log) == 3 and all(r["status"] == "kept" for r in log)


@pytest.mark.slow
def test_synth_rejects_fabricated_quotes(corpus, tmp_path):
    server = AlgoTeacher("fabricate")
    try:
        report = _synth(corpus, server.base_url, tmp_path / "tasks.jsonl", levels=1)
    finally:
        server.close()
    assert report.tasks_written == 0 and report.seeds_run == 3
    assert any("quotes found" in k for k in report.rejections), report.to_json()
    assert not (tmp_path / "tasks.jsonl").exists(), "no task written: no tasks file"
    log = list(iter_jsonl(str(tmp_path / "tasks.jsonl") + ".log.jsonl"))
    assert [r["status"] for r in log] == ["rejected"] * 3, log
    assert all(any("quotes found" in reason for reason in r["reasons"]) for r in log), log


@pytest.mark.slow
def test_synth_resumes_without_redoing_seeds(corpus, tmp_path):
    server = AlgoTeacher("honest")
    out = tmp_path / "tasks.jsonl"
    try:
        first = _synth(corpus, server.base_url, out, seeds=2, levels=1)
        second = _synth(corpus, server.base_url, out, seeds=4, levels=1)
    finally:
        server.close()
    assert (first.seeds_run, second.seeds_done_before, second.seeds_run) == (2, 2, 2)
    ids = [t["id"] for t in read_tasks(out)]
    assert len(ids) == len(set(ids)) == first.tasks_written + second.tasks_written


def test_teacher_helpers():
    assert first_json_object('sure:\n```json\n{"a": [1, {"b": 2}]}\n```') == {"a": [1, {"b": 2}]}
    assert first_json_object('prefix {"x": 1} suffix') == {"x": 1}
    assert first_json_object("no json {here") is None
    limiter = RateLimiter(per_minute=600)  # one every 0.1 s
    started = time.monotonic()
    for _ in range(5):
        limiter.acquire()
    assert time.monotonic() - started >= 0.39
    assert "Counterparts" in entities("a song by Rush, from the 1993 album Counterparts.")


def test_teacher_falls_back_to_the_response_format_the_server_takes():
    refused = Step(500, {"error": {"message": "Input should be 'text' or 'json_object' (response_format.type)"}})
    with ScriptedServer([refused, Step(body=completion('{"truth": "Rush"}', prompt_tokens=7, completion_tokens=3)),
                         Step(body=completion("no json at all"))]) as server:
        teacher = Teacher(server.base_url, "scripted", concurrency=1, retries=0)  # one slot: no deadlock on retry
        assert teacher.json("sys", "user", {"type": "object"}) == {"truth": "Rush"}
        with pytest.raises(TeacherError, match="no JSON object"):
            teacher.json("sys", "user", {"type": "object"})
        teacher.close()
    formats = [b.get("response_format") for b in server.posts()]
    assert formats[0]["type"] == "json_schema" and formats[1] == {"type": "json_object", "schema": {"type": "object"}}
    assert formats[2]["type"] == "json_object"  # remembered for the rest of the run
    assert teacher.usage.to_json() == {"requests": 2, "failures": 1, "cut_off": 0, "prompt_tokens": 107,
                                       "completion_tokens": 13}


def test_a_cut_off_reply_is_no_task():
    """A reply cut at max_tokens holds an unfinished object: nothing inside it is taken for the answer
    (before, the first complete inner object, a hop, came back as the task), and the teacher refuses
    a reply whose finish_reason is ``length`` even when its text happens to parse."""
    cut = '{"question": "who?", "hops": [{"quote": "abc", "doc": "d1"}, {"quote": "de'
    assert first_json_object(cut) is None
    assert first_json_object("```json\n" + cut + "\n```") is None
    assert first_json_object('{"a": bad, "b": {"x": 1}} then {"y": 2}') == {"y": 2}  # the next top-level one
    assert first_json_object('{"s": "a } brace", "n": {"x": 1}}') == {"s": "a } brace", "n": {"x": 1}}
    body = completion('{"truth": "Rush"}')
    body["choices"][0]["finish_reason"] = "length"
    with ScriptedServer([Step(body=body)]) as server:
        teacher = Teacher(server.base_url, "scripted", concurrency=1, retries=0, schema_mode="text")
        with pytest.raises(TeacherError, match="cut off at max_tokens"):
            teacher.json("sys", "user", {"type": "object"})
        teacher.close()
    assert teacher.usage.cut_off == 1 and teacher.usage.failures == 1


def test_synth_counts_cut_off_replies(hotpot_index: HotpotIndex, tmp_path):  # noqa: F811
    """Every teacher reply cut off: no task, and the report says why (usage and rejections)."""
    body = completion('{"truth": "Rush", "question": "q", "clues": [], "supporting": []}')
    body["choices"][0]["finish_reason"] = "length"
    corpus = Corpus(Settings(home=hotpot_index.home))
    with ScriptedServer([Step(body=body)] * 4) as server:
        teacher = Teacher(server.base_url, "scripted", concurrency=1, retries=0, schema_mode="text")
        try:
            report = Synth(corpus, teacher, tmp_path / "t.jsonl", SynthConfig(seeds=2, levels=1, concurrency=1)).run()
        finally:
            teacher.close()
            corpus.close()
    data = report.to_json()
    assert data["tasks_written"] == 0 and data["usage"]["cut_off"] == 2, data
    assert any("cut off" in k and v == 2 for k, v in data["rejections"].items()), data["rejections"]


# --- the real small teacher ------------------------------------------------------------------------
@pytest.mark.llm
@pytest.mark.slow
def test_synth_with_the_llama_cpp_teacher(hotpot_index: HotpotIndex, llama_server, tmp_path):  # noqa: F811
    """Qwen2.5-Coder-1.5B as the teacher: the run completes and writes a schema-valid file; every
    task in it passed verification. A model this small keeps few tasks or none — reported, not hidden."""
    corpus = Corpus(Settings(home=hotpot_index.home))
    # text mode: llama-cpp-python's schema grammar makes generation several times slower on this CPU
    teacher = Teacher(llama_server.base_url, llama_server.model, temperature=0.2, max_tokens=500, concurrency=1,
                      schema_mode="text", timeout=900)
    out = tmp_path / "tasks.jsonl"
    try:
        report = Synth(corpus, teacher, out, SynthConfig(seeds=1, levels=2, neighbours=2, chunk_chars=700,
                                                         concurrency=1, seed=1)).run()
        tasks = read_tasks(out) if out.exists() else []
        for t in tasks:
            assert check_task_against_corpus(t, corpus) == [], t
    finally:
        teacher.close()
        corpus.close()
    print(f"\nllama.cpp teacher: {json.dumps(report.to_json())}")
    assert report.seeds_run == 1 and report.tasks_written == len(tasks)
    assert report.usage["requests"] >= 1 and report.usage["prompt_tokens"] > 0
    log = list(iter_jsonl(str(out) + ".log.jsonl"))
    assert len(log) == 1 and (log[0]["status"] == "kept") == bool(tasks)
