"""matmul with vector loads and compute in float32 (the course's "vectorised load and compute").

- ``matmul_float4``: each work-item computes a strip of VW = 4 consecutive columns of one row
  of C in a ``float4``. Per four k it loads four consecutive values of A with one ``vload4``
  (along A's row) and four consecutive columns of each of four rows of B with ``vload4``
  (neighbouring work-items read neighbouring 16-byte pieces of a row of B), and does four
  ``float4`` multiply-adds: a quarter of the naive kernel's load instructions.

Boundaries: the k past the last multiple of 4 are done one at a time with a scalar of A (K
need not be a multiple of the width); a strip that runs past N loads its columns one at a time,
zeros past N, and stores only the columns inside. Every column adds its products in ascending
k from 0.0, as the naive ``matmul``, so the result is bit for bit the naive one's, and exact
against a device. The half-input variants are in ``kernels_py/matmul_half.py``.
"""

import numpy as np

import clsim
from clsim import float4, get_global_id, kernel, private_array, vload4, vstore4
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.matmul import launch_2d, make_inputs, reference

VW = 4


@clsim.func
def b_strip4(b, off, col0, N):
    """Columns col0..col0+3 of B from element ``off``: one vload4 when all four are inside,
    else a guarded load each, zeros past N (a vload4 there would read past the row)."""
    if col0 + VW <= N:
        return vload4(0, b + off)
    return float4(b[off] if col0 < N else 0.0, b[off + 1] if col0 + 1 < N else 0.0,
                  b[off + 2] if col0 + 2 < N else 0.0, b[off + 3] if col0 + 3 < N else 0.0)


@kernel
def matmul_float4(a, b, c, M, N, K):
    col0 = get_global_id(0) * VW
    row = get_global_id(1)
    if row < M and col0 < N:
        acc = float4(0.0)
        k_vec = K - K % VW
        for k in range(0, k_vec, VW):
            a4 = vload4(0, a + row * K + k)
            acc += a4.s0 * b_strip4(b, k * N + col0, col0, N)
            acc += a4.s1 * b_strip4(b, (k + 1) * N + col0, col0, N)
            acc += a4.s2 * b_strip4(b, (k + 2) * N + col0, col0, N)
            acc += a4.s3 * b_strip4(b, (k + 3) * N + col0, col0, N)
        for k in range(k_vec, K):
            acc += a[row * K + k] * b_strip4(b, k * N + col0, col0, N)
        out = private_array(VW, np.float32)  # OpenCL C has no vector subscript by a variable
        vstore4(acc, 0, out)
        for j in range(VW):
            if col0 + j < N:
                c[row * N + col0 + j] = out[j]


register(KernelSpec(
    name="matmul_float4", kernel=matmul_float4, launch=launch_2d(VW, 1),
    description="C = A B, a float4 strip of C per work-item: vload4 of A along K and of B "
                "along N, float4 multiply-adds",
    cl_file="matmul_vec.cl", make_inputs=make_inputs, reference=reference,
    outputs={"c": EXACT}, default_shape={"M": 256, "N": 256, "K": 256},
    tolerance=(1e-4, 1e-3), family="matmul"))
