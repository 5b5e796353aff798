"""The split-layout forms of kernels_py.gemv_quant_split: convert_block_q8_0 splits as numpy
does and restore_block_q8_0 puts every byte back, on random raw bytes (every half pattern as a
scale, NaN payloads included), in the simulator and on every device; gemv_q8_0_split gives
gemv_q8_0's bits, gemv_q8_0_split_subgroup gemv_q8_0_subgroup's and gemv_q4_0_split_subgroup
gemv_q4_0_subgroup's (the same numbers read in the same order), at any local and sub-group
size, and all match numpy on gguf-dequantized weights. Twin agreement at the spec's shapes
and sub-group sizes 8, 16, 32: tests/device/test_kernels_on_devices.py; one-row matrices and
refused partial blocks: test_gemv_quant_kernels.py. No-JIT mode (each local size would be a
fresh compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.spec import get_spec
from kernels_py.gemv_quant import split_blocks
from kernels_py.gguf_structs import BLOCK_Q8_0, random_blocks
from verify.clrun import run_cl
from verify.testing import device_params

# Quiet and signalling NaNs with payloads, both signs, inf, -0.0, the largest subnormal.
SPECIAL_HALVES = np.array([0x7E01, 0xFE3F, 0x7C01, 0xFD55, 0x7C00, 0x8000, 0x03FF],
                          np.uint16)


def _run(name, inputs, shape, local=None, size=None):
    spec = get_spec(name)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=size or spec.subgroup_size)
    return spec


def _raw_blocks(seed, nblocks):
    """Random bytes as Q8_0 blocks, the first scales set to SPECIAL_HALVES."""
    blocks = random_blocks(np.random.default_rng(seed), nblocks, "Q8_0")
    scales = blocks["d"].view(np.uint16)
    count = min(nblocks, SPECIAL_HALVES.size)
    scales[:count] = SPECIAL_HALVES[:count]
    return blocks


def _assert_matches_numpy(spec, inputs):
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=rtol, atol=atol)


@given(nblocks=st.integers(1, 40), local=st.sampled_from([1, 3, 16, 64]),
       seed=st.integers(0, 2**16))
def test_q8_0_convert_then_restore_round_trips_random_bytes(nblocks, local, seed):
    """Blocks of random bytes, NaN payloads among the scales: q and d are numpy's split, and
    restoring them gives the original bytes; the outputs start zeroed, so a kernel writing
    nothing would fail."""
    shape = {"rows": 1, "blocks": nblocks}
    inputs = get_spec("convert_block_q8_0").make_inputs(np.random.default_rng(seed), shape)
    inputs["blocks"] = _raw_blocks(seed, nblocks)
    original = inputs["blocks"].copy()
    _run("convert_block_q8_0", inputs, shape, (local,))
    want_q, want_d = split_blocks(original)
    assert inputs["q"].tobytes() == want_q.tobytes()
    assert inputs["d"].view(np.uint16).tolist() == want_d.view(np.uint16).tolist()
    inputs["blocks"] = np.zeros(original.nbytes, np.uint8)
    _run("restore_block_q8_0", inputs, shape, (local,))
    assert inputs["blocks"].tobytes() == original.tobytes()
    assert inputs["blocks"].size == nblocks * BLOCK_Q8_0.itemsize


@pytest.mark.parametrize("device", device_params())
def test_q8_0_twins_round_trip_nan_payloads_on_device(device):
    """The twins copy a scale's 16 bits (through ushort, not float): on each device the split
    of raw blocks with NaN-payload scales is numpy's bit for bit, and restoring it gives the
    original bytes."""
    nblocks = 37
    blocks = _raw_blocks(5, nblocks)
    source = get_spec("convert_block_q8_0").cl_path.read_text()
    launch = (-(-nblocks // 8) * 8,), (8,)
    zero_q, zero_d = np.zeros(nblocks * 32, np.int8), np.zeros(nblocks, np.float16)
    split = run_cl(device, source, "convert_block_q8_0", *launch,
                   [blocks.view(np.uint8), zero_q, zero_d, np.int32(nblocks)])
    q, d = split.buffers[1], split.buffers[2]
    want_q, want_d = split_blocks(blocks)
    assert q.tobytes() == want_q.tobytes()
    assert d.view(np.uint16).tolist() == want_d.view(np.uint16).tolist()
    back = run_cl(device, source, "restore_block_q8_0", *launch,
                  [q, d, np.zeros(blocks.nbytes, np.uint8), np.int32(nblocks)])
    assert back.buffers[2].tobytes() == blocks.tobytes()


@given(rows=st.integers(1, 6), blocks=st.integers(1, 40), local=st.sampled_from([1, 3, 16, 64]),
       seed=st.integers(0, 2**16))
def test_q8_0_split_gives_the_interleaved_bits(rows, blocks, local, seed):
    """gemv_q8_0_split gives gemv_q8_0's bits at the same local size (more work-items than
    blocks included) and matches numpy."""
    shape = {"rows": rows, "blocks": blocks}
    spec = get_spec("gemv_q8_0_split")
    split, interleaved = (spec.make_inputs(np.random.default_rng(seed), shape)
                          for _ in range(2))
    _run("gemv_q8_0_split", split, shape, (local,))
    _run("gemv_q8_0", interleaved, shape, (local,))
    _assert_matches_numpy(spec, split)
    assert split["y"].tobytes() == interleaved["y"].tobytes()


@pytest.mark.parametrize("fmt", ["q4_0", "q8_0"])
@given(rows=st.integers(1, 9), blocks=st.integers(1, 40), size=st.sampled_from([1, 4, 8, 16]),
       groups_of=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_split_subgroup_gives_the_interleaved_subgroup_bits(fmt, rows, blocks, size, groups_of,
                                                            seed):
    """gemv_{fmt}_split_subgroup gives gemv_{fmt}_subgroup's bits at each sub-group size and
    sub-groups per work-group (idle sub-groups included), and matches numpy."""
    shape = {"rows": rows, "blocks": blocks}
    spec = get_spec(f"gemv_{fmt}_split_subgroup")
    split, interleaved = (spec.make_inputs(np.random.default_rng(seed), shape)
                          for _ in range(2))
    _run(f"gemv_{fmt}_split_subgroup", split, shape, (size * groups_of,), size)
    _run(f"gemv_{fmt}_subgroup", interleaved, shape, (size * groups_of,), size)
    _assert_matches_numpy(spec, split)
    assert split["y"].tobytes() == interleaved["y"].tobytes()
