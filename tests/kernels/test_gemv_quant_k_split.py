"""Q4_K on the split layout (kernels_py.gemv_quant_k_split): convert_block_q4_k splits as
numpy does and restore_block_q4_k puts every byte back, on random raw bytes (every half
pattern as d and dmin, NaN payloads included); the split GEMVs match numpy on gguf-dequantized
weights and give the interleaved kernels' bits (same numbers, same order), at any local size
and sub-group size. Device agreement (both twins, every device; sub-group sizes 8, 16, 32) is
in tests/device/test_kernels_on_devices.py; one-row matrices and refused partial blocks in
test_gemv_quant_kernels.py. Runs in no-JIT mode (each local size would be a fresh compile).
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.spec import get_spec
from kernels_py.gemv_quant_k_split import split_q4_k
from kernels_py.gguf_structs import BLOCK_Q4_K, random_blocks

SPLIT = ("q", "s", "d", "dm")


def _run(name, inputs, shape, local=None, size=None):
    spec = get_spec(name)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=size or spec.subgroup_size)
    return spec


@given(nblocks=st.integers(1, 40), local=st.sampled_from([1, 3, 16, 64]),
       seed=st.integers(0, 2**16))
def test_convert_then_restore_round_trips_random_bytes(nblocks, local, seed):
    """Blocks of random bytes (any half, NaN and inf included, any six-bit scale packing):
    the four buffers are numpy's split, and restoring them gives the original bytes; the
    outputs start zeroed, so a kernel writing nothing would fail."""
    shape = {"rows": 1, "blocks": nblocks}
    inputs = get_spec("convert_block_q4_k").make_inputs(np.random.default_rng(seed), shape)
    inputs["blocks"] = random_blocks(np.random.default_rng(seed), nblocks, "Q4_K")
    original = inputs["blocks"].copy()
    _run("convert_block_q4_k", inputs, shape, (local,))
    want = split_q4_k(original)
    for name in SPLIT:
        assert inputs[name].tobytes() == want[name].tobytes(), name
    inputs["blocks"] = np.zeros(original.nbytes, np.uint8)
    _run("restore_block_q4_k", inputs, shape, (local,))
    assert inputs["blocks"].tobytes() == original.tobytes()
    assert inputs["blocks"].size == nblocks * BLOCK_Q4_K.itemsize


@given(rows=st.integers(1, 6), blocks=st.integers(1, 3), local=st.sampled_from([1, 3, 8, 64]),
       seed=st.integers(0, 2**16))
def test_split_gemv_matches_numpy_and_gives_the_interleaved_bits(rows, blocks, local, seed):
    """gemv_q4_k_split matches the float64 product of gguf-dequantized W and x, and gives
    gemv_q4_k's bits at the same local size (more work-items than sub-blocks included)."""
    shape = {"rows": rows, "blocks": blocks}
    spec = get_spec("gemv_q4_k_split")
    split, interleaved = (spec.make_inputs(np.random.default_rng(seed), shape)
                          for _ in range(2))
    _run("gemv_q4_k_split", split, shape, (local,))
    _run("gemv_q4_k", interleaved, shape, (local,))
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(split["y"], spec.reference(split)["y"], rtol=rtol, atol=atol)
    assert split["y"].tobytes() == interleaved["y"].tobytes()


@given(rows=st.integers(1, 6), blocks=st.integers(1, 3), size=st.sampled_from([1, 4, 8, 16]),
       groups_of=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_split_subgroup_gemv_gives_the_interleaved_subgroup_bits(rows, blocks, size,
                                                                 groups_of, seed):
    """gemv_q4_k_split_subgroup gives gemv_q4_k_subgroup's bits at each sub-group size and
    sub-groups per work-group (idle sub-groups included), and matches numpy."""
    shape = {"rows": rows, "blocks": blocks}
    spec = get_spec("gemv_q4_k_split_subgroup")
    split, interleaved = (spec.make_inputs(np.random.default_rng(seed), shape)
                          for _ in range(2))
    _run("gemv_q4_k_split_subgroup", split, shape, (size * groups_of,), size)
    _run("gemv_q4_k_subgroup", interleaved, shape, (size * groups_of,), size)
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(split["y"], spec.reference(split)["y"], rtol=rtol, atol=atol)
    assert split["y"].tobytes() == interleaved["y"].tobytes()
