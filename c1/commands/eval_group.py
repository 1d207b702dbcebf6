"""The ``c1 eval`` group: one command per dataset, its flags → Settings and :class:`EvalFlags` → one call
of c1/commands/eval.py; and ``c1 eval compare``. Light, as ``c1 --help`` imports it: the runner loads
inside the command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from c1.commands import invoke
from c1.commands.eval_flags import EvalFlags
from c1.commands.flags import (POLICY_HELP, ApiKey, BaseUrl, Budget, ChromaUrl, EmbedModel, EmbedUrl, Home, Json, MaxTurns,
                               Quiet, ReasoningEffort, Temperature)
from c1.commands.option_fields import options_from
from c1.config import default_text

eval_app = typer.Typer(
    help="Measure retrieval on benchmarks against single-shot baselines: answer found, recall, precision, F1, cost.",
    no_args_is_help=True, rich_markup_mode=None,
)


def _eval_command(dataset: str, summary: str):
    @options_from(EvalFlags, "flags")
    def command(
        path: Annotated[str, typer.Argument(help="The dataset: a file, or a folder (beir, jsonl, frames, browsecomp-plus).")],
        flags=None,
        policy: Annotated[Optional[str], typer.Option("--policy", help=f"Policy when --systems is not given: {POLICY_HELP} {default_text('policy')}.")] = None,
        parallel: Annotated[Optional[int], typer.Option("--parallel", "-p", help=f"Parallel runs for policies given without @N {default_text('parallel')}.")] = None,
        max_docs: Annotated[Optional[int], typer.Option("--max-docs", "-k", help=f"Documents returned per question, by every system {default_text('max_docs')}.")] = None,
        budget: Budget = None,
        max_turns: MaxTurns = None,
        base_url: BaseUrl = None,
        model: Annotated[Optional[str], typer.Option("--model", help="Model name on the server.")] = None,
        api_key: ApiKey = None,
        reasoning_effort: ReasoningEffort = None,
        temperature: Temperature = None,
        home: Home = None,
        chroma_url: ChromaUrl = None,
        embed_url: EmbedUrl = None,
        embed_model: EmbedModel = None,
        json_out: Json = False,
        quiet: Quiet = False,
    ) -> None:
        from c1.commands.eval import run_eval_command

        settings = invoke.settings(
            home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model, policy=policy,
            parallel=parallel, max_docs=max_docs, budget=budget, max_turns=max_turns, base_urls=tuple(base_url or ()),
            model=model, api_key=api_key, reasoning_effort=reasoning_effort, temperature=temperature, seed=flags.seed,
        )
        settings = invoke.server_must_answer(settings, policy, tuple(base_url or ()))
        invoke.run(run_eval_command, settings, dataset, path, flags, json_out=json_out, quiet=quiet)

    command.__doc__ = summary
    return command


# One command per dataset; the same names and summaries as c1.eval.datasets.DATASETS (tests/test_eval.py
# checks that they agree), written out here so that `c1 --help` imports nothing from c1.eval.
EVAL_DATASETS = {
    "hotpotqa": "HotpotQA distractor JSON/JSONL (per-question or pooled paragraphs).",
    "musique": "MuSiQue JSONL (paragraphs with is_supporting; per-question or pooled).",
    "2wiki": "2WikiMultiHopQA JSON/JSONL (HotpotQA layout; per-question or pooled).",
    "beir": "A BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
    "financebench": "FinanceBench JSONL plus a folder of its PDFs (gold = document and page).",
    "jsonl": "Generic: corpus.jsonl {id,title,text} + queries.jsonl {id,question,answer?,gold_ids}.",
    "frames": "FRAMES, with your corpus in the generic jsonl layout.",
    "browsecomp-plus": "BrowseComp-Plus, with its corpus in the generic jsonl layout.",
}
for _name, _summary in EVAL_DATASETS.items():
    eval_app.command(_name, help=_summary)(_eval_command(_name, _summary))


@eval_app.command("compare")
def eval_compare(
    a: Annotated[Path, typer.Argument(help="Run A: its summary.json or its run directory.")],
    b: Annotated[Path, typer.Argument(help="Run B: its summary.json or its run directory.")],
    json_out: Json = False,
) -> None:
    """Two eval runs side by side, per system and metric, with the differences (B − A)."""
    from c1.commands.eval import run_compare_command

    invoke.run(run_compare_command, a, b, json_out=json_out)
