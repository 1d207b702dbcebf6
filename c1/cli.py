"""The command line: flags → Settings and objects → one call. No logic lives here: the shared options and
the decorator that hands the agent's over are c1/commands/flags.py, a flag dataclass made options
c1/commands/option_fields.py (``serve``'s is c1/commands/serve_flags.py), calling a body and its errors
c1/commands/invoke.py, the ``train`` and ``eval`` groups c1/commands/train_group.py and eval_group.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from c1 import __version__
from c1.commands import invoke, startup
from c1.commands.flags import (ChromaUrl, Collection, EmbedderOpt, EmbedModel, EmbedUrl, Home, Json, NoDaemon, Quiet,
                               agent_options, daemon_flag)
from c1.commands.option_fields import options_from
from c1.commands.serve_flags import ServeFlags
from c1.config import DEBOUNCE, default_text

_app = typer.Typer(
    name="c1",
    help="A retrieval subagent: index documents, then let an agent search them over several turns.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
invoke.one_line_usage_errors()


def _version(value: bool) -> None:
    if value:
        print(f"c1 {__version__}")
        raise typer.Exit()


@_app.callback()
def main_callback(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """c1: a retrieval subagent for the command line."""


# index ---------------------------------------------------------------------------------------
@_app.command()
def index(
    paths: Annotated[list[str], typer.Argument(help="Files and folders: txt, md, rst, html, pdf, docx, pptx, xlsx, csv, odt, ods, epub, rtf, eml, mbox, Maildir, jsonl, images.")],
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    embed_url: EmbedUrl = None,
    embed_model: EmbedModel = None,
    embedder: EmbedderOpt = None,
    max_file_mb: Annotated[Optional[float], typer.Option("--max-file-mb", help=f"Skip files larger than this {default_text('max_file_mb')}.")] = None,
    follow: Annotated[bool, typer.Option("--follow", "-L", help="Follow symbolic links out of the named folders too (a link to a folder holding them never).")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 if any file was skipped.")] = False,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Re-create the vectors and the lexical index from the manifest first (a damaged store; the vectors with the default or --embedder model).")] = False,
    ocr: Annotated[bool, typer.Option("--ocr", help="OCR every PDF page, even those with a text layer (needs c1[ocr]).")] = False,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Then keep the collection fresh as files change, until Ctrl-C (--json: one JSON object per batch).")] = False,
    keywords_only: Annotated[bool, typer.Option("--keywords-only", help="Stop once every file is searchable by keywords; a later `c1 index` embeds the chunks.")] = False,
    debounce: Annotated[Optional[float], typer.Option("--debounce", min=0.0, max=60.0, help=f"With --watch: seconds a changed file must stay quiet before it is indexed [default: {DEBOUNCE}].")] = None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Index files and folders into a collection (incremental: only changes are re-embedded).

    A path that no longer exists removes the documents indexed from it."""
    from c1.commands.index import run_index

    settings = invoke.settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url,
                               embed_model=embed_model, embedder=embedder, max_file_mb=max_file_mb, follow=follow or None)
    invoke.run(run_index, settings, paths, strict=strict, json_out=json_out, quiet=quiet, rebuild=rebuild, ocr=ocr,
               watch=watch, debounce=debounce, keywords_only=keywords_only)


# status --------------------------------------------------------------------------------------
@_app.command()
def status(
    collection: Collection = None,
    home: Home = None,
    chroma_url: ChromaUrl = None,
    json_out: Json = False,
    no_daemon: NoDaemon = False,
    evals: Annotated[bool, typer.Option("--eval", help="List the collections `c1 eval` made too.")] = False,
) -> None:
    """Show collections: documents, chunks, embedder, store location, and whether the indexes agree."""
    from c1.commands.status import run_status

    settings = invoke.settings(collection=collection, home=home, chroma_url=chroma_url, daemon=daemon_flag(no_daemon))
    invoke.run(run_status, settings, only=collection, json_out=json_out, evals=evals)


# rm ------------------------------------------------------------------------------------------
@_app.command()
def rm(
    collection: Annotated[str, typer.Option("--collection", "-c", help="The collection to remove (always named: no default).")],
    home: Home = None,
    chroma_url: ChromaUrl = None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Remove a collection: its manifest, lexical index and vectors (in the embedded store or a Chroma server)."""
    from c1.commands.rm import run_rm

    invoke.run(run_rm, invoke.settings(collection=collection, home=home, chroma_url=chroma_url), json_out=json_out, quiet=quiet)


# search --------------------------------------------------------------------------------------
@_app.command()
@agent_options
def search(
    query: Annotated[Optional[str], typer.Argument(help="The question (or --batch FILE).")] = None,
    settings=None,
    json_out: Json = False,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Stream the loop's events as JSON lines on stdout.")] = False,
    save_trajectory: Annotated[Optional[Path], typer.Option("--save-trajectory", help="Write the full runs (pruned chunks included) to FILE.")] = None,
    quiet: Quiet = False,
    no_daemon: NoDaemon = False,
    batch: Annotated[Optional[str], typer.Option("--batch", help="Questions from FILE ('-': stdin), one per line or JSON lines {\"id\", \"query\"}: one JSON result per line, in input order.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, max=64, help="With --batch: questions searched at once.")] = 1,
) -> None:
    """Search a collection with the agent; print the ranked supporting documents."""
    from c1.commands.search import run_search_command
    from c1.exiting import skip_teardown

    skip_teardown()  # it writes nothing after its output: the interpreter's teardown is only time
    if no_daemon:
        settings = settings.with_flags(daemon=False)
    invoke.run(run_search_command, settings, query, json_out=json_out, jsonl=jsonl, quiet=quiet, save_trajectory=save_trajectory,
               batch=batch, jobs=jobs)


# serve ---------------------------------------------------------------------------------------
@_app.command()
@agent_options
@options_from(ServeFlags, "flags")
def serve(flags=None, settings=None, json_out: Json = False) -> None:
    """Serve Context-1 on vLLM (MXFP4) and the search API (POST /v1/search); or only the API."""
    from c1.commands.serve import run_serve

    invoke.run(run_serve, settings, flags, json_out=json_out)


# mcp -----------------------------------------------------------------------------------------
@_app.command()
@agent_options
def mcp(
    settings=None,
    max_concurrency: Annotated[int, typer.Option("--max-concurrency", min=1, help="Agent runs at once: a search takes one per parallel run.")] = 2,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per search.")] = 600.0,
) -> None:
    """The agent as a Model Context Protocol server on stdio (tools: search, status)."""
    from c1.commands.mcp import run_mcp

    invoke.run(run_mcp, settings, max_concurrency=max_concurrency, timeout_s=timeout)


# train, eval ---------------------------------------------------------------------------------
def _train_app() -> typer.Typer:
    from c1.commands.train_group import train_app  # the flags only: torch loads inside the command

    return train_app


def _eval_app() -> typer.Typer:
    from c1.commands.eval_group import eval_app  # the flags only: the runner loads inside the command

    return eval_app


GROUPS = {"train": _train_app, "eval": _eval_app}
"""Added when a command line names them, or asks for every command: making their options costs some
35 ms at each start, which ``c1 search`` and the other commands do without (startup.build_only)."""


def __getattr__(name: str):
    if name == "app":  # the whole command tree, as scripts/gen_docs.py and the tests read it
        startup.add_groups(_app, GROUPS)
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# completions ---------------------------------------------------------------------------------
@_app.command()
def completions(
    shell: Annotated[str, typer.Argument(help="bash, zsh or fish.")],
) -> None:
    """Print the shell completion script (commands, options, --policy and other values, collection names).

    bash: c1 completions bash > ~/.local/share/bash-completion/completions/c1
    zsh: c1 completions zsh > ~/.zfunc/_c1 (with ~/.zfunc on $fpath, then compinit)
    fish: c1 completions fish > ~/.config/fish/completions/c1.fish
    """
    from c1.commands.completions import run_completions

    startup.every_command(_app, GROUPS)  # the generator reads every command
    invoke.run(run_completions, _app, shell)


def main() -> None:
    startup.build_only(_app, sys.argv[1:2], GROUPS)
    startup.coerce_lightly()
    _app(prog_name="c1")  # `python -m c1` too: hints and usage name the command a user types


if __name__ == "__main__":
    main()
