"""Barrier loops ggml writes. A ``continue`` under a condition that differs between
work-items, after the last barrier of a loop (flash attention: load a tile, barrier, skip the
rows a work-item does not own): every work-item still reaches each barrier once per
iteration, so the kernel is valid OpenCL and runs; a ``continue`` with a barrier after it must
be taken by all work-items of the group or none, checked at run time. A loop bound computed by
a helper that only does arithmetic on its arguments (conv2d's ``splitWork(CRS, BS)``) is as
uniform as the arguments; one that reads memory is evaluated by every work-item and checked to
agree at run time."""

import numpy as np
import pytest

import clsim
from clsim import (CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel,
                   local_array)


@kernel
def skip_rows(x, out, n):
    lid = get_local_id(0)
    tile = local_array(4, np.float32)
    acc = 0.0
    for k in range(3):
        barrier(CLK_LOCAL_MEM_FENCE)  # the previous iteration's reads are done
        tile[lid] = x[k * 4 + lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        if lid >= n:
            acc -= 1.0
            continue
        acc += tile[(lid + 1) % 4] * (k + 1)
    out[lid] = acc


@pytest.mark.parametrize("jit, checks", [(False, "all"), (True, "all"), (True, "none")])
def test_a_varying_continue_after_the_last_barrier_runs(jit, checks):
    x = np.arange(12, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(skip_rows, (4,), (4,), (x, out, np.int32(2)), jit=jit, checks=checks)
    lid = np.arange(4)
    owned = sum(x[k * 4 + (lid + 1) % 4] * (k + 1) for k in range(3))
    np.testing.assert_array_equal(out, np.where(lid < 2, owned, -3.0).astype(np.float32))


@kernel
def continue_before_a_barrier(x, out, n):
    lid = get_local_id(0)
    tile = local_array(4, np.float32)
    for k in range(3):
        if lid >= n:
            continue
        barrier(CLK_LOCAL_MEM_FENCE)
        tile[lid] = x[k]
    out[lid] = 1.0


def test_a_continue_that_skips_a_barrier_must_agree_across_the_group_at_run_time():
    # OpenCL leaves it undefined unless the whole group agrees, which only the run can tell
    with pytest.raises(clsim.BarrierDivergenceError, match=r"lid=\(2,\) true.*\n.*if lid >= n"):
        clsim.run(continue_before_a_barrier, (4,), (4,),
                  (np.zeros(4, np.float32), np.zeros(4, np.float32), np.int32(2)), jit=False)


@clsim.func
def split_work(n, block):
    return (n + block - 1) // block


@clsim.func
def first(x):
    return np.int32(x[0])


@kernel
def blocks(x, out, n):
    lid = get_local_id(0)
    tile = local_array(4, np.float32)
    acc = 0.0
    for b in range(split_work(n, 4)):
        barrier(CLK_LOCAL_MEM_FENCE)
        tile[lid] = x[b * 4 + lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        acc += tile[3 - lid]
    out[lid] = acc


@pytest.mark.parametrize("jit", [False, True])
def test_a_barrier_loop_bound_from_an_arithmetic_helper_is_uniform(jit):
    x = np.arange(12, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(blocks, (4,), (4,), (x, out, np.int32(10)), jit=jit, checks="all")
    np.testing.assert_array_equal(out, x.reshape(3, 4)[:, ::-1].sum(axis=0))


@kernel
def blocks_from_memory(x, out, n):
    lid = get_local_id(0)
    tile = local_array(4, np.float32)
    for b in range(first(n)):
        barrier(CLK_LOCAL_MEM_FENCE)
        tile[lid] = x[b]
    out[lid] = 1.0


def test_a_barrier_loop_bound_read_from_memory_by_a_helper_is_checked_at_run_time():
    out = np.zeros(4, np.float32)
    clsim.run(blocks_from_memory, (4,), (4,),
              (np.zeros(4, np.float32), out, np.ones(1, np.int32)), jit=False)
    np.testing.assert_array_equal(out, 1.0)


REDUCE_CL = """
#define LANES 4u
#define REDUCE(p, t, l) ((LANES == 1u) ? (p) : reduce_shmem((p), (t), (l)))
float reduce_shmem(float partial, __local float *temp, uint lane) {
    temp[lane] = partial;
    barrier(CLK_LOCAL_MEM_FENCE);
    float s = temp[0] + temp[1] + temp[2] + temp[3];
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}
kernel void k(global float *x, global float *out) {
    __local float temp[4];
    uint lid = get_local_id(0);
    const float total = REDUCE(x[lid], temp, lid);
    out[lid] = total * 2.0f;
}
"""


@pytest.mark.parametrize("jit", [False, True])
def test_a_barrier_helper_behind_a_constant_condition_is_called_as_a_statement(jit):
    """The front end keeps only the side a constant ``?:`` takes, so a helper with a barrier
    under ``(LANES == 1u) ? p : reduce(p)`` (ggml's gated_delta_net) is a plain call."""
    kernel = clsim.load_cl(REDUCE_CL, "k")
    x = np.array([1.0, 2.0, 3.0, 4.5], np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(kernel, (4,), (4,), (x, out), jit=jit, checks="all")
    np.testing.assert_array_equal(out, [21.0] * 4)


@kernel
def rows_by_global_id(x, out):
    lid = get_local_id(0)
    row = get_global_id(1)  # one work-item wide in dimension 1: the group's row
    tile = local_array(4, np.float32)
    acc = 0.0
    for k in range(row + 1):
        barrier(CLK_LOCAL_MEM_FENCE)
        tile[lid] = x[k * 4 + lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        acc += tile[3 - lid]
    out[row * 4 + lid] = acc


def test_a_barrier_loop_bound_by_a_global_id_of_a_one_wide_dimension_runs():
    """ggml's flash attention launches (64, 1, 1) groups and bounds its loops by
    get_global_id(2): with a local size of 1 there it is the group id, the same for the
    whole group; with a local size of 2 it differs within a group: barrier divergence."""
    x = np.arange(12, dtype=np.float32)
    out = np.zeros(12, np.float32)
    clsim.run(rows_by_global_id, (4, 3), (4, 1), (x, out), jit=False, checks="all")
    rev = x.reshape(3, 4)[:, ::-1]
    np.testing.assert_array_equal(out.reshape(3, 4), np.cumsum(rev, axis=0))
    with pytest.raises(clsim.BarrierDivergenceError, match=r"is 1 for lid=\(0, 0\) but 2"):
        clsim.run(rows_by_global_id, (4, 2), (4, 2), (x, np.zeros(12, np.float32)),
                  jit=False)
