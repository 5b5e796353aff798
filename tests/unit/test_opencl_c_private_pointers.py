"""The OpenCL C front end on the pointer forms of issue 22 that ggml's kernels use: arrays of
vectors (``uint4 qv[2]``, ``__local float4 lt[4][2]``), the address of a private vector
(``fill4(&t)``, ``(uchar *)&pre``, ``((float *)&val)[v] = x``), the address of a struct's
scalar field (``&b[i].d``), ``(ulong)p`` alignment tests, ``x[i].qs`` through an array of
pointers, ``vload_half``/``vstore_half`` through a cast pointer, and ``uchar4 << int4``.
Each kernel is written here; the JIT and ``jit=False`` must agree with the value C gives."""

from __future__ import annotations

import numpy as np
import pytest

import clsim

JIT = pytest.mark.parametrize("jit", [False, True])

PRIVATE = """
void fill4(float4 *reg, float a) { *reg = (float4)(a, a + 1.0f, a + 2.0f, a + 3.0f); }
void twice(float *r, float a) { *r = a * 2.0f; }

kernel void k(global float *x, global float *out) {
    int i = get_global_id(0);
    float4 acc[4];
    uint4 qv[2] = {(uint4)(1), (uint4)(2)};
    for (int j = 0; j < 4; j++) acc[j] = (float4)(x[i] + j);
    acc[1].y = 7.0f;
    acc[2].x += 1.0f;
    float4 t;
    fill4(&t, x[i]);
    float s;
    twice(&s, 3.0f);
    ushort8 pre = (ushort8)(1, 2, 3, 4, 5, 6, 7, (ushort)i);
    pre.s1 = 9;
    uchar *pp = (uchar *)(&pre);
    float4 val;
    for (int v = 0; v < 4; v++) ((float *)&val)[v] = x[i] * v;
    __local float4 lt[4][2];
    lt[get_local_id(0)][1] = acc[3];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[i] = acc[1].y + acc[2].x + t.w + s + (float)qv[1].x + pp[2] + pp[14] + val.z
             + lt[get_local_id(0)][1].y;
}
"""


@JIT
def test_arrays_of_vectors_and_addresses_of_private_vectors(jit):
    kernel = clsim.load_cl(PRIVATE, "k")
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(kernel, (8,), (4,), (x, out), jit=jit, checks="all")
    # 7 + (x + 3) + (x + 3) + 6 + 2 + 9 (low byte of pre.s1) + x (low byte of pre.s7 = i)
    # + 2x + (x + 3)
    np.testing.assert_array_equal(out, 33 + 6 * x)


FIELDS = """
typedef struct { half d; half dmin; uchar qs[8]; } blk;
kernel void k(global half *x, global float *out, global blk *b, global blk *src0) {
    int i = get_global_id(0);
    global half *p = x + i;
    const bool aligned = (((ulong) p) & 7) == 0;
    ulong a0 = (ulong)(x + 1);
    ulong a1 = (ulong)(x + 5);
    global half *dh = &b[i].d;
    global half *dm = &b[i].dmin;
    global blk *ax[2];
    ax[0] = (global blk *)((global char *)src0 + 10 * i);
    ax[1] = src0 + 1;
    global uchar *qs = ax[0][0].qs + 2;
    out[i] = (aligned ? 100.0f : 0.0f) + (float)(a1 - a0) + vload_half(0, dh)
             + vload_half(0, dm) + (float)dh[1] + qs[1] + ax[1][0].qs[7];
}
"""
BLK = np.dtype([("d", np.float16), ("dmin", np.float16), ("qs", np.uint8, (8,))])


@JIT
def test_field_addresses_pointer_integers_and_fields_through_pointer_arrays(jit):
    kernel = clsim.load_cl(FIELDS, "k")
    x = np.arange(8, dtype=np.float16)
    b = np.zeros(8, BLK)
    b["d"], b["dmin"] = np.arange(8), 0.5
    src0 = np.zeros(8, BLK)
    src0["qs"] = np.arange(8, dtype=np.uint8) * 3
    out = np.zeros(8, np.float32)
    clsim.run(kernel, (8,), (4,), (x, out, b, src0), jit=jit, checks="all")
    raw = src0.view(np.uint8)
    i = np.arange(8)
    # a buffer starts 8-aligned (as on a device), so x + i is 8-aligned every 4th half
    want = np.where(i % 4 == 0, 100, 0) + 8 + i + 0.5 + 0.5 + raw[10 * i + 7] + 21
    np.testing.assert_array_equal(out, want.astype(np.float32))


HALVES = """
kernel void k(global uchar *raw, global float *out, global uchar *dst) {
    int i = get_global_id(0);
    global half *p = (global half *)(raw + 2);
    out[i] = vload_half(i, p);
    float4 v = vload_half4(0, (global half *)(raw + 2 + 8 * i));
    out[8 + i] = v.x + v.w;
    vstore_half_rtp(out[i] * 1.0001f, i, (global half *)(dst + 2));
    vstore_half4_rtz(v * 1.0001f, 1, (global half *)(dst + 34 + 8 * i));
    uchar4 q = (uchar4)((uchar)i, (uchar)1, (uchar)3, (uchar)255);
    uchar4 s = q << (uchar)4;
    out[16 + i] = s.x + s.y + s.z + s.w;
}
"""


@JIT
def test_half_loads_and_stores_through_cast_pointers_and_vector_shifts(jit):
    kernel = clsim.load_cl(HALVES, "k")
    h = (np.arange(40, dtype=np.float32) * 1.37).astype(np.float16)
    raw = np.zeros(120, np.uint8)
    raw[2:82] = h.view(np.uint8)
    out = np.zeros(24, np.float32)
    dst = np.zeros(120, np.uint8)
    clsim.run(kernel, (8,), (4,), (raw, out, dst), jit=jit, checks="all")
    f = h.astype(np.float32)
    np.testing.assert_array_equal(out[:8], f[:8])
    np.testing.assert_array_equal(out[8:16], f[4 * np.arange(8)] + f[4 * np.arange(8) + 3])
    up = (out[:8] * np.float32(1.0001)).astype(np.float16)  # nearest; rtp rounds up
    up = np.where(up.astype(np.float32) < out[:8] * np.float32(1.0001),
                  np.nextafter(up, np.float16(np.inf)), up)
    np.testing.assert_array_equal(dst[2:18].view(np.float16), up)
    scaled = f[0:4] * np.float32(1.0001)
    down = scaled.astype(np.float16)  # rtz: toward zero (all positive)
    down = np.where(down.astype(np.float32) > scaled, np.nextafter(down, np.float16(0)), down)
    np.testing.assert_array_equal(dst[42:50].view(np.float16), down)
    i = np.arange(8)
    np.testing.assert_array_equal(out[16:], ((i << 4) & 255) + 16 + 48 + 240)


def test_an_access_through_a_cast_half_pointer_past_the_buffer_names_it():
    kernel = clsim.load_cl(HALVES, "k")
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(kernel, (8,), (4,), (np.zeros(40, np.uint8), np.zeros(24, np.float32),
                                       np.zeros(120, np.uint8)), jit=False)
    assert "'raw'" in str(info.value) and "kernel.cl:" in str(info.value)


def test_the_translation_prints_back_as_c_that_reads_back_the_same():
    """load_cl, then to_cl (arrays of vectors as ``uint4 qv[2]``, components in memory as
    ``acc[1].s1``), then load_cl again: the same outputs."""
    kernel = clsim.load_cl(PRIVATE, "k")
    x = np.arange(8, dtype=np.float32)
    text = clsim.to_cl(kernel, (x, np.zeros(8, np.float32)), local_size=(4,))
    assert "uint4 qv[2];" in text and "acc[1].s1 = 7.0f;" in text
    back = clsim.load_cl(text, "k")
    out = np.zeros(8, np.float32)
    clsim.run(back, (8,), (4,), (x, out), jit=False)
    np.testing.assert_array_equal(out, 33 + 6 * x)
