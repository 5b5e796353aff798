"""matmul with ``dot``: C (float32) = A B from half A (M x K) and half B transposed (N x K).

``matmul_dot_vload_half``: one work-item per element of C; row ``row`` of A and row ``col``
of B^T are both contiguous along K, so every four k are one ``vload_half4`` of each and one
``dot`` of two ``float4`` (the course's vector compute, as a dot product along K); the k past
the last multiple of four are added one at a time. ``vload_half`` needs no fp16 arithmetic,
so the twin builds on every device here.

Order: each ``dot`` is the device's. PoCL and the Intel CPU runtime add the four products as
``(p0 + p1) + (p2 + p3)`` in float, which is what the simulator does
(``tests/device/test_dot_order.py``); Oclgrind adds them in double and rounds once, and no
float order gives its bits. Half inputs make a bound possible everywhere: a product of two
halves is exact in float and in double (11-bit significands, no overflow: 65504^2 < 2^32, no
underflow: 2^-48 is a normal float), so the only differences are the roundings of the sums.
A ``dot`` rounds at most twice where Oclgrind rounds once (3 u of the sum of |products|), and
each step of the running sum rounds once on each side (2 u of the |terms| so far), so
``|sim - device| <= eps * (steps + 2) * sum_k |a[row, k] b[k, col]|`` with ``steps`` the
number of additions to ``acc`` (``K // 4 + K % 4``) and eps = 2 u. That is the policy
(``magnitude``); on PoCL and the Intel CPU runtime the bits are equal (measured).
"""

import numpy as np

from clsim import dot, get_global_id, kernel, vload_half, vload_half4
from clsim.spec import KernelSpec, Launch, magnitude, register
from kernels_py.matmul import TILE

VW = 4


@kernel
def matmul_dot_vload_half(a, bt, c, M, N, K):
    col = get_global_id(0)
    row = get_global_id(1)
    if row < M and col < N:
        acc = 0.0
        k_vec = K - K % VW
        for k in range(0, k_vec, VW):
            acc += dot(vload_half4(0, a + row * K + k), vload_half4(0, bt + col * K + k))
        for k in range(k_vec, K):
            acc += vload_half(row * K + k, a) * vload_half(col * K + k, bt)
        c[row * N + col] = acc


def make_inputs(rng, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"a": rng.standard_normal((m, k), dtype=np.float32).astype(np.float16),
            "bt": rng.standard_normal((n, k), dtype=np.float32).astype(np.float16),
            "c": np.full((m, n), np.nan, np.float32),
            "M": np.int32(m), "N": np.int32(n), "K": np.int32(k)}


def reference(inputs):
    c = inputs["a"].astype(np.float64) @ inputs["bt"].astype(np.float64).T
    return {"c": c.astype(np.float32)}


def dot_bound_scale(inputs):
    """(additions to acc + 2) * sum_k |a[row, k] b[k, col]| per element of C (see above)."""
    k = int(inputs["K"])
    with np.errstate(invalid="ignore"):  # inf * 0 from inf inputs: the outputs are NaN too
        magnitudes = np.abs(inputs["a"].astype(np.float64)) @ np.abs(
            inputs["bt"].astype(np.float64)).T
    return (k // VW + k % VW + 2) * magnitudes


def launch(inputs, shape, local_size=None):
    """One work-item per element of C in TILE x TILE work-groups, as the naive matmul."""
    local = local_size or (TILE, TILE)
    m, n = inputs["c"].shape
    grid = (-(-n // local[0]) * local[0], -(-m // local[1]) * local[1])
    return Launch(grid, local,
                  tuple(inputs[k] for k in ("a", "bt", "c", "M", "N", "K")))


register(KernelSpec(
    name="matmul_dot_vload_half", kernel=matmul_dot_vload_half, launch=launch,
    description="C = A B from half A and half B^T: a float4 dot (vload_half4 of each) per 4 k",
    cl_file="matmul_dot.cl", make_inputs=make_inputs, reference=reference,
    outputs={"c": magnitude(1, dot_bound_scale)}, default_shape={"M": 256, "N": 256, "K": 256},
    tolerance=(1e-4, 1e-3), family="matmul"))
