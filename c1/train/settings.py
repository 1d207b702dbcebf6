"""The settings of ``c1 train rl``, declared once: :class:`RLSettings` (what the trainer reads) and
:class:`RlFlags` (the command's options, their defaults read from RLSettings and LoraSpec; c1/cli.py
makes the flags from it). Light, as ``c1 --help`` reads it: no torch, no agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from c1.options import option
from c1.train.model import DEFAULT_TARGETS, LoraSpec

if TYPE_CHECKING:
    from c1.train.reward import RewardConfig


@dataclass(frozen=True)
class RLSettings:
    epochs: int = 3
    group_size: int = 8
    queries_per_step: int = 16
    substeps: int = 2
    """Optimizer steps per batch of rollouts (each on 1/substeps of the turn samples)."""
    lr: float = 1e-5
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    eps_max: float = 5.0
    """CISPO's upper bound on the importance weight (no lower bound)."""
    advantage_scale: str = "std"
    temperature: float = 1.0
    """Sampling temperature of the rollouts; the trainer's log-probabilities use the same."""
    tis_cap: float = 2.0
    """Truncation of the sampler correction π_old/μ (sampler/trainer mismatch)."""
    max_new_tokens: int = 2048
    max_context: int | None = None
    max_steps: int | None = None
    save_every: int = 10
    keep_checkpoints: int = 3
    start_level: int = 0
    curriculum: bool = True
    rollout_workers: int = 1
    seed: int = 0
    lora: LoraSpec = LoraSpec()
    reward: RewardConfig = field(default_factory=lambda: _reward_config())



def _reward_config():
    from c1.train.reward import RewardConfig  # c1.eval's metrics: loaded when a trainer is made, not for --help

    return RewardConfig()


ROLLOUT_WORKERS = 16
"""Tasks rolled out at once with a vLLM server (``--rollout-workers``); in-process generation runs one."""


@dataclass(frozen=True)
class RlFlags:
    """The options of ``c1 train rl`` beside the collection's, the model's and the files' (c1/cli.py)."""

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


def lora_spec(rank: int, alpha: int, dropout: float, targets: str | None) -> LoraSpec:
    """``--lora-*`` as a LoraSpec (``--lora-targets`` comma-separated; default: the attention projections)."""
    names = tuple(t.strip() for t in (targets or "").split(",") if t.strip()) or DEFAULT_TARGETS
    return LoraSpec(rank=rank, alpha=alpha, dropout=dropout, targets=names)
