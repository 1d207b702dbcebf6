"""Loading the model to train, and its LoRA adapter (torch, transformers and peft imported here only).

- ``load_model(path)``: a local folder (no model hub is reached: ``local_files_only``). A gpt-oss
  checkpoint stored in MXFP4 is dequantised to BF16 on load (``Mxfp4Config(dequantize=True)``):
  LoRA trains on BF16 weights; the MXFP4 kernels are inference-only.
- ``add_lora(model, LoraSpec)``: rank, alpha, dropout and target modules; for gpt-oss the default
  targets are the attention projections (q/k/v/o), which vLLM can serve as a LoRA; expert
  weights can be added with ``target_parameters`` (PEFT ≥ 0.17) at the price of a bigger adapter.
- ``load_adapter(model, path)``: continue from a saved adapter (SFT → RL, or resume).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class LoraSpec:
    rank: int = 16
    alpha: int = 32
    dropout: float = 0.0
    targets: tuple[str, ...] = DEFAULT_TARGETS
    target_parameters: tuple[str, ...] = field(default_factory=tuple)
    """Parameter names for MoE expert LoRA (e.g. ``mlp.experts.gate_up_proj``), PEFT ≥ 0.17."""


def device_and_dtype(device: str | None = None):
    import torch

    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if dev.startswith("cuda") else torch.float32
    return dev, dtype


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def default_attention(model_type: str | None, device: str) -> str | None:
    """gpt-oss has attention sinks, which SDPA does not support: on a GPU, the FlashAttention-3
    kernel with sinks when the ``kernels`` package is installed (and its kernel cached), else
    PyTorch's flex attention; on the CPU, eager. Other models: transformers' own default."""
    if model_type != "gpt_oss":
        return None
    if not device.startswith("cuda"):
        return "eager"
    import importlib.util

    if importlib.util.find_spec("kernels") is not None:
        return "kernels-community/vllm-flash-attn3"
    return "flex_attention"


def load_kwargs(path: str | Path, device: str | None = None, attn_implementation: str | None = None) -> dict:
    """The ``from_pretrained`` arguments for the model in ``path`` on ``device`` (cuda if there is one).

    A device map puts the weights straight on the device, shard by shard, instead of building the
    model in host memory and moving it (≈42 GB of host memory for gpt-oss-20b in BF16). BF16 on a
    GPU; a gpt-oss checkpoint stored in MXFP4 is dequantised (LoRA trains on BF16 weights)."""
    import json

    dev, dtype = device_and_dtype(device)
    kwargs: dict = {"dtype": dtype, "local_files_only": True, "device_map": dev}
    cfg_file = Path(path) / "config.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.exists() else {}
    quant = (cfg.get("quantization_config") or {}).get("quant_method")
    if quant == "mxfp4":
        from transformers import Mxfp4Config

        kwargs["quantization_config"] = Mxfp4Config(dequantize=True)
    attn = attn_implementation or default_attention(cfg.get("model_type"), dev)
    if attn:
        kwargs["attn_implementation"] = attn
    return kwargs


def load_model(path: str | Path, device: str | None = None, gradient_checkpointing: bool = False,
               attn_implementation: str | None = None):
    """The base causal LM from a local folder (:func:`load_kwargs`)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path), **load_kwargs(path, device, attn_implementation))
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model.config.use_cache = not gradient_checkpointing
    return model


def lora_config(spec: LoraSpec):
    from peft import LoraConfig

    kwargs = dict(r=spec.rank, lora_alpha=spec.alpha, lora_dropout=spec.dropout, target_modules=list(spec.targets),
                  task_type="CAUSAL_LM", bias="none")
    if spec.target_parameters:
        kwargs["target_parameters"] = list(spec.target_parameters)
    return LoraConfig(**kwargs)


def add_lora(model, spec: LoraSpec = LoraSpec()):
    from peft import get_peft_model

    return get_peft_model(model, lora_config(spec))


def load_adapter(model, path: str | Path, trainable: bool = True):
    """Wrap ``model`` with the adapter saved at ``path``."""
    from peft import PeftModel

    return PeftModel.from_pretrained(model, str(path), is_trainable=trainable, local_files_only=True)


def lora_state(model) -> dict:
    """The adapter's weights (name → CPU tensor copy), e.g. to compare before/after a step."""
    return {k: v.detach().cpu().clone() for k, v in model.named_parameters() if "lora_" in k}


def model_type(model) -> str | None:
    cfg = getattr(model, "config", None)
    return getattr(cfg, "model_type", None)
