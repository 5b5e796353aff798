"""A kernel computing with half values needs cl_khr_fp16 on the device: the verifier reports a
device without it (PoCL and Oclgrind here) as skipped with that reason, never as a build error
or a disagreement, and runs it where the device has fp16 (issue 10, item 2)."""

import numpy as np
import pytest
from hypothesis import strategies as st

from clsim import get_global_id, kernel
from clsim.errors import DeviceLacksFeature
from verify.devices import get_device
from verify.features import launch_features, uses_fp16
from verify.fuzz import fuzz
from verify.runner import compare
from verify.testing import device_params


@kernel
def half_mul(x, y, out):
    i = get_global_id(0)
    out[i] = x[i] * y[i]


HALF_MUL_CL = """#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void half_mul(__global const half *x, __global const half *y, __global half *out) {
    size_t i = get_global_id(0);
    out[i] = x[i] * y[i];
}
"""


def _args():
    rng = np.random.default_rng(5)
    x = rng.uniform(-8, 8, 64).astype(np.float16)
    return [x, (x[::-1] * np.float16(1.5)).astype(np.float16), np.zeros(64, np.float16)]


@pytest.mark.parametrize(("source", "needs"), [
    (HALF_MUL_CL, True),
    ("__kernel void k(__global half *p, __global float *o) { o[0] = vload_half(0, p); }", False),
    ("typedef struct { half d; uchar qs[16]; } block;", False),
    ("__kernel void k(__global float *o) { half h = o[0]; o[1] = h; }", True),
    ("__kernel void k(__global float *o) { o[1] = convert_half_rte(o[0]); }", True),
    ("// #pragma OPENCL EXTENSION cl_khr_fp16 : enable\n__kernel void k() {}", False),
    ("#ifdef cl_khr_fp16\n#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n#endif\n"
     "__kernel void k(__global half *p, __global float *o) { o[0] = vload_half(0, p); }", False),
    ("#if defined(cl_khr_fp16)\n#if 1\nhalf h = 1;\n#endif\n#else\n#endif\n"
     "__kernel void k() {}", False),
    ("#ifdef cl_khr_fp16\n#define T float\n#else\nhalf h = 1;\n#endif\n", True),
    ("#ifdef cl_khr_fp16\n#endif\n" + HALF_MUL_CL, True),
])
def test_half_arithmetic_is_detected_in_the_source(source, needs):
    """The pragma, a half value, cast or conversion needs fp16; a `half *` buffer read with
    vload_half, a struct member declared half, or what only an `#ifdef cl_khr_fp16` branch
    holds is core OpenCL C."""
    assert uses_fp16(source) is needs
    assert ("fp16" in launch_features(source, (64,), None)) is needs


@pytest.mark.parametrize("device", device_params())
def test_the_verifier_skips_half_arithmetic_without_fp16(device, tmp_path):
    """fuzz reports a device without cl_khr_fp16 as skipped with that reason and compare
    raises DeviceLacksFeature (feature "fp16") before building; a device with fp16 runs the
    twin and agrees bit for bit."""
    info = get_device(device)
    launch = st.just({"global_size": 64, "local_size": None, "args": _args()})
    report = fuzz(half_mul, HALF_MUL_CL, launches=launch, device=device, examples=2,
                  outputs=["out"], failures_dir=tmp_path)
    if info.fp16:
        assert report.skipped is None and report.found is None
        assert compare(half_mul, HALF_MUL_CL, global_size=64, args=_args(), outputs=["out"],
                       device=device).equal
        return
    assert report.skipped == f"{device} lacks cl_khr_fp16"
    assert report.equal and report.found is None
    with pytest.raises(DeviceLacksFeature) as caught:
        compare(half_mul, HALF_MUL_CL, global_size=64, args=_args(), outputs=["out"],
                device=device)
    assert caught.value.feature == "fp16"
    assert "lacks cl_khr_fp16" in str(caught.value)
