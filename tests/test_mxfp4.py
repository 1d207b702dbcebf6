"""MXFP4 packing (hand-computed values) and the BF16 -> MXFP4 checkpoint conversion."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from c1.model import mxfp4
from c1.model.quantize import (
    INDEX_FILE,
    checkpoint_quantization,
    quantize_checkpoint,
    read_header,
    read_tensor,
    write_safetensors,
)

GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]

# ------------------------------------------------------------------ E2M1 codes and packing


def test_lookup_table_is_sign_magnitude_e2m1():
    assert mxfp4.E2M1_VALUES[:8].tolist() == GRID
    assert mxfp4.E2M1_VALUES[8:].tolist() == [-v for v in GRID]
    assert np.signbit(mxfp4.E2M1_VALUES[8])  # code 8 is -0.0


def test_known_block_packs_to_known_bytes():
    half = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -1.5, -2, -3, -4, -6, 0]
    blocks, scales = mxfp4.quantize(np.array(half * 2, dtype=np.float32))
    # element 2k -> low nibble, 2k+1 -> high nibble: (0, 0.5) = codes (0, 1) -> 0x10, ...
    expected = [0x10, 0x32, 0x54, 0x76, 0xA9, 0xCB, 0xED, 0x0F] * 2
    assert blocks.dtype == np.uint8 and blocks.shape == (1, 16)
    assert blocks[0].tolist() == expected
    assert scales.tolist() == [127]  # block max 6 -> exponent floor(log2 6) - 2 = 0


def test_scaled_block_keeps_codes_and_moves_the_exponent():
    values = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6] * 4, dtype=np.float32)
    b1, s1 = mxfp4.quantize(values)
    b8, s8 = mxfp4.quantize(values * 8)
    bq, sq = mxfp4.quantize(values / 4)
    assert (b1 == b8).all() and (b1 == bq).all()
    assert (s1[0], s8[0], sq[0]) == (127, 130, 125)


def test_pack_and_unpack_are_inverse():
    codes = np.arange(32, dtype=np.uint8) % 16
    packed = mxfp4.pack_nibbles(codes)
    assert packed[:2].tolist() == [0x10, 0x32]
    assert (mxfp4.unpack_nibbles(packed) == codes).all()


@pytest.mark.parametrize(
    ("y", "code"),
    [
        (0.0, 0), (0.24, 0), (0.25, 0), (0.26, 1), (0.5, 1), (0.75, 2), (1.0, 2), (1.25, 2),
        (1.26, 3), (1.75, 4), (2.0, 4), (2.5, 4), (2.51, 5), (3.5, 6), (4.0, 6), (5.0, 6),
        (5.01, 7), (6.0, 7), (7.0, 7), (1e30, 7), (-0.1, 0), (-0.3, 9), (-5.0, 14), (-9.0, 15),
    ],
)  # fmt: skip
def test_round_to_nearest_even_and_saturate(y, code):
    # ties: 0.25 -> 0, 0.75 -> 1.0, 1.25 -> 1.0, 1.75 -> 2.0, 2.5 -> 2, 3.5 -> 4, 5 -> 4 (even codes)
    assert int(mxfp4.e2m1_encode(np.float32([y]))[0]) == code


def _reference_encode(y: float) -> int:
    """Slow, obviously-correct E2M1 rounding: nearest grid point, ties to the even code."""
    mag = min(abs(y), 6.0)
    distances = [abs(mag - g) for g in GRID]
    best = min(distances)
    candidates = [i for i, d in enumerate(distances) if d == best]
    code = next((i for i in candidates if i % 2 == 0), candidates[0])
    return code | (8 if y < 0 and code else 0)


def test_encoder_matches_reference_on_random_values_and_all_ties():
    rng = np.random.default_rng(1)
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    values = np.concatenate([rng.uniform(-8, 8, 3000), ties, np.negative(ties), np.nextafter(ties, 0)])
    values = values.astype(np.float32)
    got = mxfp4.e2m1_encode(values)
    assert got.tolist() == [_reference_encode(float(v)) for v in values]


# ------------------------------------------------------------------ E8M0 scales


@pytest.mark.parametrize(
    ("amax", "byte"),
    [(6.0, 127), (4.0, 127), (7.99, 127), (8.0, 128), (1.0, 125), (0.75, 124), (48.0, 130),
     (2.0**-130, 0), (0.0, 0), (3.0e38, 252)],
)  # fmt: skip
def test_scale_byte_is_floor_log2_of_block_max_minus_two(amax, byte):
    block = np.zeros(32, dtype=np.float32)
    block[5] = -amax
    _, scales = mxfp4.quantize(block)
    assert int(scales[0]) == byte


@pytest.mark.parametrize(("amax", "byte"), [(6.0, 127), (6.01, 128), (4.0, 127), (3.0, 126), (12.0, 128)])
def test_ceil_scale_rounding_never_clips(amax, byte):
    block = np.full(32, amax, dtype=np.float32)
    blocks, scales = mxfp4.quantize(block, scale_rounding="ceil")
    assert int(scales[0]) == byte
    assert np.all(np.abs(mxfp4.dequantize(blocks, scales)) <= 2.0 ** (byte - 127) * 6)


def test_ceil_mode_matches_triton_kernels_round_up_bit_trick():
    """triton_kernels' downcast_to_mxfp_torch: ((bits(amax/6) + 0x7FFFFF) & 0x7F800000) >> 23."""
    amax = np.random.default_rng(2).lognormal(0, 4, 5000).astype(np.float32)
    bits = (amax / np.float32(6)).view(np.uint32)
    triton = ((bits + np.uint32(0x7FFFFF)) & np.uint32(0x7F800000)) >> 23
    ours = mxfp4.shared_exponents(amax, "ceil") + 127
    assert (ours == triton).all()


def test_unknown_scale_rounding_is_rejected():
    with pytest.raises(ValueError, match="floor"):
        mxfp4.quantize(np.ones(32, dtype=np.float32), scale_rounding="nearest")  # type: ignore[arg-type]


# ------------------------------------------------------------------ round trips


def _half_step(y: np.ndarray) -> np.ndarray:
    """Largest rounding error on the E2M1 grid at |y| (in units of the block scale)."""
    mag = np.abs(y)
    return np.select([mag <= 2, mag <= 4, mag <= 6], [0.25, 0.5, 1.0], default=mag - 6)


def test_round_trip_error_is_within_the_format_bound():
    x = np.random.default_rng(3).standard_normal((8, 4, 256)).astype(np.float32) * 0.02
    blocks, scales = mxfp4.quantize(x)
    assert blocks.shape == (8, 4, 8, 16) and scales.shape == (8, 4, 8)
    back = mxfp4.dequantize(blocks, scales)
    assert back.shape == x.shape and back.dtype == np.float32
    scale = np.repeat(np.ldexp(1.0, scales.astype(np.int32) - 127), 32, axis=-1)
    y = x / scale
    assert np.all(np.abs(back - x) <= _half_step(y) * scale * (1 + 1e-6))
    # nearest grid point: no representable value is closer than the one chosen
    grid = np.concatenate([mxfp4.E2M1_VALUES, [0.0]])
    nearest = np.min(np.abs(y[..., None] - grid), axis=-1)
    assert np.allclose(np.abs(back / scale - y)[np.abs(y) <= 6], nearest[np.abs(y) <= 6])
    # block maxima land in [4, 8) with the floor rule: never more than 25 % clipped
    ymax = np.max(np.abs(y).reshape(8, 4, 8, 32), axis=-1)
    assert np.all((ymax >= 4) & (ymax < 8))


def test_saturation_clips_the_block_maximum_to_six_times_the_scale():
    block = np.zeros(32, dtype=np.float32)
    block[:3] = [7.5, -7.9, 1.0]
    blocks, scales = mxfp4.quantize(block)
    assert int(scales[0]) == 127
    assert mxfp4.dequantize(blocks, scales)[:3].tolist() == [6.0, -6.0, 1.0]


def test_zeros_and_all_equal_blocks():
    blocks, scales = mxfp4.quantize(np.zeros((2, 64), dtype=np.float32))
    assert not blocks.any() and not scales.any()
    assert not mxfp4.dequantize(blocks, scales).any()
    for value, expected in [(1.0, 1.0), (-3.0, -3.0), (5.0, 4.0), (0.3, 0.25)]:
        # 5 -> scale 1, y = 5: tie between 4 and 6 -> 4 (even); 0.3 -> scale 1/16, y = 4.8 -> 4
        back = mxfp4.dequantize(*mxfp4.quantize(np.full(32, value, dtype=np.float32)))
        assert back.tolist() == [expected] * 32


def test_last_axis_not_a_multiple_of_32_is_rejected():
    with pytest.raises(ValueError, match="multiple of 32"):
        mxfp4.quantize(np.ones((4, 48), dtype=np.float32))
    with pytest.raises(ValueError, match="multiple of 32"):
        mxfp4.quantize(np.float32(1.0))


def test_non_finite_values_are_rejected():
    x = np.ones(32, dtype=np.float32)
    x[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        mxfp4.quantize(x)


def test_dequantize_checks_shapes_and_reads_e8m0_nan():
    with pytest.raises(ValueError, match="blocks must be"):
        mxfp4.dequantize(np.zeros((2, 16), np.uint8), np.zeros(3, np.uint8))
    assert np.isnan(mxfp4.dequantize(np.zeros((1, 16), np.uint8), np.array([255], np.uint8))).all()


def test_bf16_conversions():
    assert mxfp4.float32_to_bf16(np.float32([1.0, -2.0])).tolist() == [0x3F80, 0xC000]
    # 1 + 2**-8 is halfway between two BF16 values: ties to even (0x3F80); 1 + 3*2**-8 -> 0x3F82
    assert mxfp4.float32_to_bf16(np.float32([1 + 2**-8, 1 + 3 * 2**-8])).tolist() == [0x3F80, 0x3F82]
    raw = np.arange(0, 0x7F80, 7, dtype=np.uint16)
    assert (mxfp4.float32_to_bf16(mxfp4.bf16_to_float32(raw)) == raw).all()


# ------------------------------------------------------------------ checkpoint conversion

HIDDEN, INTER, EXPERTS, LAYERS, VOCAB, HEADS, KV_HEADS, HEAD_DIM = 64, 96, 4, 2, 128, 2, 1, 32


def _bf16(rng: np.random.Generator, *shape: int, std: float = 0.02) -> tuple[str, np.ndarray]:
    return "BF16", mxfp4.float32_to_bf16(rng.standard_normal(shape).astype(np.float32) * std)


def _layer_tensors(rng: np.random.Generator, i: int) -> dict[str, tuple[str, np.ndarray]]:
    """One decoder layer, names and shapes as in the BF16 gpt-oss checkpoints (HF layout)."""
    p = f"model.layers.{i}"
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return {
        f"{p}.input_layernorm.weight": _bf16(rng, HIDDEN),
        f"{p}.post_attention_layernorm.weight": _bf16(rng, HIDDEN),
        f"{p}.self_attn.q_proj.weight": _bf16(rng, q, HIDDEN),
        f"{p}.self_attn.q_proj.bias": _bf16(rng, q),
        f"{p}.self_attn.k_proj.weight": _bf16(rng, kv, HIDDEN),
        f"{p}.self_attn.k_proj.bias": _bf16(rng, kv),
        f"{p}.self_attn.v_proj.weight": _bf16(rng, kv, HIDDEN),
        f"{p}.self_attn.v_proj.bias": _bf16(rng, kv),
        f"{p}.self_attn.o_proj.weight": _bf16(rng, HIDDEN, q),
        f"{p}.self_attn.o_proj.bias": _bf16(rng, HIDDEN),
        f"{p}.self_attn.sinks": ("F32", rng.standard_normal(HEADS).astype(np.float32)),
        f"{p}.mlp.router.weight": _bf16(rng, EXPERTS, HIDDEN),
        f"{p}.mlp.router.bias": _bf16(rng, EXPERTS),
        f"{p}.mlp.experts.gate_up_proj": _bf16(rng, EXPERTS, HIDDEN, 2 * INTER),
        f"{p}.mlp.experts.gate_up_proj_bias": _bf16(rng, EXPERTS, 2 * INTER),
        f"{p}.mlp.experts.down_proj": _bf16(rng, EXPERTS, INTER, HIDDEN),
        f"{p}.mlp.experts.down_proj_bias": _bf16(rng, EXPERTS, HIDDEN),
    }


def make_tiny_gpt_oss(path: Path, seed: int = 0) -> Path:
    """A 2-layer, 4-expert gpt-oss checkpoint in two shards with an index, like the real one."""
    rng = np.random.default_rng(seed)
    path.mkdir(parents=True)
    config = {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": HIDDEN,
        "intermediate_size": INTER, "num_hidden_layers": LAYERS, "num_local_experts": EXPERTS,
        "num_experts_per_tok": 2, "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM, "vocab_size": VOCAB, "torch_dtype": "bfloat16",
        "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 128,
        "tie_word_embeddings": False,
    }  # fmt: skip
    (path / "config.json").write_text(json.dumps(config))
    shards = {
        "model-00001-of-00002.safetensors": {
            "model.embed_tokens.weight": _bf16(rng, VOCAB, HIDDEN),
            **_layer_tensors(rng, 0),
        },
        "model-00002-of-00002.safetensors": {
            **_layer_tensors(rng, 1),
            "model.norm.weight": _bf16(rng, HIDDEN),
            "lm_head.weight": _bf16(rng, VOCAB, HIDDEN),
        },
    }
    weight_map = {}
    for name, tensors in shards.items():
        write_safetensors(path / name, tensors, {"format": "pt"})
        weight_map.update(dict.fromkeys(tensors, name))
    total = sum(a.nbytes for tensors in shards.values() for _, a in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (path / INDEX_FILE).write_text(json.dumps(index))
    (path / "tokenizer.json").write_text('{"version": "1.0"}')
    (path / "generation_config.json").write_text('{"eos_token_id": [1]}')
    (path / "pytorch_model.bin").write_bytes(b"not needed")
    return path


def _hf_dequantize(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """numpy transcription of HF transformers' ``convert_moe_packed_tensors``: low nibble ->
    even positions, high nibble -> odd, ``ldexp(scale - 127)``, then ``transpose(1, 2)``."""
    out = np.empty(blocks.shape[:-1] + (32,), dtype=np.float32)
    out[..., 0::2] = mxfp4.E2M1_VALUES[blocks & 0x0F]
    out[..., 1::2] = mxfp4.E2M1_VALUES[blocks >> 4]
    out = np.ldexp(out, scales.astype(np.int32)[..., None] - 127)
    experts, rows, groups = scales.shape
    return out.reshape(experts, rows, groups * 32).transpose(0, 2, 1)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    src = make_tiny_gpt_oss(root / "bf16")
    events = []
    summary = quantize_checkpoint(src, root / "mxfp4", progress=lambda *a: events.append(a))
    return src, root / "mxfp4", summary, events


def test_checkpoint_layout_config_and_index(converted):
    src, dst, summary, events = converted
    assert summary["tensors_converted"] == 2 * LAYERS and not summary["cached"]
    assert summary["bytes_after"] < summary["bytes_before"]
    assert events[-1][0] == events[-1][1]  # progress reaches the total
    config = json.loads((dst / "config.json").read_text())
    # what vLLM and transformers read: the method, and the rest of the source config unchanged
    assert config["quantization_config"]["quant_method"] == "mxfp4"
    source_config = json.loads((src / "config.json").read_text())
    assert {k: v for k, v in config.items() if k != "quantization_config"} == \
        {k: v for k, v in source_config.items() if k != "quantization_config"}
    assert config["quantization_config"]["modules_to_not_convert"] == [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head",
    ]  # fmt: skip
    index = json.loads((dst / INDEX_FILE).read_text())
    names = {}
    for shard in sorted(dst.glob("*.safetensors")):
        names.update({name: (info.dtype, info.shape, shard.name) for name, info in read_header(shard)[0].items()})
    assert {n: s for n, (_, _, s) in names.items()} == index["weight_map"]
    assert index["metadata"]["total_size"] == sum(
        info.nbytes for shard in dst.glob("*.safetensors") for info in read_header(shard)[0].values()
    )
    groups_h, groups_i = HIDDEN // 32, INTER // 32
    for i in range(LAYERS):
        p = f"model.layers.{i}.mlp.experts"
        assert names[f"{p}.gate_up_proj_blocks"][:2] == ("U8", (EXPERTS, 2 * INTER, groups_h, 16))
        assert names[f"{p}.gate_up_proj_scales"][:2] == ("U8", (EXPERTS, 2 * INTER, groups_h))
        assert names[f"{p}.down_proj_blocks"][:2] == ("U8", (EXPERTS, HIDDEN, groups_i, 16))
        assert names[f"{p}.down_proj_scales"][:2] == ("U8", (EXPERTS, HIDDEN, groups_i))
        assert names[f"{p}.gate_up_proj_bias"][:2] == ("BF16", (EXPERTS, 2 * INTER))
        assert f"{p}.gate_up_proj" not in names and f"{p}.down_proj" not in names
    assert (dst / "tokenizer.json").read_text() == (src / "tokenizer.json").read_text()
    assert (dst / "generation_config.json").is_file() and not (dst / "pytorch_model.bin").exists()
    assert checkpoint_quantization(dst) == "mxfp4" and checkpoint_quantization(src) == "bf16"


def test_experts_dequantize_close_to_the_originals(converted):
    src, dst, _, _ = converted
    for i in range(LAYERS):
        for proj in ("gate_up_proj", "down_proj"):
            name = f"model.layers.{i}.mlp.experts.{proj}"
            shard = json.loads((src / INDEX_FILE).read_text())["weight_map"][name]
            _, raw = read_tensor(src / shard, name)
            original = mxfp4.bf16_to_float32(raw)  # [E, in, out]
            _, blocks = read_tensor(dst / shard, f"{name}_blocks")
            _, scales = read_tensor(dst / shard, f"{name}_scales")
            # exactly our quantizer applied to the [E, out, in] transpose...
            expected_blocks, expected_scales = mxfp4.quantize(original.transpose(0, 2, 1))
            assert (blocks == expected_blocks).all() and (scales == expected_scales).all()
            # ...and a loader that decodes like HF transformers gets the weights back
            back = _hf_dequantize(blocks, scales)
            assert back.shape == original.shape
            relative = np.linalg.norm(back - original) / np.linalg.norm(original)
            assert relative < 0.15


def test_other_tensors_are_bit_identical(converted):
    src, dst, _, _ = converted
    weight_map = json.loads((src / INDEX_FILE).read_text())["weight_map"]
    for name, shard in weight_map.items():
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            continue
        dtype_src, a = read_tensor(src / shard, name)
        dtype_dst, b = read_tensor(dst / shard, name)
        assert dtype_src == dtype_dst and a.shape == b.shape and a.tobytes() == b.tobytes(), name


def test_reference_safetensors_library_reads_the_output(converted):
    """The reference implementation validates the header (offsets contiguous, sizes match)."""
    safe_open = pytest.importorskip("safetensors").safe_open
    _, dst, _, _ = converted
    for shard in dst.glob("*.safetensors"):
        with safe_open(str(shard), framework="numpy") as f:
            assert set(f.keys()) == set(read_header(shard)[0])
            assert f.metadata() == {"format": "pt"}
            for name in f.keys():  # noqa: SIM118 (safe_open is no dict)
                if name.endswith(("_blocks", "_scales")):
                    assert (f.get_tensor(name) == read_tensor(shard, name)[1]).all()


def test_second_call_is_a_cache_hit_and_source_changes_invalidate_it(converted, tmp_path):
    src, dst, first, _ = converted
    before = {p.name: p.stat().st_mtime_ns for p in dst.iterdir()}
    again = quantize_checkpoint(src, dst)
    assert again["cached"] and again["key"] == first["key"] and again["seconds"] < 1
    assert {p.name: p.stat().st_mtime_ns for p in dst.iterdir()} == before

    copy = make_tiny_gpt_oss(tmp_path / "bf16", seed=1)
    out = tmp_path / "out"
    assert not quantize_checkpoint(copy, out)["cached"]
    shard = next(copy.glob("*.safetensors"))
    os.utime(shard, ns=(shard.stat().st_atime_ns, shard.stat().st_mtime_ns + 10**9))
    redone = quantize_checkpoint(copy, out)
    assert not redone["cached"] and redone["key"] != first["key"]
    assert not list(tmp_path.glob(".out.*"))  # no staging or old folder left behind


def test_refuses_non_gpt_oss_and_already_quantized(converted, tmp_path):
    _, dst, _, _ = converted
    with pytest.raises(ValueError, match="already an MXFP4"):
        quantize_checkpoint(dst, tmp_path / "again")
    other = tmp_path / "llama"
    other.mkdir()
    (other / "config.json").write_text('{"model_type": "llama"}')
    write_safetensors(other / "model.safetensors", {"w": ("F32", np.zeros(4, np.float32))})
    with pytest.raises(ValueError, match="not 'gpt_oss'"):
        quantize_checkpoint(other, tmp_path / "out")
    mismatched = make_tiny_gpt_oss(tmp_path / "mismatched")
    config = json.loads((mismatched / "config.json").read_text())
    (mismatched / "config.json").write_text(json.dumps({**config, "intermediate_size": 2 * INTER}))
    with pytest.raises(ValueError, match="does not match config.json"):
        quantize_checkpoint(mismatched, tmp_path / "out")
    with pytest.raises(ValueError, match="no config.json"):
        quantize_checkpoint(tmp_path / "missing", tmp_path / "out")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))  # staging removed
