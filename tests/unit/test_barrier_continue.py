"""A ``continue`` under a condition that differs between work-items, after the last barrier
of a loop (ggml's flash attention: load a tile, barrier, skip the rows a work-item does not
own): every work-item still reaches each barrier once per iteration, so the kernel is valid
OpenCL and runs; a ``continue`` with a barrier after it is still refused."""

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_local_id, kernel, local_array


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


def test_a_varying_continue_that_skips_a_barrier_is_still_refused():
    with pytest.raises(clsim.KernelCompileError, match="continue"):
        clsim.run(continue_before_a_barrier, (4,), (4,),
                  (np.zeros(4, np.float32), np.zeros(4, np.float32), np.int32(2)), jit=False)
