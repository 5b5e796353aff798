"""Vectors, half and packed structs against their OpenCL C twins on the devices present.

(1) a float4/int4/uchar4 kernel (component-wise arithmetic, swizzles, comparisons, select,
saturating conversions with rounding, bit casts, unaligned vload) agrees bit for bit on every
device; (2) vload_half/vstore_half of all 65 536 half patterns and of drawn floats in every
rounding mode agree bit for bit (no cl_khr_fp16 needed); (3) half arithmetic and a GGUF
Q4_0 dequantisation whose struct typedef comes from clsim.cstruct agree bit for bit on
devices with cl_khr_fp16 (a skip with the reason elsewhere).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    as_int4,
    convert_int4,
    convert_uchar4_sat_rte,
    float4,
    get_global_id,
    kernel,
    select,
    vload4,
    vload_half,
    vstore4,
    vstore_half,
    vstore_half_rtn,
    vstore_half_rtp,
    vstore_half_rtz,
)
from verify.clrun import missing_feature, run_cl
from verify.devices import get_device
from verify.policy import EXACT, compare
from verify.testing import device_params

DEVICES = device_params()


@kernel
def vector_mix(x, ints, bytes_, out):
    i = get_global_id(0)
    v = vload4(0, x + i)
    w = v.wzyx * 2.0 + float4(v.xy, 1.0, -1.0)
    m = v < w
    vstore4(select(v, w, m), i, out)
    vstore4(as_int4(w) ^ (m & 0x7FFF), 2 * i, ints)
    vstore4(convert_int4(w * 3.0) + m, 2 * i + 1, ints)
    vstore4(convert_uchar4_sat_rte(w * 40.0), i, bytes_)


VECTOR_CL = r"""
__kernel void vector_mix(__global const float *x, __global int *ints, __global uchar *bytes_,
                         __global float *out)
{
    size_t i = get_global_id(0);
    float4 v = vload4(0, x + i);
    float4 w = v.wzyx * 2.0f + (float4)(v.xy, 1.0f, -1.0f);
    int4 m = v < w;
    vstore4(select(v, w, m), i, out);
    vstore4(as_int4(w) ^ (m & 0x7FFF), 2 * i, ints);
    vstore4(convert_int4(w * 3.0f) + m, 2 * i + 1, ints);
    vstore4(convert_uchar4_sat_rte(w * 40.0f), i, bytes_);
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_vector_kernel_matches_its_twin(device):
    n = 64
    x = (np.random.default_rng(0).standard_normal(n + 3) * 4).astype(np.float32)
    outs = {"ints": np.zeros(8 * n, np.int32), "bytes_": np.zeros(4 * n, np.uint8),
            "out": np.zeros(4 * n, np.float32)}
    sim = {k: v.copy() for k, v in outs.items()}
    clsim.run(vector_mix, (n,), (16,), (x, sim["ints"], sim["bytes_"], sim["out"]))
    dev = run_cl(device, VECTOR_CL, "vector_mix", (n,), (16,),
                 (x, outs["ints"], outs["bytes_"], outs["out"]))
    for k, name in enumerate(outs):
        result = compare(name, sim[name], dev.buffers[1 + k], EXACT)
        assert result.equal, result.describe()


@kernel
def half_codec(h, f, rte, rtz, rtp, rtn):
    i = get_global_id(0)
    f[i] = vload_half(i, h)
    v = f[i] * 1.001
    vstore_half(v, i, rte)
    vstore_half_rtz(v, i, rtz)
    vstore_half_rtp(v, i, rtp)
    vstore_half_rtn(v, i, rtn)


HALF_CL = r"""
__kernel void half_codec(__global const half *h, __global float *f, __global half *rte,
                         __global half *rtz, __global half *rtp, __global half *rtn)
{
    size_t i = get_global_id(0);
    f[i] = vload_half(i, h);
    float v = f[i] * 1.001f;
    vstore_half(v, i, rte);
    vstore_half_rtz(v, i, rtz);
    vstore_half_rtp(v, i, rtp);
    vstore_half_rtn(v, i, rtn);
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_half_loads_and_stores_match_the_device_for_every_pattern(device):
    """All 65 536 half patterns loaded, scaled and stored back in each rounding mode (the
    device's NaNs may differ in payload: the exact policy counts NaN as NaN)."""
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    outs = [np.zeros(65536, np.float32)] + [np.zeros(65536, np.float16) for _ in range(4)]
    sim = [o.copy() for o in outs]
    clsim.run(half_codec, (65536,), (256,), (h, *sim))
    # float16 arrays for half* parameters: the verifier checks the .cl pointee's type
    dev = run_cl(device, HALF_CL, "half_codec", (65536,), (256,), (h, *outs))
    for k, name in enumerate(("f", "rte", "rtz", "rtp", "rtn")):
        result = compare(name, sim[k], dev.buffers[1 + k], EXACT)
        assert result.equal, result.describe()


Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])


@kernel
def dequant_q4_0(x, out, scale):
    ib = get_global_id(0)
    d = x[ib].d * scale
    for j in range(16):
        q = x[ib].qs[j]
        out[ib * 32 + j] = (np.int32(q & 0x0F) - 8) * np.float32(d)
        out[ib * 32 + j + 16] = (np.int32(q >> 4) - 8) * np.float32(d)


DEQUANT_CL = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" + clsim.cstruct(
    Q4_0, "block_q4_0") + r"""
__kernel void dequant_q4_0(__global const block_q4_0 *x, __global float *out, half scale)
{
    size_t ib = get_global_id(0);
    half d = x[ib].d * scale;
    for (int j = 0; j < 16; j++) {
        uchar q = x[ib].qs[j];
        out[ib * 32 + j] = ((int)(q & 0x0F) - 8) * (float)d;
        out[ib * 32 + j + 16] = ((int)(q >> 4) - 8) * (float)d;
    }
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_q4_0_struct_and_half_arithmetic_match_the_device(device):
    info = get_device(device)
    reason = missing_feature(info, "fp16")
    if reason:
        pytest.skip(f"{reason}: half arithmetic and half struct fields need it")
    raw = np.random.default_rng(1).integers(0, 256, 32 * 18, dtype=np.uint8)
    x = raw.view(Q4_0).copy()
    x["d"] = (np.random.default_rng(2).standard_normal(32) * 3).astype(np.float16)
    scale = np.float16(0.37)
    sim_out = np.zeros(32 * 32, np.float32)
    clsim.run(dequant_q4_0, (32,), (8,), (x, sim_out, scale))
    dev = run_cl(device, DEQUANT_CL, "dequant_q4_0", (32,), (8,),
                 (x.view(np.uint8), np.zeros(32 * 32, np.float32), scale))
    result = compare("out", sim_out, dev.buffers[1], EXACT)
    assert result.equal, result.describe()


BLOCK = np.dtype([("d", np.float32), ("qs", np.uint8, (16,)), ("n", np.int16)])  # 22 bytes


@kernel
def block_ops(x, y, p, out):
    ib = get_global_id(0)
    b = x[ib]
    s = np.float32(0.0)
    for j in range(16):
        s += np.float32(b.qs[j]) * b.d
    out[ib] = s * p.d + np.float32(p.qs[ib % 16]) + np.float32(b.n)
    y[ib].d += s
    y[ib].qs[ib % 16] |= p.qs[0]
    y[ib].n -= 3


BLOCK_CL = "#pragma OPENCL FP_CONTRACT OFF\n" + clsim.cstruct(BLOCK, "block") + r"""
__kernel void block_ops(__global const block *x, __global block *y, block p,
                        __global float *out)
{
    size_t ib = get_global_id(0);
    block b = x[ib];
    float s = 0.0f;
    for (int j = 0; j < 16; j++)
        s += (float)b.qs[j] * b.d;
    out[ib] = s * p.d + (float)p.qs[ib % 16] + (float)b.n;
    y[ib].d += s;
    y[ib].qs[ib % 16] |= p.qs[0];
    y[ib].n -= 3;
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_struct_copy_field_updates_and_struct_argument_match_the_device(device):
    """block b = x[ib]; op= on fields; a packed struct passed by value (the same bytes go to
    the device as a structured numpy scalar)."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, 32 * BLOCK.itemsize, dtype=np.uint8).view(BLOCK).copy()
    x["d"] = rng.standard_normal(32).astype(np.float32)
    y = x[::-1].copy()
    p = x[5].copy()
    sim_y, sim_out = y.copy(), np.zeros(32, np.float32)
    clsim.run(block_ops, (32,), (8,), (x, sim_y, p, sim_out))
    dev = run_cl(device, BLOCK_CL, "block_ops", (32,), (8,),
                 (x.view(np.uint8), y.view(np.uint8).copy(), p, np.zeros(32, np.float32)))
    result = compare("out", sim_out, dev.buffers[3], EXACT)
    assert result.equal, result.describe()
    np.testing.assert_array_equal(dev.buffers[1].view(np.uint8), sim_y.view(np.uint8))


@kernel
def float4_views(x, raw, y):
    i = get_global_id(0)
    p = clsim.view(x, float4)
    q = clsim.view(raw, float4, 16)
    w = p[i] * 3.0 + q[i].wzyx
    r = clsim.view(y, float4)
    r[i] = w
    r[i] += float4(0.5)


FLOAT4_VIEWS_CL = r"""
#pragma OPENCL FP_CONTRACT OFF
__kernel void float4_views(__global const float *x, __global const uchar *raw,
                           __global float *y)
{
    size_t i = get_global_id(0);
    __global const float4 *p = (__global const float4 *)x;
    __global const float4 *q = (__global const float4 *)(raw + 16);
    float4 w = p[i] * 3.0f + q[i].wzyx;
    __global float4 *r = (__global float4 *)y;
    r[i] = w;
    r[i] += (float4)(0.5f);
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_float4_views_of_scalar_buffers_match_the_device(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64).astype(np.float32)
    raw = rng.standard_normal(4 + 64).astype(np.float32).view(np.uint8)
    sim = np.zeros(64, np.float32)
    clsim.run(float4_views, (16,), (8,), (x, raw, sim))
    dev = run_cl(device, FLOAT4_VIEWS_CL, "float4_views", (16,), (8,),
                 (x, raw, np.zeros(64, np.float32)))
    result = compare("y", sim, dev.buffers[2], EXACT)
    assert result.equal, result.describe()


@kernel
def printf_strings_vectors(x):
    i = get_global_id(0)
    v = float4(x[0], 1.5, -2.0, 0.25)
    clsim.printf("%s=%d [%v4hlf] <%5.1v4hlf> %v2hld|%-4s|\n", "item", i, v, v,
                 clsim.int2(7, -3), "ab")


PRINTF_CL = r"""
__kernel void printf_strings_vectors(__global const float *x)
{
    int i = get_global_id(0);
    float4 v = (float4)(x[0], 1.5f, -2.0f, 0.25f);
    printf("%s=%d [%v4hlf] <%5.1v4hlf> %v2hld|%-4s|\n", "item", i, v, v, (int2)(7, -3), "ab");
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_printf_strings_and_vectors_match_the_device(device, capfd):
    """One work-item's line (the device prints to the process's stdout)."""
    x = np.float32([3.0])
    sim = clsim.run(printf_strings_vectors, (1,), (1,), (x,)).printf
    capfd.readouterr()
    run_cl(device, PRINTF_CL, "printf_strings_vectors", (1,), (1,), (x,))
    printed = capfd.readouterr().out
    assert printed == "".join(sim), (printed, sim)


@kernel
def fused_half_ops(a, b, c, o_fma, o_mad, o_mix):
    i = get_global_id(0)
    o_fma[i] = clsim.fma(a[i], b[i], c[i])
    o_mad[i] = clsim.mad(a[i], b[i], c[i])
    o_mix[i] = clsim.mix(a[i], b[i], c[i])


FUSED_HALF_CL = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL FP_CONTRACT OFF
__kernel void fused_half_ops(__global const half *a, __global const half *b,
                             __global const half *c, __global half *o_fma,
                             __global half *o_mad, __global half *o_mix)
{
    size_t i = get_global_id(0);
    o_fma[i] = fma(a[i], b[i], c[i]);
    o_mad[i] = mad(a[i], b[i], c[i]);
    o_mix[i] = mix(a[i], b[i], c[i]);
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_half_fma_mad_mix_match_the_device(device):
    """fma single-rounded on half (operands that include double-rounding cases), mix as clsim
    documents it, and mad as clsim fuses it or rounded apart (the device's choice, measured on
    the Intel CPU runtime on two hosts)."""
    reason = missing_feature(get_device(device), "fp16")
    if reason:
        pytest.skip(f"{reason}: half arithmetic needs it")
    rng = np.random.default_rng(11)
    n = 1 << 16
    a = rng.integers(0x3C00, 0x4000, n).astype(np.uint16).view(np.float16)
    b = rng.integers(0x3C00, 0x4000, n).astype(np.uint16).view(np.float16)
    c = rng.integers(0x0001, 0x1000, n).astype(np.uint16).view(np.float16)
    a[::2] = (rng.standard_normal(n // 2) * 10).astype(np.float16)
    c[::2] = rng.random(n // 2).astype(np.float16)
    sim = [np.zeros(n, np.float16) for _ in range(3)]
    clsim.run(fused_half_ops, (n,), (256,), (a, b, c, *sim))
    dev = run_cl(device, FUSED_HALF_CL, "fused_half_ops", (n,), (256,),
                 (a, b, c, *[np.zeros(n, np.float16) for _ in range(3)]))
    result = compare("o_fma", sim[0], dev.buffers[3], EXACT)
    assert result.equal, result.describe()
    # mad and mix may round either way (OpenCL C). The Intel CPU runtime fuses them on half on
    # a host with native half arithmetic (Sapphire Rapids, AVX512-FP16), as clsim does, and
    # rounds every half operation apart on others (AMD EPYC): about 1 in 6 of these differ.
    apart = {"o_mad": (a * b).astype(np.float16) + c,
             "o_mix": ((b - a) * c).astype(np.float16) + a}
    f64 = [v.astype(np.float64) for v in (a, b, c)]
    exact = {"o_mad": f64[0] * f64[1] + f64[2],  # exact in double, then one rounding
             "o_mix": (b - a).astype(np.float64) * f64[2] + f64[0]}
    for k, name in ((1, "o_mad"), (2, "o_mix")):
        own = compare(name, exact[name].astype(np.float16), sim[k], EXACT)
        assert own.equal, own.describe()  # clsim's documented form, on any host
        fused = compare(name, sim[k], dev.buffers[3 + k], EXACT)
        rounded_apart = compare(name, apart[name], dev.buffers[3 + k], EXACT)
        assert fused.equal or rounded_apart.equal, fused.describe()
        assert not compare(name, sim[k], apart[name], EXACT).equal  # the inputs tell them apart


@clsim.func
def dot_n(a, b, n):
    s = np.float32(0.0)
    for k in range(n):
        s += a[k] * b[k]
    return s


@clsim.func
def bump(p, v):
    p[0] = p[0] + v
    p += 1
    p[0] = p[0] - v


@kernel
def helpers_scopes_and_break(x, y, out, idx, n):
    i = get_global_id(0)
    out[i] = dot_n(x + 4 * i, y, 4)
    if i % 2 == 0:
        t = out[i] * 2.0
        out[i] = t
    else:
        t = np.int32(i) * 3
        idx[2 * i + 1] = t
    bump(out + 16 + 2 * i, np.float32(i))
    for j in range(n):
        if x[j] > x[i] + 1.0:
            break
    idx[2 * i] = j


HELPERS_CL = r"""
#pragma OPENCL FP_CONTRACT OFF
float dot_n(__global const float *a, __global const float *b, int n)
{
    float s = 0.0f;
    for (int k = 0; k < n; k++)
        s += a[k] * b[k];
    return s;
}

void bump(__global float *p, float v)
{
    p[0] = p[0] + v;
    p += 1;
    p[0] = p[0] - v;
}

__kernel void helpers_scopes_and_break(__global const float *x, __global const float *y,
                                       __global float *out, __global int *idx, int n)
{
    int i = get_global_id(0);
    out[i] = dot_n(x + 4 * i, y, 4);
    if (i % 2 == 0) {
        float t = out[i] * 2.0f;
        out[i] = t;
    } else {
        int t = i * 3;
        idx[2 * i + 1] = t;
    }
    bump(out + 16 + 2 * i, (float)i);
    int j;
    for (j = 0; j < n; j++)
        if (x[j] > x[i] + 1.0f)
            break;
    idx[2 * i] = j;
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_pointers_into_helpers_block_scope_and_break_match_the_device(device):
    """helper(x + k, n) and a helper writing through a pointer; a temporary of two types in
    two branches; a search loop whose variable is read after it (C's value when no break)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(64).astype(np.float32)
    x[:8] = np.float32([0.0, 0.5, 3.0, -1.0, 0.2, 0.1, 5.0, 0.3])
    y = rng.standard_normal(4).astype(np.float32)
    out = rng.standard_normal(48).astype(np.float32)
    sim_out, sim_idx = out.copy(), np.zeros(32, np.int32)
    clsim.run(helpers_scopes_and_break, (16,), (8,), (x, y, sim_out, sim_idx, np.int32(8)))
    dev = run_cl(device, HELPERS_CL, "helpers_scopes_and_break", (16,), (8,),
                 (x, y, out.copy(), np.zeros(32, np.int32), np.int32(8)))
    for k, (name, sim) in enumerate((("out", sim_out), ("idx", sim_idx))):
        result = compare(name, sim, dev.buffers[2 + k], EXACT)
        assert result.equal, result.describe()
    assert 8 in sim_idx[0::2], "some search must run to its end (C leaves j == n)"


@clsim.func
def scaled_block_sum(blk, k):
    blk.d = blk.d * 2.0
    s = np.float32(0.0)
    for j in range(k):
        s += np.float32(blk.qs[j])
    return s * blk.d


@kernel
def struct_copies(x, y, p, raw, out):
    ib = get_global_id(0)
    b = x[ib]
    b.d = b.d + 1.0
    b.qs[0] = np.uint8(ib)
    y[ib] = b
    y[ib + 32] = x[31 - ib]
    yb = y + 64 + ib
    yb.n = b.n + x[ib].n
    yb.d = scaled_block_sum(x[ib], 4) + scaled_block_sum(b, 2)
    p.qs[1] = np.uint8(ib)
    out[ib] = np.float32(p.qs[1]) + p.d + clsim.view(raw, np.float32, 4)[ib] \
        + (clsim.view(raw, np.float32, 8) + 1)[ib] + np.float32(b.qs[0]) + x[ib].d


STRUCT_COPIES_CL = "#pragma OPENCL FP_CONTRACT OFF\n" + clsim.cstruct(BLOCK, "block") + r"""
float scaled_block_sum(block blk, int k)
{
    blk.d = blk.d * 2.0f;
    float s = 0.0f;
    for (int j = 0; j < k; j++)
        s += (float)blk.qs[j];
    return s * blk.d;
}

__kernel void struct_copies(__global const block *x, __global block *y, block p,
                            __global const uchar *raw, __global float *out)
{
    int ib = get_global_id(0);
    block b = x[ib];
    b.d = b.d + 1.0f;
    b.qs[0] = (uchar)ib;
    y[ib] = b;
    y[ib + 32] = x[31 - ib];
    __global block *yb = y + 64 + ib;
    yb->n = b.n + x[ib].n;
    yb->d = scaled_block_sum(x[ib], 4) + scaled_block_sum(b, 2);
    p.qs[1] = (uchar)ib;
    out[ib] = (float)p.qs[1] + p.d + ((__global const float *)(raw + 4))[ib]
        + (((__global const float *)(raw + 8)) + 1)[ib] + (float)b.qs[0] + x[ib].d;
}
"""


@pytest.mark.parametrize("device", DEVICES)
def test_struct_copies_and_views_in_place_match_the_device(device):
    """C's struct copies: a modified copy (b.d = ...), whole-record assignment (y[i] = b,
    y[j] = x[k]), stores through a record pointer (yb->n), a by-value struct modified in
    a helper and as a kernel argument; views indexed in one expression."""
    rng = np.random.default_rng(11)
    x = rng.integers(0, 256, 32 * BLOCK.itemsize, dtype=np.uint8).view(BLOCK).copy()
    x["d"] = rng.standard_normal(32).astype(np.float32)
    p = x[7].copy()
    raw = rng.standard_normal(48).astype(np.float32).view(np.uint8)
    y = np.zeros(96, BLOCK)
    sim_y, sim_out = y.copy(), np.zeros(32, np.float32)
    clsim.run(struct_copies, (32,), (8,), (x, sim_y, p, raw, sim_out))
    dev = run_cl(device, STRUCT_COPIES_CL, "struct_copies", (32,), (8,),
                 (x.view(np.uint8), y.view(np.uint8).copy(), p, raw, np.zeros(32, np.float32)))
    result = compare("out", sim_out, dev.buffers[4], EXACT)
    assert result.equal, result.describe()
    np.testing.assert_array_equal(dev.buffers[1].view(np.uint8), sim_y.view(np.uint8))
