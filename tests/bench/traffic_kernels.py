"""Kernels the traffic benchmark and the cache-model tests share: tiled matmul, GEMV, copy.

Not library kernels (no ``.cl`` twin, no KernelSpec): small, textbook shapes whose DRAM
traffic through a cache has a known answer (docs/traffic-model.md works them by hand).
Each ``*_case`` returns ``(kernel, global_size, local_size, args, outputs)``.
"""

from __future__ import annotations

import numpy as np

from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
)

TILE = 16
GEMV_WG = 64


@kernel
def matmul_tiled(a, b, c, n):
    """c = a @ b for n x n float32, 16 x 16 tiles staged in local memory (n % 16 == 0)."""
    lx = get_local_id(0)
    ly = get_local_id(1)
    col = get_global_id(0)
    row = get_global_id(1)
    ta = local_array((16, 16), np.float32)
    tb = local_array((16, 16), np.float32)
    acc = 0.0
    for t in range(0, n, 16):
        ta[ly, lx] = a[row * n + t + lx]
        tb[ly, lx] = b[(t + ly) * n + col]
        barrier(CLK_LOCAL_MEM_FENCE)
        for k in range(16):
            acc += ta[ly, k] * tb[k, lx]
        barrier(CLK_LOCAL_MEM_FENCE)
    c[row * n + col] = acc


@kernel
def gemv_rows(m, x, y, ncols):
    """y = m @ x, one work-group of 64 per row, strided dot products and a local tree."""
    row = get_group_id(0)
    lid = get_local_id(0)
    part = local_array(64, np.float32)
    acc = 0.0
    for c in range(lid, ncols, 64):
        acc += m[row * ncols + c] * x[c]
    part[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    half_ = 32
    while half_ > 0:
        if lid < half_:
            part[lid] = part[lid] + part[lid + half_]
        barrier(CLK_LOCAL_MEM_FENCE)
        half_ = half_ // 2
    if lid == 0:
        y[row] = part[0]


@kernel
def copy(src, dst, n):
    """dst = src, one work-item per element: a streaming copy."""
    i = get_global_id(0)
    if i < n:
        dst[i] = src[i]


def matmul_case(n: int = 256, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    return matmul_tiled, (n, n), (TILE, TILE), (a, b, c, np.int32(n)), {"c": a @ b}


def gemv_case(rows: int = 4096, cols: int = 4096, seed: int = 0):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((rows, cols), dtype=np.float32)
    x = rng.standard_normal(cols, dtype=np.float32)
    y = np.zeros(rows, np.float32)
    return gemv_rows, (rows * GEMV_WG,), (GEMV_WG,), (m, x, y, np.int32(cols)), {"y": m @ x}


def copy_case(n: int = 1 << 22, local: int = 256, seed: int = 0):
    rng = np.random.default_rng(seed)
    src = rng.standard_normal(n, dtype=np.float32)
    dst = np.zeros(n, np.float32)
    groups = -(-n // local)
    return copy, (groups * local,), (local,), (src, dst, np.int32(n)), {"dst": src}
