"""The options of ``c1 eval DATASET PATH`` as the runner reads them: :class:`EvalOptions`, declared once with
their defaults. The command's flags, whose defaults are read from these, are c1/commands/eval_flags.py's.
Light, as ``c1 --help`` reads it: nothing of the runner, the datasets or the agent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class EvalOptions:
    dataset: str
    path: str
    setting: str = "pooled"
    systems: str | None = None
    """Comma-separated; default: the configured policy (``--policy``, else auto)."""
    limit: int | None = None
    seed: int | None = None
    concurrency: int = 1
    out: Path | None = None
    force: bool = False
    split: str | None = None
    docs: str | None = None
    plot: bool = True
