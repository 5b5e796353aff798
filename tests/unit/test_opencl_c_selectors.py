"""Vector component selectors in the OpenCL C front end, however they are written: in the
source (``v.lo.s1``), inside a macro's body (ggml's ``CONVERT_ACC4(x)`` spells ``(x).s0`` in
the macro), chained (``(v).wzyx.s3012``), and full-width ones that keep the vector's type
(``v.wzyx``, which clang gives the same type as ``v``: once translated as plain ``v``).

Contract: each selector picks the components OpenCL C picks, also on a macro's argument
(``b.s0`` in the body, ``as_float4(x[0])`` at the call); one the front end cannot read (the
selector in a second macro the body calls) is a compile error naming it, never a wrong
result. Also here: a vector shift's count, which clang types apart from the shifted vector.
Kernels written here; jit=False.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim

SRC = """#define CV(x) ((float4)((float)(x).s0, (float)(x).s1, (float)(x).s2, (float)(x).s3))
#define LOHI(v) (v).lo.s1 + (v).hi.s0
#define REV(v) (v).wzyx.s3012
kernel void k(global half4 *h, global float4 *f, global float *g) {
    f[0] = CV(h[1]);
    float4 v = f[2];
    g[0] = LOHI(v);
    f[1] = v.wzyx;
    f[2] = REV(v) + f[2].xyzw + ((float4)(1.0f, 2.0f, 3.0f, 4.0f)).zwxy;
}
"""


def test_selectors_in_macros_and_full_width_ones_pick_cs_components():
    h = np.arange(8, dtype=np.float16)
    f, g = np.arange(12, dtype=np.float32), np.zeros(1, np.float32)
    clsim.run(clsim.load_cl(SRC, "k"), (1,), (1,), (h, f, g), jit=False)
    v = np.array([8, 9, 10, 11], np.float32)
    assert list(f[0:4]) == [4, 5, 6, 7]                   # CV(h[1])
    assert g[0] == v[1] + v[2]                            # (v).lo.s1 + (v).hi.s0
    assert list(f[4:8]) == list(v[::-1])                  # v.wzyx
    want = v[::-1][[3, 0, 1, 2]] + v + np.array([3, 4, 1, 2], np.float32)
    assert list(f[8:12]) == list(want)


def test_selectors_on_macro_arguments_pick_the_macro_bodys_uses_in_order():
    """ggml's dequantizeBlockAccum_ns_sgbroadcast_1_hi(total, as_ushort8(regA), ...) spells
    bits4.s0, bits4.s1... in the body, on an argument written at the call."""
    src = """#define ACC(t, b) t += b.s0 * 2.0f; t += b.s1; t -= b.lo.y + b.w;
    kernel void k(global float4 *x, global float *o) {
        float t = 0;
        ACC(t, as_float4(x[0]))
        ACC(t, (x[1] + x[0]))
        o[0] = t;
    }"""
    x, o = np.array([1, 2, 3, 4, 10, 20, 30, 40], np.float32), np.zeros(1, np.float32)
    clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (x, o), jit=False)
    a, b = x[:4], x[4:] + x[:4]
    assert o[0] == sum(v[0] * 2 + v[1] - (v[1] + v[3]) for v in (a, b))


@pytest.mark.parametrize("macros", [
    # the selector is in a second macro the body calls: no use in this body has it
    "#define INNER(b) b.s0\n#define OUTER(t, b) t += INNER(b);",
    # a use the expansion drops (SKIP discards it): pairing uses and selectors in order would
    # read .s0 for the .s1 that is left
    "#define SKIP(x) 0.0f\n#define OUTER(t, b) t += SKIP(b.s0) + b.s1;",
])
def test_a_selector_the_front_end_cannot_read_is_refused(macros):
    src = macros + """
    kernel void k(global float4 *x, global float *o) {
        float t = 0;
        OUTER(t, as_float4(x[0]))
        o[0] = t;
    }"""
    with pytest.raises(clsim.KernelCompileError,
                       match="a vector component access written through a macro"):
        clsim.load_cl(src, "k")


def test_vector_shift_counts_take_the_shifted_vectors_type():
    """clang types uchar4 << (uchar)4 with an int4 count; OpenCL uses the count's low
    log2(8) bits, which converting it to uchar4 keeps (ggml's mul_mm_q5_0_f32_l4_lm)."""
    src = """kernel void k(global uchar4 *q, global int4 *n, global uchar4 *o) {
        o[0] = q[0] << (uchar)4; o[1] = q[1] >> 3; o[2] = q[2] << n[0]; o[3] = q[3] << 9; }"""
    q = np.array([1, 2, 0x81, 0xFF] * 4, np.uint8)
    n, o = np.array([1, 2, 9, 7], np.int32), np.zeros(16, np.uint8)
    clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (q, n, o), jit=False)
    v = q[:4].astype(np.int64)
    masked = [1, 2, 1, 7]  # 9 & 7
    want = [(v << 4) & 255, v >> 3, (v << masked) & 255, (v << 1) & 255]
    np.testing.assert_array_equal(o.reshape(4, 4), np.array(want, np.uint8))
