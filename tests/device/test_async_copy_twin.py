"""async_work_group_copy / wait_group_events against the OpenCL C twin on the devices present.

Contract: tiles (and strided columns) copied global->local, transformed by every work-item
after the wait and copied back local->global agree exactly with the device (OpenCL 1.0
builtins: every device runs it).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from tests.unit.test_async_copy import tile_roundtrip, transpose_columns
from verify.clrun import run_cl
from verify.policy import EXACT, compare
from verify.testing import device_params

DEVICES = device_params()

ROUNDTRIP_CL = r"""
__kernel void tile_roundtrip(__global const float *x, __global float *out, int n_tiles)
{
    size_t lid = get_local_id(0);
    size_t g = get_group_id(0);
    __local float t[64];
    for (int k = 0; k < n_tiles; k++) {
        event_t ev = async_work_group_copy(t, x + (g * n_tiles + k) * 64, 64, 0);
        wait_group_events(1, &ev);
        float v = t[lid] * 2.0f + t[63 - lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        t[lid] = v;
        barrier(CLK_LOCAL_MEM_FENCE);
        ev = async_work_group_copy(out + (g * n_tiles + k) * 64, t, 64, ev);
        wait_group_events(1, &ev);
    }
    prefetch(x, 64);
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_tile_roundtrip_matches_its_twin(device):
    x = np.random.default_rng(4).standard_normal(4 * 3 * 64).astype(np.float32)
    sim = np.zeros_like(x)
    clsim.run(tile_roundtrip, (256,), (64,), (x, sim, np.int32(3)))
    dev = run_cl(device, ROUNDTRIP_CL, "tile_roundtrip", (256,), (64,),
                 (x, np.zeros_like(x), np.int32(3)))
    result = compare("out", sim, dev.buffers[1], EXACT)
    assert result.equal, result.describe()


COLUMNS_CL = r"""
__kernel void transpose_columns(__global const float *x, __global float *out, int ncols)
{
    size_t lid = get_local_id(0);
    size_t g = get_group_id(0);
    __local float col[64];
    event_t ev = async_work_group_strided_copy(col, x + g, 64, ncols, 0);
    wait_group_events(1, &ev);
    col[lid] = col[lid] + 1.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    ev = async_work_group_strided_copy(out + g, col, 64, ncols, ev);
    wait_group_events(1, &ev);
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_strided_copy_matches_its_twin(device):
    x = np.random.default_rng(5).standard_normal(64 * 4).astype(np.float32)
    sim = np.zeros_like(x)
    clsim.run(transpose_columns, (256,), (64,), (x, sim, np.int32(4)))
    dev = run_cl(device, COLUMNS_CL, "transpose_columns", (256,), (64,),
                 (x, np.zeros_like(x), np.int32(4)))
    result = compare("out", sim, dev.buffers[1], EXACT)
    assert result.equal, result.describe()
