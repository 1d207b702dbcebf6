"""The command line: flags → Settings and objects → one call. No logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from c1 import __version__

app = typer.Typer(
    name="c1",
    help="A retrieval subagent: index documents, then let an agent search them over several turns.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# Shared options ------------------------------------------------------------------------------
Collection = Annotated[Optional[str], typer.Option("--collection", "-c", help="Named collection [default: default].")]
Home = Annotated[Optional[Path], typer.Option("--home", help="Index home [default: $C1_HOME or $XDG_DATA_HOME/c1].")]
ChromaUrl = Annotated[Optional[str], typer.Option("--chroma-url", help="A Chroma server (http://host:port) instead of the embedded store.")]
EmbedUrl = Annotated[Optional[str], typer.Option("--embed-url", help="OpenAI-compatible /v1/embeddings server instead of the built-in model.")]
EmbedModel = Annotated[Optional[str], typer.Option("--embed-model", help="Model name for --embed-url.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or live view on stderr.")]


def _settings(**flags):
    from c1.config import load_settings

    return load_settings().with_flags(**flags)


def _run(fn, *args, **kwargs) -> None:
    """Call a command body; turn user errors into one line and an exit code, never a traceback."""
    from c1.console import error
    from c1.errors import C1Error

    try:
        code = fn(*args, **kwargs)
    except C1Error as exc:
        error(str(exc))
        raise typer.Exit(exc.code) from None
    except KeyboardInterrupt:
        error("interrupted")
        raise typer.Exit(130) from None
    raise typer.Exit(code or 0)


def _version(value: bool) -> None:
    if value:
        print(f"c1 {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """c1: a retrieval subagent for the command line."""


# index ---------------------------------------------------------------------------------------
@app.command()
def index(
    paths: Annotated[list[str], typer.Argument(help="Files and folders: txt, md, rst, html, pdf, eml, mbox, Maildir, jsonl.")],
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    embed_url: EmbedUrl = None,
    embed_model: EmbedModel = None,
    max_file_mb: Annotated[Optional[float], typer.Option("--max-file-mb", help="Skip files larger than this [default: 50].")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 if any file was skipped.")] = False,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Index files and folders into a collection (incremental: only changes are re-embedded)."""
    from c1.commands.index import run_index

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url,
                         embed_model=embed_model, max_file_mb=max_file_mb)
    _run(run_index, settings, paths, strict=strict, json_out=json_out, quiet=quiet)


# status --------------------------------------------------------------------------------------
@app.command()
def status(
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    json_out: Json = False,
) -> None:
    """Show collections: documents, chunks, embedder, store location, and whether the indexes agree."""
    from c1.commands.status import run_status

    _run(run_status, _settings(collection=collection, home=home, chroma_url=chroma_url), only=collection, json_out=json_out)


# not yet landed ------------------------------------------------------------------------------
def _not_yet(name: str) -> None:
    from c1.console import error

    error(f"`c1 {name}` is not available yet")
    raise typer.Exit(2)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    embed_url: EmbedUrl = None,
    embed_model: EmbedModel = None,
    policy: Annotated[Optional[str], typer.Option("--policy", help="auto | llm | builtin [default: auto].")] = None,
    parallel: Annotated[Optional[int], typer.Option("--parallel", "-p", min=1, max=32, help="Independent runs fused with RRF [default: 1].")] = None,
    max_docs: Annotated[Optional[int], typer.Option("--max-docs", "-k", min=1, help="Documents to return [default: 10].")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", min=1024, help="Context budget in tokens [default: 32768].")] = None,
    soft_threshold: Annotated[Optional[float], typer.Option("--soft-threshold", min=0.05, max=1.0, help="Share of the budget past which pruning is urged [default: 0.5].")] = None,
    hard_cutoff: Annotated[Optional[float], typer.Option("--hard-cutoff", min=0.1, max=1.0, help="Share of the budget past which only prune_chunks is accepted [default: 0.9].")] = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", min=1, help="Turn limit per run [default: 24].")] = None,
    base_url: Annotated[Optional[list[str]], typer.Option("--base-url", help="OpenAI-compatible model server (repeatable: replicas).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Model name on the server.")] = None,
    api_key: Annotated[Optional[str], typer.Option("--api-key", envvar="C1_API_KEY", help="API key for the model server.")] = None,
    reasoning_effort: Annotated[Optional[str], typer.Option("--reasoning-effort", help="low | medium | high (gpt-oss).")] = None,
    temperature: Annotated[Optional[float], typer.Option("--temperature", help="Sampling temperature.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Sampling seed.")] = None,
    json_out: Json = False,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Stream the loop's events as JSON lines on stdout.")] = False,
    save_trajectory: Annotated[Optional[Path], typer.Option("--save-trajectory", help="Write the full runs (pruned chunks included) to FILE.")] = None,
    quiet: Quiet = False,
) -> None:
    """Search a collection with the agent; print the ranked supporting documents."""
    from c1.commands.search import run_search_command

    settings = _settings(
        collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model,
        policy=policy, parallel=parallel, max_docs=max_docs, budget=budget, soft_threshold=soft_threshold,
        hard_cutoff=hard_cutoff, max_turns=max_turns, base_urls=tuple(base_url or ()), model=model,
        api_key=api_key, reasoning_effort=reasoning_effort, temperature=temperature, seed=seed,
    )
    _run(run_search_command, settings, query, json_out=json_out, jsonl=jsonl, quiet=quiet, save_trajectory=save_trajectory)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def serve(ctx: typer.Context) -> None:
    """Serve the model (vLLM, MXFP4) and the search API (not available yet)."""
    _not_yet("serve")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def train(ctx: typer.Context) -> None:
    """Synthetic tasks, SFT and CISPO RL with LoRA (not available yet)."""
    _not_yet("train")


@app.command(name="eval", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def eval_(ctx: typer.Context) -> None:
    """Measure retrieval on real benchmarks (not available yet)."""
    _not_yet("eval")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
