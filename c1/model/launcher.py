"""``c1 serve``: plan, prepare and run a vLLM server for Context-1 (gpt-oss-20b + MXFP4 experts).

Three steps, each usable alone:

- :func:`plan` decides everything without running anything: the ``vllm serve`` command, the
  GPU verdict, the MXFP4 conversion needed, warnings and blocking problems. It works without a
  GPU and without vLLM installed (``c1 serve --dry-run``).
- :func:`prepare` performs the slow, cached preliminaries: download the checkpoint if it is a
  hub id, convert its MoE experts to MXFP4 (:mod:`c1.model.quantize`).
- :func:`run` starts vLLM in its own process group, waits until ``/health`` answers and
  ``/v1/models`` lists the model, then serves until vLLM exits or the user stops it (Ctrl-C,
  SIGTERM, SIGHUP); stopping sends SIGINT to the whole group (vLLM's clean shutdown frees the
  GPU), then SIGTERM, then SIGKILL, and leaves no orphan (vLLM's engine-core workers included).

Only the standard library is imported at module level: ``import c1.model.launcher`` is cheap.
"""

from __future__ import annotations

import collections
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from c1.errors import C1Error
from c1.model.gpu import GpuInfo, GpuPlan, detect_gpus, plan_for

DEFAULT_MODEL = "chromadb/context-1"
DEFAULT_PORT = 8001
"""Not 8000: ``chroma run`` and vLLM both default to 8000."""
CHROMA_DEFAULT_PORT = 8000
DEFAULT_CONTEXT_BUDGET = 32768
REPLY_HEADROOM = 8192
"""Tokens on top of the agent's context budget: the reply, the system prompt, tool schemas."""
MAX_POSITION_EMBEDDINGS = 131072
"""gpt-oss's longest context (YaRN-extended)."""
LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""vLLM's ``--max-lora-rank`` accepts only these (``MaxLoRARanks`` in vllm/config/lora.py)."""
KNOWN_CHECKPOINTS = {"chromadb/context-1": "bf16", "openai/gpt-oss-20b": "mxfp4", "openai/gpt-oss-120b": "mxfp4"}
"""How hub models are published, to plan before anything is downloaded."""
INSTALL_HINT = "pip install 'c1[gpu]'"
VLLM_PARSER_FLAGS = (
    "--tool-call-parser", "openai", "--enable-auto-tool-choice", "--reasoning-parser", "openai_gptoss",
)  # fmt: skip
"""gpt-oss speaks harmony: tool calls and reasoning are parsed out of its channels."""
DOWNLOAD_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.txt", "*.model", "tokenizer*"]


# --------------------------------------------------------------------------- errors


class ServeError(C1Error, RuntimeError):
    """A failure to show the user as it is: ``str(exc)`` is one line saying what to do."""


class VllmNotInstalled(ServeError):
    pass


class NoGpu(ServeError):
    pass


class GpuUnsupported(ServeError):
    """Compute capability too low, too little memory, or fewer GPUs than tensor parallelism."""


class PortConflict(ServeError):
    pass


class ServerNotReady(ServeError):
    """vLLM kept running but did not become ready in time."""


class ServerDied(ServeError):
    """vLLM exited. ``str(exc)`` ends with the tail of its log; ``log_tail`` holds it alone."""

    def __init__(self, summary: str, log_tail: str = "", log_path: str | None = None, returncode: int | None = None):
        where = f" (full log: {log_path})" if log_path else ""
        text = f"{summary}{where}"
        if log_tail:
            text += "\n--- last lines of the vLLM log ---\n" + log_tail
        super().__init__(text)
        self.summary, self.log_tail, self.log_path, self.returncode = summary, log_tail, log_path, returncode


PROBLEM_ERRORS: dict[str, type[ServeError]] = {
    "vllm": VllmNotInstalled,
    "no_gpu": NoGpu,
    "compute_capability": GpuUnsupported,
    "memory": GpuUnsupported,
    "tensor_parallel": GpuUnsupported,
}


# --------------------------------------------------------------------------- options


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
    """Converted checkpoints and logs; default ``~/.cache/c1``."""
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


def _check_options(opts: ServeOptions) -> None:
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
    _check_options(opts)
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


# --------------------------------------------------------------------------- plan


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


def default_cache_dir() -> Path:
    return Path(os.environ.get("C1_CACHE_DIR") or "~/.cache/c1").expanduser()


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
    _check_options(opts)
    problems: list[dict] = []
    warnings: list[str] = []
    folder, kind = _inspect_checkpoint(opts, problems)
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
    if opts.context_budget + opts.reply_headroom > MAX_POSITION_EMBEDDINGS:
        warnings.append(f"context budget + reply headroom exceeds the model's {MAX_POSITION_EMBEDDINGS} tokens; capped")
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


# --------------------------------------------------------------------------- prepare


def prepare(plan_: ServePlan, *, progress=None, download: bool = True) -> ServePlan:
    """Download (hub id) and convert (BF16 -> MXFP4) what the plan needs; cached, so a second
    call returns at once. Returns the plan to :func:`run`. ``progress``: as for
    :func:`c1.model.quantize.quantize_checkpoint`."""
    conversion = plan_.conversion
    if not conversion or conversion["state"] == "done":
        return plan_
    from c1.model.quantize import checkpoint_quantization, quantize_checkpoint

    source = Path(conversion["source"]) if conversion["state"] == "needed" else _download(plan_.model, download)
    if checkpoint_quantization(source) == "mxfp4":
        opts = replace(plan_.options, model=str(source), served_model_name=plan_.served_model_name)
        return plan(opts, gpus=plan_.gpu.gpus or None)
    summary = quantize_checkpoint(source, Path(conversion["destination"]), progress=progress)
    done = {**conversion, "source": str(source), "state": "done", "summary": summary}
    return replace(plan_, conversion=done, checkpoint="bf16")


def _download(model: str, allowed: bool) -> Path:
    if not allowed:
        raise ServeError(f"{model} is not in the local Hugging Face cache; download it or pass a local folder")
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise ServeError(f"huggingface_hub is needed to download {model}: {INSTALL_HINT}") from exc
    return Path(snapshot_download(model, allow_patterns=DOWNLOAD_PATTERNS))


# --------------------------------------------------------------------------- run


@dataclass(frozen=True)
class Status:
    """What :func:`run` is doing, for a live view. ``state``: ``starting``, ``waiting``,
    ``ready``, ``stopping``, ``stopped``."""

    state: str
    message: str
    elapsed_s: float


def ensure_runnable(plan_: ServePlan) -> None:
    """Raise the error for the first thing that stops this plan from running."""
    if plan_.conversion and plan_.conversion["state"] != "done":
        raise ServeError("the checkpoint must be converted first: call prepare(plan) (c1 serve --quantize mxfp4)")
    for problem in plan_.problems:
        raise PROBLEM_ERRORS.get(problem["kind"], ServeError)(problem["message"])


def ensure_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortConflict(
                f"port {port} on {host} is already in use ({exc.strerror}); choose another with --port"
            ) from exc


class _Terminated(BaseException):
    """SIGTERM/SIGHUP arrived: unwind like KeyboardInterrupt, then stop vLLM."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _signals_raise():
    """Turn SIGTERM and SIGHUP into :class:`_Terminated` (main thread only: Python delivers
    signals there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise _Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class ServerProcess:
    """vLLM as a child in its own session and process group, its output pumped by a thread
    into a log file, the last lines kept for error messages."""

    def __init__(self, command: Sequence[str], log_path: str | Path, on_log: Callable[[str], None] | None = None,
                 env: dict[str, str] | None = None):
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._tail: collections.deque[str] = collections.deque(maxlen=40)
        self._on_log = on_log
        self.proc = subprocess.Popen(
            list(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, env={**os.environ, **env} if env else None,
        )  # fmt: skip
        self._pump = threading.Thread(target=self._read_output, name="vllm-log", daemon=True)
        self._pump.start()

    def _read_output(self) -> None:
        assert self.proc.stdout is not None
        with open(self.log_path, "ab") as log:
            for raw in self.proc.stdout:
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip()
                self._tail.append(line)
                if self._on_log:
                    self._on_log(line)

    def tail(self, lines: int = 20) -> str:
        self._pump.join(timeout=1.0)  # after an exit, let the last lines arrive
        return "\n".join(list(self._tail)[-lines:])

    def died(self, summary: str) -> ServerDied:
        return ServerDied(summary, self.tail(), str(self.log_path), self.proc.returncode)

    def stop(self, grace_s: float = 15.0) -> None:
        stop_process_group(self.proc, grace_s=grace_s)


def _group_alive(pgid: int) -> bool:
    """Does any live (non-zombie) process remain in the group?"""
    proc_dir = Path("/proc")
    if proc_dir.is_dir():
        for entry in proc_dir.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
            if fields[0] != "Z" and int(fields[2]) == pgid:
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait_group(proc: subprocess.Popen, pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        proc.poll()  # reap the leader as soon as it exits
        if proc.returncode is not None and not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def stop_process_group(proc: subprocess.Popen, *, grace_s: float = 15.0) -> None:
    """Stop the child's whole process group: SIGINT (vLLM shuts down cleanly and frees the
    GPU), after ``grace_s`` SIGTERM, then SIGKILL. A Ctrl-C while waiting skips to SIGKILL."""
    pgid = proc.pid  # start_new_session: the child leads its own group
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, max(grace_s / 3, 1.0)), (signal.SIGKILL, 10.0)):
        try:
            if _wait_group(proc, pgid, 0):
                return
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        try:
            if _wait_group(proc, pgid, wait_s):
                return
        except KeyboardInterrupt:
            continue


def _http_get(url: str, timeout_s: float = 2.0) -> tuple[int, bytes] | None:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except (OSError, ValueError):
        return None


def _lists_model(body: bytes, name: str) -> bool:
    try:
        return any(m.get("id") == name for m in json.loads(body).get("data", []))
    except (ValueError, AttributeError):
        return False


def wait_until_ready(
    server: ServerProcess,
    plan_: ServePlan,
    *,
    timeout_s: float,
    on_status: Callable[[Status], None],
    poll_s: float = 0.5,
    started: float | None = None,
) -> None:
    """Poll ``/health`` then ``/v1/models`` until the model is listed, watching the child."""
    started = time.monotonic() if started is None else started
    base = plan_.url.removesuffix("/v1")
    healthy, next_note = False, started + 15.0
    while True:
        if server.proc.poll() is not None:
            raise server.died(f"vLLM exited with code {server.proc.returncode} before it was ready")
        if not healthy:
            answer = _http_get(f"{base}/health")
            healthy = answer is not None and answer[0] == 200
            if healthy:
                on_status(
                    Status("waiting", "vLLM is up; waiting for the model to be listed", time.monotonic() - started)
                )
        if healthy:
            answer = _http_get(f"{base}/v1/models")
            if answer and answer[0] == 200 and _lists_model(answer[1], plan_.served_model_name):
                return
        now = time.monotonic()
        if now - started > timeout_s:
            raise ServerNotReady(f"vLLM was not ready after {timeout_s:.0f} s (log: {server.log_path})")
        if now >= next_note:
            on_status(Status("waiting", f"loading {plan_.model} ({now - started:.0f} s)", now - started))
            next_note = now + 15.0
        time.sleep(poll_s)


def run(
    plan_: ServePlan,
    *,
    timeout_s: float = 1800.0,
    on_status: Callable[[Status], None] | None = None,
    on_log: Callable[[str], None] | None = None,
    grace_s: float = 15.0,
    poll_s: float = 0.5,
) -> int:
    """Start vLLM, wait until it serves the model, then serve until it exits or we are told
    to stop. Returns the exit status for the CLI: vLLM's own on a clean exit, 130 after
    Ctrl-C, 128+signal after SIGTERM/SIGHUP. Raises :class:`ServeError` subclasses for
    everything else, :class:`ServerDied` (with the log tail) when vLLM exits on its own.

    ``on_status`` is called in this thread; ``on_log`` (each line vLLM prints, also written
    to ``plan.log_path``) in the thread that reads vLLM's output."""
    ensure_runnable(plan_)
    ensure_port_free(plan_.host, plan_.port)
    notify = on_status or (lambda status: None)
    started = time.monotonic()

    def status(state: str, message: str) -> None:
        notify(Status(state, message, time.monotonic() - started))

    with _signals_raise():
        try:
            server = ServerProcess(plan_.command, plan_.log_path, on_log, plan_.env)
        except FileNotFoundError as exc:
            raise VllmNotInstalled(f"cannot run {plan_.command[0]}: {INSTALL_HINT}") from exc
        status("starting", f"starting vLLM (pid {server.proc.pid}): {shlex.join(plan_.command)}")
        try:
            wait_until_ready(server, plan_, timeout_s=timeout_s, on_status=notify, poll_s=poll_s, started=started)
            status("ready", f"ready: {plan_.url} serves {plan_.served_model_name}")
            code = server.proc.wait()
            if code != 0:
                raise server.died(f"vLLM exited with code {code}")
            return code
        except KeyboardInterrupt:
            status("stopping", "interrupted: stopping vLLM")
            return 130
        except _Terminated as exc:
            status("stopping", f"received {signal.Signals(exc.signum).name}: stopping vLLM")
            return 128 + exc.signum
        finally:
            server.stop(grace_s)
            status("stopped", f"vLLM stopped (log: {server.log_path})")
