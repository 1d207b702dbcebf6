"""``c1 train collect``: the report's selection rules by hand, and real runs of the c1 loop on a
real index (built-in policy: no model needed), with each turn's prompt rebuilt exactly."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from llm_server import HotpotIndex, hotpot_index  # noqa: F401  (fixture)
from model_servers import ScriptedServer, Step

from c1.retrieval.corpus import Corpus
from c1.agent.policies.builtin import BuiltinPolicy
from c1.config import Settings
from c1.train.collect import (SelectConfig, Selector, collect, low_keep_rate, read_trajectories, select_runs,
                              verdict, visible_messages)
from c1.train.tasks import SCHEMA_VERSION, iter_jsonl, validate_task
from c1.train.verify import contains


def hotpot_tasks(records: list[dict], corpus: Corpus) -> list[dict]:
    """c1 task records (schema 1) from HotpotQA records: gold = the supporting paragraphs."""
    by_source = {d.source_id: d for d in corpus.store.manifest.all_docs()}
    out = []
    for r in records:
        items = []
        for title in sorted({t for t, _ in r["supporting_facts"]}):
            d = by_source[title]
            text = "\n".join(c.text for c in corpus.doc_chunks(d.doc_id))
            items.append({"chunk_id": f"{d.doc_id}_0", "doc_id": d.doc_id, "title": title, "quotes": [],
                          "contains_truth": contains(r["answer"], text), "level": 0})
        if not any(i["contains_truth"] for i in items):
            continue  # yes/no questions and answers not written in a supporting paragraph
        out.append({
            "id": r["_id"], "schema": SCHEMA_VERSION, "collection": "default", "seed_chunk": items[0]["chunk_id"],
            "level": 0, "parent": None, "question": r["question"], "truth": r["answer"], "truth_type": "other",
            "truths": [r["answer"]], "clues": [], "supporting_items": items, "bridging_item": None, "distractors": [],
            "gold_docs": sorted(i["doc_id"] for i in items),
            "truth_docs": sorted(i["doc_id"] for i in items if i["contains_truth"]), "verification": {}, "teacher": {},
        })
    return out


def _score(**kw):
    base = {"malformed": None, "truth_seen": False, "answer_found": False, "traj_recall": 0.0, "recall": 0.0,
            "reward": 0.0, "turns": 5}
    base.update(kw)
    return base


# --- the rules ------------------------------------------------------------------------------------
def test_verdicts():
    assert verdict(_score(malformed="max_turns", traj_recall=1, recall=1)) == "malformed"
    assert verdict(_score(truth_seen=True, answer_found=False, traj_recall=1, recall=0.5)) == "dropped_gold"
    assert verdict(_score(truth_seen=True, answer_found=True, traj_recall=0.6, recall=0.5)) == "high"
    assert verdict(_score(traj_recall=0.5, recall=1.0)) == "low"  # thresholds are strict: > 0.5 and > 0.4
    assert verdict(_score(traj_recall=1.0, recall=0.4)) == "low"
    assert verdict(_score(traj_recall=0.0)) == "negative"


def test_one_high_recall_run_per_task_the_best_one():
    scores = [_score(traj_recall=0.6, recall=0.5, reward=1.5, turns=5),
              _score(traj_recall=1.0, recall=1.0, reward=1.9, turns=8),
              _score(traj_recall=1.0, recall=1.0, reward=1.9, turns=6),
              _score(malformed="error: boom", traj_recall=1, recall=1, reward=2.0),
              _score(truth_seen=True, traj_recall=1, recall=0.5, reward=1.0)]
    decisions = Selector(SelectConfig(), seed=0).select(scores)
    assert decisions == ["drop:not_best_high", "drop:not_best_high", "kept:high", "drop:malformed", "drop:dropped_gold"]


def test_lower_recall_is_kept_at_a_falling_rate():
    cfg = SelectConfig(low_rate=0.5)
    assert low_keep_rate(_score(traj_recall=0.5, recall=0.4), cfg) == pytest.approx(0.5)
    assert low_keep_rate(_score(traj_recall=0.3, recall=0.15), cfg) == pytest.approx(0.25)
    assert low_keep_rate(_score(traj_recall=0.05, recall=0.0), cfg) == pytest.approx(0.5 * 0.05 / 0.9)
    sel = Selector(cfg, seed=1)
    near = sum(sel.select([_score(traj_recall=0.5, recall=0.4)])[0] == "kept:low" for _ in range(2000)) / 2000
    far = sum(sel.select([_score(traj_recall=0.1, recall=0.0)])[0] == "kept:low" for _ in range(2000)) / 2000
    assert near == pytest.approx(0.5, abs=0.05) and far == pytest.approx(0.5 * 0.1 / 0.9, abs=0.03)


def test_zero_recall_negatives_stay_within_five_percent():
    rng = random.Random(3)
    tasks = []
    for i in range(200):
        runs = [_score(traj_recall=1.0, recall=1.0, reward=1.9)] if i % 2 else []
        runs += [_score(traj_recall=0.0) for _ in range(rng.randint(1, 3))]
        tasks.append(runs)
    decisions = [d for ds in select_runs(tasks) for d in ds]
    kept = [d for d in decisions if d.startswith("kept:")]
    negatives = kept.count("kept:negative")
    assert negatives >= 1 and negatives <= 0.05 * len(kept)
    assert decisions.count("drop:negative_quota") > 0


# --- real runs --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real(hotpot_index: HotpotIndex):
    settings = Settings(home=hotpot_index.home, budget=3000, max_turns=6, max_docs=5)  # tight: the built-in policy prunes
    corpus = Corpus(settings)
    yield settings, corpus, hotpot_tasks(hotpot_index.questions, corpus)
    corpus.close()


@pytest.mark.slow
def test_collect_runs_the_loop_scores_filters_and_resumes(real, tmp_path):
    settings, corpus, tasks = real
    assert len(tasks) >= 2 and all(validate_task(t) == [] for t in tasks)
    out = tmp_path / "traj.jsonl"
    make = lambda i: BuiltinPolicy(max_docs=5, variant=i)  # noqa: E731
    rep = collect(corpus, settings, tasks, make, out, runs=2, cfg=SelectConfig(low_rate=1.0))
    assert rep.runs == 2 * len(tasks) and rep.tasks_done_before == 0
    log = list(iter_jsonl(str(out) + ".runs.jsonl"))
    assert len(log) == rep.runs and {s["task_id"] for s in log} == {t["id"] for t in tasks}
    for s in log:
        assert 0 <= s["recall"] <= 1 and 0 <= s["traj_recall"] <= 1 and s["reward"] > 0
        assert s["decision"].split(":")[0] in ("kept", "drop")
    trajs = read_trajectories(out)
    assert len(trajs) == sum(rep.kept.values()) >= 1
    highs = [t for t in trajs if t["kept"] == "high"]
    assert len({t["task_id"] for t in highs}) == len(highs), "one high-recall run per task"
    again = collect(corpus, settings, tasks, make, out, runs=2)
    assert again.runs == 0 and again.tasks_done_before == len(tasks)


def test_each_turn_prompt_is_rebuilt_with_the_pruning_of_that_moment(real, tmp_path):
    settings, corpus, tasks = real
    from c1.train.collect import run_record, run_task, score_run

    tight = replace(settings, budget=2000, max_turns=8)
    found = None
    for t in tasks:
        r = run_task(corpus, tight, t, BuiltinPolicy(max_docs=5), 0)
        if r.agent.context.pruned:
            found = r
            break
    assert found is not None, "with a 2,000-token budget the built-in policy prunes on these questions"
    rec = json.loads(json.dumps(run_record(found, score_run(found), "kept:high")))  # through JSON, as stored
    pruned = set(found.agent.context.pruned)
    last = len(rec["steps"]) - 1
    msgs, reply = visible_messages(rec, last)
    live = found.agent.context
    # the last prompt is what the policy was sent: everything before the final reply, pruned chunks hidden
    assert msgs == [m.to_openai(live.pruned) for m in live.messages[: rec["steps"][last]["n_messages"]]]
    seen_text = "".join(m["content"] for m in msgs)
    for cid in pruned:
        assert f'id="{cid}"' not in seen_text
    first, _ = visible_messages(rec, 0)
    assert [m["role"] for m in first] == ["system", "user"]
    # before a prune call the chunk was still visible
    prune_step = next(i for i, s in enumerate(rec["steps"]) if set(s["pruned"]) & pruned)
    before, _ = visible_messages(rec, prune_step - 1)
    early = set(rec["steps"][prune_step]["pruned"]) - set(rec["steps"][prune_step - 1]["pruned"])
    assert any(f'id="{cid}"' in "".join(m["content"] for m in before) for cid in early)
    assert reply["role"] == "assistant"


# --- rollouts from a vLLM server (the HTTP side, against a scripted server) --------------------------
def test_vllm_generator_sends_token_ids_and_hot_reloads_adapters():
    from c1.train.policy import VLLMGenerator

    script = [Step(body={"choices": [{"text": "x", "token_ids": [11, 12, 13],
                                      "logprobs": {"token_logprobs": [-0.5, -1.25, -0.01]}}]}),
              Step(body={"choices": [{"text": "x", "logprobs": {"tokens": ["token_id:4", "token_id:9"]}}]}),
              Step(body={"status": "ok"}),  # load a
              Step(body={"choices": [{"token_ids": [1]}]}),
              Step(body={"status": "ok"}), Step(body={"status": "ok"})]  # load b, unload a
    with ScriptedServer(script) as server:
        gen = VLLMGenerator(server.base_url, "gpt-oss-20b")
        first = gen.generate([5, 6], 10, 1.0, [200012, 200002])
        assert first.ids == [11, 12, 13] and first.logprobs == [-0.5, -1.25, -0.01], "the sampler's own log-probs are kept"
        assert gen.generate([5], 3, 0.0, [9]).ids == [4, 9]
        gen.load_adapter("a", "/runs/rl/live/step-000001")
        assert gen.generate([5], 3, 1.0, [9]).ids == [1]
        gen.load_adapter("b", "/runs/rl/live/step-000002")
    posts = [(path, body) for method, path, _, body in server.requests if method == "POST"]
    first = posts[0][1]
    assert posts[0][0] == "/v1/completions" and first["prompt"] == [5, 6] and first["model"] == "gpt-oss-20b"
    assert first["stop_token_ids"] == [200012, 200002] and first["max_tokens"] == 10 and first["return_token_ids"]
    assert posts[2] == ("/v1/load_lora_adapter", {"lora_name": "a", "lora_path": "/runs/rl/live/step-000001"})
    assert posts[3][1]["model"] == "a"
    assert [p for p, _ in posts[4:]] == ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"]
    assert posts[5][1] == {"lora_name": "a"}
