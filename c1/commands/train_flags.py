"""The options of ``c1 train synth|collect|sft|rl``, declared once (c1/commands/option_fields.py): one flag
dataclass per step (:class:`SynthFlags`, :class:`CollectFlags`, :class:`SftFlags`, :class:`RlFlags`), whose
defaults are read from what the step reads (c1/train/settings.py, the teacher's, LoraSpec) and which build it.
c1/commands/train_group.py makes the Typer options from them. Light, as ``c1 --help`` reads it: no torch, no
agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from c1.commands.option_fields import option, same_as
from c1.train.model import DEFAULT_TARGETS, LoraSpec
from c1.train.settings import ROLLOUT_WORKERS, RUNS, RLSettings, SelectConfig, SFTSettings, SynthConfig
from c1.train.teacher import Teacher


@dataclass(frozen=True)
class SynthFlags:
    """The options of ``c1 train synth`` beside the collection's and the task file (c1/commands/train_group.py)."""

    teacher_url: Optional[str] = option("--teacher-url", None, "OpenAI-compatible server of the teacher model [default: the first --base-url].")
    teacher_model: Optional[str] = option("--teacher-model", Teacher.model, "Model name on the teacher server [default: the first it lists].")
    api_key: Optional[str] = option("--api-key", Teacher.api_key, "API key for the teacher server.", envvar="C1_API_KEY")
    seeds: int = option("--seeds", SynthConfig.seeds, "Seed chunks to try (counting those already done).", min=1)
    levels: int = option("--levels", SynthConfig.levels, "Levels per chain: 1 = base tasks only; n = up to n-1 bridges.", min=1, max=8)
    items: int = option("--items", SynthConfig.items, "Supporting chunks asked for at level 0.", min=1, max=8)
    min_items: int = option("--min-items", SynthConfig.min_items, "Fewest verified supporting chunks a level-0 task keeps.", min=1)
    distractors: int = option("--distractors", SynthConfig.distractors, "Distractor chunks per task.", min=0)
    neighbours: int = option("--neighbours", SynthConfig.neighbours, "Chunks shown to the teacher beside the seed.", min=1)
    concurrency: int = option("--concurrency", SynthConfig.concurrency, "Seeds in flight (teacher requests at once).", min=1, max=64)
    rpm: Optional[float] = option("--rpm", Teacher.rpm, "Teacher requests per minute [default: unlimited].", min=0.1)
    temperature: float = option("--temperature", Teacher.temperature, "Teacher sampling temperature.", min=0.0)
    max_tokens: int = option("--max-tokens", Teacher.max_tokens, "Teacher completion limit per request.", min=64)
    json_mode: str = option("--json-mode", Teacher.schema_mode, "auto | json_schema | json_object | text: how the answer schema is sent (text: none, JSON read from the reply; fastest on llama.cpp).")
    timeout: float = option("--timeout", Teacher.timeout, "Seconds to wait for one teacher reply.", min=1.0)
    seed: int = option("--seed", SynthConfig.seed, "Random seed.")

    def config(self) -> SynthConfig:
        """What the generator reads (``--min-items`` at most ``--items``)."""
        return SynthConfig(seeds=self.seeds, levels=self.levels, items=self.items, min_items=min(self.min_items, self.items),
                           neighbours=self.neighbours, distractors=self.distractors, seed=self.seed,
                           concurrency=self.concurrency)

    def teacher(self, url: str) -> Teacher:
        return Teacher(url, self.teacher_model, self.api_key, temperature=self.temperature, max_tokens=self.max_tokens,
                       rpm=self.rpm, concurrency=self.concurrency, schema_mode=self.json_mode, timeout=self.timeout)


@dataclass(frozen=True)
class CollectFlags:
    """The options of ``c1 train collect`` beside the collection's, the agent's and the task and output files."""

    runs: int = option("--runs", RUNS, "Runs per task.", min=1, max=64)
    workers: int = option("--workers", 1, "Tasks in flight.", min=1, max=64)
    low_rate: float = option("--low-rate", SelectConfig.low_rate,
                             "Keep rate of lower-recall runs at the thresholds (falls with recall).", min=0.0, max=1.0)
    negatives: float = option("--negatives", SelectConfig.negatives, "Largest share of zero-recall runs among those kept.",
                              min=0.0, max=1.0)
    max_level: Optional[int] = option("--max-level", None, "Only tasks up to this level.", min=0)
    limit: Optional[int] = option("--limit", None, "Only the first N tasks.", min=1)

    def select(self) -> SelectConfig:
        return SelectConfig(low_rate=self.low_rate, negatives=self.negatives)


@dataclass(frozen=True)
class RlFlags:
    """The options of ``c1 train rl`` beside the collection's, the model's and the files' (c1/commands/train_group.py)."""

    epochs: int = option("--epochs", RLSettings.epochs, "Passes over the tasks (β anneals 4 → 2 across them).", min=1)
    group_size: int = option("--group-size", RLSettings.group_size, "Rollouts per task (advantages are relative to the group).", min=2)
    queries_per_step: int = option("--queries-per-step", RLSettings.queries_per_step, "Tasks per step.", min=1)
    substeps: int = option("--substeps", RLSettings.substeps, "Optimizer steps per batch of rollouts.", min=1)
    lr: float = option("--lr", RLSettings.lr, "Learning rate.", min=0.0)
    eps_max: float = option("--eps-max", RLSettings.eps_max, "CISPO upper bound on the importance weight (no lower bound).", min=1.0)
    temperature: float = option("--temperature", RLSettings.temperature, "Rollout sampling temperature.", min=0.0)
    max_new_tokens: int = option("--max-new-tokens", RLSettings.max_new_tokens, "Token limit per assistant turn.", min=16)
    max_context: Optional[int] = option("--max-context", RLSettings.max_context, "Model window: a longer prompt ends the rollout.", min=1024)
    lora_rank: int = option("--lora-rank", LoraSpec.rank, "LoRA rank.", min=1)
    lora_alpha: int = option("--lora-alpha", LoraSpec.alpha, "LoRA alpha.", min=1)
    lora_dropout: float = option("--lora-dropout", LoraSpec.dropout, "LoRA dropout.", min=0.0, max=0.9)
    lora_targets: Optional[str] = option("--lora-targets", None, f"Comma-separated module names [default: {','.join(DEFAULT_TARGETS)}].")
    save_every: int = option("--save-every", RLSettings.save_every, "Checkpoint every N steps.", min=1)
    max_steps: Optional[int] = option("--max-steps", RLSettings.max_steps, "Stop after N steps.", min=1)
    resume: bool = option("--resume", False, "Continue from the newest checkpoint in --out.")
    start_level: int = option("--start-level", RLSettings.start_level, "Highest task level of the first epoch (one more each epoch).", min=0)
    curriculum: bool = option("--curriculum/--no-curriculum", RLSettings.curriculum, "Few-hop tasks first.")
    rollout_workers: int = option("--rollout-workers", ROLLOUT_WORKERS, "Tasks rolled out at once (with --vllm-url).", min=1, max=256)
    gradient_checkpointing: bool = option("--gradient-checkpointing", False, "Trade compute for memory.")
    attn_implementation: Optional[str] = option("--attn-implementation", None, "transformers attention kernel [default: gpt-oss: FA3 with sinks via `kernels` if installed, else flex_attention; others: the model's default].")
    seed: int = option("--seed", RLSettings.seed, "Random seed.")

    def lora(self) -> LoraSpec:
        return lora_spec(self.lora_rank, self.lora_alpha, self.lora_dropout, self.lora_targets)

    def rl_settings(self, *, vllm: bool) -> RLSettings:
        """The trainer's settings; ``vllm``: rollouts sampled by a vLLM server (else one at a time, in process)."""
        return RLSettings(epochs=self.epochs, group_size=self.group_size, queries_per_step=self.queries_per_step,
                          substeps=self.substeps, lr=self.lr, eps_max=self.eps_max, temperature=self.temperature,
                          max_new_tokens=self.max_new_tokens, max_context=self.max_context, max_steps=self.max_steps,
                          save_every=self.save_every, start_level=self.start_level, curriculum=self.curriculum,
                          rollout_workers=self.rollout_workers if vllm else 1, seed=self.seed, lora=self.lora())


@dataclass(frozen=True)
class SftFlags:
    """The options of ``c1 train sft`` beside the model's and the files' (c1/commands/train_group.py); the LoRA, seed and
    memory options are ``c1 train rl``'s (:func:`~c1.commands.option_fields.same_as`)."""

    lr: float = option("--lr", SFTSettings.lr, "Learning rate.", min=0.0)
    epochs: float = option("--epochs", SFTSettings.epochs, "Passes over the samples.", min=0.0)
    max_steps: Optional[int] = option("--max-steps", SFTSettings.max_steps, "Stop after this many optimizer steps.", min=1)
    batch_size: int = option("--batch-size", SFTSettings.batch_size, "Samples per device batch.", min=1)
    grad_accum: int = option("--grad-accum", SFTSettings.grad_accum, "Gradient accumulation steps.", min=1)
    max_length: int = option("--max-length", SFTSettings.max_length, "Longest sample in tokens (longer ones are dropped).", min=256)
    lora_rank: int = same_as(RlFlags, "lora_rank")
    lora_alpha: int = same_as(RlFlags, "lora_alpha")
    lora_dropout: float = same_as(RlFlags, "lora_dropout")
    lora_targets: Optional[str] = same_as(RlFlags, "lora_targets")
    gradient_checkpointing: bool = same_as(RlFlags, "gradient_checkpointing")
    attn_implementation: Optional[str] = same_as(RlFlags, "attn_implementation")
    seed: int = same_as(RlFlags, "seed")

    def sft_settings(self) -> SFTSettings:
        return SFTSettings(lr=self.lr, epochs=self.epochs, max_steps=self.max_steps, batch_size=self.batch_size,
                           grad_accum=self.grad_accum, max_length=self.max_length,
                           lora=lora_spec(self.lora_rank, self.lora_alpha, self.lora_dropout, self.lora_targets),
                           seed=self.seed, gradient_checkpointing=self.gradient_checkpointing)


def lora_spec(rank: int, alpha: int, dropout: float, targets: str | None) -> LoraSpec:
    """``--lora-*`` as a LoraSpec (``--lora-targets`` comma-separated; default: the attention projections)."""
    names = tuple(t.strip() for t in (targets or "").split(",") if t.strip()) or DEFAULT_TARGETS
    return LoraSpec(rank=rank, alpha=alpha, dropout=dropout, targets=names)
