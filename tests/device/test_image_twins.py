"""Kernels with images against their OpenCL C twins on every device that takes images.

Contract: the simulator and the device agree bit for bit (``verify.compare``, the verifier's
own path: ``clsim.Image`` arguments become pyopencl images, write_only images are read back
and compared) on an image1d_buffer_t of float4 and of half4, an image2d_t read through
clamp-to-edge and clamp samplers past every edge, a CL_R uint32 image1d_buffer_t,
write_only image2d_t of half and float, CL_UNORM_INT8/16 reads (within 1 ulp on Oclgrind)
and writes, and CLK_FILTER_LINEAR reads of an image2d_t and an image1d_t (bit for bit on
PoCL, within 4 epsilons of the largest pixel elsewhere), and normalised coordinates through
repeat and mirrored-repeat samplers. A device without images, or without the format, is
skipped with the reason (``verify.climages.image_support``).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import clsim
from clsim.spec import magnitude
from tests.image_kernels import (
    HALF_CL,
    IMAGES_CL,
    edge_blur,
    gather_uint,
    half_mix,
    image_mix,
    linear_taps,
    normalized_taps,
    scale_into,
    unorm_round_trip,
)
from verify.climages import image_support
from verify.clrun import _queue
from verify.devices import get_device, import_pyopencl
from verify.runner import compare
from verify.testing import device_params

RNG = np.random.default_rng(11)
H, W = 5, 7


def _unorm(dtype):
    name = f"unorm_int{np.dtype(dtype).itemsize * 8}"
    src = RNG.integers(0, np.iinfo(dtype).max + 1, 4 * 256).astype(dtype)
    vals = RNG.random(256).astype(np.float32)
    vals[:6] = [0.5 / 255, 1.5 / 255, 2.5 / 255, 0.5 / 65535, 1.5 / 65535, 1.0]  # ties
    return (clsim.Image(src, "RGBA", name),
            clsim.Image(np.zeros(4 * 256, dtype), "RGBA", name, access="write_only"),
            np.zeros(4 * 256, np.float32), vals)


def _linear_coords():
    xs = (RNG.random(512) * 10 - 1).astype(np.float32)  # past every edge
    xs[:8] = [0.5, 0.5, 1.0, 1.0, 0.0, 0.0, W - 0.25, H + 0.25]  # pixel centres, halves
    return xs


def _cases():
    a = RNG.standard_normal((32, 4)).astype(np.float32)
    h = RNG.standard_normal((32, 4)).astype(np.float16)
    img = RNG.standard_normal((H, W, 4)).astype(np.float32)
    q = RNG.integers(0, 2**32, 64, dtype=np.uint32)
    return {
        "image_mix": (image_mix, IMAGES_CL, (32,), (8,),
                      (clsim.Image(a), clsim.Image(h), np.zeros(128, np.float32))),
        "edge_blur": (edge_blur, IMAGES_CL, (W, H), (W, 1),
                      (clsim.Image(img), np.zeros(H * W, np.float32))),
        "gather_uint": (gather_uint, IMAGES_CL, (32,), (8,),
                        (clsim.Image(q, "R"), np.zeros(32, np.uint32))),
        "unorm8": (unorm_round_trip, IMAGES_CL, (256,), (64,), _unorm(np.uint8)),
        "unorm16": (unorm_round_trip, IMAGES_CL, (256,), (64,), _unorm(np.uint16)),
        "linear": (linear_taps, IMAGES_CL, (256,), (64,),
                   (clsim.Image(img), clsim.Image(RNG.standard_normal((W, 4)).astype(np.float32),
                                                  kind="image1d"),
                    np.zeros(4 * 256, np.float32), _linear_coords())),
        "normalized": (normalized_taps, IMAGES_CL, (256,), (64,),
                       (clsim.Image(img), np.zeros(1024, np.float32),
                        (RNG.random(512) * 6 - 3).astype(np.float32))),
        "half_mix": (half_mix, HALF_CL, (32,), (8,),
                     (clsim.Image(a), clsim.Image(h), np.zeros(64, np.float16))),
        "scale_into": (scale_into, HALF_CL, (W, H), (1, 1),
                       (clsim.Image(img),
                        clsim.Image(np.zeros((H, W, 4), np.float16), access="write_only"),
                        clsim.Image(np.zeros((W, H, 4), np.float32), access="write_only"))),
    }


CASES = _cases()
FLOAT_DEVICES = device_params()
HALF_DEVICES = device_params(requires=("fp16",))


def _skip_without_images(device: str, args) -> None:
    context, _ = _queue(get_device(device))
    cl = import_pyopencl()
    for arg in args:
        if isinstance(arg, clsim.Image):
            why = image_support(cl, context, arg)
            if why is not None:
                pytest.skip(why)


def _check(device: str, name: str, policy="exact") -> None:
    kernel, source, global_size, local_size, args = CASES[name]
    _skip_without_images(device, args)
    result = compare(kernel, source, global_size=global_size, local_size=local_size,
                     args=args, device=device, policy=policy)
    assert result.equal, result.outputs.describe()
    params = inspect.signature(kernel.fn).parameters
    written = [k for k, v in zip(params, args, strict=True)
               if isinstance(v, np.ndarray) or getattr(v, "access", "") == "write_only"]
    # every output compared, images included (or those the policy names)
    assert set(result.simulator) == (set(policy) if isinstance(policy, dict) else set(written))


@pytest.mark.parametrize("device", FLOAT_DEVICES)
@pytest.mark.parametrize("name", ["image_mix", "edge_blur", "gather_uint"])
def test_float_image_kernels_match_their_twins(device, name):
    _check(device, name)


@pytest.mark.parametrize("device", FLOAT_DEVICES)
@pytest.mark.parametrize("name", ["unorm8", "unorm16"])
def test_unorm_images_match_their_twins(device, name):
    """Writes agree exactly everywhere; reads agree exactly with PoCL and the Intel runtime
    (value times the float nearest 1/255) and within 1 ulp of Oclgrind, which divides (the
    spec allows 1.5 ulp)."""
    reads = "ulp(1)" if device == "oclgrind" else "exact"
    _check(device, name, {"out": reads, "dst": "exact"})


@pytest.mark.parametrize("device", FLOAT_DEVICES)
def test_linear_filtering_matches_its_twin(device):
    """PoCL blends the taps in the spec's order, as clsim does: bit for bit. Oclgrind and the
    Intel runtime blend in another order (the spec leaves the precision of linear filtering
    to the implementation): within 4 float epsilons of the largest pixel."""
    if device.startswith("pocl"):
        _check(device, "linear", {"out": "exact"})
        return
    biggest = np.abs(CASES["linear"][4][0].data).max()
    _check(device, "linear", {"out": magnitude(4, lambda inputs: biggest)})


@pytest.mark.parametrize("device", FLOAT_DEVICES)
def test_normalized_coordinates_and_repeats_match_their_twin(device):
    """Normalised coordinates through repeat and mirrored-repeat samplers (nearest and
    linear) and clamp-to-edge (linear), coordinates in [-3, 3): nearest reads (out[0::4])
    agree bit for bit everywhere; the linear ones as in the linear test."""
    if device.startswith("pocl"):
        _check(device, "normalized", {"out": "exact"})
        return
    kernel, source, global_size, local_size, args = CASES["normalized"]
    _skip_without_images(device, args)
    biggest = np.abs(args[0].data).max()
    result = compare(kernel, source, global_size=global_size, local_size=local_size,
                     args=args, device=device,
                     policy={"out": magnitude(4, lambda inputs: biggest)})
    assert result.equal, result.outputs.describe()
    np.testing.assert_array_equal(result.simulator["out"][0::4],
                                  result.device_outputs["out"][0::4])


@pytest.mark.parametrize("device", HALF_DEVICES)
@pytest.mark.parametrize("name", ["half_mix", "scale_into"])
def test_half_image_kernels_match_their_twins(device, name):
    _check(device, name)


def test_the_cl_signature_refuses_an_image_of_another_kind():
    device = next((p.values[0] for p in FLOAT_DEVICES if not p.marks), None)
    if device is None:
        pytest.skip("no usable OpenCL device")
    kernel, source, global_size, local_size, args = CASES["edge_blur"]
    _skip_without_images(device, args)
    flat = clsim.Image(np.zeros(4 * W * H, np.float32))  # an image1d_buffer for an image2d_t
    with pytest.raises(clsim.InvalidArgumentError, match=r"argument 0 'img' \(image2d_t\) got a "
                       "clsim.Image of kind 'image1d_buffer'; pass kind='image2d'"):
        compare(kernel, source, global_size=global_size, local_size=local_size,
                args=(flat, np.zeros(H * W, np.float32)), device=device)
