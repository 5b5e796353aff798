"""Quantized GEMV (Q4_0, Q8_0, Q4_K; interleaved, split and sub-group) against numpy on weights
dequantized by gguf, over drawn rows (one row included), blocks per row and local sizes; the
split-layout and sub-group variants give the interleaved one's bits, the N_DST-row variants
the one-row sub-group kernels' bits; in the traffic model the Q4_K kernels load each x value
once a row and the N_DST-row kernels once per N_DST rows; convert_block_q4_0 and
restore_block_q4_0 round-trip exactly. Edge cases of llama.cpp's bug reports: one-row matrices
(m = 1) on every variant, fewer rows than a work-group's sub-groups (the launch has idle
sub-groups: our kernels guard every read, and the simulator's bounds check catches a variant
that reads the weights of rows past the tensor, as llama.cpp's mul_mv kernels do), and row
lengths that are not whole blocks (GGUF has no partial blocks: the launch plans refuse them
with an error naming ncols). The quantized sub-group variants at sub-group sizes 8, 16 and 32
against their twins: tests/device/test_kernels_on_devices.py (family gemv_quant).

Sweeps run in no-JIT mode (each new local or sub-group size would be a fresh Numba compile).
"""


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim import (
    get_group_id,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
)
from clsim.errors import InvalidArgumentError, OutOfBoundsError
from clsim.spec import get_spec
from kernels_py.common import subgroup_sum_butterfly
from kernels_py.gemv_quant import q4_0_dot
from kernels_py.gguf_structs import QK

GEMV_SPECS = ["gemv_q4_0", "gemv_q8_0", "gemv_q4_0_split", "gemv_q4_0_split_lanes",
              "gemv_q4_0_subgroup", "gemv_q8_0_subgroup", "gemv_q4_k", "gemv_q4_k_subgroup",
              "gemv_q4_k_split", "gemv_q4_k_split_subgroup", "gemv_q4_k_split_lanes",
              "gemv_q4_0_nrows",
              "gemv_q8_0_nrows", "gemv_q4_0_split_subgroup", "gemv_q8_0_split",
              "gemv_q8_0_split_subgroup"]


def _run(name, inputs, shape, local=None, size=None):
    spec = get_spec(name)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=size or spec.subgroup_size)
    return spec


def _assert_matches_numpy(spec, inputs):
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["gemv_q4_0", "gemv_q8_0", "gemv_q4_0_split_lanes",
                                  "gemv_q4_k", "gemv_q4_k_split_lanes"])
@given(rows=st.integers(1, 6), blocks=st.integers(1, 12),
       local=st.sampled_from([1, 3, 16, 64]), seed=st.integers(0, 2**16))
def test_quantized_gemv_matches_dequantized_numpy(name, rows, blocks, local, seed):
    """y matches the float64 product of gguf-dequantized W and x, for any local size (more
    work-items than blocks included)."""
    spec = get_spec(name)
    shape = {"rows": rows, "blocks": blocks if "q4_k" not in name else 1 + blocks % 3}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    _run(name, inputs, shape, (local,))
    _assert_matches_numpy(spec, inputs)


@given(rows=st.integers(1, 6), blocks=st.integers(1, 40), size=st.sampled_from([1, 4, 8, 16]),
       seed=st.integers(0, 2**16))
def test_split_and_subgroup_layouts_give_the_interleaved_bits(rows, blocks, size, seed):
    """The split layout reads the same numbers in the same order: the same bits as the
    interleaved kernel at one work-item per row; the sub-group variants match numpy."""
    shape = {"rows": rows, "blocks": blocks}
    make = get_spec("gemv_q4_0").make_inputs
    a, b, c = (make(np.random.default_rng(seed), shape) for _ in range(3))
    _run("gemv_q4_0", a, shape, (1,))
    _run("gemv_q4_0_split", b, shape, (1,))
    assert a["y"].tobytes() == b["y"].tobytes()
    _assert_matches_numpy(_run("gemv_q4_0_subgroup", c, shape, (size * 2,), size), c)
    d = get_spec("gemv_q8_0").make_inputs(np.random.default_rng(seed), shape)
    _assert_matches_numpy(_run("gemv_q8_0_subgroup", d, shape, (size * 2,), size), d)


@given(rows=st.integers(1, 5), blocks=st.integers(1, 3), size=st.sampled_from([1, 4, 8, 16]),
       seed=st.integers(0, 2**16))
def test_q4_k_subgroup_gives_the_work_group_bits_at_one_lane(rows, blocks, size, seed):
    """At one lane per sub-group the sub-group Q4_K kernel adds in the work-group kernel's
    order (one work-item per row): the same bits; at any size it matches numpy."""
    shape = {"rows": rows, "blocks": blocks}
    make = get_spec("gemv_q4_k").make_inputs
    a, b, c = (make(np.random.default_rng(seed), shape) for _ in range(3))
    _run("gemv_q4_k", a, shape, (1,))
    _run("gemv_q4_k_subgroup", b, shape, (1,), 1)
    assert a["y"].tobytes() == b["y"].tobytes()
    _assert_matches_numpy(_run("gemv_q4_k_subgroup", c, shape, (size * 3,), size), c)


@pytest.mark.parametrize("name", GEMV_SPECS)
def test_one_row_matrix(name):
    """m = 1 (llama.cpp#18893: a kernel that assumed two rows): every variant, at its default
    launch plan (sub-group variants: four sub-groups per group, three of them idle)."""
    spec = get_spec(name)
    shape = {"rows": 1, "blocks": 2}
    inputs = spec.make_inputs(np.random.default_rng(7), shape)
    _run(name, inputs, shape)
    assert not np.isnan(inputs["y"]).any()
    _assert_matches_numpy(spec, inputs)


@pytest.mark.parametrize("name", GEMV_SPECS)
def test_rows_that_are_not_whole_blocks_are_refused(name):
    """ncols not a multiple of the block: an InvalidArgumentError naming ncols and the fix,
    not a silently dropped tail."""
    spec = get_spec(name)
    shape = {"rows": 2, "blocks": 1}
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    inputs["ncols"] = np.int32(int(inputs["ncols"]) - 5)
    with pytest.raises(InvalidArgumentError, match=r"ncols=\d+ is not a multiple") as info:
        spec.launch(inputs, shape, None)
    assert info.value.argument == "ncols"


def _x_load_bytes(name, shape, local=None, size=None):
    """Global bytes the launch's work-items ask of x, in the traffic model."""
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                       jit=False, traffic=True, subgroup_size=size or spec.subgroup_size)
    return sum(site.bytes for site in result.traffic.site_records
               if site.buffer == "x" and site.dtype == "float32" and site.kind == "load"
               and site.space == "global")  # helpers call a block buffer "x" too


@pytest.mark.parametrize("name", ["gemv_q4_k", "gemv_q4_k_subgroup", "gemv_q4_k_split",
                                  "gemv_q4_k_split_subgroup", "gemv_q4_k_split_lanes"])
def test_q4_k_loads_each_x_value_once_per_row(name):
    """A sub-block's two sums (q * x and x alone) share one load of each x value: x costs
    4 bytes a weight, not 8 (the kernels loaded it twice before)."""
    shape = {"rows": 3, "blocks": 2}
    assert _x_load_bytes(name, shape) == 4 * 3 * 2 * 256


@pytest.mark.parametrize("fmt", ["q4_0", "q8_0"])
@given(rows=st.integers(1, 9), blocks=st.integers(1, 40), size=st.sampled_from([1, 4, 8, 16]),
       groups_of=st.sampled_from([1, 3]), seed=st.integers(0, 2**16))
def test_n_dst_rows_give_the_one_row_bits(fmt, rows, blocks, size, groups_of, seed):
    """N_DST rows per sub-group, x loaded once for them: each row's sum is the
    one-row-per-sub-group kernel's bit for bit, at any sub-group size and sub-groups per
    work-group (rows < N_DST and a last sub-group with fewer rows included), and numpy's."""
    shape = {"rows": rows, "blocks": blocks}
    spec = get_spec(f"gemv_{fmt}_nrows")
    many, one = (spec.make_inputs(np.random.default_rng(seed), shape) for _ in range(2))
    _run(f"gemv_{fmt}_nrows", many, shape, (size * groups_of,), size)
    _run(f"gemv_{fmt}_subgroup", one, shape, (size * groups_of,), size)
    assert many["y"].tobytes() == one["y"].tobytes()
    _assert_matches_numpy(spec, many)


@pytest.mark.parametrize("fmt", ["q4_0", "q8_0"])
def test_n_dst_rows_load_x_once_for_all_their_rows(fmt):
    """In the traffic model x costs 4 bytes a column per N_DST rows (the last sub-group's
    partial set of rows loads it once too), against 4 bytes a weight for a row per
    sub-group."""
    shape = {"rows": 9, "blocks": 4}
    cols = 4 * QK
    assert _x_load_bytes(f"gemv_{fmt}_subgroup", shape) == 4 * 9 * cols
    assert _x_load_bytes(f"gemv_{fmt}_nrows", shape) == 4 * 3 * cols  # 9 rows: 3 sub-groups


N_DST = 4  # rows per sub-group, as llama.cpp's N_DST


@kernel
def gemv_q4_0_ndst_unguarded(blocks, x, y, nrows, ncols):
    """llama.cpp's shape: N_DST rows per sub-group, the store guarded, the reads not."""
    first = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST
    lane = get_sub_group_local_id()
    nb = ncols // QK
    for r in range(N_DST):
        acc = 0.0
        for b in range(lane, nb, get_sub_group_size()):
            acc += q4_0_dot(blocks, (first + r) * nb + b, x, b * QK)
        total = subgroup_sum_butterfly(acc)
        if lane == 0 and first + r < nrows:
            y[first + r] = total


@pytest.mark.parametrize("rows", [1, 3, 6])
def test_reading_rows_past_the_tensor_is_caught(rows):
    """Fewer rows than a sub-group's N_DST (or a last sub-group with fewer): the unguarded
    reads of row nrows are an OutOfBoundsError on the weights at the first block past the
    end; the library's one-row and N_DST-row sub-group kernels on the same input read
    nothing past it (the simulator's bounds check is on) and match numpy."""
    shape = {"rows": rows, "blocks": 2}
    spec = get_spec("gemv_q4_0_subgroup")
    inputs = spec.make_inputs(np.random.default_rng(1), shape)
    groups = -(-rows // N_DST)
    args = tuple(inputs[k] for k in ("blocks", "x", "y", "nrows", "ncols"))
    with pytest.raises(OutOfBoundsError) as info:
        clsim.run(gemv_q4_0_ndst_unguarded, (16 * groups,), (16,), args, jit=False,
                  subgroup_size=16)
    # the load is in q4_0_dot (parameter "w"); the error names the kernel's buffer
    assert (info.value.buffer, info.value.access) == ("blocks", "load")
    assert info.value.index == info.value.length == rows * 2  # the first block of row nrows
    for name in ("gemv_q4_0_subgroup", "gemv_q4_0_nrows"):
        inputs["y"][:] = np.nan
        _assert_matches_numpy(_run(name, inputs, shape), inputs)
    q8 = get_spec("gemv_q8_0_nrows").make_inputs(np.random.default_rng(1), shape)
    _assert_matches_numpy(_run("gemv_q8_0_nrows", q8, shape), q8)


def test_convert_then_restore_round_trips():
    """convert_block_q4_0 splits exactly as numpy does, restore_block_q4_0 puts every byte
    back (outputs start zeroed, so a kernel writing nothing would fail)."""
    shape = {"rows": 3, "blocks": 5}
    convert = get_spec("convert_block_q4_0")
    inputs = convert.make_inputs(np.random.default_rng(2), shape)
    original = inputs["blocks"].copy()
    _run("convert_block_q4_0", inputs, shape, (4,))
    for key, want in convert.reference(inputs).items():
        np.testing.assert_array_equal(inputs[key].view(np.uint8), want.view(np.uint8))
    inputs["blocks"] = np.zeros(original.nbytes, np.uint8)  # restore writes a byte buffer
    _run("restore_block_q4_0", inputs, shape, (4,))
    assert inputs["blocks"].tobytes() == original.tobytes()
