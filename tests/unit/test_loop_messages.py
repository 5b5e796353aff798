"""Barrier loops whose counter is per work-item: the right message, or the masked path.

Contracts (issue 11, "Messages"): a barrier loop with a 'continue' under a condition that
differs between work-items (or inside such an if) is barrier divergence at run time (issue 22:
only the run can tell); a counter really assigned elsewhere is refused with that message and
the line; a `for` loop holding sub_group_broadcast inside a sub-group-uniform if runs (masked, as
docs/subgroups.md promises) and gives the per-sub-group values.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    KernelCompileError,
    barrier,
    get_local_id,
    get_sub_group_id,
    get_sub_group_local_id,
    kernel,
    sub_group_broadcast,
)

F32 = np.float32


@kernel
def varying_continue(x, out):
    lid = get_local_id(0)
    s = np.float32(0.0)
    for _j in range(4):
        if lid % 2 == 0:
            continue
        s += x[lid]
        barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = s


@kernel
def counter_assigned_elsewhere(x, out):
    lid = get_local_id(0)
    j = lid
    out[lid] = x[j]
    for j in range(4):  # noqa: B007 (the reuse of j is what is tested)
        barrier(CLK_LOCAL_MEM_FENCE)


@kernel
def barrier_loop_in_varying_if(x, out):
    lid = get_local_id(0)
    if lid < 32:
        for _j in range(4):
            barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = x[lid]


def test_a_reused_barrier_loop_counter_is_refused_with_its_line():
    with pytest.raises(KernelCompileError,
                       match=r"loop variable 'j' .* must not be assigned elsewhere \(line \d+\)"):
        clsim.run(counter_assigned_elsewhere, (64,), (64,),
                  (np.ones(64, F32), np.zeros(64, F32)), jit=False)


@pytest.mark.parametrize("kern, match", [
    (varying_continue, r"this 'if' around a barrier is true for 32 work-items and false for "
                       r"32 .*\n.*if lid % 2 == 0"),
    (barrier_loop_in_varying_if, r"this 'if' around a barrier is true for 32 work-items and "
                                 r"false for 32 .*\n.*if lid < 32"),
])
def test_a_varying_condition_around_a_barrier_loop_is_divergence_at_run_time(kern, match):
    """Only the run can tell whether such a condition agrees across the group (issue 22)."""
    with pytest.raises(clsim.BarrierDivergenceError, match=match):
        clsim.run(kern, (64,), (64,), (np.ones(64, F32), np.zeros(64, F32)), jit=False)


@kernel
def broadcast_loop_in_subgroup_if(x, out):
    lid = get_local_id(0)
    s = np.float32(0.0)
    if get_sub_group_id() == 1:
        for j in range(4):
            s += sub_group_broadcast(x[lid], j) * np.float32(j + 1)
    out[lid] = s + np.float32(get_sub_group_local_id())


@pytest.mark.parametrize("jit", [False, True])
def test_subgroup_broadcast_loop_inside_subgroup_uniform_if(jit):
    """Sub-group 1 sums lanes 0..3 of its own values weighted by j + 1; the others add 0."""
    x = np.arange(64, dtype=F32) * F32(0.5)
    out = np.zeros(64, F32)
    clsim.run(broadcast_loop_in_subgroup_if, (64,), (64,), (x, out), jit=jit, subgroup_size=16)
    want = np.tile(np.arange(16, dtype=F32), 4)
    want[16:32] += sum(x[16 + j] * F32(j + 1) for j in range(4))
    np.testing.assert_array_equal(out, want)


@kernel
def broadcast_loop_with_break(x, out, stop):
    lid = get_local_id(0)
    s = np.float32(0.0)
    j = 0
    if get_sub_group_id() == 1:
        for j in range(4):
            s += sub_group_broadcast(x[lid], j)
            if j == stop:
                break
    out[lid] = s + np.float32(j)


@pytest.mark.parametrize("jit", [False, True])
def test_masked_for_loop_with_break_leaves_c_value_of_its_variable(jit):
    """A masked barrier loop (sub-group collective under a sub-group-uniform if) left by
    break keeps the value at the break; run to its end, C's value (4, not 3)."""
    x = np.arange(64, dtype=F32)
    for stop, last in ((1, 1), (9, 4)):
        out = np.zeros(64, F32)
        clsim.run(broadcast_loop_with_break, (64,), (64,), (x, out, np.int32(stop)), jit=jit,
                  subgroup_size=16)
        want = np.zeros(64, F32)
        want[16:32] = sum(x[16 + j] for j in range(min(stop, 3) + 1)) + F32(last)
        np.testing.assert_array_equal(out, want)


@kernel
def _np_bounds(c, K):
    tile = clsim.local_array(16, np.float32)
    for t in range(np.int64(0), np.int64(K), np.int64(16)):  # the C front end's form
        tile[get_local_id(0)] = np.float32(t)
        barrier(CLK_LOCAL_MEM_FENCE)
    c[get_local_id(0)] = tile[0]


def test_barrier_loop_bounds_through_numpy_casts_are_uniform():
    """``np.int64(K)`` is K for every work-item: its ``np`` is no per-item variable."""
    c = np.zeros(16, F32)
    clsim.run(_np_bounds, (16,), (16,), [c, np.int32(40)], jit=False)
    assert (c == 32).all()
