"""The slow, cached preliminaries of serving: download the checkpoint if it is a hub id, convert its
MoE experts to MXFP4 (:mod:`c1.model.quantize`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from c1.model.errors import INSTALL_HINT, ServeError
from c1.model.plan import ServePlan, plan

DOWNLOAD_PATTERNS = ["*.json", "*.safetensors", "*.jinja", "*.txt", "*.model", "tokenizer*"]


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
