"""A declaration whose type is a macro keeps its initialiser (ggml's flash attention:
``ACC_TYPE score = (dot.s0 + ... + dot.s3) * scale;``). libclang gives such a declaration an
extent starting at the macro's definition; the front end once read no ``=`` there and
initialised the variable to zero, silently."""

import numpy as np
import pytest

import clsim

CL = """
#define ACC_TYPE float
#define ACC_TYPE4 float4
#define M_INIT (-3.0e38f)
kernel void k(global const float4 *x, global float *out, float scale,
              const global void *sinks) {
    const global float *sp = NULL;
    if (sinks != NULL) sp = (const global float *)sinks;
    ACC_TYPE4 d = x[0];
    ACC_TYPE score = (d.s0 + d.s1 + d.s2 + d.s3) * scale;
    ACC_TYPE m = (sp != NULL) ? sp[0] : M_INIT;
    ACC_TYPE arr[2] = {score, m};
    out[0] = score;
    out[1] = m;
    out[2] = arr[1] + d.s3;
}
"""


@pytest.mark.parametrize("jit", [False, True])
def test_a_macro_typed_declaration_keeps_its_initialiser(jit):
    kernel = clsim.load_cl(CL, "k")
    x = np.array([1.0, 2.0, 3.0, 4.5], np.float32)
    out = np.zeros(3, np.float32)
    clsim.run(kernel, (1,), (1,), (x, out, np.float32(0.5), np.array([7.0], np.float32)),
              jit=jit)
    np.testing.assert_array_equal(out, [5.25, 7.0, 11.5])
