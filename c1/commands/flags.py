"""The Typer options that several commands share, declared once (the collection's, the store's, the output's
and the agent's), and the decorator that gives a command the agent's options and hands them to it as one
``settings``. A command family's own options are a flag dataclass beside its commands (c1/commands/option_fields.py).

Light, as ``c1 --help`` imports it: the help strings come from c1.config, so that no policy is imported."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Annotated, Optional

import typer

from c1.commands import invoke
from c1.config import CHOICES, default_text

POLICY_HELP = " | ".join(CHOICES["policy"])  # c1.config's list, so that `c1 --help` imports no policy (a test checks it is the registry's)

Collection = Annotated[Optional[str], typer.Option("--collection", "-c", help=f"Named collection {default_text('collection')}.")]
Home = Annotated[Optional[Path], typer.Option("--home", help="Index home [default: $C1_HOME or $XDG_DATA_HOME/c1].")]
ChromaUrl = Annotated[Optional[str], typer.Option("--chroma-url", help="A Chroma server (http://host:port) instead of the embedded store.")]
EmbedUrl = Annotated[Optional[str], typer.Option("--embed-url", help="OpenAI-compatible /v1/embeddings server instead of the built-in model.")]
EmbedModel = Annotated[Optional[str], typer.Option("--embed-model", help="Model name for --embed-url.")]
EmbedderOpt = Annotated[Optional[str], typer.Option("--embedder", help="Built-in embedder of a new collection (or with --rebuild): bge | minilm [default: bge].")]
RerankOpt = Annotated[Optional[str], typer.Option("--rerank", help=f"Cross-encoder re-ranking: auto | off | onnx | a /rerank server URL {default_text('rerank')}.")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or live view on stderr.")]
NoDaemon = Annotated[bool, typer.Option("--no-daemon", help="Work in this process, not through the warm resident process of the home.")]


def daemon_flag(no_daemon: bool):
    """``--no-daemon`` as the ``daemon`` setting: given, it wins; absent, the config file and $C1_DAEMON decide."""
    return False if no_daemon else None


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
        settings = invoke.settings(base_urls=base_urls, **flags)
        return fn(settings=invoke.server_must_answer(settings, flags["policy"], base_urls), **kwargs)

    command.__signature__ = sig.replace(parameters=own + shared)
    command.__annotations__ = {**{p.name: p.annotation for p in own}, **AGENT_OPTIONS}
    return command

