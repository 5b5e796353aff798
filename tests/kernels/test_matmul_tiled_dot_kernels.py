"""matmul_regblock_float4 (local tiles + float4 register blocks) and matmul_dot_vload_half
(float4 dot products along K): against numpy and against the orders they promise, over drawn
M, N, K with tails of the 64-wide blocks, the 16-deep tiles and the 4-wide vectors; the
launch plan's refusal of another work-group shape; what the traffic model counts for them.

Sweeps run in no-JIT mode (each new shape would otherwise be a fresh Numba compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.errors import InvalidNDRangeError
from clsim.spec import get_spec
from verify.policy import compare


def _run(name, shape, seed=0, traffic=False):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    launch = spec.launch(inputs, shape, None)
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                       jit=False, traffic=traffic)
    return spec, inputs, result


@given(m=st.integers(1, 140), n=st.integers(1, 140), k=st.integers(1, 40),
       seed=st.integers(0, 2**16))
def test_regblock_float4_gives_the_naive_kernels_bits(m, n, k, seed):
    """Past one 64 x 64 block in M and N (partial blocks, partial float4 strips of C) and past
    the 16-deep tile and the float4 along K: every element of C is numpy's within tolerance
    and the naive kernel's bits (ascending k from 0.0; up to the sign of zero, the padding
    adds +0.0)."""
    shape = {"M": m, "N": n, "K": k}
    spec, inputs, _ = _run("matmul_regblock_float4", shape, seed)
    np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=1e-4, atol=1e-3)
    _, naive, _ = _run("matmul", shape, seed)
    plus_zero = np.float32(0.0)
    assert (inputs["c"] + plus_zero).tobytes() == (naive["c"] + plus_zero).tobytes()


def test_regblock_float4_refuses_another_work_group_shape():
    """The tile sizes are built for 16 x 16 work-items: another local size is an error that
    says which one to use, not a wrong result."""
    spec = get_spec("matmul_regblock_float4")
    inputs = spec.make_inputs(np.random.default_rng(0), {"M": 8, "N": 8, "K": 8})
    with pytest.raises(InvalidNDRangeError, match=r"local size \(8, 8\).*\(16, 16\)"):
        spec.launch(inputs, {"M": 8, "N": 8, "K": 8}, (8, 8))


def _pairwise_dot_model(inputs):
    """numpy float32: per 4 k, (p0 + p1) + (p2 + p3) added to the running sum, then the tail."""
    a, bt = inputs["a"].astype(np.float32), inputs["bt"].astype(np.float32)
    k_total = a.shape[1]
    acc = np.zeros((a.shape[0], bt.shape[0]), np.float32)
    k_vec = k_total - k_total % 4
    for k in range(0, k_vec, 4):
        p = a[:, None, k:k + 4] * bt[None, :, k:k + 4]
        acc = acc + ((p[..., 0] + p[..., 1]) + (p[..., 2] + p[..., 3]))
    for k in range(k_vec, k_total):
        acc = acc + a[:, None, k] * bt[None, :, k]
    return acc


def _double_dot_model(inputs):
    """As Oclgrind: each dot summed in double and rounded once, the running sum in float."""
    a, bt = inputs["a"].astype(np.float64), inputs["bt"].astype(np.float64)
    k_total = a.shape[1]
    acc = np.zeros((a.shape[0], bt.shape[0]), np.float32)
    k_vec = k_total - k_total % 4
    for k in range(0, k_vec, 4):
        acc = acc + (a[:, None, k:k + 4] * bt[None, :, k:k + 4]).sum(axis=-1).astype(np.float32)
    for k in range(k_vec, k_total):
        acc = acc + (a[:, None, k] * bt[None, :, k]).astype(np.float32)
    return acc


@given(m=st.integers(1, 21), n=st.integers(1, 21), k=st.integers(1, 45),
       seed=st.integers(0, 2**16))
def test_dot_variant_adds_each_dot_pairwise_and_the_dots_in_ascending_k(m, n, k, seed):
    """The simulator's dot adds (p0 + p1) + (p2 + p3), the order of PoCL and the Intel CPU
    runtime, and the running sum takes the dots in ascending k then the tail: bit for bit a
    numpy model of that order; numpy within tolerance."""
    spec, inputs, _ = _run("matmul_dot_vload_half", {"M": m, "N": n, "K": k}, seed)
    assert inputs["c"].tobytes() == _pairwise_dot_model(inputs).tobytes()
    np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=1e-4, atol=1e-3)


def test_dot_policy_bounds_a_double_dot_and_is_needed():
    """The spec's magnitude policy accepts a device that sums each dot in double (Oclgrind's
    order, modelled in numpy) on cancelling sums, where the bits differ from the simulator's
    (so an exact policy would fail there); and it rejects an error of one unit in the
    (K/4 + 2)-th place of the magnitude of the terms, i.e. it is not vacuous."""
    shape = {"M": 24, "N": 24, "K": 64}
    spec, inputs, _ = _run("matmul_dot_vload_half", shape, seed=3)
    before = spec.make_inputs(np.random.default_rng(3), shape)
    policy = spec.outputs["c"]
    scale = policy.scale(before)
    double = _double_dot_model(before)
    assert inputs["c"].tobytes() != double.tobytes()
    assert compare("c", inputs["c"], double, policy, scale=scale).equal
    off = inputs["c"].astype(np.float64) + 2 * np.finfo(np.float32).eps * scale
    assert not compare("c", inputs["c"], off.astype(np.float32), policy, scale=scale).equal


def test_traffic_of_the_tiled_float4_and_dot_variants():
    """At 64 x 128 x 32: matmul_regblock_float4 loads each element of A once per 64 columns
    of C and of B once per 64 rows, in float4 loads (one of A and one of B per work-item and
    tile), 4x fewer global bytes than the 16-wide matmul_tiled (M != N: A's and B's counts
    differ, so the formula tells them apart; two 16-deep tiles along K). The dot variant
    loads A and B^T with one vload_half4 per 4 k and work-item: a quarter of the naive
    kernel's load instructions at half its bytes, at 24 x 20 x 32 (partial 16 x 16 groups in
    both dimensions; each C element is one work-item whatever the blocks, and plain Python
    ran the dot kernel at 128 x 128 x 32 for 9 s)."""
    m, n, k = 64, 128, 32
    shape = {"M": m, "N": n, "K": k}
    vec = _run("matmul_regblock_float4", shape, traffic=True)[2].traffic.totals
    tiled = _run("matmul_tiled", shape, traffic=True)[2].traffic.totals
    assert vec["global_load_bytes"] == 4 * (m * k * (n // 64) + k * n * (m // 64))
    assert vec["global_load_executions"] == (m // 64) * (n // 64) * (k // 16) * 2 * 256
    assert tiled["global_load_bytes"] == 4 * vec["global_load_bytes"]
    small = {"M": 24, "N": 20, "K": 32}
    dot = _run("matmul_dot_vload_half", small, traffic=True)[2].traffic.totals
    naive = _run("matmul", small, traffic=True)[2].traffic.totals
    assert dot["global_load_executions"] * 4 == naive["global_load_executions"]
    assert dot["global_load_bytes"] * 2 == naive["global_load_bytes"]
