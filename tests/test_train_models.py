"""Training end to end on this CPU: a tiny causal LM built here from a config (random weights, a
byte-level BPE tokenizer trained on the spot, a chat template with tool calls), a real indexed
HotpotQA corpus, the real c1 loop.

- rendering: the chat-template and harmony renderers give prompt/completion ids that parse back
  to the same turn; pruned chunks are absent from later prompts;
- SFT: kept trajectories (collected with the built-in policy) → one TRL SFT step with LoRA; the
  loss is on assistant tokens only; the adapter is saved and loads again;
- RL: a few CISPO steps with rollouts through the loop; rewards within a group differ because the
  first tool call of each rollout is scripted differently (a random model would tie every group);
  the LoRA weights change; checkpoint, resume and the saved adapter work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_server import HotpotIndex, hotpot_index  # noqa: F401  (fixture)
from test_train_collect import hotpot_tasks

from c1.agent import prompts
from c1.retrieval.corpus import Corpus
from c1.config import Settings
from c1.train.tasks import validate_task

pytestmark = pytest.mark.slow  # a model trained on this CPU
torch = None


@pytest.fixture(autouse=True, scope="module")
def _training_libraries():
    """torch, transformers and peft, imported once a test of this module runs: not at collection, which
    ``pytest -m "not slow"`` also makes (they take seconds to import)."""
    global torch
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")


TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | map(attribute='function') | map(attribute='name') | join(', ') }}"
    "<|im_end|>\n{% endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{%- if m.tool_calls %}{% for tc in m.tool_calls %}<tool_call>{{ {'name': tc.function.name, 'arguments': tc.function.arguments} | tojson }}</tool_call>{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hotpot(hotpot_index: HotpotIndex):  # noqa: F811
    """The shared real index (4 HotpotQA records), read-only; tasks built from its questions."""
    settings = Settings(home=hotpot_index.home, budget=6000, max_turns=3, max_docs=5)
    corpus = Corpus(settings)
    tasks = hotpot_tasks(hotpot_index.questions, corpus)
    yield settings, corpus, tasks, hotpot_index.home
    corpus.close()


@pytest.fixture(scope="module")
def tiny(hotpot, tmp_path_factory):
    """A 2-layer Qwen2 with random weights and a BPE tokenizer trained on the corpus, saved to a folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    settings, corpus, tasks, root = hotpot
    texts = [c.text for c in corpus.store.manifest.iter_chunks()]
    texts += [prompts.system_prompt(6000), *(t["question"] for t in tasks)]
    texts += ['<tool_call>{"name": "search_corpus", "arguments": {"query": "drummer"}}</tool_call>'] * 20
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=1200, special_tokens=special,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  bos_token=None, unk_token=None)
    tok.chat_template = TEMPLATE
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16384,
                      tie_word_embeddings=True, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    model = Qwen2ForCausalLM(cfg)
    path = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _renderer(path):
    from c1.train.model import load_tokenizer
    from c1.train.render import make_renderer

    tok = load_tokenizer(path)
    return tok, make_renderer(tok, "qwen2")


# --- rendering ------------------------------------------------------------------------------------
def test_chat_template_renderer_roundtrip(tiny):
    tok, r = _renderer(tiny)
    assert r.kind == "chat_template" and r.native_tools and tok.convert_tokens_to_ids("<|im_end|>") in r.stop_ids
    messages = [{"role": "system", "content": "Find documents."}, {"role": "user", "content": "Who drummed for Rush?"}]
    tools = [{"type": "function", "function": {"name": "search_corpus", "parameters": {}}}]
    reply = {"role": "assistant", "content": "",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_corpus", "arguments": '{"query": "Rush drummer"}'}}]}
    prompt, completion = r.sample(messages, tools, reply)
    assert prompt == r.prompt_ids(messages, tools)
    assert tok.decode(prompt).endswith("<|im_start|>assistant\n")
    assert completion[-1] == tok.convert_tokens_to_ids("<|im_end|>")  # the turn ends with its stop token, nothing after it
    assert tok.decode(completion) == '<tool_call>{"name": "search_corpus", "arguments": {"query": "Rush drummer"}}</tool_call><|im_end|>'
    parsed = r.parse(completion, {"search_corpus": "query"})
    assert [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls] == [("search_corpus", {"query": "Rush drummer"})]
    final = {"role": "assistant", "content": '<Document id="abc"><Justification>x</Justification></Document>'}
    _, completion = r.sample(messages, tools, final)
    answer = r.parse(completion, {"search_corpus": "query"})
    assert answer.tool_calls == [] and answer.text.startswith('<Document id="abc">')


def test_harmony_renderer_follows_vllm_and_round_trips():
    pytest.importorskip("openai_harmony")
    from c1.train.render import HarmonyRenderer

    r = HarmonyRenderer(reasoning_effort="low", start_date="2026-01-01")
    tools = [{"type": "function", "function": {"name": "search_corpus", "description": "Search.",
                                               "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]
    messages = [
        {"role": "system", "content": "You are a retrieval subagent."},
        {"role": "user", "content": "Who?"},
        {"role": "assistant", "content": "", "reasoning": "look it up",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "search_corpus", "arguments": '{"query":"x"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "search_corpus", "content": "<chunk id=\"a_0\">text</chunk>"},
    ]
    text = r.decode(r.prompt_ids(messages, tools))
    assert text.startswith("<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.")
    assert "Current date: 2026-01-01" in text and "Reasoning: low" in text
    assert "<|start|>developer<|message|># Instructions\n\nYou are a retrieval subagent." in text
    assert "type search_corpus = " in text  # the tools as a functions namespace
    # history as vLLM re-renders it with the official openai-harmony (recipient in the role section)
    assert ("<|start|>assistant<|channel|>analysis<|message|>look it up<|end|>"
            "<|start|>assistant to=functions.search_corpus<|channel|>commentary json<|message|>"
            '{"query":"x"}<|call|>') in text
    # a tool result exactly as the harmony format is published: <|start|>{toolname} to=assistant<|channel|>commentary
    assert text.endswith('<|start|>functions.search_corpus to=assistant<|channel|>commentary<|message|>'
                         '<chunk id="a_0">text</chunk><|end|><|start|>assistant')
    call = {"role": "assistant", "content": "", "reasoning": "next hop",
            "tool_calls": [{"id": "c2", "function": {"name": "search_corpus", "arguments": '{"query":"y"}'}}]}
    _, completion = r.sample(messages, tools, call)
    # the completion as gpt-oss generates it (recipient after the channel, constrained content type),
    # not the history spelling above: what SFT teaches is what the served model emits
    assert r.decode(completion) == ("<|channel|>analysis<|message|>next hop<|end|><|start|>assistant<|channel|>commentary "
                                    'to=functions.search_corpus <|constrain|>json<|message|>{"query":"y"}<|call|>')
    back = r.parse(completion, {})
    assert back.reasoning == "next hop" and [(c.name, c.arguments) for c in back.tool_calls] == [("search_corpus", '{"query":"y"}')]
    _, completion = r.sample(messages, tools, {"role": "assistant", "content": "<Document id=\"a\"></Document>"})
    assert r.decode(completion).endswith("<|channel|>final<|message|><Document id=\"a\"></Document><|return|>")
    assert r.parse(completion, {}).text == '<Document id="a"></Document>'
    assert r.parse(r.enc.encode("cut off <|channel|>", allowed_special="all"), {}).tool_calls == []


TWO_CALLS = {"role": "assistant", "content": "", "reasoning": "two independent lookups",
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search_corpus", "arguments": '{"query": "Rush drummer"}'}},
                            {"id": "c2", "type": "function", "function": {"name": "grep_corpus", "arguments": '{"pattern": "Peart"}'}}]}
TWO_RESULTS = [{"role": "tool", "tool_call_id": "c1", "name": "search_corpus", "content": '<chunk id="a_0">Neil Peart</chunk>'},
               {"role": "tool", "tool_call_id": "c2", "name": "grep_corpus", "content": '<chunk id="b_0">Peart</chunk>'}]


def _stops_inside(completion: list[int], stops: list[int]) -> list[int]:
    return [i for i, t in enumerate(completion) if t in stops]


def test_a_multi_call_teacher_turn_trains_what_the_sampler_stops_at():
    """gpt-oss stops at <|call|> (vLLM adds it to the stop tokens; so does c1's sampler): a teacher
    turn with two calls is two completions, each with exactly one stop token, at its end; the second
    is prompted with the first call and its result, and the next turn's prompt continues them all
    (it used to be one completion with <|call|> in the middle, tokens no sampler ever produces)."""
    pytest.importorskip("openai_harmony")
    from c1.train.cispo import pack_turns
    from c1.train.policy import Turn
    from c1.train.render import HarmonyRenderer

    r = HarmonyRenderer(start_date="2026-01-01")
    call, ret = r.enc.encode("<|call|>", allowed_special="all")[0], r.enc.encode("<|return|>", allowed_special="all")[0]
    assert set(r.stop_ids) == {call, ret}
    messages = [{"role": "system", "content": "Find documents."}, {"role": "user", "content": "Who drummed for Rush?"}]
    pairs = r.samples(messages, [], TWO_CALLS, TWO_RESULTS)
    assert len(pairs) == 2
    for prompt, completion in pairs:
        assert _stops_inside(completion, r.stop_ids) == [len(completion) - 1] and completion[-1] == call
        assert len(r.parse(completion, {}).tool_calls) == 1
    assert [r.parse(c, {}).tool_calls[0].name for _, c in pairs] == ["search_corpus", "grep_corpus"]
    first, second = pairs
    assert second[0][: len(first[0])] == first[0], "call 2's prompt continues call 1's"
    rest = r.decode(second[0][len(first[0]):])  # call 1 as history re-renders it, then its result
    assert rest.startswith("<|channel|>analysis<|message|>two independent lookups<|end|><|start|>assistant to=functions.search_corpus")
    assert "Neil Peart" in rest, "and holds call 1's result"
    assert "Neil Peart" not in r.decode(first[0])
    assert "<|channel|>commentary to=functions.grep_corpus <|constrain|>json" in r.decode(second[1])
    with pytest.raises(ValueError, match="one tool call"):
        r.sample(messages, [], TWO_CALLS)
    # the next turn, rendered from the teacher's context (calls then results), continues both
    after = messages + [TWO_CALLS] + TWO_RESULTS
    final = r.completion_ids({"role": "assistant", "content": '<Document id="a"></Document>'})
    assert _stops_inside(final, r.stop_ids) == [len(final) - 1] and final[-1] == ret
    packed = pack_turns([Turn(p, c) for p, c in pairs] + [Turn(r.prompt_ids(after, []), final)])
    assert len(packed) == 3, "each call is re-spelled in the next prompt: no turn continues the previous sequence"
    assert r.prompt_ids(after, [])[: len(second[0])] == second[0], "the answer's prompt continues call 2's"
    # and SFT builds exactly those samples from a collected trajectory record
    from c1.train.sft import build_samples

    record = {"task_id": "t", "run": 0, "tools": [], "steps": [{"n_messages": 2, "pruned": []}, {"n_messages": 5, "pruned": []}],
              "messages": [{"role": "system", "content": "Find documents."}, {"role": "user", "content": "Who drummed for Rush?"},
                           {"role": "assistant", "content": "", "reasoning": "two independent lookups",
                            "tool_calls": [{"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                                           for c in TWO_CALLS["tool_calls"]]},
                           *[{"role": "tool", "tool_call_id": m["tool_call_id"], "name": m["name"], "content": m["content"]}
                             for m in TWO_RESULTS],
                           {"role": "assistant", "content": '<Document id="a"></Document>'}]}
    samples, rep = build_samples([record], r, 100_000)
    assert (rep.turns, rep.samples, rep.unrenderable) == (2, 3, 0)
    for sample in samples:
        completion = [t for t, label in zip(sample["input_ids"], sample["labels"]) if label != -100]
        assert _stops_inside(completion, r.stop_ids) == [len(completion) - 1]
    assert [sample["input_ids"] for sample in samples[:2]] == [p + c for p, c in pairs]


def test_a_multi_call_turn_is_one_chat_template_generation(tiny):
    """A chat-template model writes all its calls in one reply: one completion, both calls, one
    stop token (its end of turn) at the end."""
    tok, r = _renderer(tiny)
    messages = [{"role": "system", "content": "Find documents."}, {"role": "user", "content": "Who drummed for Rush?"}]
    pairs = r.samples(messages, [], TWO_CALLS, TWO_RESULTS)
    assert len(pairs) == 1
    completion = pairs[0][1]
    assert _stops_inside(completion, r.stop_ids) == [len(completion) - 1]
    assert [c.name for c in r.parse(completion, {"search_corpus": "query", "grep_corpus": "pattern"}).tool_calls] == \
        ["search_corpus", "grep_corpus"]


class ScriptedHarmony:
    """A generator that 'samples' given assistant turns, rendered as harmony completions."""

    def __init__(self, replies: list[dict]):
        from c1.model.harmony import completion_ids

        self.completions = [completion_ids(r) for r in replies]

    def generate(self, prompt_ids, max_new_tokens, temperature, stop_ids):
        return self.completions.pop(0)


def test_a_harmony_trajectory_through_the_loop_keeps_each_turns_exact_prompt(hotpot):
    """Three turns of the real loop (search, grep, final answer) sampled as harmony tokens in the
    model's output spelling: each prompt starts with the previous prompt, then re-renders the call in
    the history spelling vLLM serves, so each turn is scored against the exact prompt it was sampled
    from — a sequence of its own, never a packed one whose context the sampler did not see."""
    pytest.importorskip("openai_harmony")
    from c1.agent.tools import ToolConfig
    from c1.train.cispo import pack_turns
    from c1.train.collect import run_task
    from c1.train.policy import TokenPolicy
    from c1.train.render import HarmonyRenderer

    settings, corpus, tasks, _ = hotpot
    task = tasks[0]
    replies = [
        {"role": "assistant", "content": "", "reasoning": "search first",
         "tool_calls": [{"id": "x", "function": {"name": "search_corpus", "arguments": json.dumps({"query": task["question"]})}}]},
        {"role": "assistant", "content": "", "reasoning": "then grep",
         "tool_calls": [{"id": "y", "function": {"name": "grep_corpus", "arguments": '{"pattern": "the"}'}}]},
        {"role": "assistant", "content": "done", "reasoning": "enough"},
    ]
    renderer = HarmonyRenderer(start_date="2026-01-01")
    policy = TokenPolicy(renderer, ScriptedHarmony(replies), max_new_tokens=512)
    res = run_task(corpus, settings, task, policy, 0, ToolConfig())
    assert all(t.completion_ids[-1] in renderer.stop_ids for t in policy.turns)
    assert res.agent.stats["turns"] == 3 and res.agent.stats["tool_calls"] == 2
    packed = pack_turns(policy.turns)
    assert [p.spans for p in packed] == [[(len(t.prompt_ids), len(t.prompt_ids) + len(t.completion_ids))] for t in policy.turns]
    for before, after in zip(policy.turns, policy.turns[1:]):
        assert after.prompt_ids[: len(before.prompt_ids)] == before.prompt_ids
        assert after.prompt_ids[: len(before.prompt_ids) + len(before.completion_ids)] != before.prompt_ids + before.completion_ids


# --- collect → SFT --------------------------------------------------------------------------------
def test_collect_then_sft_step_on_assistant_tokens(hotpot, tiny, tmp_path):
    from c1.agent.policies.builtin import BuiltinPolicy
    from c1.train.collect import SelectConfig, collect, read_trajectories, visible_messages
    from c1.train.model import load_model, load_tokenizer
    from c1.train.settings import SFTSettings
    from c1.train.sft import build_samples, train_sft

    settings, corpus, tasks, _ = hotpot
    out = tmp_path / "traj.jsonl"
    rep = collect(corpus, settings, tasks[:2], lambda i: BuiltinPolicy(max_docs=5, variant=i), out, runs=2,
                  cfg=SelectConfig(low_rate=1.0))
    assert rep.runs == 4 and sum(rep.kept.values()) >= 1, rep.to_json()
    trajs = read_trajectories(out)
    assert len(trajs) == sum(rep.kept.values())
    # the prompt of every turn is rebuilt from the record: the pruned chunks of that moment hidden
    rec = trajs[0]
    msgs, reply = visible_messages(rec, len(rec["steps"]) - 1)
    assert msgs[0]["role"] == "system" and msgs[1]["content"] == rec["question"] and reply["role"] == "assistant"

    tok, renderer = load_tokenizer(tiny), _renderer(tiny)[1]
    samples, srep = build_samples(trajs, renderer, max_length=16384)
    assert srep.samples == srep.turns == sum(len(t["steps"]) for t in trajs) and samples
    for s in samples:
        labelled = [t for t in s["labels"] if t != -100]
        first = s["labels"].index(labelled[0])
        assert s["labels"][first:] == s["input_ids"][first:], "labels cover exactly the completion, at the end"
        assert tok.decode(s["input_ids"][:first]).endswith("<|im_start|>assistant\n")
        assert labelled[-1] == tok.convert_tokens_to_ids("<|im_end|>")

    model = load_model(tiny, device="cpu")
    report = train_sft(model, tok, renderer, trajs[:1], tmp_path / "sft", SFTSettings(max_steps=1, grad_accum=1, lr=1e-3, warmup_ratio=0.0))
    assert report["steps"] == 1 and report["train_loss"] > 0
    adapter = Path(report["adapter"])
    assert (adapter / "adapter_config.json").exists() and (adapter / "adapter_model.safetensors").exists()
    from c1.train.model import load_adapter, lora_state

    reloaded = load_adapter(load_model(tiny, device="cpu"), adapter)
    weights = lora_state(reloaded)
    assert weights and any(v.abs().sum() > 0 for k, v in weights.items() if "lora_B" in k), "SFT moved lora_B off zero"


# --- RL -------------------------------------------------------------------------------------------
def test_packed_turns_score_like_separate_turns(tiny):
    from c1.train.cispo import pack_turns, token_logprobs
    from c1.train.model import load_model
    from c1.train.policy import Turn

    model = load_model(tiny, device="cpu")
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(10, 1000, (60,), generator=g).tolist()
    turns = [Turn(ids[:20], ids[20:25]), Turn(ids[:40], ids[40:44]), Turn(ids[:10] + [7, 7], ids[50:53])]
    packed = pack_turns(turns)
    assert [p.spans for p in packed] == [[(20, 25), (40, 44)], [(12, 15)]]
    with torch.no_grad():
        joint = token_logprobs(model, packed[0].ids, packed[0].spans)
        apart = torch.cat([token_logprobs(model, t.prompt_ids + t.completion_ids, len(t.completion_ids)) for t in turns[:2]])
    assert joint.shape == (9,) and torch.allclose(joint, apart, atol=1e-5)



class ScriptedFirstTurn:
    """A generator whose first turn of each rollout is a fixed tool call (then the model samples)."""

    def __init__(self, inner, first_ids: list[int]):
        self.inner, self.first_ids, self.used = inner, first_ids, False

    def generate(self, prompt_ids, max_new_tokens, temperature, stop_ids):
        if not self.used:
            self.used = True
            return list(self.first_ids)
        return self.inner.generate(prompt_ids, max_new_tokens, temperature, stop_ids)


def test_rl_cispo_steps_through_the_real_loop(hotpot, tiny, tmp_path):
    from c1.train.model import LoraSpec, add_lora, load_adapter, load_model, lora_state
    from c1.train.policy import HFGenerator, TokenPolicy
    from c1.train.rl import RLSettings, RLTrainer

    from dataclasses import replace

    from c1.agent.tools import ToolConfig

    settings, corpus, tasks, _ = hotpot
    settings = replace(settings, max_turns=2, budget=3000)  # short prompts: this CPU is shared
    tools = ToolConfig(search_tokens=500)
    tok, renderer = _renderer(tiny)
    model = add_lora(load_model(tiny, device="cpu"), LoraSpec(rank=4, alpha=8))
    before = lora_state(model)
    gen = HFGenerator(model, seed=0)
    titles = {t["id"]: [i["title"] for i in t["supporting_items"]] for t in tasks}

    def scripted(task, i):
        queries = [task["question"], "zzqqxx unrelated nonsense", titles[task["id"]][0]]
        call = json.dumps({"name": "search_corpus", "arguments": {"query": queries[i % 3]}})
        first = tok(f"<tool_call>{call}</tool_call><|im_end|>", add_special_tokens=False)["input_ids"]
        return TokenPolicy(renderer, ScriptedFirstTurn(gen, first), max_new_tokens=8, temperature=1.0, max_context=16384)

    cfg = RLSettings(epochs=2, group_size=3, queries_per_step=1, substeps=2, lr=5e-3, max_steps=2, save_every=1,
                     lora=LoraSpec(rank=4, alpha=8))
    seen_steps = []
    trainer = RLTrainer(model, renderer, corpus, settings, tasks, tmp_path / "rl", cfg, generator=gen, tool_config=tools,
                        policy_factory=scripted, on_step=seen_steps.append)
    last = trainer.train()
    assert trainer.state.step == 2 and len(seen_steps) == 2
    rows = [json.loads(line) for line in (tmp_path / "rl" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["groups_tied"] == 0 and r["turn_samples"] >= 3 and r["loss"] is not None for r in rows), rows
    assert all(r["sequences"] < r["turn_samples"] for r in rows), "consecutive turns share one forward pass"
    assert rows[0]["beta"] == 4.0 and rows[0]["reward_std"] > 0
    assert last["clip_fraction"] is not None and last["ratio_max"] >= 0
    after = lora_state(model)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and any("lora_B" in k for k in changed), "the update moved the LoRA weights"

    # checkpoints: one per step, the newest resumes into a fresh model with identical weights
    ckpts = trainer.checkpoints()
    assert [p.name for p in ckpts] == ["step-000001", "step-000002"]
    fresh = add_lora(load_model(tiny, device="cpu"), LoraSpec(rank=4, alpha=8))
    t2 = RLTrainer(fresh, renderer, corpus, settings, tasks, tmp_path / "rl", cfg, policy_factory=scripted)
    assert t2.resume() and (t2.state.step, t2.state.epoch, t2.state.position) == (2, 0, 2)
    assert all(torch.equal(after[k], v) for k, v in lora_state(fresh).items())
    # the final adapter is saved and loads again onto the base model
    path = trainer.save_final()
    loaded = lora_state(load_adapter(load_model(tiny, device="cpu"), path))
    assert loaded.keys() == after.keys() and all(torch.equal(loaded[k], after[k]) for k in after)
    assert all(validate_task(t) == [] for t in tasks)


# --- the command bodies (what `c1 train collect|sft|rl` run) -------------------------------------
def test_collect_sft_rl_command_bodies(hotpot, tiny, tmp_path, capsys):
    from dataclasses import replace

    from c1.commands.train import run_collect, run_rl, run_sft
    from c1.errors import C1Error
    from c1.commands.train_flags import CollectFlags, RlFlags, SftFlags
    from c1.train.tasks import append_jsonl

    settings, corpus, tasks, _ = hotpot
    task_file = tmp_path / "tasks.jsonl"
    append_jsonl(task_file, tasks[:2])
    run_collect(replace(settings, policy="builtin"), CollectFlags(runs=1, workers=1, low_rate=1.0, negatives=0.05),
                tasks=task_file, out=tmp_path / "traj.jsonl", seed=0, json_out=True, quiet=True)
    collected = json.loads(capsys.readouterr().out)
    assert collected["policy"] == "builtin" and collected["runs"] == 2
    lora = dict(lora_rank=4, lora_alpha=8, lora_dropout=0.0, lora_targets="q_proj,v_proj")
    run_sft(SftFlags(lr=1e-3, epochs=1.0, max_steps=1, batch_size=1, grad_accum=1, max_length=16384,
                     gradient_checkpointing=False, seed=0, **lora),
            trajectories=tmp_path / "traj.jsonl", model=tiny, out=tmp_path / "sft", adapter=None, renderer="auto",
            reasoning_effort=None, start_date=None, json_out=True, quiet=True)
    sft = json.loads(capsys.readouterr().out)
    assert sft["steps"] == 1 and sft["renderer"] == "chat_template"
    rl_args = dict(tasks=task_file, model=tiny, out=tmp_path / "rl", adapter=Path(sft["adapter"]), renderer="auto",
                   reasoning_effort=None, start_date=None, vllm_url=None, vllm_model=None, json_out=True, quiet=True)
    flags = RlFlags(epochs=1, group_size=2, queries_per_step=1, substeps=1, lr=1e-3, eps_max=5.0, temperature=1.0,
                    max_new_tokens=8, max_context=8192, save_every=1, max_steps=1, resume=False, start_level=0,
                    curriculum=True, rollout_workers=1, gradient_checkpointing=False, seed=0, **lora)
    small = replace(settings, budget=2000, max_turns=2)
    run_rl(small, flags, **rl_args)
    rl = json.loads(capsys.readouterr().out)
    assert rl["steps"] == 1 and Path(rl["adapter"], "adapter_model.safetensors").exists()
    assert len((tmp_path / "rl" / "metrics.jsonl").read_text().splitlines()) == 1
    config = json.loads((tmp_path / "rl" / "config.json").read_text())
    assert config["renderer"] == "chat_template" and config["settings"]["group_size"] == 2
    with pytest.raises(C1Error, match="--resume"):
        run_rl(small, flags, **rl_args)
    run_rl(small, replace(flags, resume=True, max_steps=2), **rl_args)
    assert json.loads(capsys.readouterr().out)["steps"] == 2


# --- π_old, the sampler, the pool, the device map ---------------------------------------------------
def test_the_model_loads_with_a_device_map(tiny):
    """The weights go straight to the device (a device map), never built on the host and moved.
    (This machine has no GPU: the arguments are checked for cuda, the load itself on the CPU.)"""
    from c1.train.model import load_kwargs, load_model

    assert load_kwargs(tiny, "cuda:0")["device_map"] == "cuda:0"
    assert load_kwargs(tiny, "cuda:0")["dtype"] == torch.bfloat16
    model = load_model(tiny, device="cpu")
    assert next(model.parameters()).device.type == "cpu"


def test_rollouts_keep_the_samplers_logprobs_at_the_training_temperature(hotpot, tiny, tmp_path):
    """The sampler's own log-probabilities (μ) are kept with every turn, and the trainer computes the
    same numbers at the same temperature: in process they agree to float error, so the sampler
    correction is 1; a trainer at another temperature would not agree."""
    from dataclasses import replace

    from c1.agent.tools import ToolConfig
    from c1.train.cispo import pack_turns, token_logprobs
    from c1.train.model import load_model
    from c1.train.policy import HFGenerator, TokenPolicy
    from c1.train.collect import run_task

    settings, corpus, tasks, _ = hotpot
    settings = replace(settings, max_turns=2, budget=3000)
    tok, renderer = _renderer(tiny)
    model = load_model(tiny, device="cpu")
    policy = TokenPolicy(renderer, HFGenerator(model, seed=0), max_new_tokens=6, temperature=0.7, max_context=16384)
    run_task(corpus, settings, tasks[0], policy, 0, ToolConfig(search_tokens=300))
    assert policy.turns and all(t.logprobs is not None and len(t.logprobs) == len(t.completion_ids) for t in policy.turns)
    packed = pack_turns(policy.turns)
    with torch.no_grad():
        for p in packed:
            mu = torch.tensor(p.sampler_logprobs)
            same = token_logprobs(model, p.ids, p.spans, temperature=0.7)
            other = token_logprobs(model, p.ids, p.spans, temperature=1.0)
            assert torch.allclose(same, mu, atol=1e-4), (same - mu).abs().max()
            assert not torch.allclose(other, mu, atol=1e-2)


class SlowAnswer:
    """A generator that answers at once with the final list, slowly, counting how many run at a time."""

    def __init__(self, ids):
        import threading

        self.ids, self.lock, self.now, self.most = ids, threading.Lock(), 0, 0

    def generate(self, prompt_ids, max_new_tokens, temperature, stop_ids):
        import time

        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.3)
        with self.lock:
            self.now -= 1
        return list(self.ids)


def test_the_rollouts_of_a_group_share_the_pool(hotpot, tiny, tmp_path):
    from c1.train.model import LoraSpec, add_lora, load_model
    from c1.train.policy import TokenPolicy
    from c1.train.rl import RLSettings, RLTrainer

    settings, corpus, tasks, _ = hotpot
    tok, renderer = _renderer(tiny)
    model = add_lora(load_model(tiny, device="cpu"), LoraSpec(rank=4, alpha=8))
    gen = SlowAnswer(tok("<Document id=\"x\"></Document><|im_end|>", add_special_tokens=False)["input_ids"])
    cfg = RLSettings(epochs=1, group_size=4, queries_per_step=1, rollout_workers=4, max_steps=1, lora=LoraSpec(rank=4, alpha=8))
    trainer = RLTrainer(model, renderer, corpus, settings, tasks[:1], tmp_path / "rl", cfg, generator=gen,
                        policy_factory=lambda task, i: TokenPolicy(renderer, gen, max_new_tokens=8, max_context=16384))
    groups = trainer.rollouts(tasks[:1], beta=4.0)
    assert [len(g) for g in groups] == [4] and [r.index for r in groups[0]] == [0, 1, 2, 3]
    assert gen.most == 4, f"the four rollouts of one task ran {gen.most} at a time"


def test_a_sampled_turn_cut_before_its_stop_token_is_truncated(hotpot):
    """The RL sampler's turn that hits max_new_tokens (no <|call|> / <|return|> at its end) is a
    budget stop of the loop (``truncated``), never the answer."""
    pytest.importorskip("openai_harmony")
    from c1.model.harmony import completion_ids
    from c1.agent.tools import ToolConfig
    from c1.train.collect import run_task
    from c1.train.policy import TokenPolicy
    from c1.train.render import HarmonyRenderer

    settings, corpus, tasks, _ = hotpot
    answer = completion_ids({"role": "assistant", "content": '<Document id="x"><Justification>j</Justification></Document>'})

    class Cut:
        def generate(self, prompt_ids, max_new_tokens, temperature, stop_ids):
            return answer[:-1]  # the same answer without its <|return|>: cut at the cap

    renderer = HarmonyRenderer(start_date="2026-01-01")
    res = run_task(corpus, settings, tasks[0], TokenPolicy(renderer, Cut(), max_new_tokens=64), 0, ToolConfig())
    assert res.finished.stop_reason == "truncated"
    whole = run_task(corpus, settings, tasks[0], TokenPolicy(renderer, type("W", (), {
        "generate": lambda self, *a: list(answer)})(), max_new_tokens=64), 0, ToolConfig())
    assert whole.finished.stop_reason in ("answer", "unparsed_answer")


def test_a_cut_turn_asked_again_is_trained_once_as_its_second_sample(hotpot):
    """A sampled turn cut at the loop's cap (half of what is left) is asked once more with all of it.
    The cut sample never entered the run, so the turns RL trains on hold the second sample alone, not
    both; a cut at the policy's own ``max_new_tokens`` is not asked again (it would be cut the same)."""
    pytest.importorskip("openai_harmony")
    from dataclasses import replace as dc_replace

    from c1.model.harmony import completion_ids
    from c1.agent.tools import ToolConfig
    from c1.train.collect import run_task
    from c1.train.policy import TokenPolicy
    from c1.train.render import HarmonyRenderer

    settings, corpus, tasks, _ = hotpot
    answer = completion_ids({"role": "assistant", "content": '<Document id="x"><Justification>j</Justification></Document>'})

    class CutOnce:
        def __init__(self):
            self.rooms = []

        def generate(self, prompt_ids, max_new_tokens, temperature, stop_ids):
            self.rooms.append(max_new_tokens)
            return [answer[0]] * max_new_tokens if len(self.rooms) == 1 else list(answer)

    renderer = HarmonyRenderer(start_date="2026-01-01")
    gen = CutOnce()
    policy = TokenPolicy(renderer, gen, max_new_tokens=100_000)
    res = run_task(corpus, dc_replace(settings, budget=8192), tasks[0], policy, 0, ToolConfig())
    assert gen.rooms[1] > gen.rooms[0] and res.finished.stats["cut_retries"] == 1, gen.rooms
    # (the answer names a document it was never shown: it is sent back once, so the run has a second turn)
    assert len(policy.turns) == len(gen.rooms) - 1 == res.finished.stats["turns"]
    assert policy.turns[0].completion_ids == list(answer) and policy.turns[0].prompt_ids != policy.turns[1].prompt_ids

    capped = CutOnce()
    res = run_task(corpus, dc_replace(settings, budget=8192), tasks[0], TokenPolicy(renderer, capped, max_new_tokens=16),
                   0, ToolConfig())
    assert capped.rooms == [16] and res.finished.stop_reason == "truncated"


def test_sft_checkpoints_activations_only_when_asked(tmp_path):
    """TRL's SFTConfig turned activation checkpointing on by default (as ``gradient_checkpointing``, a name
    transformers now warns is deprecated), so `c1 train sft` traded compute for memory without
    ``--gradient-checkpointing``. The config says what was asked, and warns of nothing."""
    import warnings

    from c1.train.settings import SFTSettings
    from c1.train.sft import sft_args

    for asked in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            args = sft_args(SFTSettings(gradient_checkpointing=asked), tmp_path / str(asked))
        assert bool(getattr(args, "activation_checkpointing", args.gradient_checkpointing)) is asked
        assert bool(args.gradient_checkpointing) is asked
