"""GGUF Q8_0 / Q4_0 kernels on struct blocks bit for bit against gguf.quants (the reference of
the gguf package): dequantize over every half pattern as a scale (NaN, inf, subnormals, -0.0)
and random quants; quantize over random data at several magnitudes, all-zero blocks, one huge
value per block, negative and positive extremes (Q4_0 keeps the sign of the extreme), ties at
.5 (C's roundf rounds away from zero), subnormals and signed zeros. Also: the dtypes are ggml's
blocks and the .cl twin holds their typedefs verbatim, and a half field written from float32
values on, around and between every rounding tie holds numpy's astype(float16) bits (what
the quantizers' scales rely on).
"""

import gguf
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim import get_global_id, kernel
from clsim.spec import get_spec
from kernels_py.gguf_structs import BLOCK_Q8_0, BLOCKS, QK, typedef

GGML = gguf.GGMLQuantizationType


@kernel
def store_scales(x, blocks, n):
    i = get_global_id(0)
    if i < n:
        blocks[i].d = np.float16(x[i])


def _same_floats(got, want):
    return (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))


@pytest.mark.parametrize("qtype", [GGML.Q8_0, GGML.Q4_0])
def test_dtypes_are_ggml_blocks_and_the_twin_holds_their_typedefs(qtype):
    dtype, _, per_block = BLOCKS[qtype.name]
    assert (per_block, dtype.itemsize) == gguf.GGML_QUANT_SIZES[qtype]
    spec = get_spec(f"quantize_{qtype.name.lower()}")
    assert typedef(qtype.name) in spec.cl_path.read_text()


def test_half_field_stores_round_as_numpy():
    """float32 values on, just below and just above every half rounding tie, plus random bit
    patterns, stored into a block's half scale: numpy's astype(float16) bits (nearest even,
    overflow to inf, subnormals)."""
    base = np.arange(0, 2**19, dtype=np.uint32) << 13
    rng = np.random.default_rng(0)
    bits = np.concatenate([base, base + 0xFFF, base + 0x1000, base + 0x1001, base + 0x1FFF,
                           rng.integers(0, 2**32, 2**18, dtype=np.uint64).astype(np.uint32)])
    x = bits.view(np.float32)
    blocks = np.zeros(x.size, BLOCK_Q8_0)
    clsim.run(store_scales, (x.size,), (256,), (x, blocks, np.int32(x.size)))
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    out = blocks["d"].view(np.uint16)
    nan = np.isnan(x)
    assert (out[~nan] == want[~nan]).all()
    assert np.isnan(blocks["d"][nan]).all()


def _run(name, inputs, local=None):
    spec = get_spec(name)
    launch = spec.launch(inputs, {}, local)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False)
    return spec


@pytest.mark.parametrize("qtype", [GGML.Q8_0, GGML.Q4_0])
def test_dequantize_every_scale_pattern(qtype):
    """One block per half pattern as its scale, random quant bytes: bit-exact with gguf."""
    dtype = BLOCKS[qtype.name][0]
    rng = np.random.default_rng(1)
    blocks = rng.integers(0, 256, 65536 * dtype.itemsize, dtype=np.uint8).view(dtype)
    blocks["d"] = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    n = 65536 * QK
    inputs = {"blocks": blocks, "y": np.zeros(n, np.float32), "n": np.int32(n)}
    spec = get_spec(f"dequantize_{qtype.name.lower()}")
    launch = spec.launch(inputs, {}, None)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args)
    with np.errstate(all="ignore"):
        want = gguf.quants.dequantize(blocks.view(np.uint8), qtype)
    assert _same_floats(inputs["y"], want).all()


def _blocks_of(mode, nblocks, rng):
    x = rng.standard_normal((nblocks, QK)).astype(np.float32)
    if mode == "zeros":
        x[:] = 0.0
        x[::2, 0] = -0.0
    elif mode == "huge":
        x[np.arange(nblocks), rng.integers(0, QK, nblocks)] = np.float32(3e38)
    elif mode == "neg_max":
        x = -np.abs(x)
        x[:, 5] = -10.0
    elif mode == "ties":
        x = (rng.integers(-254, 255, (nblocks, QK)) / 2).astype(np.float32)
        x[:, 0] = 127.0  # d = 1 for Q8_0: every x.5 is a roundf tie
    elif mode == "tiny":
        x = (x * np.float32(1e-38)).astype(np.float32)  # subnormal scales
    elif mode == "scales":
        x = (x * rng.choice(np.float32([1e-30, 1e-4, 1.0, 7e4, 1e30]), (nblocks, 1))).astype(
            np.float32)
    return x.reshape(-1)


@pytest.mark.parametrize("qtype", [GGML.Q8_0, GGML.Q4_0])
@given(mode=st.sampled_from(["normal", "zeros", "huge", "neg_max", "ties", "tiny", "scales"]),
       nblocks=st.integers(1, 40), seed=st.integers(0, 2**16))
def test_quantize_bit_exact_with_gguf(qtype, mode, nblocks, seed):
    """Quantized bytes equal gguf.quants.quantize's for every kind of block."""
    x = _blocks_of(mode, nblocks, np.random.default_rng(seed))
    nbytes = nblocks * BLOCKS[qtype.name][0].itemsize
    inputs = {"x": x, "blocks": np.zeros(nbytes, np.uint8),
              "nblocks": np.int32(nblocks)}
    _run(f"quantize_{qtype.name.lower()}", inputs, (7,))
    with np.errstate(all="ignore"):
        want = gguf.quants.quantize(x, qtype).reshape(-1)
    np.testing.assert_array_equal(inputs["blocks"], want)
