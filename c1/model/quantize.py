"""Convert a BF16 gpt-oss-family checkpoint (e.g. ``chromadb/context-1``) to the MXFP4 layout
that vLLM (and HF transformers) load natively, without torch.

Only the MoE expert matrices are quantized, exactly like ``openai/gpt-oss-20b``:

====================================================  ===========================================
BF16 checkpoint (HF ``GptOssExperts``)                MXFP4 checkpoint
====================================================  ===========================================
``model.layers.{i}.mlp.experts.gate_up_proj``         ``..._blocks`` uint8 [E, 2I, H/32, 16]
  BF16 [E, H, 2I]  (in = hidden, out = 2*inter)       ``..._scales`` uint8 [E, 2I, H/32]
``model.layers.{i}.mlp.experts.down_proj``            ``..._blocks`` uint8 [E, H, I/32, 16]
  BF16 [E, I, H]   (in = inter, out = hidden)         ``..._scales`` uint8 [E, H, I/32]
====================================================  ===========================================

The BF16 tensors are stored [E, in, out] (the forward pass does ``x @ W``) while MXFP4 blocks
run along the input dimension of [E, out, in] rows, so each expert matrix is transposed before
quantizing: ``blocks, scales = mxfp4.quantize(W.transpose(0, 2, 1))``. This is the exact inverse
of HF transformers' ``convert_moe_packed_tensors`` (dequantize to [E, out, in], then
``.transpose(1, 2)``) and matches vLLM's gpt-oss loader, whose BF16 path applies
``permute(0, 2, 1)`` to the same tensors to get the [E, out, in] layout its MXFP4 path reads
directly from ``*_blocks``. The gate/up rows stay interleaved (gate = even rows, up = odd rows)
as in both formats; nothing is reordered.

Everything else (attention, router, embeddings, lm_head, norms, sinks, expert biases) is copied
byte for byte, and ``config.json`` gets openai/gpt-oss-20b's ``quantization_config``.

The safetensors format is read and written here directly (8-byte little-endian header length,
JSON header of ``{name: {dtype, shape, data_offsets}}`` plus optional ``__metadata__``, then the
raw little-endian bytes), with memory maps: a 40 GB checkpoint streams tensor by tensor, one
expert at a time, and never sits in memory.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
import shutil
import struct
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from c1.model import mxfp4

CONVERTER_VERSION = 1
"""Bump when the output of the conversion changes: it is part of the cache key."""

QUANTIZATION_CONFIG = {
    "modules_to_not_convert": [
        "model.layers.*.self_attn",
        "model.layers.*.mlp.router",
        "model.embed_tokens",
        "lm_head",
    ],
    "quant_method": "mxfp4",
}
"""openai/gpt-oss-20b's ``config.json`` entry, verbatim."""

EXPERT_WEIGHT = re.compile(r"^(?P<prefix>.*\.mlp\.experts)\.(?P<proj>gate_up_proj|down_proj)$")
"""Expert matrices to quantize. ``*_bias`` does not match: biases stay BF16."""

INDEX_FILE = "model.safetensors.index.json"
MARKER_FILE = ".c1-mxfp4.json"
"""Written in the destination: cache key and summary of the conversion."""
SKIPPED_SUFFIXES = (".bin", ".pt", ".pth", ".msgpack", ".h5", ".gguf")
"""Other weight formats next to the safetensors: vLLM does not need them, and they are large."""

NUMPY_DTYPES = {
    "BF16": "<u2", "F16": "<f2", "F32": "<f4", "F64": "<f8", "BOOL": "?", "U8": "u1", "I8": "i1",
    "U16": "<u2", "I16": "<i2", "U32": "<u4", "I32": "<i4", "U64": "<u8", "I64": "<i8",
}  # fmt: skip
"""How to hold each safetensors dtype in numpy; BF16 as its raw uint16 bit patterns."""
QUANTIZABLE = ("BF16", "F16", "F32")

Progress = Callable[[int, int, str], None]
"""``progress(done_bytes, total_bytes, tensor_name)``, called after each source tensor."""

COPY_CHUNK = 64 << 20
ROWS_ELEMENTS = 1 << 23
"""Quantize an expert in row slices of about this many elements (bounds the temporaries)."""


# --------------------------------------------------------------------------- safetensors I/O


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    """Offset of the first byte in the file (header included)."""
    nbytes: int


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, str]]:
    """Tensors of a safetensors file, in file order, and its ``__metadata__``."""
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) != 8:
            raise ValueError(f"{path} is not a safetensors file (too short)")
        (length,) = struct.unpack("<Q", prefix)
        header = json.loads(f.read(length))
    metadata = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, entry in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
        begin, end = entry["data_offsets"]
        tensors[name] = TensorInfo(name, entry["dtype"], tuple(entry["shape"]), 8 + length + begin, end - begin)
    return tensors, metadata


def _header_bytes(entries: list[tuple[str, str, tuple[int, ...], int]], metadata: dict[str, str]) -> bytes:
    """JSON header for tensors laid out back to back in ``entries`` order, padded with spaces
    to a multiple of 8 bytes as the reference implementation does (aligned data start)."""
    header: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name, dtype, shape, nbytes in entries:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    return raw + b" " * (-len(raw) % 8)


def write_safetensors(
    path: Path, tensors: dict[str, tuple[str, np.ndarray]], metadata: dict[str, str] | None = None
) -> None:
    """Write ``{name: (dtype, array)}`` (arrays already holding that dtype's little-endian bits,
    e.g. uint16 for BF16). Small files only: used for tests and tiny checkpoints."""
    entries = [(name, dtype, tuple(array.shape), array.nbytes) for name, (dtype, array) in tensors.items()]
    header = _header_bytes(entries, metadata or {})
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.writelines(np.ascontiguousarray(array).tobytes() for _, array in tensors.values())


def read_tensor(path: Path, name: str) -> tuple[str, np.ndarray]:
    """``(dtype, array)`` of one tensor, as raw little-endian bits (uint16 for BF16)."""
    info = read_header(path)[0][name]
    with open(path, "rb") as f:
        f.seek(info.start)
        raw = f.read(info.nbytes)
    if info.dtype not in NUMPY_DTYPES:  # e.g. F8_*: raw bytes
        return info.dtype, np.frombuffer(raw, dtype=np.uint8)
    return info.dtype, np.frombuffer(raw, dtype=NUMPY_DTYPES[info.dtype]).reshape(info.shape)


def to_float32(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Values of a BF16 (uint16 bits), F16 or F32 array as float32."""
    return mxfp4.bf16_to_float32(raw) if dtype == "BF16" else raw.astype(np.float32)


# --------------------------------------------------------------------------- checkpoint


@dataclass(frozen=True)
class Checkpoint:
    """A local safetensors checkpoint folder."""

    path: Path
    config: dict
    shards: list[Path]
    index: dict | None

    @classmethod
    def open(cls, path: Path) -> Checkpoint:
        path = Path(path).expanduser()
        config_file = path / "config.json"
        if not config_file.is_file():
            raise ValueError(f"{path} has no config.json: not a Hugging Face checkpoint folder")
        config = json.loads(config_file.read_text())
        index = json.loads((path / INDEX_FILE).read_text()) if (path / INDEX_FILE).is_file() else None
        if index is not None:
            shards = sorted({path / shard for shard in index["weight_map"].values()})
        else:
            shards = sorted(path.glob("*.safetensors"))
        if not shards:
            raise ValueError(f"{path} has no .safetensors files")
        missing = [s.name for s in shards if not s.is_file()]
        if missing:
            raise ValueError(f"{path}: shards listed in {INDEX_FILE} are missing: {', '.join(missing)}")
        return cls(path, config, shards, index)


def checkpoint_quantization(path: Path) -> str | None:
    """``"mxfp4"`` when the folder already holds MXFP4 experts, ``"bf16"`` when it holds BF16
    ones, None when it is not a gpt-oss checkpoint we can tell. Reads only headers."""
    try:
        checkpoint = Checkpoint.open(path)
    except (ValueError, OSError, json.JSONDecodeError):
        return None
    names = [name for shard in checkpoint.shards for name in read_header(shard)[0]]
    if any(name.endswith(("experts.gate_up_proj_blocks", "experts.down_proj_blocks")) for name in names):
        return "mxfp4"
    if any(EXPERT_WEIGHT.match(name) for name in names):
        return "bf16"
    return None


def cache_key(source: Checkpoint, *, scale_rounding: str = "floor") -> str:
    """Hash of the source config and of each shard's name, size and mtime (cheap: no data is
    read), plus the converter version and options. Same key -> same output."""
    digest = hashlib.sha256()
    digest.update(f"c1-mxfp4 v{CONVERTER_VERSION} {scale_rounding}\n".encode())
    digest.update((source.path / "config.json").read_bytes())
    for shard in source.shards:
        stat = shard.stat()
        digest.update(f"\n{shard.name} {stat.st_size} {stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def _check_expert_shape(info: TensorInfo, config: dict) -> None:
    """The tensor must be [E, in, out] with ``in`` a multiple of 32 and agree with config.json."""
    if len(info.shape) != 3:
        raise ValueError(f"{info.name}: expected [experts, in, out], got shape {info.shape}")
    if info.dtype not in QUANTIZABLE:
        raise ValueError(f"{info.name}: cannot quantize dtype {info.dtype}")
    experts, hidden, inter = (config.get(k) for k in ("num_local_experts", "hidden_size", "intermediate_size"))
    if None not in (experts, hidden, inter):
        gate_up = info.name.endswith("gate_up_proj")
        expected = (experts, hidden, 2 * inter) if gate_up else (experts, inter, hidden)
        if info.shape != expected:
            raise ValueError(f"{info.name}: shape {info.shape} does not match config.json ({expected})")
    if info.shape[1] % mxfp4.BLOCK_SIZE:
        raise ValueError(f"{info.name}: input size {info.shape[1]} is not a multiple of {mxfp4.BLOCK_SIZE}")


def _output_entries(info: TensorInfo) -> list[tuple[str, str, tuple[int, ...], int]]:
    """What one source tensor becomes: itself, or its ``_blocks`` and ``_scales``."""
    if not EXPERT_WEIGHT.match(info.name):
        return [(info.name, info.dtype, info.shape, info.nbytes)]
    experts, fan_in, fan_out = info.shape
    groups = fan_in // mxfp4.BLOCK_SIZE
    blocks = (experts, fan_out, groups, mxfp4.BYTES_PER_BLOCK)
    scales = (experts, fan_out, groups)
    return [
        (f"{info.name}_blocks", "U8", blocks, int(np.prod(blocks))),
        (f"{info.name}_scales", "U8", scales, int(np.prod(scales))),
    ]


def _row_slices(shape: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(expert, first output row, last output row) work items of about ROWS_ELEMENTS values,
    in file order."""
    experts, fan_in, fan_out = shape
    rows = max(1, ROWS_ELEMENTS // fan_in)
    return [(e, r0, min(r0 + rows, fan_out)) for e in range(experts) for r0 in range(0, fan_out, rows)]


def _ordered_map(fn: Callable, items: list, workers: int) -> Iterator:
    """``map(fn, items)`` on a thread pool (numpy releases the GIL in its loops), results in
    order, at most ``2 * workers`` in flight so memory stays bounded."""
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(workers, thread_name_prefix="mxfp4") as pool:
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _write_quantized(out, source: np.memmap, info: TensorInfo, starts: list[int], options: dict) -> None:
    """Quantize row slices of each expert and write blocks and scales at their file offsets.

    The source is [E, in, out]; each slice is transposed while still 2-byte (one strided copy)
    and then decoded, so :func:`mxfp4.quantize` gets contiguous [rows, in] float32 rows."""
    count = int(np.prod(info.shape))
    weights = np.frombuffer(source, dtype=NUMPY_DTYPES[info.dtype], count=count, offset=info.start)
    weights = weights.reshape(info.shape)

    def quantize_slice(item: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        expert, r0, r1 = item
        values = to_float32(np.ascontiguousarray(weights[expert, :, r0:r1].T), info.dtype)
        return mxfp4.quantize(values, scale_rounding=options["scale_rounding"])

    blocks_at, scales_at = starts
    for blocks, scales in _ordered_map(quantize_slice, _row_slices(info.shape), options["workers"]):
        out.seek(blocks_at)
        out.write(blocks.tobytes())
        out.seek(scales_at)
        out.write(scales.tobytes())
        blocks_at += blocks.nbytes
        scales_at += scales.nbytes


def _copy_bytes(out, source: np.memmap, info: TensorInfo, start: int) -> None:
    out.seek(start)
    end = info.start + info.nbytes
    for offset in range(info.start, end, COPY_CHUNK):
        out.write(source[offset : min(offset + COPY_CHUNK, end)].tobytes())


def convert_shard(
    src: Path,
    dst: Path,
    config: dict,
    *,
    scale_rounding: str = "floor",
    workers: int = 1,
    progress: Callable[[int, str], None] | None = None,
) -> dict[str, int]:
    """Convert one safetensors file. Returns ``{output tensor name: nbytes}``."""
    tensors, metadata = read_header(src)
    for info in tensors.values():
        if EXPERT_WEIGHT.match(info.name):
            _check_expert_shape(info, config)
    plan = [(info, _output_entries(info)) for info in tensors.values()]
    entries = [entry for _, produced in plan for entry in produced]
    header = _header_bytes(entries, metadata or {"format": "pt"})
    source = np.memmap(src, dtype=np.uint8, mode="r")  # pages in on demand, never all at once
    offset = 8 + len(header)
    with open(dst, "wb") as out:
        out.write(struct.pack("<Q", len(header)) + header)
        for info, produced in plan:
            starts = []
            for *_, nbytes in produced:
                starts.append(offset)
                offset += nbytes
            if len(produced) == 1:
                _copy_bytes(out, source, info, starts[0])
            else:
                _write_quantized(out, source, info, starts, {"scale_rounding": scale_rounding, "workers": workers})
            if progress:
                progress(info.nbytes, info.name)
        out.truncate(offset)
    del source
    return {name: nbytes for name, _, _, nbytes in entries}


def _quantized_config(config: dict) -> dict:
    return {**config, "quantization_config": json.loads(json.dumps(QUANTIZATION_CONFIG))}


def _copy_other_files(source: Checkpoint, staging: Path) -> None:
    """Tokenizer, generation config, chat template, licence...: top-level files only (the
    ``original/`` and ``metal/`` folders of openai's repos hold other copies of the weights)."""
    skip = {"config.json", INDEX_FILE, MARKER_FILE} | {shard.name for shard in source.shards}
    for item in sorted(source.path.iterdir()):
        if item.is_file() and item.name not in skip and not item.name.endswith(SKIPPED_SUFFIXES):
            shutil.copy2(item, staging / item.name)


def _read_marker(dst: Path) -> dict | None:
    try:
        return json.loads((dst / MARKER_FILE).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _check_disk_space(source: Checkpoint, parent: Path) -> None:
    """MXFP4 output is at most the source size; refuse early rather than fail at 90 %."""
    needed = sum(shard.stat().st_size for shard in source.shards)
    free = shutil.disk_usage(parent).free
    if free < needed // 2:
        raise OSError(
            f"not enough disk space in {parent}: about {needed // 2 >> 30} GiB needed "
            f"for the MXFP4 checkpoint, {free >> 30} GiB free"
        )


def _replace_dir(staging: Path, dst: Path) -> None:
    """Move the finished staging folder to ``dst``, replacing an older conversion."""
    old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
    if dst.exists():
        os.rename(dst, old)
    os.rename(staging, dst)
    shutil.rmtree(old, ignore_errors=True)


def quantize_checkpoint(
    src: Path,
    dst: Path,
    *,
    progress: Progress | None = None,
    scale_rounding: str = "floor",
    workers: int | None = None,
) -> dict:
    """Write an MXFP4 copy of the BF16 gpt-oss checkpoint ``src`` into ``dst``.

    Idempotent and cached: when ``dst`` holds a conversion of the same source (same config,
    shard sizes and mtimes, converter version), returns at once with ``"cached": True``. The
    output is built in a sibling temporary folder and renamed into place, so ``dst`` is either
    absent, the previous conversion, or complete. Returns a summary: ``tensors_converted``,
    ``tensors_copied``, ``bytes_before``, ``bytes_after``, ``seconds``, ``cached``, ``key``,
    ``source``, ``destination``. ``workers``: quantizing threads (default: CPU count, max 16).
    """
    started = time.monotonic()
    source = Checkpoint.open(src)
    dst = Path(dst).expanduser()
    key = cache_key(source, scale_rounding=scale_rounding)
    marker = _read_marker(dst)
    if marker and marker.get("key") == key:
        return {**marker["summary"], "cached": True, "seconds": round(time.monotonic() - started, 3)}
    if source.config.get("model_type") != "gpt_oss":
        raise ValueError(f"{source.path}: model_type is {source.config.get('model_type')!r}, not 'gpt_oss'")
    kind = checkpoint_quantization(source.path)
    if kind == "mxfp4":
        raise ValueError(f"{source.path} is already an MXFP4 checkpoint: serve it as it is")
    if kind != "bf16":
        raise ValueError(f"{source.path} has no gpt-oss expert weights (mlp.experts.gate_up_proj)")

    dst.parent.mkdir(parents=True, exist_ok=True)
    _check_disk_space(source, dst.parent)
    staging = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        workers = workers or min(16, os.cpu_count() or 1)
        summary = _convert_all(source, staging, scale_rounding, workers, progress)
        summary.update(source=str(source.path), destination=str(dst), key=key)
        summary["seconds"] = round(time.monotonic() - started, 3)
        (staging / MARKER_FILE).write_text(json.dumps({"key": key, "summary": summary}, indent=2))
        _replace_dir(staging, dst)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {**summary, "cached": False}


def _convert_all(
    source: Checkpoint, staging: Path, scale_rounding: str, workers: int, progress: Progress | None
) -> dict:
    total = sum(info.nbytes for shard in source.shards for info in read_header(shard)[0].values())
    done = 0
    sizes: dict[str, int] = {}

    def tick(nbytes: int, name: str) -> None:
        nonlocal done
        done += nbytes
        if progress:
            progress(done, total, name)

    weight_map: dict[str, str] = {}
    for shard in source.shards:
        produced = convert_shard(
            shard, staging / shard.name, source.config, scale_rounding=scale_rounding, workers=workers, progress=tick
        )
        weight_map.update({name: shard.name for name in produced})
        sizes.update(produced)

    (staging / "config.json").write_text(json.dumps(_quantized_config(source.config), indent=2) + "\n")
    if source.index is not None:
        index = {
            "metadata": {**source.index.get("metadata", {}), "total_size": sum(sizes.values())},
            "weight_map": dict(sorted(weight_map.items())),
        }
        (staging / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")
    _copy_other_files(source, staging)
    return {
        "tensors_converted": sum(name.endswith("_blocks") for name in sizes),
        "tensors_copied": sum(not name.endswith(("_blocks", "_scales")) for name in sizes),
        "bytes_before": sum(shard.stat().st_size for shard in source.shards),
        "bytes_after": sum((staging / shard.name).stat().st_size for shard in source.shards),
    }
