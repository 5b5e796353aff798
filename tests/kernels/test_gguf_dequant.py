"""GGUF dequantize kernels on struct blocks (Q4_1, Q5_0, IQ4_NL, Q4_K, Q6_K) bit for bit
against gguf.quants.dequantize: random raw blocks (every byte pattern is a valid block, so NaN,
inf, subnormal and -0.0 scales occur), every half pattern as the scale (the 32-value formats:
all 65536; the K formats: every sign and exponent with 32 mantissas each, for d and dmin),
all-zero blocks (Q5_0 and Q6_K give -0.0 there), and blocks gguf quantized from real data
(Q4_1, Q5_0). Also: the dtypes are ggml's sizes and the .cl twin holds their typedefs verbatim.
"""

import gguf
import numpy as np
import pytest

import clsim
from clsim.spec import get_spec
from kernels_py.gguf_dequant import KERNELS
from kernels_py.gguf_structs import BLOCKS, random_blocks, typedef

GGML = gguf.GGMLQuantizationType
NAMES = list(KERNELS)


def _dequantize(qtype_name, blocks):
    """Run the library kernel on ``blocks``; return its output and gguf's."""
    spec = get_spec(KERNELS[qtype_name].name)
    n = blocks.size * BLOCKS[qtype_name][2]
    inputs = {"x": blocks, "y": np.full(n, np.float32(7.0)), "n": np.int32(n)}
    launch = spec.launch(inputs, {}, None)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args)
    with np.errstate(all="ignore"):
        want = gguf.quants.dequantize(blocks.view(np.uint8), GGML[qtype_name])
    return inputs["y"], want.astype(np.float32)


def _assert_same_bits(got, want):
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, f"{bad.size} values differ, first at {bad[0]}: {got[bad[0]]!r} " \
                          f"vs gguf {want[bad[0]]!r}"


@pytest.mark.parametrize("name", NAMES)
def test_dtypes_are_ggml_blocks_and_the_twin_holds_their_typedefs(name):
    """Block size and bytes are gguf's; the .cl twin pastes clsim.cstruct's typedef as is."""
    dtype, _, per_block = BLOCKS[name]
    assert (per_block, dtype.itemsize) == gguf.GGML_QUANT_SIZES[GGML[name]]
    assert typedef(name) in get_spec(KERNELS[name].name).cl_path.read_text()


@pytest.mark.parametrize("name", NAMES)
def test_random_raw_blocks(name):
    """Random bytes (NaN, inf and subnormal scales included): bit-exact with gguf."""
    got, want = _dequantize(name, random_blocks(np.random.default_rng(3), 300, name))
    _assert_same_bits(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_all_zero_blocks(name):
    """Zero bytes: every value is gguf's zero, with its sign (d * (0 - 16) is -0.0)."""
    dtype = BLOCKS[name][0]
    got, want = _dequantize(name, np.zeros(5, dtype))
    _assert_same_bits(got, want)
    assert (got == 0).all()


def _scale_patterns(name):
    """The half patterns tried as scales: all of them for the 32-value formats; for the K
    formats every sign and exponent with 32 mantissas (0, 1, the quiet-NaN bit, all ones...)."""
    if BLOCKS[name][2] == 32:
        return np.arange(65536, dtype=np.uint32).astype(np.uint16)
    mantissas = np.concatenate([[0, 1, 2, 0x1FF, 0x200, 0x201, 0x3FE, 0x3FF],
                                np.random.default_rng(4).integers(3, 0x3FE, 24)])
    return ((np.arange(64)[:, None] << 10) | mantissas[None, :]).reshape(-1).astype(np.uint16)


@pytest.mark.parametrize("name", NAMES)
def test_every_scale_pattern(name):
    """Each block's half scales set to one pattern (Q4_1's d and m, Q4_K's d and dmin get
    different ones), the rest of the block random: bit-exact with gguf."""
    patterns = _scale_patterns(name)
    blocks = random_blocks(np.random.default_rng(5), patterns.size, name)
    halves = [f for f in blocks.dtype.names if blocks.dtype[f] == np.float16]
    for k, field in enumerate(halves):
        blocks[field] = np.roll(patterns, 7 * k).view(np.float16)
    got, want = _dequantize(name, blocks)
    _assert_same_bits(got, want)


@pytest.mark.parametrize("name", ["Q4_1", "Q5_0"])
@pytest.mark.parametrize("magnitude", [1e-6, 1.0, 3e4])
def test_blocks_gguf_quantized(name, magnitude):
    """Blocks gguf quantizes from normal data (a huge value in some blocks, one block of
    negatives, one all-zero): the kernel gives gguf's dequantized values."""
    rng = np.random.default_rng(int(magnitude * 7) % 1000)
    x = (rng.standard_normal((64, 32)) * magnitude).astype(np.float32)
    x[3, 5] = np.float32(6e4)
    x[4] = -np.abs(x[4])
    x[6] = 0.0
    with np.errstate(over="ignore"):  # a min below -65504 is a -inf half, as in ggml
        raw = gguf.quants.quantize(x.reshape(-1), GGML[name]).reshape(-1)
    got, want = _dequantize(name, raw.view(BLOCKS[name][0]).copy())
    _assert_same_bits(got, want)

