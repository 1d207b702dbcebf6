"""A run that never answered is rewarded, selected and trained as no answer (issue 31, goal 1).

Real runs of the c1 loop on the shared HotpotQA index, with small policies that stop the way a
model does: at the turn limit (it keeps searching), on a reply cut off at ``max_tokens``, at the
budget. The loop still hands the documents it saw to a user, marked by the stop reason."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from llm_server import HotpotIndex, hotpot_index  # noqa: F401  (fixture)
from model_servers import ScriptedServer, Step, completion

from c1.agent.context import ToolCall
from c1.agent.policy import Reply
from c1.config import Settings
from c1.retrieval.corpus import Corpus
from c1.train import reward as rewards
from c1.train.collect import SelectConfig, collect, read_trajectories, run_record, run_task, score_run
from c1.train.tasks import iter_jsonl

from test_train_collect import hotpot_tasks


class Searcher:
    """Searches the question every turn and never answers; ``cut_at``: from that turn on, its reply
    is cut off (``Reply.truncated``), as a model's is at ``max_tokens``."""

    name = "searcher"
    model = None

    def __init__(self, cut_at: int | None = None):
        self.cut_at = cut_at

    def system_prompt(self, budget: int) -> str:
        return "Find the documents that answer the question."

    def next(self, state) -> Reply:
        if self.cut_at is not None and state.turn >= self.cut_at:
            return Reply(text="Let me think about whether", truncated=True, completion_tokens=50)
        name = state.tool_names["search_corpus"]
        return Reply(text="", tool_calls=[ToolCall(f"c{state.turn}", name, json.dumps({"query": state.question}))])


@pytest.fixture(scope="module")
def world(hotpot_index: HotpotIndex):  # noqa: F811
    settings = Settings(home=hotpot_index.home, budget=8000, max_turns=3, max_docs=5)
    corpus = Corpus(settings)
    yield settings, corpus, hotpot_tasks(hotpot_index.questions, corpus)
    corpus.close()


def _gold_seen(world):
    """A task whose gold the searcher sees: its fallback list holds gold documents."""
    settings, corpus, tasks = world
    for t in tasks:
        r = run_task(corpus, settings, t, Searcher(), 0)
        if set(r.outcome.returned) & set(t["gold_docs"]):
            return t, r
    pytest.fail("searching the question shows no gold document for any task")


# --- the reward --------------------------------------------------------------------------------------
def test_reward_of_a_run_that_stopped_without_an_answer(world):
    """Stopped at the turn limit, its documents are the ones it saw: F_β 0, no answer found, the
    trajectory recall kept. Before, the substitute list scored like an answer."""
    task, r = _gold_seen(world)
    assert r.finished.stop_reason == "max_turns" and r.outcome.stop == "max_turns"
    rew = rewards.reward(r.outcome, 4.0)
    assert rew.f_beta == 0 and rew.recall == 0 and not rew.answer_found and not rew.scored_returned
    assert rew.traj_recall > 0 and rew.total == pytest.approx(0.3 * rew.traj_recall)
    counted = rewards.reward(r.outcome, 4.0, rewards.RewardConfig(fallback_counts=True))
    assert counted.f_beta > 0 and counted.total > rew.total
    answered = rewards.reward(replace(r.outcome, stop="answer"), 4.0)
    assert answered.f_beta == counted.f_beta and answered.total == counted.total


@pytest.mark.parametrize("stop", ["max_turns", "budget", "truncated", "unparsed_answer", "cancelled", "error"])
def test_every_stop_but_an_answer_scores_no_document(stop):
    o = rewards.Outcome(returned=["d1"], returned_texts=["Rush's drummer was Neil Peart."], seen=["d1", "d2"],
                        gold=["d1", "d2"], truth="Neil Peart", truth_docs=["d1"], tool_calls=["search_corpus"], turns=3,
                        stop=stop)
    rew = rewards.reward(o, 2.0)
    assert (rew.f_beta, rew.answer_found, rew.traj_recall, rew.stop) == (0.0, False, 1.0, stop)
    assert rewards.reward(replace(o, stop="answer"), 2.0).answer_found


# --- collect and SFT -----------------------------------------------------------------------------------
def test_collect_drops_runs_without_an_answer_and_counts_them_by_reason(world, tmp_path):
    """Cut off, at the turn limit, at the budget: none is kept (before, truncated and budget runs
    could be kept, even as "high"), and the report says why each was dropped."""
    settings, corpus, tasks = world
    policies = {0: lambda: Searcher(), 1: lambda: Searcher(cut_at=2)}
    out = tmp_path / "traj.jsonl"
    rep = collect(corpus, settings, tasks[:2], lambda i: policies[i](), out, runs=2, cfg=SelectConfig(low_rate=1.0))
    assert rep.runs == 4 and sum(rep.kept.values()) == 0, rep.to_json()
    assert rep.dropped == {"malformed:max_turns": 2, "malformed:truncated": 2}, rep.dropped
    assert not out.exists() or read_trajectories(out) == []
    log = list(iter_jsonl(str(out) + ".runs.jsonl"))
    assert sorted(s["stop"] for s in log) == ["max_turns", "max_turns", "truncated", "truncated"]
    tight = replace(settings, budget=1400, max_turns=12)
    r = run_task(corpus, tight, tasks[0], Searcher(), 0)
    assert r.finished.stop_reason == "budget"
    assert score_run(r)["malformed"] == "budget"


def test_sft_trains_only_runs_that_ended_in_an_answer(world):
    """A cut-off run's record: SFT leaves it out, counted as ``no_answer:truncated`` (before, its last
    step, a reply never added, failed in visible_turn and was counted quietly as unrenderable)."""
    pytest.importorskip("openai_harmony")
    from c1.train.render import HarmonyRenderer
    from c1.train.sft import build_samples

    settings, corpus, tasks = world
    r = run_task(corpus, settings, tasks[0], Searcher(cut_at=2), 0)
    assert r.finished.stop_reason == "truncated"
    rec = json.loads(json.dumps(run_record(r, score_run(r), "kept:high")))
    samples, rep = build_samples([rec], HarmonyRenderer(start_date="2026-01-01"), 100_000)
    assert samples == [] and rep.dropped == {"no_answer:truncated": 1} and rep.unrenderable == 0
    bare = {k: v for k, v in rec.items() if k != "scores"}  # an older record: the stop is read from its messages
    assert build_samples([bare], HarmonyRenderer(start_date="2026-01-01"), 100_000)[1].dropped == {"no_answer:unknown": 1}


# --- what a user gets ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_search_json_marks_a_run_that_did_not_answer(hotpot_index: HotpotIndex):  # noqa: F811
    """`c1 search --json` still returns the documents a cut-off run was shown, and says why: the
    run's stop reason in ``stats.stop_reasons``."""
    from conftest import run_cli

    cut = completion("We need to check the drummer and then maybe")
    cut["choices"][0]["finish_reason"] = "length"
    script = [Step(body=completion(None, [("search_corpus", {"query": "Neil Peart drummer"})])), Step(body=cut), Step(body=cut)]
    with ScriptedServer(script) as srv:  # the cut reply is asked once more with all the room, and cut again
        res = run_cli(["search", hotpot_index.questions[0]["question"], "--policy", "llm", "--base-url", srv.base_url,
                       "--no-daemon", "--json"], hotpot_index.env, timeout=300)
    assert res.rc == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["stats"]["stop_reasons"] == ["truncated"] and out["documents"]
