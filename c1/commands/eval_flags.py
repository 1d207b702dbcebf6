"""The options of ``c1 eval DATASET PATH``, declared once (c1/commands/option_fields.py): :class:`EvalFlags`,
whose defaults are read from what the runner reads (:class:`c1.eval.settings.EvalOptions`) and which builds it.
c1/commands/eval_group.py makes the Typer options from it. Light, as ``c1 --help`` reads it: nothing of the
runner, the datasets or the agent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from c1.commands.option_fields import option
from c1.eval.settings import EvalOptions


@dataclass(frozen=True)
class EvalFlags:
    """The options of ``c1 eval DATASET`` beside the agent's and the model server's (c1/commands/eval_group.py)."""

    setting: str = option("--setting", EvalOptions.setting, "pooled: one corpus of every question's documents; per-question: each question searches only its own (hotpotqa, musique, 2wiki, financebench).")
    systems: Optional[str] = option(("--systems", "-s"), EvalOptions.systems, "Comma-separated: builtin, llm, auto, POLICY@N (N parallel runs fused), bm25, dense, hybrid [default: the --policy].")
    limit: Optional[int] = option(("--limit", "-n"), EvalOptions.limit, "Only the first N questions (after --seed shuffling).", min=1)
    seed: Optional[int] = option("--seed", EvalOptions.seed, "Shuffle the questions with this seed (also the model's sampling seed).")
    concurrency: int = option("--concurrency", EvalOptions.concurrency, "Questions run at the same time.", min=1, max=64)
    out: Optional[Path] = option(("--out", "-o"), EvalOptions.out, "Run directory; an interrupted run resumes there [default: HOME/eval/runs/DATASET-SETTING-HASH].")
    force: bool = option("--force", EvalOptions.force, "Reuse --out even though its config differs (its old results are moved aside).")
    split: Optional[str] = option("--split", EvalOptions.split, "beir: the qrels split [default: test].")
    docs: Optional[str] = option("--docs", EvalOptions.docs, "financebench: the folder of PDFs [default: pdfs/ beside PATH].")
    no_plot: bool = option("--no-plot", not EvalOptions.plot, "Do not draw plot.png.")

    def options(self, dataset: str, path: str) -> EvalOptions:
        """What the runner reads for ``dataset`` at ``path``."""
        return EvalOptions(dataset=dataset, path=path, setting=self.setting, systems=self.systems, limit=self.limit,
                           seed=self.seed, concurrency=max(1, self.concurrency), out=self.out, force=self.force,
                           split=self.split, docs=self.docs, plot=not self.no_plot)
