"""The ``c1 train`` group: each step's flags → Settings and its flag dataclass → one call of its body in
c1/commands/train.py. Light, as ``c1 --help`` imports it: the flag dataclasses are c1/commands/train_flags.py,
and torch loads inside the bodies."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from c1.commands import invoke
from c1.commands.flags import (ApiKey, Budget, ChromaUrl, Collection, EmbedModel, EmbedUrl, Home, Json, MaxTurns, PolicyOpt,
                               Quiet, ReasoningEffort, Temperature)
from c1.commands.option_fields import option_of, options_from
from c1.commands.train_flags import CollectFlags, RlFlags, SftFlags, SynthFlags
from c1.config import default_text

train_app = typer.Typer(
    help="Train a search agent for your corpus: synthetic tasks, teacher trajectories, SFT, CISPO RL (LoRA).",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
)

ModelDir = Annotated[Path, typer.Option("--model", help="Local folder of the model to train (Hugging Face layout; gpt-oss MXFP4 is dequantised to BF16).")]
Adapter = Annotated[Optional[Path], typer.Option("--adapter", help="Start from this LoRA adapter (e.g. the SFT output) instead of a fresh one.")]
Renderer = Annotated[str, typer.Option("--renderer", help="auto | harmony | chat_template: how prompts become tokens (auto: harmony for gpt-oss).")]
StartDate = Annotated[Optional[str], typer.Option("--start-date", help="Harmony conversation date (YYYY-MM-DD); set VLLM_SYSTEM_START_DATE to the same [default: today].")]
Seed = option_of(RlFlags, "seed")  # c1 train collect's seed is c1 train rl's (c1/commands/train_flags.py)


@train_app.command("synth")
@options_from(SynthFlags, "flags")
def train_synth(
    out: Annotated[Path, typer.Option("--out", "-o", help="Task file to write (JSONL; appended to: the run resumes).")],
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    embed_url: EmbedUrl = None,
    embed_model: EmbedModel = None,
    flags=None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Generate verified multi-hop retrieval tasks from an indexed collection with a teacher model."""
    from c1.commands.train import run_synth

    settings = invoke.settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model)
    invoke.run(run_synth, settings, flags, out=out, json_out=json_out, quiet=quiet)


@train_app.command("collect")
@options_from(CollectFlags, "flags")
def train_collect(
    tasks: Annotated[Path, typer.Option("--tasks", "-t", help="Task file from `c1 train synth`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Trajectory file to write (JSONL; the run resumes).")],
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    embed_url: EmbedUrl = None,
    embed_model: EmbedModel = None,
    policy: PolicyOpt = None,
    base_url: Annotated[Optional[list[str]], typer.Option("--base-url", help="OpenAI-compatible server of the teacher (repeatable: replicas).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Teacher model name on the server.")] = None,
    api_key: ApiKey = None,
    reasoning_effort: ReasoningEffort = None,
    temperature: Temperature = None,
    budget: Budget = None,
    max_turns: MaxTurns = None,
    flags=None,
    seed: Seed = 0,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Run a teacher through the c1 loop on tasks; score every run and keep the trajectories worth imitating."""
    from c1.commands.train import run_collect

    settings = invoke.settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model,
                               policy=policy, base_urls=tuple(base_url or ()), model=model, api_key=api_key,
                               reasoning_effort=reasoning_effort, temperature=temperature, budget=budget, max_turns=max_turns)
    settings = invoke.server_must_answer(settings, policy, tuple(base_url or ()))
    invoke.run(run_collect, settings, flags, tasks=tasks, out=out, seed=seed, json_out=json_out, quiet=quiet)


@train_app.command("ranker")
def train_ranker(
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    questions: Annotated[int, typer.Option("--questions", "-n", help="Questions to generate from the collection and fit on.")] = 200,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Refit the built-in policy's document ranker on questions made from your own collection (no model needed)."""
    from c1.commands.ranker import run_ranker

    settings = invoke.settings(collection=collection, home=home, chroma_url=chroma_url)
    invoke.run(run_ranker, settings, questions=questions, json_out=json_out, quiet=quiet)


@train_app.command("sft")
@options_from(SftFlags, "flags")
def train_sft(
    trajectories: Annotated[Path, typer.Option("--trajectories", help="Trajectory file from `c1 train collect`.")],
    model: ModelDir,
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (adapter/, sft_report.json).")],
    adapter: Adapter = None,
    renderer: Renderer = "auto",
    reasoning_effort: Annotated[Optional[str], typer.Option("--reasoning-effort", help="low | medium | high: the harmony system message, as served.")] = None,
    start_date: StartDate = None,
    flags=None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Supervised LoRA fine-tuning on kept trajectories (TRL; loss on assistant turns only)."""
    from c1.commands.train import run_sft

    invoke.run(run_sft, flags, trajectories=trajectories, model=model, out=out, adapter=adapter, renderer=renderer,
               reasoning_effort=reasoning_effort, start_date=start_date, json_out=json_out, quiet=quiet)


@train_app.command("rl")
@options_from(RlFlags, "flags")
def train_rl(
    tasks: Annotated[Path, typer.Option("--tasks", "-t", help="Task file from `c1 train synth`.")],
    model: ModelDir,
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (checkpoints/, metrics.jsonl, adapter/).")],
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    embed_url: EmbedUrl = None,
    embed_model: EmbedModel = None,
    adapter: Adapter = None,
    renderer: Renderer = "auto",
    reasoning_effort: Annotated[Optional[str], typer.Option("--reasoning-effort", help="low | medium | high: the harmony system message.")] = None,
    start_date: StartDate = None,
    vllm_url: Annotated[Optional[str], typer.Option("--vllm-url", help="vLLM server for rollouts (start it with c1 serve --rollout); default: generate in process.")] = None,
    vllm_model: Annotated[Optional[str], typer.Option("--vllm-model", help="Base model name on the vLLM server [default: --model].")] = None,
    budget: Budget = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", help=f"Turn limit per rollout {default_text('max_turns')}.")] = None,
    flags=None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """CISPO reinforcement learning with LoRA; rollouts run the real c1 loop on the collection."""
    from c1.commands.train import run_rl

    settings = invoke.settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model,
                               budget=budget, max_turns=max_turns)
    invoke.run(run_rl, settings, flags, tasks=tasks, model=model, out=out, adapter=adapter, renderer=renderer,
               reasoning_effort=reasoning_effort, start_date=start_date, vllm_url=vllm_url, vllm_model=vllm_model,
               json_out=json_out, quiet=quiet)
