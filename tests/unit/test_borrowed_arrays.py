"""The launcher's borrowed arrays (clsim.runtime.intrinsics ``_borrowed``, ``_alive``).

The launcher hands ``_group`` arrays without an owner, so Numba's reference counting on them
is a null test instead of an atomic instruction per array per group; the scratch arrays it
allocates itself are kept alive to the end of its loop.
"""

from __future__ import annotations

import numba
import numpy as np

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_group_id, get_local_id, kernel, local_array
from clsim.compiler import launcher
from clsim.runtime import intrinsics_py
from clsim.runtime.intrinsics import _alive, _borrowed


@numba.njit
def _fill(a, value):
    a[:] = value


@numba.njit
def _borrow_and_write(a, n):
    view, count = _borrowed(a[1:]), _borrowed(n)
    _fill(view, 7.0)
    return count, view.shape[0]


def test_a_borrowed_array_is_the_same_memory_and_anything_else_passes_through():
    a = np.zeros(5)
    assert _borrow_and_write(a, np.int32(3)) == (3, 4)
    assert a.tolist() == [0.0, 7.0, 7.0, 7.0, 7.0]


@numba.njit
def _kept(n):
    owner = np.empty(n)
    borrowed = _borrowed(owner)
    borrowed[:] = 1.0
    other = np.zeros(n)  # reuses the owner's memory had it been freed already
    total = borrowed.sum()
    _alive(owner)
    return total, other.sum()


def test_alive_keeps_the_owner_of_a_borrowed_array():
    assert _kept(4096) == (4096.0, 0.0)


def test_the_python_forms_are_the_values_themselves():
    a = np.arange(3)
    assert intrinsics_py._borrowed(a) is a
    assert intrinsics_py._alive(a) is None


def test_the_launcher_borrows_its_parameters_and_keeps_its_scratch_to_the_end():
    for how in ("serial", "threads", "prange"):
        lines = launcher.source("v_x, v_n", how, True, "",
                                [("v_t", "_empty_float32(64)")]).splitlines()
        assert "    v_x = _borrowed(v_x)" in lines and "    _errs = _borrowed(_errs)" in lines
        owner = next(i for i, line in enumerate(lines) if "_ownv_t = _empty_float32(64)" in line)
        assert lines[owner + 1].strip() == "v_t = _borrowed(_ownv_t)"
        group = next(i for i, line in enumerate(lines) if line.strip().startswith("_group("))
        assert lines[-1].strip() == "_alive(_ownv_t)" and group < len(lines) - 1
        assert "v_t)" in lines[group]


@kernel
def _rows_sum(x, out):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    t[lid] = x[get_group_id(0) * 64 + lid]
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid == 0:
        total = 0.0
        for i in range(64):
            total += t[i]
        out[get_group_id(0)] = total


def test_launches_over_borrowed_arrays_give_the_same_results():
    x = np.random.default_rng(0).standard_normal(64 * 300).astype(np.float32)
    outputs = []
    for options in ({}, {"parallel": False}, {"traffic": True}, {"checks": "all"},
                    {"jit": False}):
        out = np.zeros(300, np.float32)
        clsim.run(_rows_sum, (64 * 300,), (64,), (x, out), **options)
        outputs.append(out)
    np.testing.assert_allclose(outputs[0], x.reshape(300, 64).sum(axis=1), rtol=1e-4,
                               atol=1e-4)
    for out in outputs[1:]:
        assert np.array_equal(out, outputs[0])
