"""Barrier-guarding conditions uniform only at run time (ggml's flash attention: a value read
from local memory after a barrier guards a loop with barriers). The compiler cannot prove them
uniform, so each work-item evaluates them, the run checks that the group agrees (else
``BarrierDivergenceError`` naming the line and two work-items) and the group takes the branch
or runs the loop once for all. Results must be bit-identical to a version with the value
hoisted by hand into a kernel argument."""

import numpy as np
import pytest

import clsim
from clsim import (CLK_LOCAL_MEM_FENCE, barrier, get_group_id, get_local_id, get_sub_group_id,
                   kernel, local_array, sub_group_broadcast)

MODES = [(False, "all", False), (True, "all", False), (True, "bounds", True),
         (True, "none", False)]


@kernel
def guarded_by_local(x, out, flag):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    head = local_array(1, np.float32)
    if lid == 0:
        head[0] = x[flag]
    barrier(CLK_LOCAL_MEM_FENCE)
    total = head[0]  # the same for every work-item, but read from memory
    acc = 0.0
    if total > 0.0:
        for i in range(3):
            shared[lid] = x[i * 4 + lid] * total
            barrier(CLK_LOCAL_MEM_FENCE)
            acc += shared[(lid + 1) % 4]
            barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = acc


@kernel
def guarded_by_hand(x, out, total):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    acc = 0.0
    if total > 0.0:
        for i in range(3):
            shared[lid] = x[i * 4 + lid] * total
            barrier(CLK_LOCAL_MEM_FENCE)
            acc += shared[(lid + 1) % 4]
            barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = acc


def _run(k, args, mode, local=4):
    jit, checks, traffic = mode
    return clsim.run(k, (local,), (local,), args, jit=jit, checks=checks, traffic=traffic)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("flag", [1, 0])  # x[1] > 0 takes the branch, x[0] == 0 does not
def test_a_condition_read_after_a_barrier_runs_like_the_hoisted_one(mode, flag):
    x = (np.arange(12, dtype=np.float32) + 0.5) / 7
    x[0] = 0.0
    out, want = np.zeros(4, np.float32), np.zeros(4, np.float32)
    _run(guarded_by_local, (x, out, np.int32(flag)), mode)
    _run(guarded_by_hand, (x, want, x[flag]), MODES[0])  # the reference: plain Python, no compile
    np.testing.assert_array_equal(out, want)
    assert (out != 0).all() == (flag == 1)


@kernel
def guarded_by_own_value(x, out):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    mine = x[lid]
    if mine > 0.0:
        shared[lid] = mine
        barrier(CLK_LOCAL_MEM_FENCE)
        out[lid] = shared[(lid + 1) % 4]


@pytest.mark.parametrize("jit", [False, True])
def test_a_condition_that_differs_is_divergence_naming_line_and_work_items(jit):
    x = np.array([1, 1, -1, 1], np.float32)
    with pytest.raises(clsim.BarrierDivergenceError,
                       match=r"guarded_by_own_value.*true for 3 .* false for 1 "
                             r"\(e\.g\. lid=\(0,\) true, lid=\(2,\) false\).*\n.*if mine > 0"):
        clsim.run(guarded_by_own_value, (4,), (4,), (x, np.zeros(4, np.float32)), jit=jit)


@kernel
def bound_from_memory(x, counts, out):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    acc = 0.0
    for i in range(counts[lid // 8]):  # one count per 8 work-items: the same within a group
        shared[lid % 4] = x[i * 4 + lid % 4]
        barrier(CLK_LOCAL_MEM_FENCE)
        acc += shared[(lid + 1) % 4]
        barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = acc


@pytest.mark.parametrize("mode", MODES)
def test_a_loop_bound_read_from_memory_runs_that_many_times(mode):
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(4, np.float32)
    _run(bound_from_memory, (x, np.array([3], np.int32), out), mode)
    lid = np.arange(4)
    np.testing.assert_array_equal(out, sum(x[i * 4 + (lid + 1) % 4] for i in range(3)))


@kernel
def bound_per_work_item(x, counts, out):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    for i in range(1, counts[lid]):
        shared[lid] = x[i]
        barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = 1.0


@pytest.mark.parametrize("jit", [False, True])
def test_a_loop_bound_that_differs_is_divergence_with_both_values(jit):
    counts = np.array([3, 3, 5, 3], np.int32)
    with pytest.raises(clsim.BarrierDivergenceError,
                       match=r"bound_per_work_item.*argument 2 of the range .* is 3 for "
                             r"lid=\(0,\) but 5 for lid=\(2,\).*\n.*for i in range"):
        clsim.run(bound_per_work_item, (4,), (4,),
                  (np.zeros(8, np.float32), counts, np.zeros(4, np.float32)), jit=jit)


@kernel
def skip_by_tile(x, skip, out):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    acc = 0.0
    for k in range(4):
        barrier(CLK_LOCAL_MEM_FENCE)  # the previous tile's reads are done
        shared[lid] = skip[k]
        barrier(CLK_LOCAL_MEM_FENCE)
        skipped = shared[0]  # the whole group skips this tile or none of it does
        barrier(CLK_LOCAL_MEM_FENCE)
        if skipped != 0:
            continue
        shared[lid] = x[k * 4 + lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        acc += shared[(lid + 3) % 4]
    out[lid] = acc


@pytest.mark.parametrize("mode", MODES)
def test_a_continue_under_a_run_time_uniform_condition_skips_the_tile(mode):
    x = np.arange(16, dtype=np.float32)
    skip = np.array([0, 1, 0, 1], np.float32)
    out = np.zeros(4, np.float32)
    _run(skip_by_tile, (x, skip, out), mode)
    lid = np.arange(4)
    np.testing.assert_array_equal(out, x[(lid + 3) % 4] + x[8 + (lid + 3) % 4])


@clsim.func
def slope_of(head, bias):
    if bias <= 0.0:
        return np.float32(1.0)
    return np.float32(head) * bias


@kernel
def hoisted_helper_2d(x, out, bias):
    lid = get_local_id(0)
    head = get_group_id(1)
    slope = slope_of(head, bias)  # group-level code before the first region (ggml's alibi)
    shared = local_array(4, np.float32)
    shared[lid] = x[lid] * slope
    barrier(CLK_LOCAL_MEM_FENCE)
    out[head * 4 + lid] = shared[3 - lid]


@pytest.mark.parametrize("jit", [False, True])
def test_a_helper_hoisted_before_the_first_region_of_a_2d_kernel_compiles(jit):
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(hoisted_helper_2d, (4, 2), (4, 1), (x, out, np.float32(2.0)), jit=jit)
    np.testing.assert_array_equal(out, [0, 0, 0, 0, 6, 4, 2, 0])  # head 0: slope 0


@kernel
def sub_group_if_in_barrier_loop(x, out, n):
    lid = get_local_id(0)
    shared = local_array(4, np.float32)
    y = 0
    for k in range(2):
        shared[lid] = x[lid] + k
        barrier(CLK_LOCAL_MEM_FENCE)
        if get_sub_group_id() == 1:  # the same within a sub-group only: masked, not hoisted
            y = n * 2
            shared[lid] = sub_group_broadcast(shared[lid], 0)
        barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = y + shared[lid]


@pytest.mark.parametrize("jit", [False, True])
def test_an_if_around_sub_group_cuts_in_a_barrier_loop_stays_per_sub_group(jit):
    out = np.zeros(4, np.float32)
    clsim.run(sub_group_if_in_barrier_loop, (4,), (4,),
              (np.arange(4, dtype=np.float32), out, np.int32(5)), subgroup_size=2, jit=jit)
    np.testing.assert_array_equal(out, [1, 2, 13, 13])  # sub-group 1: y = 10, lane 0's x + 1
