"""The settings of ``c1 train synth|collect|sft|rl``, declared once: what each part reads (:class:`SynthConfig`,
:class:`SelectConfig`, :class:`SFTSettings`, :class:`RLSettings`) and their defaults. The commands' options,
whose defaults are read from these, are c1/commands/train_flags.py's. Light, as ``c1 --help`` reads it: no
torch, no agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from c1.train.model import LoraSpec

if TYPE_CHECKING:
    from c1.train.reward import RewardConfig


@dataclass(frozen=True)
class SynthConfig:
    seeds: int = 20
    """Seed chunks to try (already-logged seeds are skipped on resume)."""
    levels: int = 2
    """Levels per chain: 1 = only the base task; n = n − 1 bridges."""
    items: int = 3
    """Supporting chunks asked for at level 0."""
    min_items: int = 2
    """Fewest verified supporting chunks a level-0 task may keep."""
    neighbours: int = 6
    """Chunks shown to the teacher beside the seed."""
    bridge_candidates: int = 4
    distractors: int = 5
    min_chunk_chars: int = 200
    chunk_chars: int = 1200
    """Chunk text shown to the teacher is cut to this many characters (quotes are checked against the full text)."""
    seed: int = 0
    concurrency: int = 2


@dataclass(frozen=True)
class SelectConfig:
    """Which runs of ``c1 train collect`` are kept (c1/train/collect.py)."""

    traj_recall: float = 0.5
    recall: float = 0.4
    low_rate: float = 0.5
    negatives: float = 0.05
    max_error_share: float = 0.5
    beta: float = 2.0
    """β of the F_β in the stored reward (for ranking the high-recall runs of a task)."""


RUNS = 4
"""Runs of the teacher per task (``c1 train collect --runs``)."""


@dataclass(frozen=True)
class SFTSettings:
    lr: float = 1e-4
    epochs: float = 1.0
    max_steps: int | None = None
    batch_size: int = 1
    grad_accum: int = 8
    max_length: int = 40960
    warmup_ratio: float = 0.03
    lora: LoraSpec = LoraSpec()
    seed: int = 0
    logging_steps: int = 10
    gradient_checkpointing: bool = False


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
