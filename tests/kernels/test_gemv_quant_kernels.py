"""Quantized GEMV (Q4_0, Q8_0; interleaved, split and sub-group) against numpy on weights
dequantized by gguf, over drawn rows (one row included), blocks per row and local sizes; the
split-layout and sub-group variants give the interleaved one's bits; convert_block_q4_0 and
restore_block_q4_0 round-trip exactly.

Sweeps run in no-JIT mode (each new local or sub-group size would be a fresh Numba compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.spec import get_spec


def _run(name, inputs, shape, local=None, size=None):
    spec = get_spec(name)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=size or spec.subgroup_size)
    return spec


@pytest.mark.parametrize("name", ["gemv_q4_0", "gemv_q8_0", "gemv_q4_0_split_lanes"])
@given(rows=st.integers(1, 6), blocks=st.integers(1, 12),
       local=st.sampled_from([1, 3, 16, 64]), seed=st.integers(0, 2**16))
def test_quantized_gemv_matches_dequantized_numpy(name, rows, blocks, local, seed):
    """y matches the float64 product of gguf-dequantized W and x, for any local size (more
    work-items than blocks included)."""
    spec = get_spec(name)
    shape = {"rows": rows, "blocks": blocks}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    _run(name, inputs, shape, (local,))
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=rtol, atol=atol)


@given(rows=st.integers(1, 6), blocks=st.integers(1, 40), size=st.sampled_from([1, 4, 8, 16]),
       seed=st.integers(0, 2**16))
def test_split_and_subgroup_layouts_give_the_interleaved_bits(rows, blocks, size, seed):
    """The split layout reads the same numbers in the same order: the same bits as the
    interleaved kernel at one work-item per row; the sub-group variant matches numpy."""
    shape = {"rows": rows, "blocks": blocks}
    make = get_spec("gemv_q4_0").make_inputs
    a, b, c = (make(np.random.default_rng(seed), shape) for _ in range(3))
    _run("gemv_q4_0", a, shape, (1,))
    _run("gemv_q4_0_split", b, shape, (1,))
    spec = _run("gemv_q4_0_subgroup", c, shape, (size * 2,), size)
    assert a["y"].tobytes() == b["y"].tobytes()
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(c["y"], spec.reference(c)["y"], rtol=rtol, atol=atol)


def test_convert_then_restore_round_trips():
    """convert_block_q4_0 splits exactly as numpy does, restore_block_q4_0 puts every byte
    back (outputs start zeroed, so a kernel writing nothing would fail)."""
    shape = {"rows": 3, "blocks": 5}
    convert = get_spec("convert_block_q4_0")
    inputs = convert.make_inputs(np.random.default_rng(2), shape)
    original = inputs["blocks"].copy()
    _run("convert_block_q4_0", inputs, shape, (4,))
    for key, want in convert.reference(inputs).items():
        np.testing.assert_array_equal(inputs[key], want)
    inputs["blocks"][:] = 0
    _run("restore_block_q4_0", inputs, shape, (4,))
    np.testing.assert_array_equal(inputs["blocks"], original)
