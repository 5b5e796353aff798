"""matmul with half inputs and float accumulation: C (float32) = A B, A and B ``np.float16``.

Two ways to read half data, each as a naive kernel and as a vectorised one (an 8-column strip
of C per work-item, as ``matmul_float4`` with width 8):

- through ``half`` types (``cl_khr_fp16``): ``matmul_half`` converts each loaded half to float
  (``(float)a[i]``), ``matmul_half8`` loads ``half8`` with ``vload8`` and converts them with
  ``convert_float8``. Their twins (``matmul_half.cl``) build only on devices with fp16.
- through ``vload_half`` (no fp16 arithmetic needed, so PoCL and Oclgrind run them too):
  ``matmul_vload_half`` reads one half as a float with ``vload_half``, ``matmul_vload_half8``
  eight with ``vload_half8``.

``matmul_tiled_vload_half`` stages ``vload_half`` values in float ``TILE`` x ``TILE`` tiles in
local memory, as ``matmul_tiled``: the tiled kernel's traffic at half the global bytes.

A half times a half is exact in float (11-bit significands), and every column adds its products
in ascending k from 0.0 in float, so all five give the bits of the float32 ``matmul`` on the
inputs converted to float32 (the tiled one up to the sign of a zero: its padding adds +0.0):
exact against a device. K past the last multiple of 8 is done one k at a time; a strip past N
loads its columns one at a time (zeros past N) and stores only those inside. Half data halves
the global bytes of A and B.

Components are named (``a8.s0`` .. ``a8.s7``) and strips built in private arrays, as the twins
must: OpenCL C cannot subscript a vector by a variable. Tail loads sit under an ``if`` rather
than in ``x if c else y``, whose ``vload_half`` arm clsim evaluates (and bounds-checks) even
when the condition is false.
"""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    convert_float8,
    float8,
    get_global_id,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
    private_array,
    vload8,
    vload_half,
    vload_half8,
    vstore8,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.matmul import TILE, launch_2d

VW = 8


@kernel
def matmul_half(a, b, c, M, N, K):
    col = get_global_id(0)
    row = get_global_id(1)
    if row < M and col < N:
        acc = 0.0
        for k in range(K):
            acc += np.float32(a[row * K + k]) * np.float32(b[k * N + col])
        c[row * N + col] = acc


@kernel
def matmul_vload_half(a, b, c, M, N, K):
    col = get_global_id(0)
    row = get_global_id(1)
    if row < M and col < N:
        acc = 0.0
        for k in range(K):
            acc += vload_half(row * K + k, a) * vload_half(k * N + col, b)
        c[row * N + col] = acc


@clsim.func
def b_strip8_half(b, off, col0, N):
    """Columns col0..col0+7 of half B from element ``off`` as float8: one half8 vload8 when
    all eight are inside, else a guarded load each, zeros past N."""
    if col0 + VW <= N:
        return convert_float8(vload8(0, b + off))
    v = private_array(VW, np.float32, fill=0.0)
    for j in range(VW):
        if col0 + j < N:
            v[j] = np.float32(b[off + j])
    return vload8(0, v)


@clsim.func
def b_strip8_vload_half(b, off, col0, N):
    """As b_strip8_half through vload_half8 / vload_half: no half arithmetic."""
    if col0 + VW <= N:
        return vload_half8(0, b + off)
    v = private_array(VW, np.float32, fill=0.0)
    for j in range(VW):
        if col0 + j < N:
            v[j] = vload_half(off + j, b)
    return vload8(0, v)


@kernel
def matmul_half8(a, b, c, M, N, K):
    col0 = get_global_id(0) * VW
    row = get_global_id(1)
    if row < M and col0 < N:
        acc = float8(0.0)
        k_vec = K - K % VW
        for k in range(0, k_vec, VW):
            a8 = convert_float8(vload8(0, a + row * K + k))
            acc += a8.s0 * b_strip8_half(b, k * N + col0, col0, N)
            acc += a8.s1 * b_strip8_half(b, (k + 1) * N + col0, col0, N)
            acc += a8.s2 * b_strip8_half(b, (k + 2) * N + col0, col0, N)
            acc += a8.s3 * b_strip8_half(b, (k + 3) * N + col0, col0, N)
            acc += a8.s4 * b_strip8_half(b, (k + 4) * N + col0, col0, N)
            acc += a8.s5 * b_strip8_half(b, (k + 5) * N + col0, col0, N)
            acc += a8.s6 * b_strip8_half(b, (k + 6) * N + col0, col0, N)
            acc += a8.s7 * b_strip8_half(b, (k + 7) * N + col0, col0, N)
        for k in range(k_vec, K):
            acc += np.float32(a[row * K + k]) * b_strip8_half(b, k * N + col0, col0, N)
        out = private_array(VW, np.float32)
        vstore8(acc, 0, out)
        for j in range(VW):
            if col0 + j < N:
                c[row * N + col0 + j] = out[j]


@kernel
def matmul_vload_half8(a, b, c, M, N, K):
    col0 = get_global_id(0) * VW
    row = get_global_id(1)
    if row < M and col0 < N:
        acc = float8(0.0)
        k_vec = K - K % VW
        for k in range(0, k_vec, VW):
            a8 = vload_half8(0, a + row * K + k)
            acc += a8.s0 * b_strip8_vload_half(b, k * N + col0, col0, N)
            acc += a8.s1 * b_strip8_vload_half(b, (k + 1) * N + col0, col0, N)
            acc += a8.s2 * b_strip8_vload_half(b, (k + 2) * N + col0, col0, N)
            acc += a8.s3 * b_strip8_vload_half(b, (k + 3) * N + col0, col0, N)
            acc += a8.s4 * b_strip8_vload_half(b, (k + 4) * N + col0, col0, N)
            acc += a8.s5 * b_strip8_vload_half(b, (k + 5) * N + col0, col0, N)
            acc += a8.s6 * b_strip8_vload_half(b, (k + 6) * N + col0, col0, N)
            acc += a8.s7 * b_strip8_vload_half(b, (k + 7) * N + col0, col0, N)
        for k in range(k_vec, K):
            acc += vload_half(row * K + k, a) * b_strip8_vload_half(b, k * N + col0, col0, N)
        out = private_array(VW, np.float32)
        vstore8(acc, 0, out)
        for j in range(VW):
            if col0 + j < N:
                c[row * N + col0 + j] = out[j]


@kernel
def matmul_tiled_vload_half(a, b, c, M, N, K):
    tx = get_local_id(0)
    ty = get_local_id(1)
    col = get_group_id(0) * TILE + tx
    row = get_group_id(1) * TILE + ty
    a_tile = local_array((TILE, TILE), np.float32)
    b_tile = local_array((TILE, TILE), np.float32)
    acc = 0.0
    for t in range(0, K, TILE):
        ka = t + tx
        av = 0.0
        if row < M and ka < K:  # an if: see the module docstring
            av = vload_half(row * K + ka, a)
        a_tile[ty, tx] = av
        kb = t + ty
        bv = 0.0
        if kb < K and col < N:
            bv = vload_half(kb * N + col, b)
        b_tile[ty, tx] = bv
        barrier(CLK_LOCAL_MEM_FENCE)
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        barrier(CLK_LOCAL_MEM_FENCE)
    if row < M and col < N:
        c[row * N + col] = acc


def make_inputs(rng, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"a": rng.standard_normal((m, k), dtype=np.float32).astype(np.float16),
            "b": rng.standard_normal((k, n), dtype=np.float32).astype(np.float16),
            "c": np.full((m, n), np.nan, np.float32),
            "M": np.int32(m), "N": np.int32(n), "K": np.int32(k)}


def reference(inputs):
    c = inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64)
    return {"c": c.astype(np.float32)}


_COMMON = dict(make_inputs=make_inputs, reference=reference, outputs={"c": EXACT},
               default_shape={"M": 256, "N": 256, "K": 256}, tolerance=(1e-4, 1e-3),
               family="matmul")
_FP16 = dict(cl_file="matmul_half.cl", requires=frozenset({"fp16"}))

register(KernelSpec(
    name="matmul_half", kernel=matmul_half, launch=launch_2d(1, 1),
    description="C = A B, half A and B (cl_khr_fp16) converted to float, float accumulation, "
                "naive", **_COMMON, **_FP16))
register(KernelSpec(
    name="matmul_half8", kernel=matmul_half8, launch=launch_2d(VW, 1),
    description="C = A B, half A and B loaded as half8 (cl_khr_fp16), an 8-column float8 "
                "strip of C per work-item", **_COMMON, **_FP16))
register(KernelSpec(
    name="matmul_vload_half", kernel=matmul_vload_half, launch=launch_2d(1, 1),
    description="C = A B, half A and B read with vload_half (no fp16 needed), naive",
    cl_file="matmul_vec.cl", **_COMMON))
register(KernelSpec(
    name="matmul_tiled_vload_half", kernel=matmul_tiled_vload_half, launch=launch_2d(1, 1),
    description=f"C = A B, half A and B read with vload_half into {TILE}x{TILE} float tiles in "
                "local memory", cl_file="matmul_vec.cl", **_COMMON))
register(KernelSpec(
    name="matmul_vload_half8", kernel=matmul_vload_half8, launch=launch_2d(VW, 1),
    description="C = A B, half A and B read with vload_half8 (no fp16 needed), an 8-column "
                "float8 strip of C per work-item", cl_file="matmul_vec.cl", **_COMMON))
