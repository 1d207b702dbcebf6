"""The options of ``c1 eval DATASET PATH``, declared once: :class:`EvalFlags` (c1/cli.py makes the flags
from it) and :class:`EvalOptions` (what the runner reads, its defaults read from the flags). Light, as
``c1 --help`` reads it: nothing of the runner, the datasets or the agent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from c1.options import option


@dataclass(frozen=True)
class EvalFlags:
    """The options of ``c1 eval DATASET`` beside the agent's and the model server's (c1/cli.py)."""

    setting: str = option("--setting", "pooled", "pooled: one corpus of every question's documents; per-question: each question searches only its own (hotpotqa, musique, 2wiki, financebench).")
    systems: Optional[str] = option(("--systems", "-s"), None, "Comma-separated: builtin, llm, auto, POLICY@N (N parallel runs fused), bm25, dense, hybrid [default: the --policy].")
    limit: Optional[int] = option(("--limit", "-n"), None, "Only the first N questions (after --seed shuffling).", min=1)
    seed: Optional[int] = option("--seed", None, "Shuffle the questions with this seed (also the model's sampling seed).")
    concurrency: int = option("--concurrency", 1, "Questions run at the same time.", min=1, max=64)
    out: Optional[Path] = option(("--out", "-o"), None, "Run directory; an interrupted run resumes there [default: HOME/eval/runs/DATASET-SETTING-HASH].")
    force: bool = option("--force", False, "Reuse --out even though its config differs (its old results are moved aside).")
    split: Optional[str] = option("--split", None, "beir: the qrels split [default: test].")
    docs: Optional[str] = option("--docs", None, "financebench: the folder of PDFs [default: pdfs/ beside PATH].")
    no_plot: bool = option("--no-plot", False, "Do not draw plot.png.")

    def options(self, dataset: str, path: str) -> "EvalOptions":
        """What the runner reads for ``dataset`` at ``path``."""
        return EvalOptions(dataset=dataset, path=path, setting=self.setting, systems=self.systems, limit=self.limit,
                           seed=self.seed, concurrency=max(1, self.concurrency), out=self.out, force=self.force,
                           split=self.split, docs=self.docs, plot=not self.no_plot)


@dataclass
class EvalOptions:
    dataset: str
    path: str
    setting: str = EvalFlags.setting
    systems: str | None = EvalFlags.systems
    """Comma-separated; default: the configured policy (``--policy``, else auto)."""
    limit: int | None = EvalFlags.limit
    seed: int | None = EvalFlags.seed
    concurrency: int = EvalFlags.concurrency
    out: Path | None = EvalFlags.out
    force: bool = EvalFlags.force
    split: str | None = EvalFlags.split
    docs: str | None = EvalFlags.docs
    plot: bool = not EvalFlags.no_plot
