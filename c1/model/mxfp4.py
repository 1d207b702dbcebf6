"""MXFP4 (OCP Microscaling FP4) packing, in numpy only.

Format (OCP Microscaling Formats v1.0, MXFP4):

- values are grouped in blocks of 32 consecutive elements along the last axis;
- each block shares one scale stored as E8M0: a uint8 biased exponent ``s``, scale ``2**(s-127)``
  (``s == 255`` is NaN);
- each element is FP4 E2M1: 1 sign bit, 2 exponent bits (bias 1), 1 mantissa bit, so the
  magnitudes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 (code 0..7) and code ``8 | c`` is the negative;
- two elements per byte: element ``2k`` in the LOW nibble, element ``2k+1`` in the HIGH nibble.

The byte layout is the one of the openai/gpt-oss checkpoints and of every loader of them:
HF transformers ``convert_moe_packed_tensors`` (``integrations/mxfp4.py``) decodes
``lut[blk & 0x0F]`` into the even positions and ``lut[blk >> 4]`` into the odd ones, and
triton_kernels' ``downcast_to_mxfp_torch`` (used by vLLM and transformers to quantize) packs
``evens | (odds << 4)``; both read the scale as ``2**(s - 127)``.

Scale choice. The OCP spec sets the block exponent to ``floor(log2(amax)) - emax`` where
``emax = 2`` is E2M1's largest exponent (6 = 1.5 * 2**2): the block maximum then lands in
[4, 8) and anything in (6, 8) saturates to 6 (at most 25 % clipping of the largest element,
in exchange for full use of the grid by all the others). That is the default here
(``scale_rounding="floor"``). triton_kernels instead rounds ``amax / 6`` UP to a power of two
(never clips, but may waste a whole binade); ``scale_rounding="ceil"`` reproduces it. The floor
rule is also the robust one for checkpoints that were MXFP4 once (gpt-oss-20b fine-tunes): a
block whose maximum drifted slightly above ``6 * 2**e`` keeps scale ``2**e`` under the floor
rule, where the ceil rule would double the scale of the whole block.

Elements are rounded to nearest, ties to even (even = mantissa bit 0), on the E2M1 grid, and
saturate at +-6. A value that rounds to zero is written as +0 (code 0), never -0.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

BLOCK_SIZE = 32
"""Elements per shared scale."""
BYTES_PER_BLOCK = BLOCK_SIZE // 2
SCALE_BIAS = 127
E2M1_EMAX = 2
"""Largest exponent of an E2M1 normal number: 6 = 1.5 * 2**2."""
E2M1_MAX = 6.0

E2M1_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0], dtype=np.float32)
"""Value of codes 0..7; code ``8 | c`` is ``-E2M1_MAGNITUDES[c]``."""
E2M1_VALUES = np.concatenate([E2M1_MAGNITUDES, -E2M1_MAGNITUDES]).astype(np.float32)
"""Value of every 4-bit code 0..15 (code 8 is -0.0)."""

_UP = np.float32(np.inf)
_ROUNDING_THRESHOLDS = np.array(
    [
        np.nextafter(np.float32(0.25), _UP),  # tie 0.25 -> 0   (code 0, even): strictly above
        0.75,  # tie 0.75 -> 1.0 (code 2, even): at or above
        np.nextafter(np.float32(1.25), _UP),  # tie 1.25 -> 1.0 (code 2)
        1.75,  # tie 1.75 -> 2.0 (code 4)
        np.nextafter(np.float32(2.5), _UP),  # tie 2.5 -> 2.0 (code 4)
        3.5,  # tie 3.5 -> 4.0 (code 6)
        np.nextafter(np.float32(5.0), _UP),  # tie 5.0 -> 4.0 (code 6); 6 and above saturate
    ],
    dtype=np.float32,
)
"""Midpoints between neighbouring E2M1 magnitudes, nudged so that ``mag >= t`` rounds ties to
the even code. The code of a magnitude is the number of thresholds it reaches."""

ScaleRounding = Literal["floor", "ceil"]


def e2m1_decode(codes: np.ndarray) -> np.ndarray:
    """4-bit codes (any integer array, values 0..15) -> float32 values."""
    return E2M1_VALUES[np.asarray(codes, dtype=np.uint8) & 0x0F]


def e2m1_encode(y: np.ndarray) -> np.ndarray:
    """Round float values (already divided by their block scale) to E2M1 codes (uint8 0..15).

    Round to nearest, ties to even, saturating at +-6: the magnitude code is the count of
    :data:`_ROUNDING_THRESHOLDS` reached (seven whole-array comparisons: faster than
    ``rint(|y| / step)`` and a lookup on these array sizes, and exact; a one-off timing,
    docs/benchmarks.md, "Figures that were in the code").
    """
    y = np.asarray(y, dtype=np.float32)
    mag = np.abs(y)
    codes = np.zeros(y.shape, dtype=np.uint8)
    for threshold in _ROUNDING_THRESHOLDS:
        codes += mag >= threshold
    negative = (y < 0) & (codes != 0)
    return codes | (negative.view(np.uint8) << 3)


def shared_exponents(amax: np.ndarray, scale_rounding: ScaleRounding = "floor") -> np.ndarray:
    """Block maxima (>= 0) -> unbiased E8M0 exponents (int32, clipped to [-127, 127]).

    ``floor``: ``floor(log2(amax)) - 2`` (OCP spec). ``ceil``: ``ceil(log2(amax / 6))``
    (triton_kernels' ROUND_UP). ``np.frexp`` gives the exact binary exponent, so there is no
    floating-point ``log2`` error at powers of two. An all-zero block gets -127 (scale byte 0,
    as triton_kernels writes it); its elements are all zero whatever the scale.
    """
    amax = np.asarray(amax, dtype=np.float32)
    if scale_rounding == "floor":
        _, e = np.frexp(amax)  # amax = m * 2**e, 0.5 <= m < 1  ->  floor(log2 amax) = e - 1
        exp = e.astype(np.int32) - 1 - E2M1_EMAX
    elif scale_rounding == "ceil":
        m, e = np.frexp(amax / np.float32(E2M1_MAX))
        exp = e.astype(np.int32) - (m == 0.5)  # exact powers of two need no rounding up
    else:
        raise ValueError(f"scale_rounding must be 'floor' or 'ceil', not {scale_rounding!r}")
    exp = np.where(amax == 0, -SCALE_BIAS, exp)
    return np.clip(exp, -SCALE_BIAS, SCALE_BIAS).astype(np.int32)


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """[..., 2k] codes -> [..., k] bytes: element 2i in the low nibble, 2i+1 in the high one."""
    codes = np.asarray(codes, dtype=np.uint8)
    return (codes[..., 0::2] & 0x0F) | (codes[..., 1::2] << 4)


def unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """Inverse of :func:`pack_nibbles`: [..., k] bytes -> [..., 2k] codes."""
    packed = np.asarray(packed, dtype=np.uint8)
    codes = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.uint8)
    codes[..., 0::2] = packed & 0x0F
    codes[..., 1::2] = packed >> 4
    return codes


def quantize(x: np.ndarray, *, scale_rounding: ScaleRounding = "floor") -> tuple[np.ndarray, np.ndarray]:
    """Quantize along the last axis.

    ``x``: float array [..., n] with n a multiple of 32, all values finite.
    Returns ``(blocks, scales)``: blocks uint8 [..., n/32, 16] (two E2M1 codes a byte),
    scales uint8 [..., n/32] (E8M0).
    """
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 0 or x.shape[-1] % BLOCK_SIZE:
        raise ValueError(f"MXFP4 needs the last axis to be a multiple of {BLOCK_SIZE}; got shape {x.shape}")
    groups = x.reshape(x.shape[:-1] + (x.shape[-1] // BLOCK_SIZE, BLOCK_SIZE))
    amax = np.max(np.abs(groups), axis=-1)
    if not np.all(np.isfinite(amax)):
        raise ValueError("MXFP4 cannot encode NaN or infinite values")
    exp = shared_exponents(amax, scale_rounding)
    inverse_scale = np.ldexp(np.float32(1.0), -exp).astype(np.float32)  # exact powers of two
    scaled = groups * inverse_scale[..., None]
    blocks = pack_nibbles(e2m1_encode(scaled))
    return blocks, (exp + SCALE_BIAS).astype(np.uint8)


def dequantize(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``(blocks [..., G, 16], scales [..., G])`` -> float32 [..., G*32]."""
    blocks = np.asarray(blocks, dtype=np.uint8)
    scales = np.asarray(scales, dtype=np.uint8)
    if blocks.shape[-1] != BYTES_PER_BLOCK or blocks.shape[:-1] != scales.shape:
        raise ValueError(
            f"blocks must be [..., G, {BYTES_PER_BLOCK}] and scales [..., G]; got {blocks.shape} and {scales.shape}"
        )
    values = e2m1_decode(unpack_nibbles(blocks))
    out = np.ldexp(values, scales.astype(np.int32)[..., None] - SCALE_BIAS).astype(np.float32)
    out[scales == 255] = np.nan  # E8M0 255 is NaN
    return out.reshape(blocks.shape[:-2] + (blocks.shape[-2] * BLOCK_SIZE,))


def bf16_to_float32(raw: np.ndarray) -> np.ndarray:
    """BF16 bit patterns (uint16) -> float32: BF16 is the top half of a float32."""
    return np.left_shift(np.asarray(raw, dtype=np.uint16), 16, dtype=np.uint32).view(np.float32)


def float32_to_bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> BF16 bit patterns (uint16), round to nearest even (finite inputs)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    return ((bits + rounding) >> 16).astype(np.uint16)
