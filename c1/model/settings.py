"""What a vLLM server for Context-1 is run with (:class:`ServeOptions`, checked here) and the ``vllm serve`` command
it makes. The command-line flags that build it are ``c1 serve``'s (c1/commands/serve_flags.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from c1.config import DEFAULT_BUDGET
from c1.model.errors import PortConflict, ServeError

DEFAULT_MODEL = "chromadb/context-1"
DEFAULT_PORT = 8001
"""Not 8000: ``chroma run`` and vLLM both default to 8000."""
CHROMA_DEFAULT_PORT = 8000
DEFAULT_CONTEXT_BUDGET = DEFAULT_BUDGET
REPLY_HEADROOM = 8192
"""Tokens on top of the agent's context budget: the reply, the system prompt, tool schemas."""
MAX_POSITION_EMBEDDINGS = 131072
"""gpt-oss's longest context (YaRN-extended)."""
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""vLLM's ``--max-lora-rank`` accepts only these (``MaxLoRARanks`` in vllm/config/lora.py)."""
VLLM_PARSER_FLAGS = (
    "--tool-call-parser", "openai", "--enable-auto-tool-choice", "--reasoning-parser", "openai_gptoss",
)  # fmt: skip
"""gpt-oss speaks harmony: tool calls and reasoning are parsed out of its channels."""


@dataclass(frozen=True)
class ServeOptions:
    model: str = DEFAULT_MODEL
    """Hub id or local checkpoint folder."""
    served_model_name: str | None = None
    """Name clients use; default: the hub id, or the folder name of a local checkpoint."""
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    chroma_port: int | None = CHROMA_DEFAULT_PORT
    """The Chroma server's port, never to be taken (None: no Chroma server configured)."""
    context_budget: int = DEFAULT_CONTEXT_BUDGET
    reply_headroom: int = REPLY_HEADROOM
    gpu_memory_utilization: float = 0.90
    tensor_parallel_size: int = 1
    lora: tuple[tuple[str, str], ...] = ()
    """LoRA adapters as (name, path); clients select one by using its name as the model."""
    api_model: str | None = None
    """The model the search API asks for (``--model``); default: the first adapter, else the base model."""
    max_lora_rank: int | None = None
    """Default: read from the adapters' ``adapter_config.json``."""
    seed: int | None = 0
    enable_prefix_caching: bool = True
    quantize: str | None = "mxfp4"
    """``"mxfp4"``: serve MXFP4 experts, converting a BF16 checkpoint first. None: as published."""
    cache_dir: str | None = None
    """Converted checkpoints and logs; default ``$C1_CACHE_DIR``, ``$XDG_CACHE_HOME/c1`` or ``~/.cache/c1``."""
    extra_args: tuple[str, ...] = ()
    """Passed to ``vllm serve`` verbatim, last."""
    vllm: tuple[str, ...] | None = None
    """Command that runs vLLM's CLI; default: the ``vllm`` script of this environment."""
    rollout: bool = False
    """Serve as the rollout server of ``c1 train rl`` (:class:`c1.train.policy.VLLMGenerator`): LoRA
    enabled and hot-loadable at run time (``VLLM_ALLOW_RUNTIME_LORA_UPDATING``), and sampled tokens'
    log-probabilities taken after temperature and top-p (``--logprobs-mode processed_logprobs``:
    the behaviour policy the CISPO correction divides by; vLLM's default reports the raw logits')."""


ROLLOUT_ENV = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
"""Without it vLLM refuses ``/v1/load_lora_adapter``: the trainer could not push its updates."""
ROLLOUT_LORAS = 2
"""Adapters a rollout server holds at once: the trainer loads step n+1's before it unloads step n's."""


def vllm_env(opts: ServeOptions) -> dict[str, str]:
    """Environment variables vLLM needs for these options (on top of the inherited environment)."""
    return dict(ROLLOUT_ENV) if opts.rollout else {}


def parse_lora(spec: str) -> tuple[str, str]:
    """``"name=path"`` (the ``--lora`` flag) -> ``(name, path)``."""
    name, sep, path = spec.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise ServeError(f"LoRA adapters are given as NAME=PATH, not {spec!r}")
    return name.strip(), path.strip()


def max_model_len_for(context_budget: int, headroom: int = REPLY_HEADROOM, limit: int = MAX_POSITION_EMBEDDINGS) -> int:
    """The agent's context budget plus room for the reply, rounded up to a multiple of 1024,
    capped at the model's longest context."""
    if context_budget <= 0 or headroom < 0:
        raise ServeError(f"the context budget must be positive (got {context_budget})")
    return min(-(-(context_budget + headroom) // 1024) * 1024, limit)


def read_lora_rank(path: str | Path) -> int | None:
    """``r`` from a PEFT adapter's ``adapter_config.json``, if there is one."""
    import json

    try:
        rank = json.loads((Path(path).expanduser() / "adapter_config.json").read_text()).get("r")
    except (OSError, ValueError, AttributeError):
        return None
    return rank if isinstance(rank, int) and rank > 0 else None


def lora_rank_for(requested: int | None, detected: Sequence[int | None]) -> int:
    """Smallest rank vLLM accepts that covers the request and every adapter (default 16)."""
    needed = max([r for r in (requested, *detected) if r] or [16])
    allowed = [r for r in LORA_RANKS if r >= needed]
    if not allowed:
        raise ServeError(f"LoRA rank {needed} is above vLLM's maximum of {LORA_RANKS[-1]}")
    return allowed[0]


def check_port(port: int, chroma_port: int | None) -> None:
    if not 1 <= port <= 65535:
        raise ServeError(f"port {port} is not a TCP port (1-65535)")
    if chroma_port is not None and port == chroma_port:
        raise PortConflict(f"port {port} is the Chroma server's port; vLLM needs another one (default {DEFAULT_PORT})")


def check_options(opts: ServeOptions) -> None:
    check_port(opts.port, opts.chroma_port)
    if not 0 < opts.gpu_memory_utilization <= 1:
        raise ServeError(f"--gpu-memory-utilization must be in (0, 1], not {opts.gpu_memory_utilization}")
    if opts.tensor_parallel_size < 1:
        raise ServeError(f"--tensor-parallel-size must be at least 1, not {opts.tensor_parallel_size}")
    if opts.quantize not in (None, "mxfp4"):
        raise ServeError(f"unknown quantization {opts.quantize!r}: only 'mxfp4' is supported")
    names = [name for name, _ in opts.lora]
    if len(set(names)) != len(names):
        raise ServeError(f"LoRA adapter names must be unique: {', '.join(names)}")


def local_model_dir(model: str) -> Path | None:
    """The folder when ``model`` is a local path, None for a hub id."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        return path  # meant as a path, but missing (plan reports it); hub ids are "org/name"
    return None


def served_name(opts: ServeOptions) -> str:
    if opts.served_model_name:
        return opts.served_model_name
    local = local_model_dir(opts.model)
    return local.name if local is not None else opts.model


def build_vllm_command(
    opts: ServeOptions, *, model_path: str | None = None, executable: Sequence[str] = ("vllm",)
) -> list[str]:
    """The ``vllm serve`` argv for these options. ``model_path``: what vLLM loads, when it is
    not ``opts.model`` (a converted checkpoint); clients still use :func:`served_name`."""
    check_options(opts)
    command = [*executable, "serve", model_path or opts.model]
    command += ["--served-model-name", served_name(opts)]
    command += ["--host", opts.host, "--port", str(opts.port)]
    command += ["--max-model-len", str(max_model_len_for(opts.context_budget, opts.reply_headroom))]
    command += ["--gpu-memory-utilization", f"{opts.gpu_memory_utilization:g}"]
    command += ["--tensor-parallel-size", str(opts.tensor_parallel_size)]
    if opts.enable_prefix_caching:
        command.append("--enable-prefix-caching")  # every turn re-sends the same growing prefix
    command += VLLM_PARSER_FLAGS
    if opts.seed is not None:
        command += ["--seed", str(opts.seed)]
    if opts.lora or opts.rollout:
        rank = lora_rank_for(opts.max_lora_rank, [read_lora_rank(path) for _, path in opts.lora])
        command.append("--enable-lora")
        if opts.lora:
            command += ["--lora-modules", *(f"{name}={path}" for name, path in opts.lora)]
        loras = len(opts.lora) + (ROLLOUT_LORAS if opts.rollout else 0)
        command += ["--max-lora-rank", str(rank), "--max-loras", str(loras)]
    if opts.rollout:
        command += ["--logprobs-mode", "processed_logprobs"]
    return command + list(opts.extra_args)


