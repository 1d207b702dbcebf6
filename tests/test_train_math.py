"""The pure parts of training, against hand-computed numbers: reward and penalties, the β
schedule, group advantages, the CISPO loss and its gradient, quote verification, task schema."""

from __future__ import annotations

import math

import pytest

from c1.train import cispo, verify
from c1.train import reward as rewards
from c1.train.tasks import SCHEMA_VERSION, validate_task


# --- reward ------------------------------------------------------------------------------------
def test_f_beta_by_hand():
    # P = 1/2, R = 2/3, β = 4: 17·(1/3) / (16·(1/2) + 2/3) = (17/3)/(26/3) = 17/26
    assert rewards.f_beta(0.5, 2 / 3, 4) == pytest.approx(17 / 26)
    # β = 1 is F1
    assert rewards.f_beta(0.5, 1.0, 1) == pytest.approx(2 * 0.5 / 1.5)
    assert rewards.f_beta(0.0, 0.0, 2) == 0.0
    # recall-heavy: a high-recall, low-precision answer scores better under β=4 than β=2
    assert rewards.f_beta(0.2, 1.0, 4) > rewards.f_beta(0.2, 1.0, 2)


def test_prune_penalty_counts_calls_beyond_three_in_a_row():
    P, S = "prune_chunks", "search_corpus"
    assert rewards.prune_penalty([P, P, P]) == 0.0
    assert rewards.prune_penalty([P, P, P, P]) == pytest.approx(0.1)
    assert rewards.prune_penalty([S, P, P, P, P, P, S, P]) == pytest.approx(0.2)  # the streak of 5 costs 2×0.1
    assert rewards.prune_penalty([P, P, S, P, P, S, P, P]) == 0.0  # streaks are broken by other calls
    assert rewards.prune_penalty([P] * 20) == pytest.approx(0.5)  # capped


def test_turn_penalty_rises_linearly_from_64_to_128():
    assert rewards.turn_penalty(10) == 0.0
    assert rewards.turn_penalty(64) == 0.0
    assert rewards.turn_penalty(96) == pytest.approx(0.25)
    assert rewards.turn_penalty(80) == pytest.approx(0.125)
    assert rewards.turn_penalty(128) == pytest.approx(0.5)
    assert rewards.turn_penalty(500) == pytest.approx(0.5)


def test_beta_anneals_from_4_to_2_across_epochs():
    assert [rewards.beta_for_epoch(e, 3) for e in range(3)] == pytest.approx([4.0, 3.0, 2.0])
    assert rewards.beta_for_epoch(0, 1) == 4.0
    assert rewards.beta_for_epoch(7, 3) == 2.0


def _outcome(**kw):
    base = dict(returned=["a", "b", "x", "y"], returned_texts=["the truth is Ottawa", "b", "x", "y"],
                seen=["a", "b", "c", "x", "y"], gold=["a", "b", "c"], truth="Ottawa", truth_docs=["a"],
                tool_calls=["search_corpus"], turns=5)
    base.update(kw)
    return rewards.Outcome(**base)


def test_reward_by_hand():
    calls = ["search_corpus"] + ["prune_chunks"] * 5 + ["search_corpus", "prune_chunks"]
    r = rewards.reward(_outcome(tool_calls=calls, turns=96), beta=4.0)
    assert r.precision == pytest.approx(0.5) and r.recall == pytest.approx(2 / 3)
    assert r.f_beta == pytest.approx(17 / 26)
    assert r.traj_recall == 1.0 and r.answer_found
    assert r.p_prune == pytest.approx(0.2) and r.p_turn == pytest.approx(0.25)
    assert r.total == pytest.approx(0.7 * 17 / 26 + 0.3 * 1.0 + 1.0 - 0.2 - 0.25)


def test_reward_clamps_to_epsilon_and_r_pre():
    bad = _outcome(returned=[], returned_texts=[], seen=[], tool_calls=["prune_chunks"] * 10, turns=200)
    r = rewards.reward(bad, beta=2.0)
    assert r.raw == pytest.approx(-1.0) and r.total == rewards.RewardConfig().epsilon
    perfect = _outcome(returned=["a", "b", "c"], returned_texts=["Ottawa", "", ""])
    assert rewards.reward(perfect, beta=2.0).total == pytest.approx(2.0)  # 0.7 + 0.3 + 1.0: the ceiling
    boosted = rewards.RewardConfig(w_answer=3.0, r_max=2.0)
    assert rewards.reward(perfect, 2.0, boosted).total == 2.0  # an explicit r_pre binds


def test_answer_found_by_text_or_by_truth_document():
    assert rewards.answer_found(_outcome(returned=["b"], returned_texts=["capital: ottawa."]))
    assert rewards.answer_found(_outcome(returned=["a"], returned_texts=["(text not loaded)"]))
    assert not rewards.answer_found(_outcome(returned=["b"], returned_texts=["Toronto"]))


# --- CISPO ------------------------------------------------------------------------------------
def test_group_advantages():
    assert cispo.group_advantages([1.0, 1.0, 1.0]) is None
    assert cispo.group_advantages([0.5]) is None
    assert cispo.group_advantages([1.0, 0.0], scale="none") == pytest.approx([0.5, -0.5])
    a = cispo.group_advantages([1.0, 0.0, 0.5, 0.5])
    std = math.sqrt((0.25 + 0.25 + 0 + 0) / 4)
    assert a == pytest.approx([0.5 / std, -0.5 / std, 0.0, 0.0], rel=1e-5)


@pytest.mark.slow
def test_cispo_loss_and_gradient_by_hand():
    torch = pytest.importorskip("torch")
    logp = torch.tensor([[-1.0, -2.0, -0.5], [-0.3, -1.2, 0.0]], requires_grad=True)
    old = torch.tensor([[-1.0, -3.0, -0.5], [-1.0, -1.2, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = torch.tensor([1.0, -0.5])
    loss, stats = cispo.cispo_loss(logp, old, adv, mask, eps_max=2.5)
    # weights: row 0: exp(0)=1, exp(1)=2.718→clipped to 2.5, 1; row 1: exp(0.7)=2.0138, 1
    w = [[1.0, 2.5, 1.0], [math.exp(0.7), 1.0]]
    by_hand = (-(w[0][0] * 1.0 * -1.0) - (w[0][1] * 1.0 * -2.0) - (w[0][2] * 1.0 * -0.5)
               - (w[1][0] * -0.5 * -0.3) - (w[1][1] * -0.5 * -1.2)) / 5
    assert loss.item() == pytest.approx(by_hand, rel=1e-6)
    assert by_hand == pytest.approx(1.119586, rel=1e-5)
    loss.backward()
    # the weight is detached: d loss / d logp = −w·A / N on completion tokens, 0 on padding
    expected = [[-1.0 / 5, -2.5 / 5, -1.0 / 5], [math.exp(0.7) * 0.5 / 5, 0.5 / 5, 0.0]]
    assert logp.grad.tolist() == [pytest.approx(row, rel=1e-6) for row in expected]
    assert stats.tokens == 5 and stats.clip_fraction == pytest.approx(1 / 5)
    assert stats.ratio_max == pytest.approx(math.e, rel=1e-6)


def test_cispo_has_no_lower_bound_and_keeps_every_token_in_the_gradient():
    torch = pytest.importorskip("torch")
    logp = torch.tensor([[-5.0, -0.1]], requires_grad=True)
    old = torch.tensor([[-0.1, -5.0]])  # ratios e^-4.9 (tiny) and e^4.9 (huge)
    loss, stats = cispo.cispo_loss(logp, old, torch.tensor([-1.0]), torch.ones(1, 2), eps_max=4.0)
    loss.backward()
    assert logp.grad[0, 0].item() == pytest.approx(math.exp(-4.9) / 2, rel=1e-5)  # not clipped up
    assert logp.grad[0, 1].item() == pytest.approx(4.0 / 2)  # clipped to ε_max, still in the gradient
    assert stats.clip_fraction == 0.5


@pytest.mark.slow
def test_cispo_matches_trls_own_loss_on_both_sides_of_the_clip(tmp_path):
    """c1's CISPO loss and gradient against TRL's GRPOTrainer._compute_loss (loss_type="cispo") on a
    real tiny model: importance ratios below 1, between 1 and ε_max, and above ε_max (clipped); the
    sampler correction (TIS) multiplied in as TRL does with vLLM; both at the sampling temperature."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from datasets import Dataset
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(["Neil Peart was the drummer of Rush"] * 10, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_end|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True,
                                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id))
    eps, temp, cap = 2.0, 0.7, 2.0
    args = GRPOConfig(output_dir=str(tmp_path), loss_type="cispo", epsilon_high=eps, temperature=temp, beta=0.0,
                      per_device_train_batch_size=2, num_generations=2, max_completion_length=8, report_to=[],
                      use_cpu=True, bf16=False)
    trainer = GRPOTrainer(model=model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)], args=args,
                          train_dataset=Dataset.from_list([{"prompt": "Rush"}] * 4), processing_class=tok)
    trainer.use_vllm = trainer.vllm_importance_sampling_correction = True  # TRL's sampler correction, as with vLLM
    model.eval()

    g = torch.Generator().manual_seed(1)
    B, P, C = 2, 5, 5
    prompt, completion = torch.randint(5, len(tok), (B, P), generator=g), torch.randint(5, len(tok), (B, C), generator=g)
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    adv = torch.tensor([0.8, -0.5])
    with torch.no_grad():
        now = torch.stack([cispo.token_logprobs(model, prompt[b].tolist() + completion[b].tolist(), C, temperature=temp)
                           for b in range(B)])
    # π_θ/π_old = e^shift: 0.22, 0.74, 1.22 (inside the clip) and 2.72, 4.48 (above ε_max = 2)
    shift = torch.tensor([[1.5, -0.3, 0.2, 1.0, 0.0], [-1.5, 0.2, 1.5, -0.3, 1.0]])
    old = now - shift
    sampler = old - torch.tensor([[0.1, -0.9, 0.0, 0.5, 0.0], [1.2, 0.0, -0.2, 0.3, -1.0]])  # μ: above and below π_old
    tis = cispo.sampler_weights(old, sampler, cap)
    ratios = torch.exp(shift)[mask.bool()]
    assert (ratios > eps).any() and (ratios < 1).any() and ((ratios > 1) & (ratios < eps)).any()
    assert (tis == cap).any() and (tis < 1).any()

    inputs = {"prompt_ids": prompt, "prompt_mask": torch.ones(B, P, dtype=torch.long), "completion_ids": completion,
              "completion_mask": mask, "advantages": adv, "num_items_in_batch": mask.sum().float(),
              "old_per_token_logps": old, "importance_sampling_ratio": tis}
    model.zero_grad()
    trl_loss = trainer._compute_loss(model, inputs)
    trl_loss.backward()
    trl_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    model.zero_grad()
    logp = torch.stack([cispo.token_logprobs(model, prompt[b].tolist() + completion[b].tolist(), C, temperature=temp)
                        for b in range(B)])
    ours, stats = cispo.cispo_loss(logp, old, adv, mask, eps_max=eps, is_weights=tis)
    ours.backward()
    assert ours.item() == pytest.approx(trl_loss.item(), rel=1e-5, abs=1e-7)
    assert trl_grads and all(torch.allclose(p.grad, trl_grads[n], rtol=1e-4, atol=1e-7)
                             for n, p in model.named_parameters() if n in trl_grads)
    assert stats.clip_fraction == pytest.approx(float((ratios > eps).float().mean()), abs=1e-6)


# --- quote verification ------------------------------------------------------------------------
CHUNKS = {
    "d1_0": "Neil Peart (September 12, 1952 – January 7, 2020) was a Canadian musician and writer, best known "
            "as the drummer and primary lyricist of the rock band Rush.",
    "d2_0": "“Nobody’s Hero” is a song by Canadian rock band Rush, from the 1993 album Counterparts.",
    "d3_0": "The Modern Drummer Hall of Fame honours drummers; Peart was inducted in 1983.",
}


def _items(**quotes):
    return [{"chunk_id": cid, "quotes": qs} for cid, qs in quotes.items()]


def test_true_quotes_pass_with_normalisation():
    items = _items(d1_0=["best known as the drummer and primary lyricist of the rock band Rush"],
                   d2_0=['"Nobody\'s Hero" is a song by Canadian rock band Rush'],  # straight vs curly quotes
                   d3_0=["PEART WAS INDUCTED IN 1983"])  # case
    clues = [{"text": "A percussionist who also wrote the words", "chunk_id": "d1_0",
              "quote": "Neil Peart (September 12, 1952 - January 7, 2020)"}]  # en dash vs hyphen
    v = verify.verify_level(items, clues, "Rush", "Which band had a drummer-lyricist honoured in 1983?", CHUNKS)
    assert v.ok, v.reasons
    assert v.found == v.quotes == 4 and v.rejected_quotes == []
    assert v.truth_in == ["d1_0", "d2_0"]
    assert [it["contains_truth"] for it in v.items] == [True, True, False]


def test_ellipsis_quotes_need_their_fragments_in_order():
    text = CHUNKS["d1_0"]
    assert verify.quote_found("Neil Peart ... the drummer and primary lyricist", text)
    assert verify.quote_found("Neil Peart … the rock band Rush", text)
    assert not verify.quote_found("the rock band Rush ... Neil Peart", text)


def test_fabricated_and_altered_quotes_are_rejected():
    text = CHUNKS["d1_0"]
    assert not verify.quote_found("was an American musician and writer", text)  # one word altered
    assert not verify.quote_found("the drummer and lead singer of the rock band Rush", text)  # invented
    assert not verify.quote_found("Rush", text)  # too short to prove anything
    assert not verify.quote_found("drum", "the drummer and primary lyricist")  # words, not substrings
    items = _items(d1_0=["the drummer and lead singer of the rock band Rush"], d2_0=["a song by Canadian rock band Rush"])
    clues = [{"text": "a percussionist", "chunk_id": "d1_0", "quote": "Canadian musician and writer"}]
    v = verify.verify_level(items, clues, "Rush", "Which band?", CHUNKS)
    assert v.found == 2 and v.quotes == 3 and v.ok  # exactly 2/3 passes ...
    assert v.rejected_quotes == ["the drummer and lead singer of the rock band Rush"]
    assert v.items[0]["quotes"] == []  # ... and the fabricated quote is removed from the task


def test_two_thirds_rule():
    clue = [{"text": "a percussionist", "chunk_id": "d1_0", "quote": "Canadian musician and writer"}]
    items = _items(d1_0=["invented words that are nowhere"], d2_0=["more invented words here"],
                   d3_0=["Peart was inducted in 1983"])
    v = verify.verify_level(items, clue, "Rush", "Which band?", CHUNKS)
    assert (v.found, v.quotes) == (2, 4) and not v.ok
    assert any("2 of 4" in r for r in v.reasons)
    # a quote attributed to the wrong chunk does not count either
    wrong = _items(d3_0=["a song by Canadian rock band Rush"], d2_0=["a song by Canadian rock band Rush"])
    v = verify.verify_level(wrong, clue, "Rush", "Which band?", CHUNKS)
    assert (v.found, v.quotes) == (2, 3) and v.ok
    unknown = _items(zz_9=["a song by Canadian rock band Rush"], d2_0=["a song by Canadian rock band Rush"])
    v = verify.verify_level(unknown, [], "Rush", "Which band?", CHUNKS)
    assert not v.ok and any("unknown chunk" in r for r in v.reasons)


def test_truth_rule_and_leaks():
    items = _items(d3_0=["Peart was inducted in 1983"], d2_0=["the 1993 album Counterparts"])
    clue = [{"text": "a percussionist", "chunk_id": "d3_0", "quote": "Modern Drummer Hall of Fame honours drummers"}]
    v = verify.verify_level(items, clue, "Toronto", "Which city?", CHUNKS)
    assert not v.ok and any("contains the truth" in r for r in v.reasons)
    v = verify.verify_level(items, clue, "Rush", "Is the answer Rush?", CHUNKS)
    assert not v.ok and "the question contains the truth" in v.reasons
    # a clue that copies four words in a row from its chunk is not obfuscated: dropped
    leaky = [{"text": "the Modern Drummer Hall of something", "chunk_id": "d3_0", "quote": "Peart was inducted in 1983"}]
    v = verify.verify_level(items, leaky, "Rush", "Which band?", CHUNKS)
    assert not v.ok and v.clues == [] and "no usable clue" in v.reasons
    # "Rush" is not found inside "brushes": truths match on word boundaries
    assert not verify.contains("Rush", "She brushes the drums.") and verify.contains("Rush", "by Rush.")


# --- task schema ----------------------------------------------------------------------------------
def _task(**kw):
    t = {
        "id": "t_00000001_L0", "schema": SCHEMA_VERSION, "collection": "default", "seed_chunk": "d1_0",
        "level": 0, "parent": None, "question": "Which band?", "truth": "Rush", "truth_type": "organization",
        "truths": ["Rush"],
        "clues": [{"text": "a percussionist", "chunk_id": "d1_0", "quote": "Canadian musician and writer", "level": 0}],
        "supporting_items": [{"chunk_id": "d1_0", "doc_id": "d1", "title": "Neil Peart", "quotes": ["x y z"],
                              "contains_truth": True, "level": 0}],
        "bridging_item": None, "distractors": [], "gold_docs": ["d1"], "truth_docs": ["d1"],
        "verification": {}, "teacher": {},
    }
    t.update(kw)
    return t


def test_task_schema():
    assert validate_task(_task()) == []
    assert any("missing 'truth'" in e for e in validate_task({k: v for k, v in _task().items() if k != "truth"}))
    assert any("gives the truth away" in e for e in validate_task(_task(question="Is it Rush?")))
    assert any("gold_docs" in e for e in validate_task(_task(gold_docs=["d1", "d9"])))
    assert any("bridging_item" in e for e in validate_task(_task(level=1, parent="t_00000001_L0")))
    assert any("truth_type" in e for e in validate_task(_task(truth_type="colour")))
    assert any("level" in e for e in validate_task(_task(level=True)))
