"""A kernel in the style of llama.cpp's OpenCL backend (kernel_mul_mv_q8_0_f32): byte offsets
into the argument buffers, packed block_q8_0 structs with half scales, float4 arithmetic on
char4 quants, a sub-group reduction. The Python port is line for line; it agrees with numpy
(always) and with its OpenCL C twin on every device with sub-groups and cl_khr_fp16.

The simulator runs these launches of a few work-groups as plain Python (``jit=False``): the
same generated code Numba compiles (tests/kernels/test_library_kernels.py compares the
two bit for bit), without a compile per kernel and local size, seconds each (the suite's
time, docs/performance.md).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    char4,
    convert_float4,
    dot,
    get_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_reduce_add,
    view,
    vload4,
)
from verify.clrun import missing_feature, run_cl
from verify.devices import get_device
from verify.policy import compare, ulp
from verify.testing import device_params

BLOCK_Q8_0 = np.dtype([("d", np.float16), ("qs", np.int8, (32,))])
QK8_0 = 32
SG = 16


@kernel
def mul_mv_q8_0_f32(src0, offset0, src1, offset1, dst, offsetd, ne00):
    x = view(src0, BLOCK_Q8_0, offset0)
    y = src1 + offset1 // 4
    d = view(dst, np.float32, offsetd)
    row = get_group_id(0)
    lane = get_sub_group_local_id()
    nb = ne00 // QK8_0
    sumf = 0.0
    for ib in range(lane, nb, get_sub_group_size()):
        scale = np.float32(x[row * nb + ib].d)
        acc = 0.0
        for j in range(QK8_0 // 4):
            b = row * nb + ib
            q = char4(x[b].qs[4 * j], x[b].qs[4 * j + 1], x[b].qs[4 * j + 2],
                      x[b].qs[4 * j + 3])
            acc += dot(convert_float4(q), vload4(0, y + ib * QK8_0 + 4 * j))
        sumf += acc * scale
    total = sub_group_reduce_add(sumf)
    if lane == 0:
        d[row] = total


TWIN = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" + clsim.cstruct(
    BLOCK_Q8_0, "block_q8_0") + r"""
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
__kernel void mul_mv_q8_0_f32(__global char *src0, ulong offset0, __global float *src1,
                              ulong offset1, __global char *dst, ulong offsetd, int ne00)
{
    __global block_q8_0 *x = (__global block_q8_0 *)(src0 + offset0);
    __global float *y = (__global float *)((__global char *)src1 + offset1);
    __global float *d = (__global float *)(dst + offsetd);
    int row = get_group_id(0);
    int lane = get_sub_group_local_id();
    int nb = ne00 / 32;
    float sumf = 0.0f;
    for (int ib = lane; ib < nb; ib += get_sub_group_size()) {
        float scale = (float)x[row * nb + ib].d;
        float acc = 0.0f;
        for (int j = 0; j < 8; j++) {
            int b = row * nb + ib;
            char4 q = (char4)(x[b].qs[4 * j], x[b].qs[4 * j + 1], x[b].qs[4 * j + 2],
                              x[b].qs[4 * j + 3]);
            acc += dot(convert_float4(q), vload4(0, y + ib * 32 + 4 * j));
        }
        sumf += acc * scale;
    }
    float total = sub_group_reduce_add(sumf);
    if (lane == 0) {
        d[row] = total;
    }
}
"""


def _inputs(rows=8, ne00=256, seed=0):
    rng = np.random.default_rng(seed)
    nb = ne00 // QK8_0
    offset0, offset1, offsetd = 6, 16, 8  # byte offsets, as ggml passes them
    blocks = np.zeros(rows * nb, BLOCK_Q8_0)
    blocks["d"] = (rng.standard_normal(rows * nb) * 0.05).astype(np.float16)
    blocks["qs"] = rng.integers(-128, 128, (rows * nb, 32), dtype=np.int8)
    src0 = np.zeros(offset0 + blocks.nbytes, np.uint8)
    src0[offset0:] = blocks.view(np.uint8)
    y = rng.standard_normal(ne00).astype(np.float32)
    src1 = np.concatenate([np.zeros(offset1 // 4, np.float32), y])
    dst = np.zeros(offsetd + 4 * rows, np.uint8)
    args = (src0, np.uint64(offset0), src1, np.uint64(offset1), dst, np.uint64(offsetd),
            np.int32(ne00))
    return args, blocks, y, rows


def test_port_agrees_with_numpy():
    args, blocks, y, rows = _inputs()
    clsim.run(mul_mv_q8_0_f32, (SG * rows,), (SG,), args, subgroup_size=SG, jit=False)
    got = args[4][8:].view(np.float32)
    w = blocks["qs"].astype(np.float64) * blocks["d"].astype(np.float64)[:, None]
    want = w.reshape(rows, -1) @ y.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", device_params(requires=("subgroups",)))
def test_port_agrees_with_its_twin(device):
    reason = missing_feature(get_device(device), "fp16")
    if reason:
        pytest.skip(f"{reason}: the blocks' half scales need it")
    args, _blocks, _y, rows = _inputs(seed=1)
    sim = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    clsim.run(mul_mv_q8_0_f32, (SG * rows,), (SG,), sim, subgroup_size=SG, jit=False)
    dev = run_cl(device, TWIN, "mul_mv_q8_0_f32", (SG * rows,), (SG,), args, subgroup_size=SG)
    # the sub-group sum's order is the device's own: a few ulp apart at most
    result = compare("dst", sim[4][8:].view(np.float32), dev.buffers[4][8:].view(np.float32),
                     ulp(16))
    assert result.equal, result.difference
