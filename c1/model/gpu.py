"""Which GPUs are there, and what will vLLM do with gpt-oss on them.

Everything here is advice computed before vLLM starts (vLLM takes minutes to fail), so the
user hears in one sentence that a T4 cannot run MXFP4 or that 16 GB is too little. The facts
encoded (vLLM 0.1x-0.3x, ``vllm/model_executor/layers/quantization/mxfp4.py``):

- ``Mxfp4Config.get_min_capability()`` is 80: MXFP4 needs compute capability 8.0 or newer;
- MoE kernel choice: SM 9.x (Hopper) -> OpenAI Triton kernels; SM 10.x / 12.x (Blackwell) ->
  FlashInfer (TRT-LLM / CUTLASS); SM 8.x (Ampere, Ada) -> Marlin (weights stay MXFP4 in memory,
  dequantized to BF16 inside the kernel); with LoRA enabled vLLM always uses Marlin;
- gpt-oss-20b: ~13 GB of weights with MXFP4 experts, ~42 GB all BF16.

The parse step is separate from the subprocess call so it is testable with canned output.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

GIB = 1 << 30
MIN_COMPUTE_CAPABILITY = (8, 0)
NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=name,compute_cap,memory.total,driver_version",
    "--format=csv,noheader",
]

GPT_OSS_20B = {
    "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
    "num_local_experts": 32, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "vocab_size": 201088, "tie_word_embeddings": False,
}  # fmt: skip
"""openai/gpt-oss-20b's config.json (the shapes that matter); Context-1 shares it."""

RUNTIME_OVERHEAD_BYTES = 2 * GIB
"""CUDA context, activations and CUDA graphs: a rough, deliberately generous allowance."""


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    compute_capability: tuple[int, int] | None
    memory_mib: int | None
    driver: str | None

    @property
    def memory_bytes(self) -> int:
        return (self.memory_mib or 0) << 20

    @property
    def sm(self) -> str:
        """``"9.0"``, or ``"?"`` when nvidia-smi did not say."""
        cc = self.compute_capability
        return f"{cc[0]}.{cc[1]}" if cc else "?"


def _field(value: str) -> str | None:
    value = value.strip()
    return None if not value or value.startswith("[") or value.upper() == "N/A" else value


def _parse_capability(value: str | None) -> tuple[int, int] | None:
    try:
        major, minor = (value or "").split(".")
        return int(major), int(minor)
    except ValueError:
        return None


def _parse_mib(value: str | None) -> int | None:
    try:
        return int(float((value or "").split()[0]))
    except (ValueError, IndexError):
        return None


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """Parse ``nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version
    --format=csv,noheader`` output (one GPU a line, ``MiB`` unit optional). Lines that are not
    four comma-separated fields (warnings, errors) are ignored. Names have no commas."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or not parts[0]:
            continue
        name, cap, memory, driver = parts
        gpus.append(
            GpuInfo(len(gpus), name, _parse_capability(_field(cap)), _parse_mib(_field(memory)), _field(driver))
        )
    return gpus


def visible(gpus: list[GpuInfo], cuda_visible_devices: str | None) -> list[GpuInfo]:
    """Apply ``CUDA_VISIBLE_DEVICES`` when it is a list of indices (UUIDs: left as is)."""
    if cuda_visible_devices is None:
        return gpus
    wanted = [p.strip() for p in cuda_visible_devices.split(",") if p.strip()]
    if not all(p.lstrip("-").isdigit() for p in wanted):
        return gpus
    by_index = {gpu.index: gpu for gpu in gpus}
    chosen = []
    for p in wanted:
        if int(p) < 0 or int(p) not in by_index:
            break  # CUDA stops at the first invalid entry
        chosen.append(by_index[int(p)])
    return chosen


def detect_gpus(
    *, run: Callable[..., subprocess.CompletedProcess] = subprocess.run, timeout_s: float = 15.0
) -> list[GpuInfo]:
    """The GPUs this process may use. No nvidia-smi, a failing one or a hung one: ``[]``."""
    try:
        done = run(NVIDIA_SMI_QUERY, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    return visible(parse_nvidia_smi(done.stdout), os.environ.get("CUDA_VISIBLE_DEVICES"))


# --------------------------------------------------------------------------- sizes


def estimate_weight_bytes(config: dict | None = None, *, mxfp4: bool = True) -> int:
    """Bytes of a gpt-oss model's weights on the GPU. MXFP4 experts take 4.25 bits a value
    (4-bit codes + one 8-bit scale per 32); everything else is BF16."""
    c = {**GPT_OSS_20B, **(config or {})}
    hidden, inter, layers, experts = (
        c["hidden_size"],
        c["intermediate_size"],
        c["num_hidden_layers"],
        c["num_local_experts"],
    )
    head_dim = c.get("head_dim") or hidden // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    expert_values = layers * experts * 3 * hidden * inter
    other_values = (
        layers * (2 * hidden * q + 2 * hidden * kv + q + 2 * kv + hidden)  # attention + biases
        + layers * (experts * hidden + experts + experts * (2 * inter + hidden))  # router, expert biases
        + layers * (2 * hidden + c["num_attention_heads"])
        + hidden  # norms, sinks
        + c["vocab_size"] * hidden * (1 if c.get("tie_word_embeddings") else 2)
    )
    expert_bytes = expert_values * 17 // 32 if mxfp4 else expert_values * 2
    return expert_bytes + other_values * 2


def kv_bytes_per_token(config: dict | None = None) -> int:
    """BF16 K and V for every layer. An upper bound: gpt-oss's sliding-window layers keep only
    128 tokens, which vLLM's hybrid KV cache exploits."""
    c = {**GPT_OSS_20B, **(config or {})}
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * head_dim * 2


# --------------------------------------------------------------------------- plan


@dataclass
class GpuPlan:
    gpus: list[GpuInfo]
    """The GPUs vLLM will use (the first ``tensor_parallel_size`` visible ones)."""
    mxfp4: bool
    """The checkpoint has MXFP4 experts."""
    mxfp4_supported: bool
    moe_kernel: str | None
    """``"triton"``, ``"flashinfer"``, ``"marlin"``; None without MXFP4 or without a usable GPU."""
    weights_gib: float
    kv_gib_per_sequence: float
    usable_gib: float
    fits: bool
    problem: str | None = None
    """Why vLLM cannot run here (one line), or None."""
    problem_kind: str | None = None
    """``"no_gpu"``, ``"compute_capability"``, ``"tensor_parallel"``, ``"memory"``."""
    messages: list[str] = field(default_factory=list)
    """Plain-language notes on what will happen."""

    def to_dict(self) -> dict:
        data = asdict(self)
        data["gpus"] = [{**asdict(g), "compute_capability": g.sm} for g in self.gpus]
        return data


def moe_kernel_for(capability: tuple[int, int], *, lora: bool = False) -> str:
    """The MXFP4 MoE kernel family vLLM picks on this compute capability."""
    if lora:
        return "marlin"
    major = capability[0]
    if major == 9:
        return "triton"
    if major >= 10:
        return "flashinfer"
    return "marlin"


KERNEL_WORDS = {
    "triton": "OpenAI's Triton MXFP4 kernels (Hopper)",
    "flashinfer": "FlashInfer's native FP4 kernels (Blackwell)",
    "marlin": "Marlin kernels (MXFP4 weights, dequantized to BF16 on the fly)",
}


def _no_gpu_plan(mxfp4: bool, weights: int, kv: int) -> GpuPlan:
    return GpuPlan([], mxfp4, False, None, round(weights / GIB, 2), round(kv / GIB, 2), 0.0, False,
                   "no NVIDIA GPU found (nvidia-smi is missing or lists none): vLLM needs one",
                   "no_gpu")  # fmt: skip


def plan_for(
    gpus: list[GpuInfo],
    *,
    tensor_parallel_size: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int = 40960,
    mxfp4: bool = True,
    lora: bool = False,
    model_config: dict | None = None,
) -> GpuPlan:
    """What vLLM will do with a gpt-oss model (default: gpt-oss-20b's shapes) on ``gpus``."""
    weights = estimate_weight_bytes(model_config, mxfp4=mxfp4)
    kv = kv_bytes_per_token(model_config) * max_model_len
    if not gpus:
        return _no_gpu_plan(mxfp4, weights, kv)
    used = gpus[:tensor_parallel_size]
    usable = sum(int(g.memory_bytes * gpu_memory_utilization) for g in used)
    free_for_kv = usable - weights - RUNTIME_OVERHEAD_BYTES * len(used)
    plan = GpuPlan(
        used, mxfp4, False, None, round(weights / GIB, 2), round(kv / GIB, 2), round(usable / GIB, 2), free_for_kv >= kv
    )
    names = " + ".join(f"{g.name} (SM {g.sm}, {(g.memory_mib or 0) / 1024:.0f} GiB)" for g in used)

    if len(gpus) < tensor_parallel_size:
        plan.problem_kind = "tensor_parallel"
        plan.problem = (
            f"--tensor-parallel-size {tensor_parallel_size} needs {tensor_parallel_size} GPUs; found {len(gpus)}"
        )
        return plan
    capabilities = [g.compute_capability for g in used]
    if None in capabilities:
        plan.messages.append(
            "nvidia-smi did not report a compute capability (driver older than 510?); assuming it is supported"
        )
    known = [c for c in capabilities if c is not None]
    lowest = min(known) if known else MIN_COMPUTE_CAPABILITY
    if lowest < MIN_COMPUTE_CAPABILITY:
        weak = next(g for g in used if g.compute_capability == lowest)
        plan.problem_kind = "compute_capability"
        plan.problem = (
            f"{weak.name} has compute capability {weak.sm}; vLLM serves gpt-oss (MXFP4, BF16 "
            "activations) only on 8.0 or newer (A100, L4, RTX 30xx/40xx, H100/H200, B200...)"
        )
        return plan
    plan.mxfp4_supported = True
    if mxfp4:
        plan.moe_kernel = moe_kernel_for(lowest, lora=lora)
        why = " (vLLM uses Marlin whenever LoRA adapters are enabled)" if lora else ""
        plan.messages.append(f"MoE experts run as MXFP4 with {KERNEL_WORDS[plan.moe_kernel]}{why}")
    else:
        plan.messages.append("the checkpoint is BF16: vLLM loads it unquantized (MXFP4 needs a converted checkpoint)")
    return _memory_verdict(plan, names, free_for_kv, kv, max_model_len)


def _memory_verdict(plan: GpuPlan, names: str, free_for_kv: int, kv: int, max_model_len: int) -> GpuPlan:
    """Weights that cannot fit stop us. Anything tighter is a warning: the runtime allowance is
    a guess and the KV estimate an upper bound; vLLM itself says how many tokens fit."""
    weights_gib, usable_gib = plan.weights_gib, plan.usable_gib
    if weights_gib >= usable_gib:
        plan.problem_kind = "memory"
        plan.problem = (
            f"not enough GPU memory: the weights alone need about {weights_gib:.1f} GiB and "
            f"{usable_gib:.1f} GiB is usable on {names}"
        )
        return plan
    if not plan.fits:
        plan.messages.append(
            f"memory is tight: about {max(free_for_kv, 0) / GIB:.1f} GiB left for the KV cache after "
            f"~{weights_gib:.1f} GiB of weights, less than one {max_model_len}-token context "
            f"({kv / GIB:.1f} GiB); vLLM may refuse to start: lower the context budget or raise "
            "--gpu-memory-utilization"
        )
        return plan
    plan.messages.append(
        f"weights ~{weights_gib:.1f} GiB of {usable_gib:.1f} GiB usable; room for about "
        f"{free_for_kv // kv if kv else 0} full {max_model_len}-token contexts in the KV cache"
    )
    return plan
