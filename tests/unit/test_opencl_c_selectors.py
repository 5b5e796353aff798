"""Vector component selectors in the OpenCL C front end, however they are written: in the
source (``v.lo.s1``), inside a macro's body (ggml's ``CONVERT_ACC4(x)`` spells ``(x).s0`` in
the macro), chained (``(v).wzyx.s3012``), and full-width ones that keep the vector's type
(``v.wzyx``, which clang gives the same type as ``v``: once translated as plain ``v``).

Contract: each selector picks the components OpenCL C picks; one the front end cannot read
(a selector in a macro applied to a macro argument) is a compile error naming it, never a
wrong result. Kernels written here; jit=False.
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


def test_a_selector_the_front_end_cannot_read_is_refused():
    src = """#define FIRST(t, b) t += b.s0;
    kernel void k(global uint2 *x, global float *o) { float t = 0; FIRST(t, as_float2(x[0]))
        o[0] = t; }"""
    with pytest.raises(clsim.KernelCompileError,
                       match="a vector component access written through a macro"):
        clsim.load_cl(src, "k")
