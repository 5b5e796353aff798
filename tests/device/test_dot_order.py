"""dot() adds its products in the order of PoCL and the Intel CPU runtime: (p0 + p1) + p2 for
float3 and (p0 + p1) + (p2 + p3) for float4, so a float4 kernel agrees with them bit for bit.
Oclgrind sums in double and rounds once: no float order gives its bits, so there the bound
is 4 machine epsilons of the sum of |products| (cancellation makes ULPs meaningless).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import dot, get_global_id, kernel, vload2, vload3, vload4
from verify.clrun import run_cl
from verify.policy import EXACT, compare, magnitude
from verify.testing import device_params

DEVICES = device_params()


@kernel
def dots(a, b, out2, out3, out4):
    i = get_global_id(0)
    out2[i] = dot(vload2(i, a), vload2(i, b))
    out3[i] = dot(vload3(i, a), vload3(i, b))
    out4[i] = dot(vload4(i, a), vload4(i, b))


DOTS_CL = r"""
__kernel void dots(__global const float *a, __global const float *b, __global float *out2,
                   __global float *out3, __global float *out4)
{
    size_t i = get_global_id(0);
    out2[i] = dot(vload2(i, a), vload2(i, b));
    out3[i] = dot(vload3(i, a), vload3(i, b));
    out4[i] = dot(vload4(i, a), vload4(i, b));
}
"""

N = 4096


def _inputs():
    rng = np.random.default_rng(7)
    return (rng.standard_normal(4 * N).astype(np.float32),
            rng.standard_normal(4 * N).astype(np.float32))


def test_float4_dot_is_a_pairwise_sum():
    """Against numpy, in the pairwise order; the left fold differs on these draws (so the test
    tells the two orders apart)."""
    a, b = _inputs()
    outs = [np.zeros(N, np.float32) for _ in range(3)]
    clsim.run(dots, (N,), (64,), (a, b, *outs))
    p = a.reshape(N, 4) * b.reshape(N, 4)
    pairwise = (p[:, 0] + p[:, 1]) + (p[:, 2] + p[:, 3])
    left = ((p[:, 0] + p[:, 1]) + p[:, 2]) + p[:, 3]
    assert np.array_equal(outs[2], pairwise)
    assert not np.array_equal(outs[2], left)
    q = a[:3 * N].reshape(N, 3) * b[:3 * N].reshape(N, 3)
    assert np.array_equal(outs[1], (q[:, 0] + q[:, 1]) + q[:, 2])


@pytest.mark.parametrize("device", DEVICES)
def test_dot_matches_the_device(device):
    a, b = _inputs()
    sim = [np.zeros(N, np.float32) for _ in range(3)]
    clsim.run(dots, (N,), (64,), (a, b, *sim))
    dev = run_cl(device, DOTS_CL, "dots", (N,), (64,), (a, b, *[np.zeros(N, np.float32)
                                                               for _ in range(3)]))
    for k, (name, width) in enumerate((("out2", 2), ("out3", 3), ("out4", 4))):
        terms = np.abs(a[:width * N] * b[:width * N]).reshape(N, width).sum(axis=1)
        policy = magnitude(4, None) if device.startswith("oclgrind") else EXACT
        result = compare(name, sim[k], dev.buffers[2 + k], policy, scale=terms)
        assert result.equal, result.describe()
