"""The pointer forms of a translated ggml kernel against their OpenCL C twin on the devices
present: a uint8 argument typed by ``src0 = view(src0, np.float32, offset0)``, char-pointer
byte arithmetic (``view(view(dst, np.int8) + nb1, np.float32)``) and a ``local float *``
parameter given as ``clsim.LocalMem`` (one argument tuple for both sides), exact."""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    view,
)
from verify.runner import compare
from verify.testing import device_params

DEVICES = device_params()


@kernel
def row_sums(src0, offset0, dst, offsetd, nb1, sums):
    src0 = view(src0, np.float32, offset0)
    dst = view(dst, np.int8, offsetd)
    sums = view(sums, np.float32)
    row = get_group_id(0)
    lid = get_local_id(0)
    n = get_local_size(0)
    sums[lid] = src0[row * n + lid]
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid == 0:
        s = np.float32(0)
        for j in range(n):
            s += sums[j]
        out = view(dst + row * nb1, np.float32)
        out[0] = s


ROW_SUMS_CL = r"""
__kernel void row_sums(__global char *src0, ulong offset0, __global char *dst, ulong offsetd,
                       ulong nb1, __local float *sums)
{
    __global float *x = (__global float *)(src0 + offset0);
    __global char *d = dst + offsetd;
    int row = get_group_id(0);
    int lid = get_local_id(0);
    int n = get_local_size(0);
    sums[lid] = x[row * n + lid];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        float s = 0.0f;
        for (int j = 0; j < n; j++) s += sums[j];
        *(__global float *)(d + row * nb1) = s;
    }
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_pointer_forms_match_their_twin(device):
    rng = np.random.default_rng(7)
    src = np.zeros(4 * 16 * 4 + 8, np.uint8)
    src[8:] = rng.standard_normal(64).astype(np.float32).view(np.uint8)
    dst = np.zeros(4 * 12 + 4, np.uint8)
    args = [src, np.uint64(8), dst, np.uint64(4), np.uint64(12), clsim.LocalMem(16 * 4)]
    result = compare(row_sums, ROW_SUMS_CL, global_size=64, local_size=16, args=args,
                     device=device, outputs=["dst"])
    assert result.equal, result
    sums = src[8:].view(np.float32).reshape(4, 16)
    got = result.simulator["dst"][4:].reshape(4, 12)[:, :4].copy().view(np.float32)[:, 0]
    assert got.any() and np.allclose(got, sums.sum(axis=1), rtol=1e-5)
