"""Translated OpenCL C image kernels against the same ``.cl`` source on every device with
images: ``verify.compare`` of ``clsim.load_cl(src)`` and ``src`` (the verifier's own path:
``clsim.Image`` arguments become pyopencl images, write_only images are read back and
compared).

Contract: bit-for-bit agreement for program-scope and function-scope samplers over an image2d_t
(clamp-to-edge and clamp past the right edge), a CL_R uint32 image1d_buffer_t read in a helper,
and (fp16 devices) half4 pixels transposed between two image1d_buffer_t, the written image
compared. A device without images or the format is skipped with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from tests.unit.test_opencl_c_images import GATHER, SAMPLED, TRANSPOSE
from verify.climages import image_support
from verify.clrun import _queue
from verify.devices import get_device, import_pyopencl
from verify.runner import compare
from verify.testing import device_params

RNG = np.random.default_rng(5)


def _skip_without_images(device: str, args) -> None:
    context, _ = _queue(get_device(device))
    for arg in args:
        if isinstance(arg, clsim.Image):
            why = image_support(import_pyopencl(), context, arg)
            if why is not None:
                pytest.skip(why)


def _compare(device, source, name, global_size, local_size, args):
    _skip_without_images(device, args)
    result = compare(clsim.load_cl(source, name), source, kernel_name=name,
                     global_size=global_size, local_size=local_size, args=args, device=device)
    assert result.equal, result.outputs.describe()
    return result


@pytest.mark.parametrize("device", device_params())
def test_samplers_and_helper_images_match_the_device(device):
    img = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    _compare(device, SAMPLED, "shifted", (3, 2), (3, 1),
             (clsim.Image(img), np.zeros(18, np.float32), np.int32(2)))
    q = RNG.integers(0, 2**31, 16, dtype=np.uint32)
    _compare(device, GATHER, "gather", (16,), (4,), (clsim.Image(q, "R"), np.zeros(16, np.uint32)))


@pytest.mark.parametrize("device", device_params(requires=("fp16",)))
def test_written_half_images_match_the_device(device):
    a = RNG.standard_normal(16 * 6).astype(np.float16)
    dst = clsim.Image(np.zeros(a.size, np.float16), "RGBA", np.float16, access="write_only")
    result = _compare(device, TRANSPOSE, "transpose4", (3, 2), (1, 1),
                      (clsim.Image(a, "RGBA", np.float16), dst, np.uint32(2), np.uint32(3)))
    assert "dst" in result.simulator  # the written image is read back and compared
