"""The command line: flags → Settings and objects → one call. No logic lives here."""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from c1 import __version__
from c1.commands.serve import ServeFlags  # the flags only: nothing is served at import
from c1.config import CHOICES, DEBOUNCE, default_text
from c1.eval.settings import EvalFlags  # the flags only: the runner loads inside the command
from c1.train.settings import CollectFlags, RlFlags, SftFlags, SynthFlags  # the flags only: torch loads inside the command

POLICY_HELP = " | ".join(CHOICES["policy"])  # c1.config's list, so that `c1 --help` imports no policy (a test checks it is the registry's)

app = typer.Typer(
    name="c1",
    help="A retrieval subagent: index documents, then let an agent search them over several turns.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

def _one_line_usage_errors() -> None:
    """A usage error (an unknown option, a missing argument, a bad value) in one line on stderr, with the
    hint, instead of click's usage frame of three: ``c1: error: no such option: --foo (try 'c1 search
    --help')``, exit 2. A group asked with no command still shows its help (click's own subclass)."""
    try:
        from typer.core import _click as click  # Typer 0.2x ships its own click
    except ImportError:
        import click

    def show(self, file=None) -> None:
        from c1.console import error

        message = " ".join(self.format_message().split()).rstrip(".")
        if message[:1].isupper() and message[1:2].islower():
            message = message[0].lower() + message[1:]
        error(f"{message} (try '{self.ctx.command_path if self.ctx is not None else 'c1'} --help')")

    click.exceptions.UsageError.show = show


_one_line_usage_errors()

# Shared options ------------------------------------------------------------------------------
Collection = Annotated[Optional[str], typer.Option("--collection", "-c", help=f"Named collection {default_text('collection')}.")]
Home = Annotated[Optional[Path], typer.Option("--home", help="Index home [default: $C1_HOME or $XDG_DATA_HOME/c1].")]
ChromaUrl = Annotated[Optional[str], typer.Option("--chroma-url", help="A Chroma server (http://host:port) instead of the embedded store.")]
EmbedUrl = Annotated[Optional[str], typer.Option("--embed-url", help="OpenAI-compatible /v1/embeddings server instead of the built-in model.")]
EmbedModel = Annotated[Optional[str], typer.Option("--embed-model", help="Model name for --embed-url.")]
EmbedderOpt = Annotated[Optional[str], typer.Option("--embedder", help="Built-in embedder of a new collection (or with --rebuild): bge | minilm [default: bge].")]
RerankOpt = Annotated[Optional[str], typer.Option("--rerank", help=f"Cross-encoder re-ranking: auto | off | onnx | a /rerank server URL {default_text('rerank')}.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or live view on stderr.")]


def _settings(**flags):
    """Settings from every layer; a bad config file, variable or flag is a one-line error."""
    from c1.config import load_settings
    from c1.console import error
    from c1.errors import C1Error

    try:
        return load_settings().with_flags(**flags)
    except C1Error as exc:
        error(str(exc))
        raise typer.Exit(exc.code) from None


def _run(fn, *args, **kwargs) -> None:
    """Call a command body; turn user errors into one line and an exit code, never a traceback."""
    from c1.console import error
    from c1.errors import C1Error

    try:
        code = fn(*args, **kwargs)
    except C1Error as exc:
        error(str(exc))
        raise typer.Exit(exc.code) from None
    except KeyboardInterrupt as exc:
        from c1.console import err, escape

        # the user's own Ctrl-C is no error; a command may say what it kept (c1 index)
        err().print(f"c1: {escape(str(exc) or 'interrupted')}", highlight=False, soft_wrap=True)
        _exit_now_if_busy(130)  # a loader thread inside PDFium or ONNX (OCR): finalising under it aborts
        raise typer.Exit(130) from None
    except BrokenPipeError:  # `c1 search ... | head -1`: the reader has what it wanted; stop quietly, as ripgrep does
        _drop_stdout()
        _exit_now_if_busy(0)
        raise typer.Exit(0) from None
    except Exception as exc:  # a bug: one line, not a traceback, unless asked for
        if os.environ.get("C1_DEBUG"):
            raise
        error(f"internal error: {type(exc).__name__}: {exc} (set C1_DEBUG=1 for the traceback)")
        raise typer.Exit(70) from None
    raise typer.Exit(code or 0)


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def _exit_now_if_busy(code: int) -> None:
    """Exit at once while other threads still run (``--parallel`` agents inside ONNX or Chroma calls, the
    indexer's loader inside PDFium or OCR): letting the interpreter finalise under them aborts the process
    ("terminate called without an active exception"). The work was left in ``finally`` blocks already."""
    import threading

    if threading.active_count() > 1:
        readonly = sys.modules.get("c1.store.readonly")
        if readonly is not None:
            readonly.cleanup()
        sys.stderr.flush()
        os._exit(code)


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

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url,
                         embed_model=embed_model, embedder=embedder, max_file_mb=max_file_mb, follow=follow or None)
    _run(run_index, settings, paths, strict=strict, json_out=json_out, quiet=quiet, rebuild=rebuild, ocr=ocr,
         watch=watch, debounce=debounce, keywords_only=keywords_only)


# status --------------------------------------------------------------------------------------
NoDaemon = Annotated[bool, typer.Option("--no-daemon", help="Work in this process, not through the warm resident process of the home.")]


def _daemon_flag(no_daemon: bool):
    """``--no-daemon`` as the ``daemon`` setting: given, it wins; absent, the config file and $C1_DAEMON decide."""
    return False if no_daemon else None


@app.command()
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

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url, daemon=_daemon_flag(no_daemon))
    _run(run_status, settings, only=collection, json_out=json_out, evals=evals)


# rm ------------------------------------------------------------------------------------------
@app.command()
def rm(
    collection: Annotated[str, typer.Option("--collection", "-c", help="The collection to remove (always named: no default).")],
    home: Home = None,
    chroma_url: ChromaUrl = None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Remove a collection: its manifest, lexical index and vectors (in the embedded store or a Chroma server)."""
    from c1.commands.rm import run_rm

    _run(run_rm, _settings(collection=collection, home=home, chroma_url=chroma_url), json_out=json_out, quiet=quiet)



# The agent's options, shared by search, serve and mcp ---------------------------------------------
# Their bounds are c1.config.RANGES, checked with the config file's and the API's (one line, naming the flag).
PolicyOpt = Annotated[Optional[str], typer.Option("--policy", help=f"{POLICY_HELP} {default_text('policy')}.")]
Parallel = Annotated[Optional[int], typer.Option("--parallel", "-p", help=f"Independent runs fused with RRF {default_text('parallel')}.")]
MaxDocs = Annotated[Optional[int], typer.Option("--max-docs", "-k", help=f"Documents to return {default_text('max_docs')}.")]
Budget = Annotated[Optional[int], typer.Option("--budget", help=f"Context budget in tokens {default_text('budget')}.")]
SoftThreshold = Annotated[Optional[float], typer.Option("--soft-threshold", help=f"Share of the budget past which pruning is urged {default_text('soft_threshold')}.")]
HardCutoff = Annotated[Optional[float], typer.Option("--hard-cutoff", help=f"Share of the budget past which only prune_chunks is accepted {default_text('hard_cutoff')}.")]
MaxTurns = Annotated[Optional[int], typer.Option("--max-turns", help=f"Turn limit per run {default_text('max_turns')}.")]
BaseUrl = Annotated[Optional[list[str]], typer.Option("--base-url", help="OpenAI-compatible model server (repeatable: replicas).")]
ModelName = Annotated[Optional[str], typer.Option("--model", help="Model name on the server [default: the first it lists].")]
ApiKey = Annotated[Optional[str], typer.Option("--api-key", envvar="C1_API_KEY", help="API key for the model server.")]
ReasoningEffort = Annotated[Optional[str], typer.Option("--reasoning-effort", help="low | medium | high (gpt-oss).")]
Temperature = Annotated[Optional[float], typer.Option("--temperature", help="Sampling temperature.")]
SamplingSeed = Annotated[Optional[int], typer.Option("--seed", help="Sampling seed (run i uses seed+i).")]
ToolNames = Annotated[Optional[str], typer.Option("--tool-names", help="Rename tools for the model: search_corpus=SearchTool,grep_corpus=GrepTool,...")]
EvidenceTokens = Annotated[Optional[int], typer.Option("--evidence-tokens", min=0, help=f"Tokens of supporting passages returned with the documents; 0: documents only {default_text('evidence_tokens')}.")]
MaxTokens = Annotated[Optional[int], typer.Option("--max-tokens", min=1, help="Cap on tokens the model generates per turn.")]


AGENT_OPTIONS = {
    "collection": Collection, "home": Home, "chroma_url": ChromaUrl, "embed_url": EmbedUrl, "embed_model": EmbedModel,
    "policy": PolicyOpt, "parallel": Parallel, "max_docs": MaxDocs, "budget": Budget, "soft_threshold": SoftThreshold,
    "hard_cutoff": HardCutoff, "max_turns": MaxTurns, "base_url": BaseUrl, "model": ModelName, "api_key": ApiKey,
    "reasoning_effort": ReasoningEffort, "temperature": Temperature, "seed": SamplingSeed, "tool_names": ToolNames,
    "max_tokens": MaxTokens, "rerank": RerankOpt, "evidence_tokens": EvidenceTokens,
}
"""The options of every command that runs the agent (search, serve, mcp), declared once."""


def agent_options(fn):
    """Give a command the agent's options; the command receives them as ``settings``."""
    sig = inspect.signature(fn, eval_str=True)
    own = [p for name, p in sig.parameters.items() if name != "settings"]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=kind)
              for name, kind in AGENT_OPTIONS.items()]

    @functools.wraps(fn)
    def command(**kwargs):
        flags = {name: kwargs.pop(name) for name in AGENT_OPTIONS}
        base_urls = tuple(flags.pop("base_url") or ())
        return fn(settings=_server_must_answer(_settings(base_urls=base_urls, **flags), flags["policy"], base_urls), **kwargs)

    command.__signature__ = sig.replace(parameters=own + shared)
    command.__annotations__ = {**{p.name: p.annotation for p in own}, **AGENT_OPTIONS}
    return command


def _server_must_answer(settings, policy_flag: str | None, base_urls_flag: tuple[str, ...]):
    """A model server named for this command (``--base-url`` or ``$C1_BASE_URLS``) with no policy asked for
    anywhere: it must answer, as with ``--policy llm`` (one line, exit 2), instead of the built-in policy
    silently taking its place. A server of the config file is a standing default, and ``--policy auto``
    asks for the fallback: both still fall back, with a warning."""
    if settings.policy != "auto" or policy_flag is not None or os.environ.get("C1_POLICY"):
        return settings
    if not (base_urls_flag or os.environ.get("C1_BASE_URLS")) or "policy" in _config_keys():
        return settings
    import dataclasses

    return dataclasses.replace(settings, policy="llm")


def _config_keys() -> set[str]:
    """The keys the config file sets (it was read and checked once already: a problem here is none)."""
    import tomllib

    from c1.config import config_path

    try:
        return set(tomllib.loads(config_path().read_text()))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return set()


def option_of(cls, name: str):
    """The Typer option (an ``Annotated`` type) of field ``name`` of a dataclass of :func:`c1.options.option` fields."""
    import dataclasses
    import typing

    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    kind = typing.get_type_hints(cls)[name]
    return Annotated[kind, typer.Option(*f.metadata["flags"], help=f.metadata["help"], **f.metadata["typer"])]


def options_from(cls, name: str):
    """Give a command the options declared by dataclass ``cls`` (:func:`c1.options.option` fields), in their
    order, where its parameter ``name`` stands; the command receives them as one ``cls`` instance ``name``."""
    import dataclasses

    declared = {f.name: (option_of(cls, f.name), f.default) for f in dataclasses.fields(cls)}

    def wrap(fn):
        sig = inspect.signature(fn, eval_str=True)
        params = []
        for p in sig.parameters.values():
            if p.name == name:
                params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind)
                           for n, (kind, default) in declared.items()]
            else:
                params.append(p)

        @functools.wraps(fn)
        def command(**kwargs):
            values = {n: kwargs.pop(n) for n in declared}
            return fn(**{name: cls(**values)}, **kwargs)

        command.__signature__ = sig.replace(parameters=params)
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap


# search --------------------------------------------------------------------------------------
@app.command()
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

    if no_daemon:
        settings = settings.with_flags(daemon=False)
    _run(run_search_command, settings, query, json_out=json_out, jsonl=jsonl, quiet=quiet, save_trajectory=save_trajectory,
         batch=batch, jobs=jobs)


# serve ---------------------------------------------------------------------------------------
@app.command()
@agent_options
@options_from(ServeFlags, "flags")
def serve(flags=None, settings=None, json_out: Json = False) -> None:
    """Serve Context-1 on vLLM (MXFP4) and the search API (POST /v1/search); or only the API."""
    from c1.commands.serve import run_serve

    _run(run_serve, settings, flags, json_out=json_out)


# mcp -----------------------------------------------------------------------------------------
@app.command()
@agent_options
def mcp(
    settings=None,
    max_concurrency: Annotated[int, typer.Option("--max-concurrency", min=1, help="Agent runs at once: a search takes one per parallel run.")] = 2,
    timeout: Annotated[float, typer.Option("--timeout", min=1, help="Seconds per search.")] = 600.0,
) -> None:
    """The agent as a Model Context Protocol server on stdio (tools: search, status)."""
    from c1.commands.mcp import run_mcp

    _run(run_mcp, settings, max_concurrency=max_concurrency, timeout_s=timeout)


# train ---------------------------------------------------------------------------------------
train_app = typer.Typer(
    help="Train a search agent for your corpus: synthetic tasks, teacher trajectories, SFT, CISPO RL (LoRA).",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
)
app.add_typer(train_app, name="train")

ModelDir = Annotated[Path, typer.Option("--model", help="Local folder of the model to train (Hugging Face layout; gpt-oss MXFP4 is dequantised to BF16).")]
Adapter = Annotated[Optional[Path], typer.Option("--adapter", help="Start from this LoRA adapter (e.g. the SFT output) instead of a fresh one.")]
Renderer = Annotated[str, typer.Option("--renderer", help="auto | harmony | chat_template: how prompts become tokens (auto: harmony for gpt-oss).")]
StartDate = Annotated[Optional[str], typer.Option("--start-date", help="Harmony conversation date (YYYY-MM-DD); set VLLM_SYSTEM_START_DATE to the same [default: today].")]
Seed = option_of(RlFlags, "seed")  # c1 train collect's seed is c1 train rl's (c1/train/settings.py)


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

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model)
    _run(run_synth, settings, flags, out=out, json_out=json_out, quiet=quiet)


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
    policy: Annotated[Optional[str], typer.Option("--policy", help=f"{POLICY_HELP} {default_text('policy')}.")] = None,
    base_url: Annotated[Optional[list[str]], typer.Option("--base-url", help="OpenAI-compatible server of the teacher (repeatable: replicas).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Teacher model name on the server.")] = None,
    api_key: Annotated[Optional[str], typer.Option("--api-key", envvar="C1_API_KEY", help="API key for the model server.")] = None,
    reasoning_effort: Annotated[Optional[str], typer.Option("--reasoning-effort", help="low | medium | high (gpt-oss).")] = None,
    temperature: Annotated[Optional[float], typer.Option("--temperature", help="Sampling temperature.")] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help=f"Context budget in tokens {default_text('budget')}.")] = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", help=f"Turn limit per run {default_text('max_turns')}.")] = None,
    flags=None,
    seed: Seed = 0,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """Run a teacher through the c1 loop on tasks; score every run and keep the trajectories worth imitating."""
    from c1.commands.train import run_collect

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model,
                         policy=policy, base_urls=tuple(base_url or ()), model=model, api_key=api_key,
                         reasoning_effort=reasoning_effort, temperature=temperature, budget=budget, max_turns=max_turns)
    settings = _server_must_answer(settings, policy, tuple(base_url or ()))
    _run(run_collect, settings, flags, tasks=tasks, out=out, seed=seed, json_out=json_out, quiet=quiet)


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

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url)
    _run(run_ranker, settings, questions=questions, json_out=json_out, quiet=quiet)


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

    _run(run_sft, flags, trajectories=trajectories, model=model, out=out, adapter=adapter, renderer=renderer,
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
    budget: Annotated[Optional[int], typer.Option("--budget", help=f"Context budget in tokens {default_text('budget')}.")] = None,
    max_turns: Annotated[Optional[int], typer.Option("--max-turns", help=f"Turn limit per rollout {default_text('max_turns')}.")] = None,
    flags=None,
    json_out: Json = False,
    quiet: Quiet = False,
) -> None:
    """CISPO reinforcement learning with LoRA; rollouts run the real c1 loop on the collection."""
    from c1.commands.train import run_rl

    settings = _settings(collection=collection, home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model,
                         budget=budget, max_turns=max_turns)
    _run(run_rl, settings, flags, tasks=tasks, model=model, out=out, adapter=adapter, renderer=renderer,
         reasoning_effort=reasoning_effort, start_date=start_date, vllm_url=vllm_url, vllm_model=vllm_model,
         json_out=json_out, quiet=quiet)


# eval ----------------------------------------------------------------------------------------
eval_app = typer.Typer(
    help="Measure retrieval on benchmarks against single-shot baselines: answer found, recall, precision, F1, cost.",
    no_args_is_help=True, rich_markup_mode=None,
)
app.add_typer(eval_app, name="eval")


def _eval_command(dataset: str, summary: str):
    @options_from(EvalFlags, "flags")
    def command(
        path: Annotated[str, typer.Argument(help="The dataset: a file, or a folder (beir, jsonl, frames, browsecomp-plus).")],
        flags=None,
        policy: Annotated[Optional[str], typer.Option("--policy", help=f"Policy when --systems is not given: {POLICY_HELP} {default_text('policy')}.")] = None,
        parallel: Annotated[Optional[int], typer.Option("--parallel", "-p", help=f"Parallel runs for policies given without @N {default_text('parallel')}.")] = None,
        max_docs: Annotated[Optional[int], typer.Option("--max-docs", "-k", help=f"Documents returned per question, by every system {default_text('max_docs')}.")] = None,
        budget: Annotated[Optional[int], typer.Option("--budget", help=f"Context budget in tokens {default_text('budget')}.")] = None,
        max_turns: Annotated[Optional[int], typer.Option("--max-turns", help=f"Turn limit per run {default_text('max_turns')}.")] = None,
        base_url: Annotated[Optional[list[str]], typer.Option("--base-url", help="OpenAI-compatible model server (repeatable: replicas).")] = None,
        model: Annotated[Optional[str], typer.Option("--model", help="Model name on the server.")] = None,
        api_key: Annotated[Optional[str], typer.Option("--api-key", envvar="C1_API_KEY", help="API key for the model server.")] = None,
        reasoning_effort: Annotated[Optional[str], typer.Option("--reasoning-effort", help="low | medium | high (gpt-oss).")] = None,
        temperature: Annotated[Optional[float], typer.Option("--temperature", help="Sampling temperature.")] = None,
        home: Home = None,
        chroma_url: ChromaUrl = None,
        embed_url: EmbedUrl = None,
        embed_model: EmbedModel = None,
        json_out: Json = False,
        quiet: Quiet = False,
    ) -> None:
        from c1.commands.eval import run_eval_command

        settings = _settings(
            home=home, chroma_url=chroma_url, embed_url=embed_url, embed_model=embed_model, policy=policy,
            parallel=parallel, max_docs=max_docs, budget=budget, max_turns=max_turns, base_urls=tuple(base_url or ()),
            model=model, api_key=api_key, reasoning_effort=reasoning_effort, temperature=temperature, seed=flags.seed,
        )
        settings = _server_must_answer(settings, policy, tuple(base_url or ()))
        _run(run_eval_command, settings, dataset, path, flags, json_out=json_out, quiet=quiet)

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

    _run(run_compare_command, a, b, json_out=json_out)


# completions ---------------------------------------------------------------------------------
@app.command()
def completions(
    shell: Annotated[str, typer.Argument(help="bash, zsh or fish.")],
) -> None:
    """Print the shell completion script (commands, options, --policy and other values, collection names).

    bash: c1 completions bash > ~/.local/share/bash-completion/completions/c1
    zsh: c1 completions zsh > ~/.zfunc/_c1 (with ~/.zfunc on $fpath, then compinit)
    fish: c1 completions fish > ~/.config/fish/completions/c1.fish
    """
    from c1.errors import C1Error

    def body() -> int:
        from c1.docs_gen import SHELLS, completion_script

        if shell not in SHELLS:
            raise C1Error(f"no completion for {shell!r}: bash, zsh or fish")
        if _FULL is not None:  # the generator reads every command, which _build_only left out
            app.registered_commands, app.registered_groups = _FULL
        sys.stdout.write(completion_script(shell, app))
        return 0

    _run(body)


_FULL = None


def main() -> None:
    _build_only(sys.argv[1:2])
    _coerce_lightly()
    app(prog_name="c1")  # `python -m c1` too: hints and usage name the command a user types


_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def _coerce_lightly() -> None:
    """Typer (0.2x) coerces each parameter of the command run through a pydantic TypeAdapter, absent ones
    included: importing pydantic and building the adapters was most of what a ``c1 search`` through the
    resident process cost beyond ``c1 --help`` (``python -X importtime``). Values that need no validation
    skip it here — an absent option, a plain string, a bool, a whole or decimal number inside its
    ``min``/``max`` — and every other value (out of range, a list, a path, a choice) takes Typer's own
    path, with its own error. With a Typer that has no such class, nothing is changed."""
    try:
        from typer.core import _TyperParameter
        from typer.core import _click as click
    except ImportError:
        return
    missing = click.exceptions.MissingParameter
    original = getattr(_TyperParameter, "process_value", None)
    if original is None or getattr(original, "c1_light", False):
        return

    def process_value(self, ctx, value):
        done, value = _plain(self, value)
        if not done:
            return original(self, ctx, value)
        if self.required and self.value_is_missing(value):
            raise missing(ctx=ctx, param=self)
        if self.callback is not None:
            value = self.callback(ctx, self, value)
        return value

    process_value.c1_light = True
    _TyperParameter.process_value = process_value


def _plain(param, value) -> tuple[bool, object]:
    """(True, the value) when it needs no coercion by Typer; (False, value) otherwise."""
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if desc is None or info is None or getattr(info, "parser", None) is not None or desc.file_annotation is not None:
        return False, value
    multi = param.multiple or param.nargs == -1
    if value is None:
        return True, (() if multi else None)
    if multi:
        return False, value
    kind = desc.annotation
    if kind in (Optional[str], str) and isinstance(value, str):
        return True, value
    if kind in (Optional[bool], bool) and isinstance(value, bool):
        return True, value
    if getattr(info, "clamp", False) or isinstance(value, bool):
        return False, value
    text = isinstance(value, str)
    if kind in (Optional[int], int) and (type(value) is int or text and _INT.fullmatch(value)):
        number = int(value)
    elif kind in (Optional[float], float) and (type(value) in (int, float) or text and _FLOAT.fullmatch(value)):
        number = float(value)
    else:
        return False, value
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if (low is not None and number < low) or (high is not None and number > high):
        return False, value  # Typer says what the range is
    return True, number


def _build_only(first: list[str]) -> None:
    """Build only the command asked for: Typer turns the signature of every registered command into click
    parameters at each start, which costs ~0.1 s on a slow machine, while ``c1 search`` needs only its own
    (repeated searches from the shell are meant to be fast). ``--help``, ``--version`` and unknown names
    still see every command."""
    if not first or first[0].startswith("-"):
        return
    from typer.main import get_command_name

    commands = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__)) == first[0]]
    groups = [g for g in app.registered_groups if g.name == first[0]]
    if commands or groups:
        global _FULL
        _FULL = (app.registered_commands, app.registered_groups)
        app.registered_commands = commands
        app.registered_groups = groups


if __name__ == "__main__":
    main()
