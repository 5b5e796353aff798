"""OpenCL images in the simulator: reads, writes, samplers, conversions, helpers, tooling.

Contract: ``clsim.Image`` arguments are read and written by the image builtins with OpenCL's
conversion rules per channel type and order; samplers place coordinates by the spec's
formulas (clamp-to-edge, clamp, repeat, mirrored repeat; nearest and linear); images pass
to helpers; ``traffic=True`` counts image accesses as sites of space "image"; failure
folders and ``clsim run`` keep image arguments. Kernels run without JIT (a JIT case per
direction proves that path agrees). Errors and refusals: test_images_errors.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_ADDRESS_CLAMP_TO_EDGE,
    CLK_ADDRESS_MIRRORED_REPEAT,
    CLK_ADDRESS_REPEAT,
    CLK_FILTER_NEAREST,
    CLK_NORMALIZED_COORDS_FALSE,
    CLK_NORMALIZED_COORDS_TRUE,
    float2,
    get_global_id,
    get_image_width,
    int4,
    read_imagef,
    read_imageui,
    write_imagef,
    write_imagei,
)
from tests.image_kernels import (
    edge_blur,
    gather_uint,
    half_mix,
    image_mix,
    linear_taps,
    scale_into,
)

RNG = np.random.default_rng(7)
EDGE = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST


def _mix_inputs(n=32):
    return (RNG.standard_normal((n, 4)).astype(np.float32),
            RNG.standard_normal((n, 4)).astype(np.float16))


@pytest.mark.parametrize("jit", [False, True])
def test_image1d_buffer_float4_and_half4_reads(jit):
    a, h = _mix_inputs()
    out = np.zeros(a.size, np.float32)
    clsim.run(image_mix, (32,), (8,), (clsim.Image(a), clsim.Image(h), out), jit=jit)
    np.testing.assert_array_equal(out, (a * np.float32(2) + h.astype(np.float32)).ravel())


def test_read_imageh_rounds_float_channels_to_half():
    a, h = _mix_inputs()
    a[0, 0] = 1.0 + 2.0 ** -12  # between two halves: to nearest even (1.0)
    out = np.zeros(64, np.float16)
    clsim.run(half_mix, (32,), (8,), (clsim.Image(a), clsim.Image(h), out), jit=False)
    want = np.stack([h[:, 0] + h[:, 1], h[:, 2] * h[:, 3] + a[:, 0].astype(np.float16)], 1)
    np.testing.assert_array_equal(out, want.ravel())
    assert out[1] == h[0, 2] * h[0, 3] + np.float16(1.0)


def _at(img, x, y, border):
    h, w = img.shape[:2]
    if border and not (0 <= x < w and 0 <= y < h):
        return np.zeros(4, np.float32)
    return img[min(max(y, 0), h - 1), min(max(x, 0), w - 1)]


def test_image2d_clamp_to_edge_and_border_at_every_edge():
    h, w = 5, 7
    img = RNG.standard_normal((h, w, 4)).astype(np.float32)
    out = np.zeros(h * w, np.float32)
    clsim.run(edge_blur, (w, h), (w, 1), (clsim.Image(img), out), checks="all", jit=False)
    want = np.array([[_at(img, x - 1, y, 0)[0] + _at(img, x + 1, y + 3, 0)[1] * np.float32(0.5)
                      + _at(img, x + 2, y - 1, 1)[2] + _at(img, x + 2, y - 1, 1)[3]
                      + np.float32(h) for x in range(w)] for y in range(h)], np.float32)
    np.testing.assert_array_equal(out.reshape(h, w), want)


@clsim.kernel
def uint_channels(img, out):
    v = read_imageui(img, 1)
    out[0] = v.x
    out[1] = v.y
    out[2] = v.z
    out[3] = v.w


def test_r_uint32_image_reads_zero_fill_and_alpha_one():
    q = RNG.integers(0, 2**32, 64, dtype=np.uint32)
    out = np.zeros(32, np.uint32)
    clsim.run(gather_uint, (32,), (8,), (clsim.Image(q, "R"), out), jit=False)
    np.testing.assert_array_equal(out, (q[:32] >> 4) ^ (q[1::2] * np.uint32(3)))
    channels = np.zeros(4, np.uint32)
    clsim.run(uint_channels, (1,), (1,), (clsim.Image(q, "R"), channels), jit=False)
    assert list(channels) == [q[1], 0, 0, 1]  # (r, 0, 0, 1), as the spec's table says


@pytest.mark.parametrize("jit", [False, True])
def test_write_only_images_half_and_float(jit):
    h, w = 3, 4
    src = RNG.standard_normal((h, w, 4)).astype(np.float32)
    dh = np.zeros((h, w, 4), np.float16)
    df = np.zeros((w, h, 4), np.float32)
    clsim.run(scale_into, (w, h), (1, 1), (clsim.Image(src), clsim.Image(dh, access="write_only"),
                                          clsim.Image(df, access="write_only")),
              checks="all", jit=jit)  # races on images are not tracked: it runs clean
    np.testing.assert_array_equal(dh, (src * np.float32(0.3)).astype(np.float16))
    np.testing.assert_array_equal(df, src.transpose(1, 0, 2)[:, :, ::-1] - np.float32(1))


@clsim.kernel
def read_rg_unorm(img, out):
    i = get_global_id(0)
    v = read_imagef(img, i)
    out[4 * i] = v.x
    out[4 * i + 1] = v.y
    out[4 * i + 2] = v.z
    out[4 * i + 3] = v.w


def test_unorm_int8_rg_reads_scale_and_fill():
    data = np.arange(0, 256, 1, dtype=np.uint8).reshape(128, 2)
    out = np.zeros(512, np.float32)
    clsim.run(read_rg_unorm, (128,), (8,), (clsim.Image(data, "RG", "unorm_int8"), out),
              jit=False)
    got = out.reshape(128, 4)
    # times the float nearest 1/255, as PoCL and the Intel runtime read (the spec: 1.5 ulp)
    np.testing.assert_array_equal(got[:, :2], data.astype(np.float32) * np.float32(1 / 255))
    assert got[3, 1] != np.float32(7) / np.float32(255)  # 1 ulp from the quotient
    assert (got[:, 2] == 0).all() and (got[:, 3] == 1).all()


@clsim.kernel
def write_conversions(f_img, i_img, vals):
    i = get_global_id(0)
    v = vals[i]
    write_imagef(f_img, i, (v, -v, v * 0.5, 2.0))
    write_imagei(i_img, i, int4(np.int32(v * 100.0), -300, 300, 7))


def test_writes_saturate_and_round_to_nearest_even():
    vals = np.array([0.5 / 255, 1.5 / 255, 0.3, 1.7, np.nan, -0.2], np.float32)
    f_img = np.zeros((6, 4), np.uint8)
    i_img = np.zeros((6, 4), np.int8)
    clsim.run(write_conversions, (6,), (1,), (clsim.Image(f_img, "RGBA", "unorm_int8",
                                                          access="write_only"),
                                             clsim.Image(i_img, access="write_only"), vals),
              jit=False)
    assert list(f_img[:, 0]) == [0, 2, 76, 255, 0, 0]  # 0.5 -> 0 and 1.5 -> 2: ties to even
    assert (f_img[:, 3] == 255).all() and f_img[5, 1] == 51
    assert list(i_img[:, 0]) == [0, 0, 30, 127, 0, -20]  # int8 saturates (170 -> 127)
    assert (i_img[:, 1] == -128).all() and (i_img[:, 2] == 127).all()


@clsim.kernel
def read_float_coords(img, out, xs):
    i = get_global_id(0)
    out[i] = read_imagef(img, EDGE, float2(xs[i], xs[i] * 0.5)).x


def test_float_coordinates_take_the_pixel_they_fall_in():
    img = RNG.standard_normal((3, 4, 4)).astype(np.float32)
    xs = np.array([-0.5, 0.0, 0.99, 1.0, 2.5, 3.99, 7.0, np.nan], np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(read_float_coords, (8,), (8,), (clsim.Image(img), out, xs), jit=False)
    for k, x in enumerate(xs):
        px = 0 if np.isnan(x) else min(max(int(np.floor(x)), 0), 3)
        py = 0 if np.isnan(x) else min(max(int(np.floor(x * np.float32(0.5))), 0), 2)
        assert out[k] == img[py, px, 0], (k, x)


def _linear_reference(img, u, v, border):
    """The spec's CLK_FILTER_LINEAR in float32, term by term in its order."""
    h, w = img.shape[:2]
    x, y = np.float32(u) - np.float32(0.5), np.float32(v) - np.float32(0.5)
    i0, j0 = int(np.floor(x)), int(np.floor(y))
    a, b = x - np.float32(np.floor(x)), y - np.float32(np.floor(y))
    one = np.float32(1)
    taps = [_at(img, i0 + dx, j0 + dy, border) for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1))]
    weights = [(one - a) * (one - b), a * (one - b), (one - a) * b, a * b]
    return weights[0] * taps[0] + weights[1] * taps[1] + weights[2] * taps[2] + \
        weights[3] * taps[3]


def test_linear_filtering_blends_the_spec_taps_in_its_order():
    img = RNG.standard_normal((6, 7, 4)).astype(np.float32)
    img1 = RNG.standard_normal((7, 4)).astype(np.float32)
    xs = (RNG.random(64) * 10 - 1).astype(np.float32)
    out = np.zeros(128, np.float32)
    clsim.run(linear_taps, (32,), (8,), (clsim.Image(img), clsim.Image(img1, kind="image1d"),
                                         out, xs), jit=False)
    for i in range(32):
        u, v = xs[2 * i], xs[2 * i + 1]
        assert out[4 * i] == _linear_reference(img, u, v, False)[0]
        border = _linear_reference(img, v, u, True)
        assert out[4 * i + 1] == border[1] and out[4 * i + 3] == border[3]
        row = _linear_reference(img1[None], u, 0.5, False)  # 1-D: the spec's two taps
        assert out[4 * i + 2] == row[2]


N_REPEAT = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_REPEAT | CLK_FILTER_NEAREST
N_MIRROR = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_MIRRORED_REPEAT | CLK_FILTER_NEAREST
N_EDGE = CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST


@clsim.kernel
def read_normalized(img, out, us):
    i = get_global_id(0)
    u = us[i]
    out[3 * i] = read_imagef(img, N_REPEAT, u).x
    out[3 * i + 1] = read_imagef(img, N_MIRROR, u).x
    out[3 * i + 2] = read_imagef(img, N_EDGE, u).x


def test_normalized_coordinates_repeat_and_mirror_by_the_spec():
    data = np.arange(16, dtype=np.float32).reshape(4, 4)  # pixel k reads k * 4 in .x
    us = np.array([0.1, 0.3, 1.25, -0.25, 2.6, -1.1], np.float32)
    out = np.zeros(18, np.float32)
    clsim.run(read_normalized, (6,), (6,), (clsim.Image(data, kind="image1d"), out, us),
              jit=False)
    pixels = (out.reshape(6, 3) / 4).astype(int)
    # repeat: the fraction of u times the width; mirrored: |u - 2 rint(u / 2)| times it
    assert pixels[:, 0].tolist() == [0, 1, 1, 3, 2, 3]
    assert pixels[:, 1].tolist() == [0, 1, 3, 1, 2, 3]
    assert pixels[:, 2].tolist() == [0, 1, 3, 0, 3, 0]


def test_traffic_counts_image_reads_as_image_space():
    a, h = _mix_inputs(64)
    out = np.zeros(a.size, np.float32)
    result = clsim.run(image_mix, (64,), (32,), (clsim.Image(a), clsim.Image(h), out),
                       traffic=True)
    sites = {s.buffer: s for s in result.traffic.site_records}
    assert sites["a"].space == "image" and sites["a"].bytes == a.nbytes
    assert sites["h"].bytes == h.nbytes and sites["h"].sectors == h.nbytes // 32
    totals = result.traffic.totals
    assert totals["image_load_bytes"] == a.nbytes + h.nbytes
    assert totals["global_load_bytes"] == a.nbytes + h.nbytes  # folded into the totals
    assert result.traffic.unique_read_bytes["a"] == a.nbytes


def test_a_failure_folder_keeps_an_image_argument(tmp_path):
    from verify.failures import load_failure, save_failure

    img = clsim.Image(RNG.standard_normal((3, 2, 4)).astype(np.float16), access="write_only")
    folder = save_failure(tmp_path, spec_name="img", inputs={"dst": img},
                          launch={"global_size": (2, 3)})
    back = load_failure(folder).inputs["dst"]
    assert isinstance(back, clsim.Image) and repr(back) == repr(img)
    np.testing.assert_array_equal(back.data, img.data)


@clsim.func
def load_pair(img, i):
    return read_imagef(img, i) + read_imagef(img, i + 1)


@clsim.func
def store_at(dst, i, v):
    write_imagef(dst, i, v)


@clsim.kernel
def through_helpers(img, dst, out):
    i = get_global_id(0)
    v = load_pair(img, i)
    store_at(dst, i, v)
    out[i] = v.x + float(get_image_width(img))


def test_images_passed_to_helpers_are_read_written_checked_and_counted():
    a = RNG.standard_normal((9, 4)).astype(np.float32)
    dst = np.zeros((8, 4), np.float32)
    out = np.zeros(8, np.float32)
    result = clsim.run(through_helpers, (8,), (4,), (clsim.Image(a), clsim.Image(
        dst, access="write_only"), out), jit=False, traffic=True)
    np.testing.assert_array_equal(dst, a[:8] + a[1:])
    np.testing.assert_array_equal(out, a[:8, 0] + a[1:, 0] + np.float32(9))
    spaces = {(s.buffer, s.func): (s.space, s.bytes) for s in result.traffic.site_records}
    assert spaces[("img", "load_pair")] == ("image", 2 * 8 * 16)
    assert spaces[("dst", "store_at")] == ("image", 8 * 16)
    with pytest.raises(clsim.OutOfBoundsError, match="in load_pair.*image 'img' at 9"):
        clsim.run(through_helpers, (9,), (9,), (clsim.Image(a), clsim.Image(
            np.zeros((9, 4), np.float32), access="write_only"), np.zeros(9, np.float32)),
            jit=False)


def test_cli_spec_runs_get_fresh_images_and_check_their_pixels(capsys):
    from clsim.commands import run as run_command
    from clsim.commands import specs

    src = clsim.Image(RNG.standard_normal((2, 3, 4)).astype(np.float32))
    inputs = {"src": src, "dst": clsim.Image(np.zeros((3, 2, 4), np.float32),
                                              access="write_only"), "n": np.int32(1)}
    work = specs.fresh(inputs)
    assert work["src"] is not src and work["src"].data is not src.data
    spec = type("Spec", (), {"kernel": scale_into, "tolerance": (0.0, 0.0)})
    args = specs.run_args(spec, {"src": src, "dst_h": inputs["dst"], "dst_f": inputs["dst"]},
                          {"src": work["src"], "dst_h": work["dst"], "dst_f": work["dst"]})
    assert args[0] is work["src"] and args[2] is work["dst"]
    work["dst"].data[0, 0, 0] = 1.0
    spec.reference = staticmethod(lambda _inputs: {"dst": np.zeros((3, 2, 4), np.float32)})
    assert not run_command._print_check(spec, inputs, work)
    assert "check dst" in capsys.readouterr().out
