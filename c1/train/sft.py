"""``c1 train sft``: LoRA supervised fine-tuning on kept trajectories, with TRL's SFTTrainer.

Every assistant turn of every trajectory becomes one sample per generation: the prompt is exactly
what the model was sent at that turn (pruned chunks hidden, as :func:`c1.train.collect.visible_turn`
rebuilds it), rendered as serving renders it (:mod:`c1.train.render`); the completion is the
assistant turn as the model would generate it, stop token included. A gpt-oss generation ends at
its first ``<|call|>`` (a stop token in vLLM and in the RL sampler), so a teacher turn with N calls
is N samples, call k prompted with the calls before it and their results (:mod:`c1.model.harmony`);
a chat-template model generates all of a turn's calls at once, one sample. Labels are ``-100`` on the
prompt: the loss is on assistant tokens only. (One sample per turn rather than one per
conversation, because pruning rewrites earlier messages: the context of turn 5 is not a prefix
of the context of turn 6.) Samples longer than ``max_length`` are dropped, never cut.

Only runs that ended in an answer are trained on: a run stopped at the turn limit, at the budget or
on a reply cut off at ``max_tokens`` has no final turn to imitate (its last step is a reply that was
never added, or none), whatever its recall. Every sample, turn or run left out is counted in
:class:`SampleReport` ``dropped``, by reason.

The dataset goes to TRL pre-tokenized (``input_ids`` + ``labels``), so TRL applies no template
of its own.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from c1.train.collect import visible_turn
from c1.train.settings import SFTSettings


@dataclass
class SampleReport:
    trajectories: int = 0
    turns: int = 0
    samples: int = 0
    too_long: int = 0
    unrenderable: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    dropped: dict = field(default_factory=dict)
    """What was left out, by reason: ``no_answer:STOP`` (trajectories), ``unrenderable:…`` (turns),
    ``empty_completion`` and ``too_long`` (samples)."""
    errors: list[str] = field(default_factory=list)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


def stop_of(rec: dict) -> str:
    """A trajectory's stop reason: as scored, else read from its messages (an answer is a last
    assistant message without tool calls, after the last step)."""
    stop = (rec.get("scores") or {}).get("stop")
    if stop:
        return stop
    msgs, steps = rec.get("messages") or [], rec.get("steps") or []
    last = msgs[-1] if msgs else {}
    answered = (bool(steps) and steps[-1].get("n_messages") == len(msgs) - 1 and last.get("role") == "assistant"
                and not last.get("tool_calls"))
    return "answer" if answered else "unknown"


def build_samples(trajectories: list[dict], renderer, max_length: int) -> tuple[list[dict], SampleReport]:
    rep = SampleReport(trajectories=len(trajectories))
    out = []
    for rec in trajectories:
        stop = stop_of(rec)
        if stop != "answer":
            rep.drop(f"no_answer:{stop}")
            continue
        for i in range(len(rec["steps"])):
            rep.turns += 1
            try:
                messages, reply, results = visible_turn(rec, i)
                pairs = renderer.samples(messages, rec.get("tools") or [], reply, results)
            except (ValueError, KeyError, IndexError) as exc:
                rep.unrenderable += 1
                rep.drop(f"unrenderable:{type(exc).__name__}")
                if len(rep.errors) < 5:
                    rep.errors.append(f"{rec.get('task_id')} run {rec.get('run')} turn {i + 1}: {exc}")
                continue
            for prompt, completion in pairs:
                if not completion:
                    rep.unrenderable += 1
                    rep.drop("empty_completion")
                    continue
                if len(prompt) + len(completion) > max_length:
                    rep.too_long += 1
                    rep.drop("too_long")
                    continue
                out.append({"input_ids": prompt + completion, "labels": [-100] * len(prompt) + completion})
                rep.samples += 1
                rep.prompt_tokens += len(prompt)
                rep.completion_tokens += len(completion)
    return out, rep


def sft_args(cfg: SFTSettings, output_dir: Path, quiet: bool = True, cuda: bool = False):
    """TRL's ``SFTConfig`` for ``cfg``, under the field names of the installed versions: a warm-up ratio
    (``warmup_steps`` in older TRL), and activation checkpointing exactly as asked (``--gradient-checkpointing``):
    TRL turns it on by default, under the name transformers now calls deprecated."""
    import dataclasses

    from trl import SFTConfig

    names = {f.name for f in dataclasses.fields(SFTConfig)}
    extra = {"warmup_ratio": cfg.warmup_ratio} if "warmup_ratio" in names else {"warmup_steps": cfg.warmup_ratio}
    checkpointing = "activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing"
    extra[checkpointing] = cfg.gradient_checkpointing
    return SFTConfig(
        output_dir=str(output_dir), learning_rate=cfg.lr, num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps if cfg.max_steps else -1, per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum, logging_steps=cfg.logging_steps,
        save_strategy="no", report_to="none", seed=cfg.seed, bf16=cuda, use_cpu=not cuda,
        max_length=cfg.max_length, packing=False,
        disable_tqdm=quiet, dataloader_num_workers=0, remove_unused_columns=True, **extra,
    )


def train_sft(model, tokenizer, renderer, trajectories: list[dict], out_dir: str | Path,
              cfg: SFTSettings = SFTSettings(), quiet: bool = True) -> dict:
    """Fine-tune a LoRA on ``model`` (a base model, or a PeftModel to continue); saves the adapter
    to ``out_dir/adapter`` and returns a report."""
    import torch
    from datasets import Dataset
    from peft import PeftModel
    from trl import SFTTrainer

    from c1.train.model import lora_config

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    samples, rep = build_samples(trajectories, renderer, cfg.max_length)
    if not samples:
        raise ValueError(f"no training sample from {rep.trajectories} trajectories: {rep.turns} turn(s), dropped "
                         f"{rep.dropped or 'nothing'}" + (f" ({rep.errors[0]})" if rep.errors else ""))
    args = sft_args(cfg, out / "trainer", quiet, cuda=torch.cuda.is_available())
    peft_config = None if isinstance(model, PeftModel) else lora_config(cfg.lora)
    started = time.perf_counter()
    if quiet:
        import datasets

        datasets.disable_progress_bars()
    # the HF trainer prints its log dicts on stdout: keep stdout for c1's own output (--json)
    with contextlib.redirect_stdout(sys.stderr):
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(samples), processing_class=tokenizer,
                             peft_config=peft_config)
        result = trainer.train()
    adapter = out / "adapter"
    trainer.model.save_pretrained(str(adapter))
    report = {
        "adapter": str(adapter), "samples": asdict(rep), "steps": result.global_step,
        "train_loss": round(float(result.training_loss), 6), "seconds": round(time.perf_counter() - started, 2),
        "renderer": renderer.kind, "log": [h for h in trainer.state.log_history if "loss" in h][-20:],
    }
    (out / "sft_report.json").write_text(json.dumps(report, indent=1))
    return report
