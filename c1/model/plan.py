"""Decide everything about serving a model without running anything (``c1 serve --dry-run``): the
``vllm serve`` command, the GPU verdict, the MXFP4 conversion needed, warnings and blocking problems.
Works without a GPU and without vLLM installed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from c1.config import default_cache_dir
from c1.model.errors import INSTALL_HINT, ServeError
from c1.model.gpu import GpuInfo, GpuPlan, detect_gpus, plan_for
from c1.model.settings import (
    MAX_POSITION_EMBEDDINGS,
    ServeOptions,
    check_options,
    build_vllm_command,
    local_model_dir,
    max_model_len_for,
    served_name,
    vllm_env,
)

KNOWN_CHECKPOINTS = {"chromadb/context-1": "bf16", "openai/gpt-oss-20b": "mxfp4", "openai/gpt-oss-120b": "mxfp4"}
"""How hub models are published, to plan before anything is downloaded."""


@dataclass
class ServePlan:
    options: ServeOptions
    model: str
    """As requested (hub id or path)."""
    model_path: str
    """What vLLM loads: the model itself or its MXFP4 conversion."""
    served_model_name: str
    command: list[str]
    gpu: GpuPlan
    host: str
    port: int
    url: str
    """OpenAI-compatible base URL for clients (``.../v1``)."""
    max_model_len: int
    checkpoint: str | None
    """``"mxfp4"``, ``"bf16"``, or None when unknown before download."""
    conversion: dict | None
    """``{"source", "destination", "state"}`` with state ``done`` / ``needed`` / ``download``."""
    vllm: list[str] | None
    """The command that runs vLLM, None when it is not installed."""
    log_path: str
    env: dict[str, str] = field(default_factory=dict)
    """Set for vLLM on top of the inherited environment (:func:`vllm_env`)."""
    warnings: list[str] = field(default_factory=list)
    problems: list[dict] = field(default_factory=list)
    """Why :func:`run` would refuse: ``{"kind", "message"}``, one line each."""

    @property
    def ready(self) -> bool:
        return not self.problems

    @property
    def api_model(self) -> str:
        """The model the search API asks vLLM for: the first LoRA adapter when there is one (the
        model that was trained for c1), else the base model."""
        if self.options.api_model:
            return self.options.api_model
        return self.options.lora[0][0] if self.options.lora else self.served_model_name

    def to_dict(self) -> dict:
        data = asdict(self)
        data.pop("options")
        data["gpu"] = self.gpu.to_dict()
        data["lora"] = dict(self.options.lora)
        data["api_model"] = self.api_model
        data["command_line"] = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in self.env.items()), shlex.join(self.command)])
        data["ready"] = self.ready
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def describe(self) -> list[str]:
        """Plain-language lines for a terminal."""
        lines = [f"model: {self.model}" + (f" (loads {self.model_path})" if self.model_path != self.model else "")]
        if self.conversion and self.conversion["state"] != "done":
            lines.append(f"first: convert the MoE experts to MXFP4 into {self.conversion['destination']}")
        lines.append(f"serves {self.served_model_name!r} at {self.url} (max {self.max_model_len} tokens)")
        if self.options.lora:
            lines.append(f"adapters: {', '.join(name for name, _ in self.options.lora)}")
        lines.append(f"the search API asks for {self.api_model!r}")
        if self.options.rollout:
            lines.append("rollout server for c1 train rl: adapters hot-loaded at run time, "
                         "log-probabilities after temperature (processed_logprobs)")
        lines += [f"gpu: {m}" for m in self.gpu.messages]
        lines += [f"warning: {w}" for w in self.warnings]
        lines += [f"cannot run: {p['message']}" for p in self.problems]
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        lines.append("command: " + (env + " " if env else "") + shlex.join(self.command))
        return lines


def find_vllm(override: Sequence[str] | None = None) -> list[str] | None:
    """The ``vllm`` script of this Python environment (even if its ``bin`` is not on PATH),
    else one on PATH. Does not import vllm (seconds, and CUDA)."""
    if override:
        return list(override)
    beside = Path(sys.executable).parent / "vllm"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("vllm")
    return [found] if found else None


def _cached_hub_snapshot(model: str) -> Path | None:
    """The local snapshot folder of a hub model already in the Hugging Face cache, if any."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    found = try_to_load_from_cache(model, "config.json")
    return Path(found).parent if isinstance(found, str) else None


def _conversion_target(opts: ServeOptions, model: str) -> Path:
    slug = model.strip("/").replace("/", "--").replace(os.sep, "--")
    return Path(opts.cache_dir or default_cache_dir()).expanduser() / "models" / f"{slug}-mxfp4"


def _inspect_checkpoint(opts: ServeOptions, problems: list[dict]) -> tuple[Path | None, str | None]:
    """(local folder or None, "mxfp4"/"bf16"/None) for the requested model."""
    local = local_model_dir(opts.model)
    if local is not None and not local.is_dir():
        problems.append({"kind": "model", "message": f"model folder {local} does not exist"})
        return None, None
    folder = local or _cached_hub_snapshot(opts.model)
    if folder is None:
        return None, KNOWN_CHECKPOINTS.get(opts.model)
    from c1.model.quantize import checkpoint_quantization

    return folder, checkpoint_quantization(folder)


def _plan_conversion(opts: ServeOptions, folder: Path | None, kind: str | None) -> dict | None:
    """Whether (and where) a BF16 checkpoint must be converted before serving."""
    if opts.quantize is None or kind == "mxfp4":
        return None
    destination = _conversion_target(opts, opts.model if local_model_dir(opts.model) is None else str(folder))
    if folder is None:
        if kind is None:
            return None  # unknown hub model: vLLM loads it as published
        return {"source": opts.model, "destination": str(destination), "state": "download"}
    if kind != "bf16":
        return None
    from c1.model.quantize import Checkpoint, cache_key

    marker = destination / ".c1-mxfp4.json"
    done = marker.is_file() and json.loads(marker.read_text()).get("key") == cache_key(Checkpoint.open(folder))
    return {"source": str(folder), "destination": str(destination), "state": "done" if done else "needed"}


def check_window(opts: ServeOptions, config: dict | None) -> None:
    """A budget the served window cannot hold is refused before anything starts: vLLM would run
    with a capped window and every search at that budget would be refused (the API's max budget
    is the window less the reply's room). The window: gpt-oss's longest context, or the
    checkpoint's own ``max_position_embeddings`` when it says less."""
    window = MAX_POSITION_EMBEDDINGS
    own = (config or {}).get("max_position_embeddings")
    if isinstance(own, int) and 0 < own < window:
        window = own
    most = window - opts.reply_headroom
    if opts.context_budget > most:
        whose = "the checkpoint's" if window != MAX_POSITION_EMBEDDINGS else "gpt-oss's"
        raise ServeError(f"--budget {opts.context_budget} does not fit {whose} {window}-token window with "
                         f"{opts.reply_headroom} tokens of reply room: give --budget {max(most, 0)} or less")


def _local_config(folder: Path | None) -> dict | None:
    try:
        return json.loads((folder / "config.json").read_text()) if folder else None
    except (OSError, ValueError):
        return None


def plan(opts: ServeOptions, *, gpus: list[GpuInfo] | None = None) -> ServePlan:
    """Decide everything about serving ``opts`` without starting anything.

    Invalid options (port of the Chroma server, bad values) raise :class:`ServeError` at once;
    what only stops :func:`run` (no vLLM, no GPU, GPU too old or too small) is listed in
    ``problems``. ``gpus``: as from :func:`c1.model.gpu.detect_gpus` (the default)."""
    check_options(opts)
    problems: list[dict] = []
    warnings: list[str] = []
    folder, kind = _inspect_checkpoint(opts, problems)
    check_window(opts, _local_config(folder))
    conversion = _plan_conversion(opts, folder, kind)
    if conversion:
        model_path = conversion["destination"]
    else:
        model_path = str(folder) if folder is not None and local_model_dir(opts.model) else opts.model
    mxfp4 = kind == "mxfp4" or conversion is not None or (kind is None and opts.quantize == "mxfp4")
    warnings += _checkpoint_warnings(opts, kind, conversion)

    vllm = find_vllm(opts.vllm)
    if vllm is None:
        problems.append(
            {"kind": "vllm", "message": f"vLLM is not installed: {INSTALL_HINT} (needs Linux and an NVIDIA GPU)"}
        )
    max_len = max_model_len_for(opts.context_budget, opts.reply_headroom)
    gpu = plan_for(
        detect_gpus() if gpus is None else gpus,
        tensor_parallel_size=opts.tensor_parallel_size,
        gpu_memory_utilization=opts.gpu_memory_utilization,
        max_model_len=max_len,
        mxfp4=mxfp4,
        lora=bool(opts.lora),
        model_config=_local_config(folder),
    )
    if gpu.problem:
        problems.append({"kind": gpu.problem_kind, "message": gpu.problem})
    warnings += _lora_warnings(opts)
    command = build_vllm_command(opts, model_path=model_path, executable=vllm or ["vllm"])
    url_host = "127.0.0.1" if opts.host in ("0.0.0.0", "::", "") else opts.host
    logs = Path(opts.cache_dir or default_cache_dir()).expanduser() / "logs" / f"vllm-{opts.port}.log"
    return ServePlan(
        opts, opts.model, model_path, served_name(opts), command, gpu, opts.host, opts.port,
        f"http://{url_host}:{opts.port}/v1", max_len, kind, conversion, vllm, str(logs), vllm_env(opts), warnings,
        problems,
    )  # fmt: skip


def _checkpoint_warnings(opts: ServeOptions, kind: str | None, conversion: dict | None) -> list[str]:
    if conversion and conversion["state"] == "download":
        return [f"{opts.model} is published in BF16: it will be downloaded (~42 GB) and its experts converted to MXFP4"]
    if conversion and conversion["state"] == "needed":
        return [f"the MoE experts will be converted to MXFP4 first (minutes; cached in {conversion['destination']})"]
    if kind == "bf16" and opts.quantize is None:
        return ["serving the BF16 checkpoint unquantized (~42 GB of weights); --quantize mxfp4 needs ~13 GB"]
    if kind is None and local_model_dir(opts.model) is None and opts.model not in KNOWN_CHECKPOINTS:
        return [f"cannot tell how {opts.model} is quantized before it is downloaded; vLLM loads it as published"]
    return []


def _lora_warnings(opts: ServeOptions) -> list[str]:
    missing = [path for _, path in opts.lora if not Path(path).expanduser().exists()]
    return [f"LoRA adapter path {p} does not exist here" for p in missing]
