"""Images in the OpenCL C front end: image1d_buffer_t / image1d_t / image2d_t parameters with
their access qualifiers, ``sampler_t`` constants (program scope and inside a function) and the
image builtins translate to the Python language's images and run as OpenCL computes them.

Contract: an image parameter takes a ``clsim.Image`` of the parameter's kind and access (any
other argument is an InvalidArgumentError naming it and what to pass); a sampler becomes a
module-level ``CLK_... | CLK_...`` constant; the compile check (``compiles``) gives an image the
format its reads need, through helpers it is passed to; sampler parameters and read_write
images are compile errors naming the construct. Kernels are written here; jit=False.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim.frontends.opencl_c.check import compiles
from clsim.frontends.opencl_c.load import translate, translated_kernels

# ggml's transpose.cl shape: half4 pixels of a buffer image read and written without sampler
TRANSPOSE = """#pragma OPENCL EXTENSION cl_khr_fp16 : enable
kernel void transpose4(__read_only image1d_buffer_t src, __write_only image1d_buffer_t dst,
                       const uint rows, const uint cols) {
    const int i = get_global_id(0);
    const int j = get_global_id(1);
    half4 t0 = read_imageh(src, (j * 4 + 0) * cols + i);
    half4 t1 = read_imageh(src, (j * 4 + 1) * cols + i);
    half4 t2 = read_imageh(src, (j * 4 + 2) * cols + i);
    half4 t3 = read_imageh(src, (j * 4 + 3) * cols + i);
    write_imageh(dst, (i * 4 + 0) * rows + j, (half4)(t0.s0, t1.s0, t2.s0, t3.s0));
    write_imageh(dst, (i * 4 + 1) * rows + j, (half4)(t0.s1, t1.s1, t2.s1, t3.s1));
    write_imageh(dst, (i * 4 + 2) * rows + j, (half4)(t0.s2, t1.s2, t2.s2, t3.s2));
    write_imageh(dst, (i * 4 + 3) * rows + j, (half4)(t0.s3, t1.s3, t2.s3, t3.s3));
}
"""

SAMPLED = """__constant sampler_t EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                                CLK_FILTER_NEAREST;
__constant sampler_t BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
kernel void shifted(read_only image2d_t img, global float *out, int dx) {
    const sampler_t edge = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                           CLK_FILTER_NEAREST;
    int x = get_global_id(0), y = get_global_id(1);
    int w = get_image_width(img);
    float4 a = read_imagef(img, EDGE, (int2)(x + dx, y));
    float4 b = read_imagef(img, BORDER, (int2)(x + dx, y));
    float4 c = read_imagef(img, edge, (int2)(x + dx, y));
    out[3 * (y * w + x)] = a.x + a.w;
    out[3 * (y * w + x) + 1] = b.x + b.w;
    out[3 * (y * w + x) + 2] = c.x + c.w;
}
"""

# an unsigned image read only inside a helper: its format is known through the call
GATHER = """uint first(read_only image1d_buffer_t q, int i) { return read_imageui(q, i).x; }
kernel void gather(read_only image1d_buffer_t q, global uint *out) {
    int i = get_global_id(0);
    out[i] = first(q, i) + 1;
}
"""


def test_buffer_images_transpose_half_pixels():
    kernel = clsim.load_cl(TRANSPOSE, "transpose4")
    rows, cols = 2, 3  # a (4 rows x 4 cols) half matrix, rows of cols half4 pixels
    a = np.arange(16 * rows * cols, dtype=np.float16).reshape(4 * rows, 4 * cols)
    out = np.zeros(a.size, np.float16)
    src = clsim.Image(a.reshape(-1), "RGBA", np.float16)
    dst = clsim.Image(out, "RGBA", np.float16, access="write_only")
    clsim.run(kernel, (cols, rows), (1, 1), (src, dst, np.uint32(rows), np.uint32(cols)),
              jit=False)
    np.testing.assert_array_equal(out.reshape(4 * cols, 4 * rows), a.T)


def test_samplers_become_module_constants_and_address_as_declared():
    source = translate(SAMPLED).source
    assert ("EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | "
            "CLK_FILTER_NEAREST") in source
    assert "BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST" \
        in source
    assert "read_imagef(img, BORDER, " in source and "read_imagef(img, edge, " in source
    kernel = clsim.load_cl(SAMPLED, "shifted")
    h, w = 2, 3
    img = np.arange(h * w * 4, dtype=np.float32).reshape(h, w, 4)
    out = np.zeros(3 * h * w, np.float32)
    clsim.run(kernel, (w, h), (w, 1), (clsim.Image(img), out, np.int32(2)), jit=False)
    got = out.reshape(h, w, 3)
    for y in range(h):
        for x in range(w):
            edge = img[y, min(x + 2, w - 1)]
            assert got[y, x, 0] == got[y, x, 2] == edge[0] + edge[3]  # the last column
            inside = x + 2 < w
            border = img[y, x + 2, 0] + img[y, x + 2, 3] if inside else 0.0
            assert got[y, x, 1] == border  # clamp: the border colour (0, 0, 0, 0)


def test_an_image_read_in_a_helper_runs_and_compiles_with_its_format():
    kernel = clsim.load_cl(GATHER, "gather")
    assert kernel.image_suffixes == {"q": {"ui"}}  # found through the call to first()
    assert compiles(kernel) is None
    q = np.arange(16, dtype=np.uint32) * 3
    out = np.zeros(16, np.uint32)
    clsim.run(kernel, (16,), (4,), (clsim.Image(q, "R"), out), jit=False)
    np.testing.assert_array_equal(out, q + 1)


@pytest.mark.parametrize("arg, why", [
    (lambda d: d, "got ndarray"),
    (lambda d: clsim.Image(d, "RGBA", np.float16), "access='write_only'"),
    (lambda d: clsim.Image(d, "RGBA", np.float16, kind="image1d", access="write_only"),
     "kind='image1d_buffer'"),
])
def test_an_image_argument_must_match_the_parameter(arg, why):
    kernel = clsim.load_cl(TRANSPOSE, "transpose4")
    src = clsim.Image(np.zeros(16, np.float16), "RGBA", np.float16)
    with pytest.raises(clsim.InvalidArgumentError,
                       match=r"transpose4: argument 'dst' is a write_only image1d_buffer_t "
                             rf"in the \.cl.*{why}"):
        clsim.run(kernel, (1, 1), (1, 1),
                  (src, arg(np.zeros(16, np.float16)), np.uint32(1), np.uint32(1)), jit=False)


@pytest.mark.parametrize("source, what", [
    ("kernel void k(read_only image2d_t img, sampler_t s, global float *o) {\n"
     "  o[0] = read_imagef(img, s, (int2)(0, 0)).x; }", r"kernel\.cl:1 in k: a sampler parameter"),
    ("kernel void k(read_write image2d_t img) {\n  write_imagef(img, (int2)(0, 0), 1.0f); }",
     r"kernel\.cl:1 in k: a parameter of type __read_write image2d_t"),
])
def test_sampler_parameters_and_read_write_images_are_refused(source, what):
    with pytest.raises(clsim.KernelCompileError, match=what):
        clsim.load_cl(source, "k", options="-cl-std=CL2.0")


def test_every_kernel_of_an_image_file_compiles():
    kernels = translated_kernels(translate(TRANSPOSE + SAMPLED + GATHER))
    assert {name: compiles(k) for name, k in kernels.items()} == \
        {"transpose4": None, "shifted": None, "gather": None}
