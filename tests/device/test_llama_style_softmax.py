"""A port of llama.cpp's ``kernel_soft_max_4`` (ggml/src/ggml-opencl/kernels/softmax_4_f32.cl)
with the structure of the original, line for line: byte offsets into the three buffers, the
rows of a 4-D tensor on the group ids (i01 on dimension 0, the head i02 on 1, i03 on 2),
float4 loads, ``x * scale + slope * mask``, the ALiBi slope ``pow(base, exp)`` of the head,
then ``sub_group_reduce_max``, exp while summing with ``sub_group_reduce_add``, and a divide.
Like the original, it reads ``ne00 / 4`` float4 of a row (ggml uses it when ne00 % 4 == 0)
and assumes the sub-group is the whole work-group.

As in ggml, "no mask" is ``src1`` passed as ``src0`` (the same buffer at the same offset) and
the kernel tests ``src1 != src0`` after both are offset: pointers into different buffers
compare by address, so the simulator sees the alias as the device does. The mask term sits
under an ``if`` on that test. The original dereferences ``float4``
pointers (16-byte alignment, which ne00 % 4 == 0 and ggml's offsets give); the port reads
them with ``vload4(i00, p)``, the same elements, which needs only float alignment.

Tests: numpy agreement (3-D rows, mask and ALiBi, and without them); the bug class of the
original: in a work-group of two sub-groups each half-row is normalised alone (rows sum to
2); the ``ne00 % 4`` last columns it never writes (the library's softmax_ggml_4 does); the
twin agrees under ulp(16) (the device's exp, divide and sub-group sum order) on every device
with sub-groups at sizes 16 and 32, the buggy launch included, and is skipped with the reason
elsewhere.

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
    INFINITY,
    exp,
    float4,
    fmax,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    pow,
    sub_group_reduce_add,
    sub_group_reduce_max,
    view,
    vload4,
    vstore4,
)
from kernels_py.softmax_ggml import alibi_parameters
from verify.clrun import run_cl
from verify.policy import compare, ulp
from verify.testing import device_params


@kernel
def soft_max_4(src0, offset0, src1, offset1, dst, offsetd, ne00, ne01, ne02, scale,
               max_bias, m0, m1, n_head_log2):
    x = view(src0, np.float32, offset0)
    mask = view(src1, np.float32, offset1)
    d = view(dst, np.float32, offsetd)
    has_mask = mask != x  # ggml passes src1 = src0 when there is no mask

    i03 = get_group_id(2)
    i02 = get_group_id(1)
    i01 = get_group_id(0)

    psrc4 = x + i03 * ne02 * ne01 * ne00 + i02 * ne01 * ne00 + i01 * ne00
    pmask = mask + i01 * ne00
    pdst4 = d + i03 * ne02 * ne01 * ne00 + i02 * ne01 * ne00 + i01 * ne00

    slope = np.float32(1.0)

    # ALiBi
    if max_bias > 0.0:
        h = i02
        base = m0 if h < n_head_log2 else m1
        power = h + 1 if h < n_head_log2 else 2 * (h - n_head_log2) + 1
        slope = pow(base, np.float32(power))

    # parallel max
    lmax4 = float4(-INFINITY)
    for i00 in range(get_local_id(0), ne00 // 4, get_local_size(0)):
        bias = float4(0.0)
        if has_mask:
            bias = slope * vload4(i00, pmask)
        lmax4 = fmax(lmax4, vload4(i00, psrc4) * scale + bias)
    lmax = fmax(fmax(lmax4.s0, lmax4.s1), fmax(lmax4.s2, lmax4.s3))

    row_max = sub_group_reduce_max(lmax)

    # parallel sum
    lsum4 = float4(0.0)
    for i00 in range(get_local_id(0), ne00 // 4, get_local_size(0)):
        bias = float4(0.0)
        if has_mask:
            bias = slope * vload4(i00, pmask)
        exp_psrc4 = exp((vload4(i00, psrc4) * scale + bias) - row_max)
        lsum4 += exp_psrc4
        vstore4(exp_psrc4, i00, pdst4)
    lsum = lsum4.s0 + lsum4.s1 + lsum4.s2 + lsum4.s3

    total = sub_group_reduce_add(lsum)

    for i00 in range(get_local_id(0), ne00 // 4, get_local_size(0)):
        vstore4(vload4(i00, pdst4) / total, i00, pdst4)


TWIN = r"""
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void soft_max_4(__global float *src0, ulong offset0, __global float *src1,
                         ulong offset1, __global float *dst, ulong offsetd, int ne00,
                         int ne01, int ne02, float scale, float max_bias, float m0, float m1,
                         int n_head_log2)
{
    src0 = (__global float *)((__global char *)src0 + offset0);
    src1 = (__global float *)((__global char *)src1 + offset1);
    dst = (__global float *)((__global char *)dst + offsetd);

    long i03 = get_group_id(2);
    long i02 = get_group_id(1);
    long i01 = get_group_id(0);

    __global float4 *psrc4 = (__global float4 *)(src0 + i03 * ne02 * ne01 * ne00
                                                  + i02 * ne01 * ne00 + i01 * ne00);
    __global float4 *pmask = src1 != src0 ? (__global float4 *)(src1 + i01 * ne00) : 0;
    __global float4 *pdst4 = (__global float4 *)(dst + i03 * ne02 * ne01 * ne00
                                                  + i02 * ne01 * ne00 + i01 * ne00);

    float slope = 1.0f;

    // ALiBi
    if (max_bias > 0.0f) {
        long h = i02;
        float base = h < n_head_log2 ? m0 : m1;
        long power = h < n_head_log2 ? h + 1 : 2 * (h - n_head_log2) + 1;
        slope = pow(base, (float)power);
    }

    // parallel max
    float4 lmax4 = (float4)(-INFINITY);
    for (long i00 = get_local_id(0); i00 < ne00 / 4; i00 += get_local_size(0)) {
        lmax4 = fmax(lmax4, psrc4[i00] * scale + (pmask ? slope * pmask[i00] : 0.0f));
    }
    float lmax = fmax(fmax(lmax4.s0, lmax4.s1), fmax(lmax4.s2, lmax4.s3));

    const float row_max = sub_group_reduce_max(lmax);

    // parallel sum
    float4 lsum4 = (float4)(0.0f);
    for (long i00 = get_local_id(0); i00 < ne00 / 4; i00 += get_local_size(0)) {
        const float4 exp_psrc4 = exp((psrc4[i00] * scale + (pmask ? slope * pmask[i00] : 0.0f))
                                     - row_max);
        lsum4 += exp_psrc4;
        pdst4[i00] = exp_psrc4;
    }
    float lsum = lsum4.s0 + lsum4.s1 + lsum4.s2 + lsum4.s3;

    const float total = sub_group_reduce_add(lsum);

    for (long i00 = get_local_id(0); i00 < ne00 / 4; i00 += get_local_size(0)) {
        pdst4[i00] /= total;
    }
}
"""

OFFSETS = (16, 32, 48)  # byte offsets of src0, src1 and dst, as ggml passes them


def _inputs(ne00=96, ne01=5, ne02=6, ne03=2, with_mask=True, max_bias=8.0, seed=0):
    """(args, x, mask, slopes): a 4-D tensor of ne03 x ne02 heads x ne01 rows x ne00 columns
    behind a byte offset, a mask of ne01 rows shared by every head (ALiBi-style values in
    [-4, 0] and a few -inf, never a whole row), each head's slope as ggml's pow gives it."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((ne03, ne02, ne01, ne00)) * 4).astype(np.float32)
    mask = (-4 * rng.random((ne01, ne00))).astype(np.float32)
    mask[rng.random((ne01, ne00)) < 0.1] = -np.inf
    mask[:, 0] = 0.0
    m0, m1, n_head_log2 = alibi_parameters(ne02, max_bias)
    heads = np.arange(ne02)
    slopes = (np.where(heads < n_head_log2, m0 ** (heads + 1.0),
                       m1 ** (2.0 * (heads - n_head_log2) + 1.0))
              if max_bias > 0 else np.ones(ne02))
    pad = [o // 4 for o in OFFSETS]
    src0 = np.concatenate([np.zeros(pad[0], np.float32), x.ravel()])
    src1 = np.concatenate([np.zeros(pad[1], np.float32), mask.ravel()])
    dst = np.zeros(pad[2] + x.size, np.float32)
    # no mask: src1 is src0 at src0's offset, as ggml passes it
    src1, offset1 = (src1, OFFSETS[1]) if with_mask else (src0, OFFSETS[0])
    args = (src0, np.uint64(OFFSETS[0]), src1, np.uint64(offset1), dst,
            np.uint64(OFFSETS[2]), np.int32(ne00), np.int32(ne01), np.int32(ne02),
            np.float32(0.125), np.float32(max_bias), np.float32(m0), np.float32(m1),
            np.int32(n_head_log2))
    return args, x, (mask if with_mask else None), slopes


def _reference(x, mask, slopes, scale=0.125):
    v = x.astype(np.float64) * scale
    if mask is not None:
        v = v + slopes[None, :, None, None] * mask.astype(np.float64)[None, None]
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _sizes(x, local):
    ne03, ne02, ne01, _ = x.shape
    return (ne01 * local, ne02, ne03), (local, 1, 1)


def _copies(args):
    """The arguments with each array copied once: an array passed twice (src1 = src0) stays
    one array."""
    copies = {id(a): a.copy() for a in args if isinstance(a, np.ndarray)}
    return [copies.get(id(a), a) for a in args]


def _simulate(args, x, local, size):
    sim = _copies(args)
    global_size, local_size = _sizes(x, local)
    clsim.run(soft_max_4, global_size, local_size, sim, subgroup_size=size, jit=False)
    return sim


def _out(args, x):
    return args[4][OFFSETS[2] // 4:].reshape(x.shape)


@pytest.mark.parametrize("with_mask", [True, False])
def test_port_agrees_with_numpy(with_mask):
    """One sub-group per row (local size = sub-group size = 32): numpy's softmax of
    x * scale + slope * mask over every row of a 2 x 6 x 5 x 96 tensor, the bytes before the
    offsets untouched."""
    args, x, mask, slopes = _inputs(with_mask=with_mask)
    sim = _simulate(args, x, 32, 32)
    np.testing.assert_allclose(_out(sim, x), _reference(x, mask, slopes), rtol=1e-5, atol=1e-7)
    assert not sim[4][:OFFSETS[2] // 4].any()


def test_subgroup_smaller_than_the_work_group_normalises_half_rows():
    """The original's bug class: it strides over the work-group but reduces over the
    sub-group, so with two sub-groups of 16 in a work-group of 32 each half of a row is
    normalised alone: rows sum to 2, not 1, and differ from numpy."""
    args, x, _, _ = _inputs(ne00=128)
    sums = _out(_simulate(args, x, 32, 16), x).astype(np.float64).sum(axis=-1)
    np.testing.assert_allclose(sums, 2.0, rtol=1e-5)
    sums = _out(_simulate(args, x, 32, 32), x).astype(np.float64).sum(axis=-1)
    np.testing.assert_allclose(sums, 1.0, rtol=1e-5)


@pytest.mark.parametrize("device", device_params(requires=("subgroups",)))
@pytest.mark.parametrize(("local", "size"), [(16, 16), (32, 32), (32, 16)])
@pytest.mark.parametrize("with_mask", [True, False])
def test_port_agrees_with_its_twin(device, local, size, with_mask):
    """The twin on the device and the port in the simulator at the same sub-group size agree
    within 16 ulp (the device's exp, divide and order of the sub-group sum), the buggy launch
    (two sub-groups per work-group) included: the simulator shows what the device does."""
    args, x, _, _ = _inputs(with_mask=with_mask, seed=local + size)
    sim = _simulate(args, x, local, size)
    global_size, local_size = _sizes(x, local)
    dev = run_cl(device, TWIN, "soft_max_4", global_size, local_size, args, subgroup_size=size)
    result = compare("dst", sim[4], dev.buffers[4], ulp(16))
    assert result.equal, result.describe()


def test_port_drops_the_last_ncols_mod_4_columns_and_the_library_form_keeps_them():
    """The original reads ne00 / 4 float4 (ggml only calls it when ne00 % 4 == 0): at
    ne00 = 98 the last two columns of every row are never written and the first 96 are
    normalised alone. The library's softmax_ggml_4 covers the tail: numpy's softmax of the
    whole row."""
    from clsim.spec import get_spec

    args, x, _, _ = _inputs(ne00=98, ne02=2, ne03=1, with_mask=False)
    out = _out(_simulate(args, x, 32, 32), x)
    assert not out[..., 96:].any()
    np.testing.assert_allclose(out[..., :96].astype(np.float64).sum(axis=-1), 1.0, rtol=1e-5)
    spec = get_spec("softmax_ggml_4")
    shape = {"heads": 2, "rows": 5, "cols": 98}
    inputs = spec.make_inputs(np.random.default_rng(0), shape, False)
    launch = spec.launch(inputs, shape, None)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
              subgroup_size=spec.subgroup_size, jit=False)
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=1e-5, atol=1e-7)
