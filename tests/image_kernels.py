"""Kernels with OpenCL images, written here, and their OpenCL C twins (tests only).

``image_mix`` reads an image1d_buffer_t of float4 and one of half4 (read_imagef) and writes
a buffer, ``half_mix`` reads both with read_imageh (float rounded to half); ``edge_blur``
reads an image2d_t through clamp-to-edge and clamp (border) samplers at and past the border;
``gather_uint`` reads a CL_R uint32 image1d_buffer_t (ggml's quantised-weight pattern; not
its alpha: PoCL 3 reads 0 where the spec, Intel's runtime and Oclgrind read 1);
``scale_into`` writes a write_only image2d_t of half with write_imageh and one of float with
write_imagef; ``unorm_round_trip`` reads a CL_UNORM_INT8/16 image and writes one;
``linear_taps`` reads an image2d_t and an image1d_t with CLK_FILTER_LINEAR samplers.
"""

from __future__ import annotations

import clsim
from clsim import (
    CLK_ADDRESS_CLAMP,
    CLK_ADDRESS_CLAMP_TO_EDGE,
    CLK_ADDRESS_MIRRORED_REPEAT,
    CLK_ADDRESS_REPEAT,
    CLK_FILTER_LINEAR,
    CLK_FILTER_NEAREST,
    CLK_NORMALIZED_COORDS_FALSE,
    CLK_NORMALIZED_COORDS_TRUE,
    convert_half4,
    float2,
    float4,
    get_global_id,
    get_image_height,
    get_image_width,
    int2,
    read_imagef,
    read_imageh,
    read_imageui,
    write_imagef,
    write_imageh,
)

EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST
BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST
LIN_EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_LINEAR
LIN_BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_LINEAR
N_REPEAT = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_REPEAT | CLK_FILTER_NEAREST
N_MIRROR_LIN = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_MIRRORED_REPEAT | CLK_FILTER_LINEAR
N_EDGE_LIN = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_LINEAR
N_MIRROR = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_MIRRORED_REPEAT | CLK_FILTER_NEAREST
N_REPEAT_LIN = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_REPEAT | CLK_FILTER_LINEAR


@clsim.kernel
def image_mix(a, h, out):
    i = get_global_id(0)
    v = read_imagef(a, i)
    w = read_imagef(h, i)
    s = v * 2.0 + w
    out[4 * i] = s.x
    out[4 * i + 1] = s.y
    out[4 * i + 2] = s.z
    out[4 * i + 3] = s.w


@clsim.kernel
def half_mix(a, h, out_h):
    i = get_global_id(0)
    hv = read_imageh(h, i)
    av = read_imageh(a, i)
    out_h[2 * i] = hv.x + hv.y
    out_h[2 * i + 1] = hv.z * hv.w + av.x


@clsim.kernel
def edge_blur(img, out):
    x = get_global_id(0)
    y = get_global_id(1)
    w = get_image_width(img)
    left = read_imagef(img, EDGE, int2(x - 1, y))
    below = read_imagef(img, EDGE, int2(x + 1, y + 3))
    far = read_imagef(img, BORDER, int2(x + 2, y - 1))
    out[y * w + x] = left.x + below.y * 0.5 + far.z + far.w + float(get_image_height(img))


@clsim.kernel
def gather_uint(q, out):
    i = get_global_id(0)
    a = read_imageui(q, i)
    b = read_imageui(q, 2 * i + 1)
    out[i] = (a.x >> 4) ^ (b.x * 3) + a.y + a.z


@clsim.kernel
def scale_into(src, dst_h, dst_f):
    x = get_global_id(0)
    y = get_global_id(1)
    v = read_imagef(src, EDGE, int2(x, y))
    write_imageh(dst_h, int2(x, y), convert_half4(v * 0.3))
    write_imagef(dst_f, int2(y, x), float4(v.w, v.z, v.y, v.x) - 1.0)


@clsim.kernel
def unorm_round_trip(src, dst, out, vals):
    i = get_global_id(0)
    v = read_imagef(src, i)
    out[4 * i] = v.x
    out[4 * i + 1] = v.y
    out[4 * i + 2] = v.z
    out[4 * i + 3] = v.w
    f = vals[i]
    write_imagef(dst, i, (f, f * 0.5, -f, f * 3.0))


@clsim.kernel
def linear_taps(img, img1, out, xs):
    i = get_global_id(0)
    u = xs[2 * i]
    v = xs[2 * i + 1]
    a = read_imagef(img, LIN_EDGE, float2(u, v))
    b = read_imagef(img, LIN_BORDER, float2(v, u))
    c = read_imagef(img1, LIN_EDGE, u)
    out[4 * i] = a.x
    out[4 * i + 1] = b.y
    out[4 * i + 2] = c.z
    out[4 * i + 3] = b.w


@clsim.kernel
def normalized_taps(img, out, xs):
    i = get_global_id(0)
    u = xs[2 * i]
    v = xs[2 * i + 1]
    a = read_imagef(img, N_REPEAT, float2(u, v))
    b = read_imagef(img, N_MIRROR, float2(v, u))
    c = read_imagef(img, N_EDGE_LIN, float2(u, v))
    d = read_imagef(img, N_MIRROR_LIN, float2(v, u))
    e = read_imagef(img, N_REPEAT_LIN, float2(u, v))
    out[4 * i] = a.x + b.y
    out[4 * i + 1] = c.z
    out[4 * i + 2] = d.w
    out[4 * i + 3] = e.x


IMAGES_CL = r"""
__constant sampler_t EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                            CLK_FILTER_NEAREST;
__constant sampler_t BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP |
                              CLK_FILTER_NEAREST;

__kernel void image_mix(read_only image1d_buffer_t a, read_only image1d_buffer_t h,
                        __global float *out)
{
    int i = get_global_id(0);
    float4 v = read_imagef(a, i);
    float4 w = read_imagef(h, i);
    float4 s = v * 2.0f + w;
    out[4 * i] = s.x;
    out[4 * i + 1] = s.y;
    out[4 * i + 2] = s.z;
    out[4 * i + 3] = s.w;
}

__kernel void edge_blur(read_only image2d_t img, __global float *out)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    int w = get_image_width(img);
    float4 left = read_imagef(img, EDGE, (int2)(x - 1, y));
    float4 below = read_imagef(img, EDGE, (int2)(x + 1, y + 3));
    float4 far = read_imagef(img, BORDER, (int2)(x + 2, y - 1));
    out[y * w + x] = left.x + below.y * 0.5f + far.z + far.w + (float)get_image_height(img);
}

__kernel void unorm_round_trip(read_only image1d_buffer_t src,
                               write_only image1d_buffer_t dst, __global float *out,
                               __global const float *vals)
{
    int i = get_global_id(0);
    float4 v = read_imagef(src, i);
    out[4 * i] = v.x;
    out[4 * i + 1] = v.y;
    out[4 * i + 2] = v.z;
    out[4 * i + 3] = v.w;
    float f = vals[i];
    write_imagef(dst, i, (float4)(f, f * 0.5f, -f, f * 3.0f));
}

__constant sampler_t LIN_EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                                CLK_FILTER_LINEAR;
__constant sampler_t LIN_BORDER = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP |
                                  CLK_FILTER_LINEAR;

__kernel void linear_taps(read_only image2d_t img, read_only image1d_t img1,
                          __global float *out, __global const float *xs)
{
    int i = get_global_id(0);
    float u = xs[2 * i];
    float v = xs[2 * i + 1];
    float4 a = read_imagef(img, LIN_EDGE, (float2)(u, v));
    float4 b = read_imagef(img, LIN_BORDER, (float2)(v, u));
    float4 c = read_imagef(img1, LIN_EDGE, u);
    out[4 * i] = a.x;
    out[4 * i + 1] = b.y;
    out[4 * i + 2] = c.z;
    out[4 * i + 3] = b.w;
}

__constant sampler_t N_REPEAT = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_REPEAT |
                                CLK_FILTER_NEAREST;
__constant sampler_t N_MIRROR = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_MIRRORED_REPEAT |
                                CLK_FILTER_NEAREST;
__constant sampler_t N_EDGE_LIN = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP_TO_EDGE |
                                  CLK_FILTER_LINEAR;
__constant sampler_t N_MIRROR_LIN = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_MIRRORED_REPEAT |
                                    CLK_FILTER_LINEAR;
__constant sampler_t N_REPEAT_LIN = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_REPEAT |
                                    CLK_FILTER_LINEAR;

__kernel void normalized_taps(read_only image2d_t img, __global float *out,
                              __global const float *xs)
{
    int i = get_global_id(0);
    float u = xs[2 * i];
    float v = xs[2 * i + 1];
    float4 a = read_imagef(img, N_REPEAT, (float2)(u, v));
    float4 b = read_imagef(img, N_MIRROR, (float2)(v, u));
    float4 c = read_imagef(img, N_EDGE_LIN, (float2)(u, v));
    float4 d = read_imagef(img, N_MIRROR_LIN, (float2)(v, u));
    float4 e = read_imagef(img, N_REPEAT_LIN, (float2)(u, v));
    out[4 * i] = a.x + b.y;
    out[4 * i + 1] = c.z;
    out[4 * i + 2] = d.w;
    out[4 * i + 3] = e.x;
}

__kernel void gather_uint(read_only image1d_buffer_t q, __global uint *out)
{
    int i = get_global_id(0);
    uint4 a = read_imageui(q, i);
    uint4 b = read_imageui(q, 2 * i + 1);
    out[i] = (a.x >> 4) ^ (b.x * 3) + a.y + a.z;
}
"""

# read_imageh, write_imageh and half4 need cl_khr_fp16: a program of their own.
HALF_CL = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__constant sampler_t EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |
                            CLK_FILTER_NEAREST;

__kernel void half_mix(read_only image1d_buffer_t a, read_only image1d_buffer_t h,
                       __global half *out_h)
{
    int i = get_global_id(0);
    half4 hv = read_imageh(h, i);
    half4 av = read_imageh(a, i);
    out_h[2 * i] = hv.x + hv.y;
    out_h[2 * i + 1] = hv.z * hv.w + av.x;
}

__kernel void scale_into(read_only image2d_t src, write_only image2d_t dst_h,
                         write_only image2d_t dst_f)
{
    int x = get_global_id(0);
    int y = get_global_id(1);
    float4 v = read_imagef(src, EDGE, (int2)(x, y));
    write_imageh(dst_h, (int2)(x, y), convert_half4(v * 0.3f));
    write_imagef(dst_f, (int2)(y, x), (float4)(v.w, v.z, v.y, v.x) - 1.0f);
}
"""
