"""cl_khr_integer_dot_product's packed forms (dot_4x8packed_*, dot_acc_sat_4x8packed_*) against
numpy: each byte of a and b read as signed or unsigned per the name, the four products summed
exactly, the acc forms saturated to int/uint. Edge bytes (0, 127, 128, 255) and accumulators
at both ends of the range; a Python kernel without and with JIT, the same bytes from the .cl
front end, and the .cl on devices that have the extension.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    dot_4x8packed_ss_int,
    dot_4x8packed_su_int,
    dot_4x8packed_us_int,
    dot_4x8packed_uu_uint,
    dot_acc_sat_4x8packed_ss_int,
    dot_acc_sat_4x8packed_su_int,
    dot_acc_sat_4x8packed_us_int,
    dot_acc_sat_4x8packed_uu_uint,
    get_global_id,
)
from verify.clrun import _queue
from verify.devices import get_device
from verify.runner import compare
from verify.testing import device_params

N = 64
CL = """#pragma OPENCL EXTENSION cl_khr_integer_dot_product : enable
kernel void dots(global const uint *a, global const uint *b, global const int *acc,
                 global int *out, global uint *uout) {
    int i = get_global_id(0);
    out[8 * i + 0] = dot_4x8packed_ss_int(a[i], b[i]);
    out[8 * i + 1] = dot_4x8packed_us_int(a[i], b[i]);
    out[8 * i + 2] = dot_4x8packed_su_int(a[i], b[i]);
    out[8 * i + 3] = dot_acc_sat_4x8packed_ss_int(a[i], b[i], acc[i]);
    out[8 * i + 4] = dot_acc_sat_4x8packed_us_int(a[i], b[i], acc[i]);
    out[8 * i + 5] = dot_acc_sat_4x8packed_su_int(a[i], b[i], acc[i]);
    uout[2 * i] = dot_4x8packed_uu_uint(a[i], b[i]);
    uout[2 * i + 1] = dot_acc_sat_4x8packed_uu_uint(a[i], b[i], (uint)acc[i]);
}
"""


@clsim.kernel
def dots(a, b, acc, out, uout):
    i = get_global_id(0)
    out[8 * i + 0] = dot_4x8packed_ss_int(a[i], b[i])
    out[8 * i + 1] = dot_4x8packed_us_int(a[i], b[i])
    out[8 * i + 2] = dot_4x8packed_su_int(a[i], b[i])
    out[8 * i + 3] = dot_acc_sat_4x8packed_ss_int(a[i], b[i], acc[i])
    out[8 * i + 4] = dot_acc_sat_4x8packed_us_int(a[i], b[i], acc[i])
    out[8 * i + 5] = dot_acc_sat_4x8packed_su_int(a[i], b[i], acc[i])
    uout[2 * i] = dot_4x8packed_uu_uint(a[i], b[i])
    uout[2 * i + 1] = dot_acc_sat_4x8packed_uu_uint(a[i], b[i], np.uint32(acc[i]))


def _inputs():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**32, N, dtype=np.uint32)
    b = rng.integers(0, 2**32, N, dtype=np.uint32)
    edges = np.array([0x00000000, 0x7F7F7F7F, 0x80808080, 0xFFFFFFFF, 0x017F80FF], np.uint32)
    a[:5], b[:5] = edges, edges[::-1]
    a[5:10], b[5:10] = 0x80808080, 0x80808080  # the largest signed product sum, 65536
    acc = rng.integers(-(2**31), 2**31, N, dtype=np.int64).astype(np.int32)
    acc[:10] = [2**31 - 1, -(2**31), 2**31 - 10, -(2**31) + 10, 0,
                2**31 - 1, 2**31 - 65536, 2**31 - 65537, -(2**31), -1]
    return a, b, acc


def _reference(a, b, acc):
    ub = lambda x: x.view(np.uint8).reshape(-1, 4).astype(np.int64)  # noqa: E731
    sb = lambda x: x.view(np.int8).reshape(-1, 4).astype(np.int64)  # noqa: E731
    ss, us = (sb(a) * sb(b)).sum(1), (ub(a) * sb(b)).sum(1)
    su, uu = (sb(a) * ub(b)).sum(1), (ub(a) * ub(b)).sum(1)
    sat = lambda v, lo, hi: np.clip(v, lo, hi)  # noqa: E731
    lo, hi = -(2**31), 2**31 - 1
    out = np.zeros((N, 8), np.int64)
    out[:, 0], out[:, 1], out[:, 2] = ss, us, su
    out[:, 3] = sat(ss + acc, lo, hi)
    out[:, 4] = sat(us + acc, lo, hi)
    out[:, 5] = sat(su + acc, lo, hi)
    uout = np.stack([uu, sat(uu + acc.view(np.uint32).astype(np.int64), 0, 2**32 - 1)], 1)
    return out.astype(np.int32).reshape(-1), uout.astype(np.uint32).reshape(-1)


def _run(kernel, jit):
    a, b, acc = _inputs()
    out, uout = np.zeros(8 * N, np.int32), np.zeros(2 * N, np.uint32)
    clsim.run(kernel, (N,), (16,), (a, b, acc, out, uout), jit=jit)
    return out, uout


@pytest.mark.parametrize("jit", [False, True])
def test_packed_dot_products_match_numpy(jit):
    out, uout = _run(dots, jit)
    want, uwant = _reference(*_inputs())
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(uout, uwant)
    assert out[8 * 5 + 0] == 65536 and out[8 * 5 + 3] == 2**31 - 1  # saturated


def test_the_cl_front_end_calls_the_same_builtins():
    out, uout = _run(clsim.load_cl(CL, "dots"), False)
    want, uwant = _reference(*_inputs())
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(uout, uwant)


def test_wrong_arguments_are_a_compile_error():
    @clsim.kernel
    def bad(x):
        x[0] = dot_4x8packed_ss_int(x[1], np.float32(1))

    with pytest.raises(clsim.KernelCompileError, match=r"dot_4x8packed_ss_int\(\) takes 2 "
                                                        r"integers"):
        clsim.run(bad, (1,), (1,), (np.zeros(2, np.int32),), jit=False)


@pytest.mark.parametrize("device", device_params())
def test_the_cl_twin_agrees_on_devices_with_the_extension(device):
    context, _ = _queue(get_device(device))
    if "cl_khr_integer_dot_product" not in context.devices[0].extensions:
        pytest.skip(f"{device} lacks cl_khr_integer_dot_product")
    a, b, acc = _inputs()
    result = compare(clsim.load_cl(CL, "dots"), CL, global_size=(N,), local_size=(16,),
                     args=(a, b, acc, np.zeros(8 * N, np.int32), np.zeros(2 * N, np.uint32)),
                     device=device, options="-cl-std=CL3.0")  # the extension's builtins are 3.0's
    assert result.equal, result.outputs.describe()
