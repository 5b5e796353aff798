"""Two kernels in the style of llama.cpp's OpenCL backend, ported line for line.

(1) ``kernel_mul_mat_q4_0_f32`` (mul_mv_q4_0_f32.cl): byte offsets into the three argument
buffers, packed ``block_q4_0`` structs with half scales, the quants read as ``ushort`` through
a cast pointer at a byte offset, x pre-scaled by 1/256, 1/16, 1/4096 so that masked nibbles
need no shift, N_DST = 4 rows per sub-group, private arrays and ``sub_group_reduce_add``. The
original guards only the store: with fewer rows than N_DST (or a last sub-group with fewer) it
reads the blocks of rows past the tensor. The simulator's bounds check reports that read; the
fixed port (one ``if`` around the row's dot product) reads nothing past it, agrees with numpy,
and agrees bit for bit with its OpenCL C twin on devices with sub-groups and cl_khr_fp16 (the
simulator adding the sub-group sum in the device's measured order).

(2) ``kernel_convert_block_q4_0_noshuffle`` and ``kernel_restore_block_q4_0_noshuffle``
(cvt.cl): pointer locals into struct and byte buffers, a half copied through pointers, nibbles
regrouped with ``convert_uchar`` so that quants j and j + 1 share a byte. Checked against numpy,
round-tripped, and against the twin bit for bit on devices with cl_khr_fp16.

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
    convert_uchar,
    float2,
    float4,
    get_global_id,
    get_group_id,
    get_sub_group_id,
    get_sub_group_local_id,
    kernel,
    private_array,
    sub_group_reduce_add,
    view,
)
from clsim.errors import OutOfBoundsError
from verify.clrun import missing_feature, run_cl
from verify.devices import get_device
from verify.orders import device_reduction_order
from verify.policy import EXACT, compare
from verify.testing import device_params

BLOCK_Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])
QK4_0 = 32
N_DST = 4  # rows per sub-group
N_SIMDGROUP = 1  # sub-groups per work-group
N_SIMDWIDTH = 16  # the sub-group size the kernel assumes (Intel's REQD_SUBGROUP_SIZE_16)


@clsim.func
def block_q_4_0_dot_y(src0, block_at, sumy, yl, il):
    """Half a block (quants from il) dotted with the pre-scaled yl; sumy is sum(yl)."""
    qb_curr = view(src0, BLOCK_Q4_0, block_at)
    d = np.float32(qb_curr[0].d)
    acc = float2(0.0)
    qs = view(src0, np.uint16, block_at + 2 + il)  # (global ushort *)qb_curr + 1 + il/2
    for i in range(0, 8, 2):
        acc.s0 += (yl[i + 0] * np.float32(qs[i // 2] & 0x000F)
                   + yl[i + 1] * np.float32(qs[i // 2] & 0x0F00))
        acc.s1 += (yl[i + 8] * np.float32(qs[i // 2] & 0x00F0)
                   + yl[i + 9] * np.float32(qs[i // 2] & 0xF000))
    return d * (sumy * -8.0 + acc.s0 + acc.s1)


def _mul_mat_q4_0_f32(guard_reads: bool):
    """The kernel as llama.cpp writes it (guard_reads False) or with the reads guarded."""

    @kernel
    def kernel_mul_mat_q4_0_f32(src0, offset0, src1, offset1, dst, offsetd, ne00, ne01, ne02,
                                ne10, ne12, ne0, ne1, r2, r3):
        dst_f = view(dst, np.float32, offsetd)
        nb = ne00 // QK4_0
        r0 = get_group_id(0)
        r1 = get_group_id(1)
        im = get_group_id(2)
        first_row = (r0 * N_SIMDGROUP + get_sub_group_id()) * N_DST
        i12 = im % ne12
        i13 = im // ne12
        block0 = first_row * nb + (i12 // r2) * (nb * ne01) + (i13 // r3) * (nb * ne01 * ne02)
        src1_f = view(src1, np.float32, offset1)  # src1 = (global float*)((char*)src1 + ...)
        y = src1_f + r1 * ne10 + im * ne00 * ne1
        yl = private_array(16, np.float32)
        sumf = private_array(N_DST, np.float32, fill=0.0)
        ix = get_sub_group_local_id() // 2
        il = 8 * (get_sub_group_local_id() % 2)
        yb = y + ix * QK4_0 + il
        for ib in range(ix, nb, N_SIMDWIDTH // 2):  # each lane takes half a block
            sumy = 0.0
            for i in range(0, 8, 2):
                sumy += yb[i] + yb[i + 1]
                yl[i + 0] = yb[i + 0]
                yl[i + 1] = yb[i + 1] / 256.0
                sumy += yb[i + 16] + yb[i + 17]
                yl[i + 8] = yb[i + 16] / 16.0
                yl[i + 9] = yb[i + 17] / 4096.0
            for row in range(N_DST):
                if not guard_reads or first_row + row < ne01:  # the fix: no rows past ne01
                    block_at = offset0 + (block0 + ib + row * nb) * BLOCK_Q4_0.itemsize
                    sumf[row] += block_q_4_0_dot_y(src0, block_at, sumy, yl, il)
            yb += QK4_0 * (N_SIMDWIDTH // 2)
        tot = float4(sub_group_reduce_add(sumf[0]), sub_group_reduce_add(sumf[1]),
                     sub_group_reduce_add(sumf[2]), sub_group_reduce_add(sumf[3]))
        for row in range(N_DST):
            if get_sub_group_local_id() == 0 and first_row + row < ne01:
                dst_f[r1 * ne0 + im * ne0 * ne1 + first_row + row] = tot[row]

    return kernel_mul_mat_q4_0_f32


ORIGINAL = _mul_mat_q4_0_f32(guard_reads=False)
FIXED = _mul_mat_q4_0_f32(guard_reads=True)

MUL_MV_CL = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" + r"""
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#define QK4_0 32
#define N_DST 4
#define N_SIMDGROUP 1
#define N_SIMDWIDTH 16
""" + clsim.cstruct(BLOCK_Q4_0, "block_q4_0") + r"""
inline float block_q_4_0_dot_y(global block_q4_0 *qb_curr, float sumy, private float *yl,
                               int il)
{
    float d = qb_curr->d;
    float2 acc = 0.f;
    global ushort *qs = ((global ushort *)qb_curr + 1 + il / 2);
    for (int i = 0; i < 8; i += 2) {
        acc.s0 += yl[i + 0] * (qs[i / 2] & 0x000F) + yl[i + 1] * (qs[i / 2] & 0x0F00);
        acc.s1 += yl[i + 8] * (qs[i / 2] & 0x00F0) + yl[i + 9] * (qs[i / 2] & 0xF000);
    }
    return d * (sumy * -8.f + acc.s0 + acc.s1);
}

__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
kernel void kernel_mul_mat_q4_0_f32(global void *src0, ulong offset0, global float *src1,
                                    ulong offset1, global float *dst, ulong offsetd, int ne00,
                                    int ne01, int ne02, int ne10, int ne12, int ne0, int ne1,
                                    int r2, int r3)
{
    src0 = (global void *)((global char *)src0 + offset0);
    src1 = (global float *)((global char *)src1 + offset1);
    dst = (global float *)((global char *)dst + offsetd);
    const ulong nb = ne00 / QK4_0;
    int r0 = get_group_id(0);
    int r1 = get_group_id(1);
    int im = get_group_id(2);
    int first_row = (r0 * N_SIMDGROUP + get_sub_group_id()) * N_DST;
    int i12 = im % ne12;
    int i13 = im / ne12;
    ulong offset_b = first_row * nb + (i12 / r2) * (nb * ne01) + (i13 / r3) * (nb * ne01 * ne02);
    global block_q4_0 *x = (global block_q4_0 *)src0 + offset_b;
    global float *y = (global float *)src1 + r1 * ne10 + im * ne00 * ne1;
    float yl[16];
    float sumf[N_DST] = {0.f};
    int ix = get_sub_group_local_id() / 2;
    int il = 8 * (get_sub_group_local_id() % 2);
    global float *yb = y + ix * QK4_0 + il;
    for (int ib = ix; ib < nb; ib += N_SIMDWIDTH / 2) {
        float sumy = 0;
        for (int i = 0; i < 8; i += 2) {
            sumy += yb[i] + yb[i + 1];
            yl[i + 0] = yb[i + 0];
            yl[i + 1] = yb[i + 1] / 256.f;
            sumy += yb[i + 16] + yb[i + 17];
            yl[i + 8] = yb[i + 16] / 16.f;
            yl[i + 9] = yb[i + 17] / 4096.f;
        }
        for (int row = 0; row < N_DST; row++) {
            if (first_row + row < ne01) {  // the fix: llama.cpp reads rows past ne01 here
                sumf[row] += block_q_4_0_dot_y(x + ib + row * nb, sumy, yl, il);
            }
        }
        yb += QK4_0 * (N_SIMDWIDTH / 2);
    }
    float tot[N_DST] = {sub_group_reduce_add(sumf[0]), sub_group_reduce_add(sumf[1]),
                        sub_group_reduce_add(sumf[2]), sub_group_reduce_add(sumf[3])};
    for (int row = 0; row < N_DST; ++row) {
        if (get_sub_group_local_id() == 0 && first_row + row < ne01) {
            dst[r1 * ne0 + im * ne0 * ne1 + first_row + row] = tot[row];
        }
    }
}
"""


def _mul_mv_inputs(rows, ne00=256, seed=0):
    """ggml's arguments for one matrix (ne02 = ne12 = 1) times one column, at byte offsets."""
    rng = np.random.default_rng(seed)
    nb = ne00 // QK4_0
    offset0, offset1, offsetd = 36, 16, 8  # byte offsets, as ggml passes them
    blocks = np.zeros(rows * nb, BLOCK_Q4_0)
    blocks["d"] = (rng.standard_normal(rows * nb) * 0.05).astype(np.float16)
    blocks["qs"] = rng.integers(0, 256, (rows * nb, 16), dtype=np.uint8)
    src0 = np.concatenate([np.zeros(offset0, np.uint8), blocks.view(np.uint8)])
    y = rng.standard_normal(ne00).astype(np.float32)
    src1 = np.concatenate([np.zeros(offset1 // 4, np.float32), y])
    dst = np.zeros(offsetd // 4 + rows, np.float32)
    one = np.int32(1)
    args = (src0, np.uint64(offset0), src1, np.uint64(offset1), dst, np.uint64(offsetd),
            np.int32(ne00), np.int32(rows), one, np.int32(ne00), one, np.int32(rows), one,
            one, one)
    groups = -(-rows // (N_DST * N_SIMDGROUP))
    return args, (N_SIMDWIDTH * N_SIMDGROUP * groups, 1, 1), (N_SIMDWIDTH * N_SIMDGROUP, 1, 1)


def _q4_0_reference(src0, offset0, rows, y):
    blocks = src0[offset0:].view(BLOCK_Q4_0)
    q = np.concatenate([blocks["qs"] & 15, blocks["qs"] >> 4], axis=1).astype(np.float64) - 8
    w = (q * blocks["d"].astype(np.float64)[:, None]).reshape(rows, -1)
    return w @ y.astype(np.float64)


@pytest.mark.parametrize("rows", [1, 3, 4, 9])
def test_fixed_port_agrees_with_numpy(rows):
    """One row, fewer rows than N_DST, exactly N_DST, and a last sub-group with one row."""
    args, global_size, local_size = _mul_mv_inputs(rows)
    clsim.run(FIXED, global_size, local_size, args, subgroup_size=N_SIMDWIDTH, jit=False)
    got = args[4][2:]
    want = _q4_0_reference(args[0], 36, rows, args[2][4:])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("rows", [1, 3, 9])
def test_original_overread_is_caught_by_the_bounds_check(rows):
    """llama.cpp's kernel, rows not a multiple of N_DST: the first read of row ne01's blocks
    is an OutOfBoundsError on src0, past its last byte; with rows a multiple of N_DST the
    original reads nothing past the tensor and agrees with the fixed port bit for bit."""
    args, global_size, local_size = _mul_mv_inputs(rows)
    with pytest.raises(OutOfBoundsError) as info:
        clsim.run(ORIGINAL, global_size, local_size, args, subgroup_size=N_SIMDWIDTH, jit=False)
    assert info.value.buffer == "src0" and info.value.access == "load"
    assert info.value.index >= args[0].size // 2  # a ushort past the last byte of src0
    full, gs, ls = _mul_mv_inputs(8, seed=3)
    fixed = [a.copy() if isinstance(a, np.ndarray) else a for a in full]
    clsim.run(ORIGINAL, gs, ls, full, subgroup_size=N_SIMDWIDTH, jit=False)
    clsim.run(FIXED, gs, ls, fixed, subgroup_size=N_SIMDWIDTH, jit=False)
    assert full[4].tobytes() == fixed[4].tobytes()


def _needs_fp16(device):
    info = get_device(device)
    reason = missing_feature(info, "fp16")
    if reason:
        pytest.skip(f"{reason}: the twin reads half fields as llama.cpp does")
    return info


@pytest.mark.parametrize("device", device_params(requires=(f"subgroup_size:{N_SIMDWIDTH}",)))
@pytest.mark.parametrize("rows", [3, 9])
def test_fixed_port_agrees_with_its_twin(device, rows):
    """Bit for bit, the simulator adding each sub_group_reduce_add in the device's order."""
    info = _needs_fp16(device)
    args, global_size, local_size = _mul_mv_inputs(rows, ne00=512, seed=rows)
    sim = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    clsim.run(FIXED, global_size, local_size, sim, subgroup_size=N_SIMDWIDTH,
              reduction_order=device_reduction_order(info), jit=False)
    dev = run_cl(device, MUL_MV_CL, "kernel_mul_mat_q4_0_f32", global_size, local_size, args,
                 subgroup_size=N_SIMDWIDTH)
    result = compare("dst", sim[4], dev.buffers[4], EXACT)
    assert result.equal, result.difference


@kernel
def kernel_convert_block_q4_0_noshuffle(src0, dst_q, dst_d):
    b = src0 + get_global_id(0)
    q = dst_q + QK4_0 // 2 * get_global_id(0)
    d = dst_d + get_global_id(0)
    d[0] = b.d
    for i in range(QK4_0 // 4):
        x0 = b.qs[2 * i + 0]
        x1 = b.qs[2 * i + 1]
        q[i + 0] = convert_uchar(x0 & 0x0F) | convert_uchar((x1 & 0x0F) << 4)
        q[i + QK4_0 // 4] = convert_uchar((x0 & 0xF0) >> 4) | convert_uchar(x1 & 0xF0)


@kernel
def kernel_restore_block_q4_0_noshuffle(src_q, src_d, dst, mask_0F, mask_F0):
    b = dst + get_global_id(0)
    q = src_q + QK4_0 // 2 * get_global_id(0)
    d = src_d + get_global_id(0)
    b[0].d = d[0]  # b->d: a store through a struct pointer local is spelled b[0].d
    for i in range(QK4_0 // 4):
        x0 = q[i + 0]
        x1 = q[i + QK4_0 // 4]
        b[0].qs[2 * i + 0] = convert_uchar((x0 & mask_0F) | ((x1 & mask_0F) << 4))
        b[0].qs[2 * i + 1] = convert_uchar(((x0 & mask_F0) >> 4) | (x1 & mask_F0))


CVT_CL = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n#define QK4_0 32\n" + clsim.cstruct(
    BLOCK_Q4_0, "block_q4_0") + r"""
kernel void kernel_convert_block_q4_0_noshuffle(global block_q4_0 *src0, global uchar *dst_q,
                                                global half *dst_d)
{
    global block_q4_0 *b = (global block_q4_0 *)src0 + get_global_id(0);
    global uchar *q = (global uchar *)dst_q + QK4_0 / 2 * get_global_id(0);
    global half *d = (global half *)dst_d + get_global_id(0);
    *d = b->d;
    for (int i = 0; i < QK4_0 / 4; ++i) {
        uchar x0 = b->qs[2 * i + 0];
        uchar x1 = b->qs[2 * i + 1];
        q[i + 0] = convert_uchar(x0 & 0x0F) | convert_uchar((x1 & 0x0F) << 4);
        q[i + QK4_0 / 4] = convert_uchar((x0 & 0xF0) >> 4) | convert_uchar(x1 & 0xF0);
    }
}

kernel void kernel_restore_block_q4_0_noshuffle(global uchar *src_q, global half *src_d,
                                                global block_q4_0 *dst, uchar mask_0F,
                                                uchar mask_F0)
{
    global block_q4_0 *b = (global block_q4_0 *)dst + get_global_id(0);
    global uchar *q = (global uchar *)src_q + QK4_0 / 2 * get_global_id(0);
    global half *d = (global half *)src_d + get_global_id(0);
    b->d = *d;
    for (int i = 0; i < QK4_0 / 4; ++i) {
        uchar x0 = q[i + 0];
        uchar x1 = q[i + QK4_0 / 4];
        b->qs[2 * i + 0] = convert_uchar((x0 & mask_0F) | ((x1 & mask_0F) << 4));
        b->qs[2 * i + 1] = convert_uchar(((x0 & mask_F0) >> 4) | (x1 & mask_F0));
    }
}
"""
MASKS = (np.uint8(0x0F), np.uint8(0xF0))


def _random_blocks(n, seed):
    """Random bytes: every half pattern can be a scale, every byte a pair of quants."""
    raw = np.random.default_rng(seed).integers(0, 256, n * BLOCK_Q4_0.itemsize, dtype=np.uint8)
    return raw.view(BLOCK_Q4_0).copy()


def _noshuffle_reference(blocks):
    """numpy: quants j and j + 1 of the low half in one byte, then the high half's."""
    qs = blocks["qs"].astype(np.int32)
    lo = (qs[:, 0::2] & 0x0F) | ((qs[:, 1::2] & 0x0F) << 4)
    hi = (qs[:, 0::2] >> 4) | (qs[:, 1::2] & 0xF0)
    return np.concatenate([lo, hi], axis=1).astype(np.uint8).reshape(-1)


def test_noshuffle_convert_agrees_with_numpy_and_restore_inverts_it():
    """The regrouped quants are numpy's; the scales' bits are copied; restore (with ggml's
    masks) gives back every byte of the blocks."""
    n = 300
    blocks = _random_blocks(n, 4)
    q, d = np.zeros(16 * n, np.uint8), np.zeros(n, np.float16)
    clsim.run(kernel_convert_block_q4_0_noshuffle, (n,), (4,), (blocks, q, d), jit=False)
    np.testing.assert_array_equal(q, _noshuffle_reference(blocks))
    assert d.tobytes() == blocks["d"].tobytes()
    back = np.zeros(n, BLOCK_Q4_0)
    clsim.run(kernel_restore_block_q4_0_noshuffle, (n,), (4,), (q, d, back, *MASKS), jit=False)
    assert back.tobytes() == blocks.tobytes()


@pytest.mark.parametrize("device", device_params())
def test_noshuffle_convert_and_restore_agree_with_their_twins(device):
    """Both kernels bit for bit with the device, on random blocks (NaN scales included)."""
    _needs_fp16(device)
    n = 256
    blocks = _random_blocks(n, 5)
    q, d = np.zeros(16 * n, np.uint8), np.zeros(n, np.float16)
    clsim.run(kernel_convert_block_q4_0_noshuffle, (n,), (8,), (blocks, q, d), jit=False)
    dev = run_cl(device, CVT_CL, "kernel_convert_block_q4_0_noshuffle", (n,), (8,),
                 (blocks.view(np.uint8), np.zeros_like(q), np.zeros_like(d)))
    for name, sim, got in (("dst_q", q, dev.buffers[1]), ("dst_d", d, dev.buffers[2])):
        result = compare(name, sim, got, EXACT)
        assert result.equal, result.difference
    back = np.zeros(n, BLOCK_Q4_0)
    clsim.run(kernel_restore_block_q4_0_noshuffle, (n,), (8,), (q, d, back, *MASKS), jit=False)
    dev = run_cl(device, CVT_CL, "kernel_restore_block_q4_0_noshuffle", (n,), (8,),
                 (q, d, np.zeros(n * BLOCK_Q4_0.itemsize, np.uint8), *MASKS))
    result = compare("dst", back.view(np.uint8), dev.buffers[2], EXACT)
    assert result.equal, result.difference
