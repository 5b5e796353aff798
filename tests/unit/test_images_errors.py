"""OpenCL images in the simulator: what is refused and where, with messages that say what to do.

Contract: an out-of-range read without a sampler or with CLK_ADDRESS_NONE, and any
out-of-range write, is an ``OutOfBoundsError`` naming the kernel, work-item, image and
coordinate (with ``checks="none"`` the read returns the border colour and the write is
dropped); misuse of the image builtins is a ``KernelCompileError``; a malformed
``clsim.Image`` is an ``InvalidArgumentError``.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_ADDRESS_CLAMP,
    CLK_ADDRESS_NONE,
    CLK_ADDRESS_REPEAT,
    CLK_FILTER_LINEAR,
    CLK_FILTER_NEAREST,
    CLK_NORMALIZED_COORDS_FALSE,
    CLK_NORMALIZED_COORDS_TRUE,
    float2,
    get_global_id,
    int2,
    read_imagef,
    read_imagei,
    read_imageui,
    write_imagef,
)

NONE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST
BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST
LINEAR = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_LINEAR
NORMALIZED = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST
REPEAT_UNNORMALIZED = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_REPEAT | CLK_FILTER_NEAREST


@clsim.kernel
def read_no_sampler(img, out, shift):
    i = get_global_id(0)
    out[i] = read_imagef(img, int2(i + shift, 1)).x


@clsim.kernel
def read_address_none(img, out, shift):
    i = get_global_id(0)
    out[i] = read_imagef(img, NONE, int2(i, shift)).x


@clsim.kernel
def write_past(img, n):
    i = get_global_id(0)
    write_imagef(img, i + n, (1.0, 2.0, 3.0, 4.0))


def test_read_out_of_range_without_sampler_names_image_and_coordinate():
    img = clsim.Image(np.zeros((2, 4, 4), np.float32))
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(read_no_sampler, (4,), (4,), (img, np.zeros(4, np.float32), np.int32(1)),
                  jit=False)
    msg = str(info.value)
    assert "read of image 'img' at (4, 1) out of range (4x2)" in msg
    assert "read_no_sampler" in msg and "CLK_ADDRESS_CLAMP_TO_EDGE" in msg
    assert info.value.index == 4 and info.value.length == 4


def test_read_with_address_none_out_of_range_is_an_error_and_checks_none_reads_border():
    img = clsim.Image(np.ones((2, 4, 4), np.float32))
    with pytest.raises(clsim.OutOfBoundsError, match=r"image 'img' at \(0, -1\)"):
        clsim.run(read_address_none, (4,), (4,), (img, np.zeros(4, np.float32), np.int32(-1)),
                  jit=False)
    out = np.full(4, 5.0, np.float32)
    clsim.run(read_address_none, (4,), (4,), (img, out, np.int32(-1)), checks="none",
              jit=False)
    assert (out == 0).all()  # unchecked: the border colour, never memory outside the image


def test_write_out_of_range_is_an_error():
    img = clsim.Image(np.zeros((8, 4), np.float32), access="write_only")
    with pytest.raises(clsim.OutOfBoundsError, match="write to image 'img' at 8 out of range "
                                                      r"\(width 8\)"):
        clsim.run(write_past, (4,), (4,), (img, np.int32(5)), jit=False)


@clsim.kernel
def misuse_ui(img, out):
    out[0] = read_imageui(img, 0).x


@clsim.kernel
def misuse_linear(img, out):
    out[0] = read_imagef(img, LINEAR, int2(0, 0)).x


@clsim.kernel
def misuse_normalized(img, out):
    out[0] = read_imagef(img, NORMALIZED, int2(0, 0)).x


@clsim.kernel
def misuse_repeat(img, out):
    out[0] = read_imagef(img, REPEAT_UNNORMALIZED, float2(0.5, 0.5)).x


@clsim.kernel
def misuse_runtime_sampler(img, out, smp):
    out[0] = read_imagef(img, smp, int2(0, 0)).x


@clsim.kernel
def misuse_buffer_sampler(img, out):
    out[0] = read_imagef(img, BORDER, 0).x


@clsim.kernel
def misuse_coord(img, out):
    out[0] = read_imagef(img, 0).x


@clsim.kernel
def misuse_read_write_only(img, out):
    out[0] = read_imagei(img, 0).x


@pytest.mark.parametrize("kernel, image, extra, message", [
    (misuse_ui, clsim.Image(np.zeros((2, 2, 4), np.float32)), (),
     "read_imageui on an image of CL_FLOAT channels is undefined"),
    (misuse_linear, clsim.Image(np.zeros((2, 2, 4), np.float32)), (),
     "CLK_FILTER_LINEAR and CLK_NORMALIZED_COORDS_TRUE need float coordinates"),
    (misuse_normalized, clsim.Image(np.zeros((2, 2, 4), np.float32)), (),
     "CLK_FILTER_LINEAR and CLK_NORMALIZED_COORDS_TRUE need float coordinates"),
    (misuse_repeat, clsim.Image(np.zeros((2, 2, 4), np.float32)), (),
     "repeat addressing needs CLK_NORMALIZED_COORDS_TRUE"),
    (misuse_runtime_sampler, clsim.Image(np.zeros((2, 2, 4), np.float32)), (np.int32(0),),
     "the sampler must be a module-level constant"),
    (misuse_buffer_sampler, clsim.Image(np.zeros(8, np.float32)), (),
     "an image1d_buffer_t is read without a sampler"),
    (misuse_coord, clsim.Image(np.zeros((2, 2, 4), np.float32)), (),
     "the coordinate of an image2d must be an int2"),
    (misuse_read_write_only, clsim.Image(np.zeros(8, np.int32), access="write_only"), (),
     "image 'img' is write_only; pass it as clsim.Image(..., access='read_only')"),
])
def test_misuse_is_a_compile_error_that_says_what_to_do(kernel, image, extra, message):
    with pytest.raises(clsim.KernelCompileError, match=message.replace("(", r"\(").replace(
            ")", r"\)").replace(".", r"\.")):
        clsim.run(kernel, (1,), (1,), (image, np.zeros(1, np.float32), *extra), jit=False)


@pytest.mark.parametrize("build, message", [
    (lambda: clsim.Image(np.zeros((4, 3), np.float32), "RGBA"), "a 1-D image of RGBA takes"),
    (lambda: clsim.Image(np.zeros((2, 2, 4), np.float64)), "channel type 'float64'"),
    (lambda: clsim.Image(np.zeros((2, 2, 4), np.float32), "BGRA"), "order 'BGRA'"),
    (lambda: clsim.Image(np.zeros(8, np.float32), dtype="unorm_int8"),
     "data has dtype float32, the channel type needs uint8"),
    (lambda: clsim.Image(np.zeros((2, 3, 4), np.float32)[:, ::2]), "C-contiguous"),
])
def test_bad_image_arguments(build, message):
    with pytest.raises(clsim.InvalidArgumentError, match=message):
        build()
