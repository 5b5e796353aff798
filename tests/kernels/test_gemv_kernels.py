"""The gemv family (y = W x: a row per work-group, a row per sub-group, N_DST rows per
sub-group; half weights through half types and through vload_half) against numpy over drawn
shapes with tails, local sizes and sub-group sizes, and the llama.cpp edge cases: one row,
fewer rows than rows-per-sub-group, a column count that is not a multiple of anything. A
planted variant without the row guard (llama.cpp's bug: it reads past the tensor when the rows
do not fill the last sub-group) is caught by the bounds check. The half-weight variants give
the float32 kernels' bits on the weights converted to float32.

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
    private_array,
)
from clsim.errors import OutOfBoundsError
from clsim.spec import get_spec
from kernels_py.common import subgroup_sum_butterfly
from kernels_py.gemv import N_DST

SUBGROUP_SIZES = st.sampled_from([1, 2, 4, 8, 16, 32])


def _run(name, shape, local=None, size=None, seed=0, kernel_fn=None):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    extra = {"subgroup_size": size} if size and spec.subgroup_size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(kernel_fn or spec.kernel, launch.global_size, launch.local_size, launch.args,
              jit=False, subgroup_size=size or spec.subgroup_size)
    return spec, inputs


def _close(spec, inputs):
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=rtol, atol=atol)


HALF_TWINS = {"gemv_half": "gemv", "gemv_vload_half": "gemv",
              "gemv_half_subgroup": "gemv_subgroup", "gemv_vload_half_subgroup": "gemv_subgroup",
              "gemv_vload_half_nrows": "gemv_nrows", "gemv_half_nrows": "gemv_nrows"}


@pytest.mark.parametrize("name", ["gemv", "gemv_half", "gemv_vload_half"])
@given(rows=st.integers(1, 9), cols=st.integers(1, 700),
       local=st.sampled_from([1, 7, 32, 100, 256]), seed=st.integers(0, 2**16))
def test_gemv_row_per_group(name, rows, cols, local, seed):
    """A row per work-group matches numpy for any local size (a tree over any count)."""
    spec, inputs = _run(name, {"rows": rows, "cols": cols}, (local,), seed=seed)
    _close(spec, inputs)


@pytest.mark.parametrize("name", ["gemv_subgroup", "gemv_nrows", "gemv_half_subgroup",
                                  "gemv_vload_half_subgroup", "gemv_vload_half_nrows",
                                  "gemv_half_nrows"])
@given(rows=st.integers(1, 13), cols=st.integers(1, 400), size=SUBGROUP_SIZES,
       subgroups=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_gemv_subgroup_variants(name, rows, cols, size, subgroups, seed):
    """A row (or N_DST rows) per sub-group matches numpy for power-of-two sub-group sizes and
    any number of sub-groups per work-group; rows past the end stay untouched (NaN-filled
    output would show a stray write, and the bounds check a stray read)."""
    spec, inputs = _run(name, {"rows": rows, "cols": cols}, (size * subgroups,), size, seed)
    _close(spec, inputs)


@pytest.mark.parametrize("name", ["gemv", "gemv_subgroup", "gemv_nrows", *HALF_TWINS])
@pytest.mark.parametrize("rows", [1, N_DST - 1, N_DST + 1])
def test_gemv_llama_cpp_edge_shapes(name, rows):
    """One row, fewer rows than N_DST and one more than N_DST, with K = 33 (a tail in every
    lane split): all three variants match numpy and never touch memory past the tensor."""
    spec, inputs = _run(name, {"rows": rows, "cols": 33})
    _close(spec, inputs)


@pytest.mark.parametrize("name", sorted(HALF_TWINS))
@given(rows=st.integers(1, 9), cols=st.integers(1, 300), size=st.sampled_from([4, 8, 16]),
       seed=st.integers(0, 2**16))
def test_half_weights_give_the_float32_kernels_bits(name, rows, cols, size, seed):
    """Half weights converted to float before use: each half-weight variant gives, bit for
    bit, its float32 twin's output on the weights converted to float32 (same launch)."""
    shape = {"rows": rows, "cols": cols}
    _, inputs = _run(name, shape, (size * 2,), size, seed)
    assert inputs["w"].dtype == np.float16
    twin = get_spec(HALF_TWINS[name])
    args = dict(inputs, w=inputs["w"].astype(np.float32), y=np.full_like(inputs["y"], np.nan))
    extra = {"subgroup_size": size} if twin.subgroup_size else {}
    launch = twin.launch(args, shape, (size * 2,), **extra)
    clsim.run(twin.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=size)
    assert inputs["y"].tobytes() == args["y"].tobytes()


def test_half_weights_halve_the_matrix_bytes():
    """In the traffic model a row per work-group reads 2 bytes a weight instead of 4 (x
    unchanged): the global bytes of 64 x 256 fall from 8 * rows * cols to 6 * rows * cols."""
    shape = {"rows": 64, "cols": 256}
    totals = {}
    for name in ("gemv", "gemv_half", "gemv_vload_half"):
        spec = get_spec(name)
        inputs = spec.make_inputs(np.random.default_rng(0), shape)
        launch = spec.launch(inputs, shape, None)
        result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                           jit=False, traffic=True)
        totals[name] = result.traffic.totals["global_load_bytes"]
    assert totals["gemv"] == 8 * 64 * 256
    assert totals["gemv_half"] == totals["gemv_vload_half"] == 6 * 64 * 256


@kernel
def gemv_nrows_unguarded(w, x, y, nrows, ncols):
    """gemv_nrows without the row guard on the loads (as llama.cpp's kernels)."""
    first = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if first < nrows:
        acc = private_array(N_DST, np.float32)
        for z in range(N_DST):
            acc[z] = 0.0
        for c in range(lane, ncols, width):
            xc = x[c]
            for r in range(N_DST):
                acc[r] += w[(first + r) * ncols + c] * xc
        k = 0
        while k < N_DST:
            total = subgroup_sum_butterfly(acc[k])
            if lane == 0 and first + k < nrows:
                y[first + k] = total
            k += 1


def test_bounds_check_catches_a_gemv_reading_past_the_tensor():
    """With fewer rows than N_DST the unguarded variant reads W past its end: the simulator's
    bounds check stops it and names the buffer; with a multiple of N_DST rows it is fine."""
    with pytest.raises(OutOfBoundsError, match="w"):
        _run("gemv_nrows", {"rows": N_DST - 1, "cols": 8}, kernel_fn=gemv_nrows_unguarded)
    spec, inputs = _run("gemv_nrows", {"rows": N_DST, "cols": 8},
                        kernel_fn=gemv_nrows_unguarded)
    _close(spec, inputs)


def test_report_shows_the_half_weight_variants_side_by_side(tmp_path, capsys):
    """clsim report gemv puts the float32 and half-weight variants in one table."""
    from clsim.cli import main

    assert main(["report", "gemv", "--shape", "rows=5,cols=40", "--no-jit",
                 "--json", str(tmp_path / "report.json")]) == 0
    header = next(line for line in capsys.readouterr().out.splitlines()
                  if line.startswith("metric"))
    assert {"gemv", "gemv_subgroup", "gemv_nrows", *HALF_TWINS, "gemv_half8",
            "gemv_vload_half8"} <= set(header.split()[1:])
