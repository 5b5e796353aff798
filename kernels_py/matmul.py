"""matmul: C = A B in float32 (A: M x K, B: K x N, row-major), four ways.

- ``matmul``: naive, one work-item per element of C, K loads of A and K of B each.
- ``matmul_tiled``: TILE x TILE work-groups stage TILE x TILE blocks of A and B in local
  memory; each global element is loaded once per work-group instead of once per work-item
  (global loads TILE times fewer). Out-of-range tile elements are zeros.
- ``matmul_subgroup``: one sub-group per element of C; the lanes split K (consecutive k in
  consecutive lanes, so a row of A is read coalesced) and a shuffle-xor butterfly adds their
  partial dot products in a fixed order (the course's "sub-group optimisation").
- ``matmul_regblock``: each work-item computes a TM x TN block of C in private memory
  (the course's "one work-item handles several outputs"): per k it loads TM values of A and
  TN of B and does TM*TN multiply-adds. Rows and columns past M and N load zeros and are not
  stored, so any M, N, K work.

The tiled and register-blocked variants add the products in ascending k as the naive one, and
the sub-group one in its fixed butterfly order, so every output is exact against a device.
The float4 variant is in ``kernels_py/matmul_vec.py``, the half-input ones (half8 included) in
``kernels_py/matmul_half.py``, the tiled and register-blocked float4 one in
``kernels_py/matmul_tiled_vec.py`` and the ``dot`` one in ``kernels_py/matmul_dot.py``.
"""

import numpy as np

from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    local_array,
    private_array,
)
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.common import subgroup_sum_butterfly

TILE = 16
TM = 4
TN = 4
SUBGROUP_SIZE = 16
SUBGROUPS_PER_GROUP = 4


@kernel
def matmul(a, b, c, M, N, K):
    col = get_global_id(0)
    row = get_global_id(1)
    if row < M and col < N:
        acc = 0.0
        for k in range(K):
            acc += a[row * K + k] * b[k * N + col]
        c[row * N + col] = acc


@kernel
def matmul_tiled(a, b, c, M, N, K):
    tx = get_local_id(0)
    ty = get_local_id(1)
    col = get_group_id(0) * TILE + tx
    row = get_group_id(1) * TILE + ty
    a_tile = local_array((TILE, TILE), np.float32)
    b_tile = local_array((TILE, TILE), np.float32)
    acc = 0.0
    for t in range(0, K, TILE):
        ka = t + tx
        a_tile[ty, tx] = a[row * K + ka] if row < M and ka < K else 0.0
        kb = t + ty
        b_tile[ty, tx] = b[kb * N + col] if kb < K and col < N else 0.0
        barrier(CLK_LOCAL_MEM_FENCE)
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        barrier(CLK_LOCAL_MEM_FENCE)
    if row < M and col < N:
        c[row * N + col] = acc


@kernel
def matmul_subgroup(a, b, c, M, N, K):
    out = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if out < M * N:
        row = out // N
        col = out % N
        acc = 0.0
        for k in range(lane, K, get_sub_group_size()):
            acc += a[row * K + k] * b[k * N + col]
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            c[out] = total


@kernel
def matmul_regblock(a, b, c, M, N, K):
    col0 = get_global_id(0) * TN
    row0 = get_global_id(1) * TM
    acc = private_array(TM * TN, np.float32)
    a_reg = private_array(TM, np.float32)
    b_reg = private_array(TN, np.float32)
    for z in range(TM * TN):
        acc[z] = 0.0
    for k in range(K):
        for i in range(TM):
            a_reg[i] = a[(row0 + i) * K + k] if row0 + i < M else 0.0
        for j in range(TN):
            b_reg[j] = b[k * N + col0 + j] if col0 + j < N else 0.0
        for i in range(TM):
            for j in range(TN):
                acc[i * TN + j] += a_reg[i] * b_reg[j]
    for i in range(TM):
        for j in range(TN):
            if row0 + i < M and col0 + j < N:
                c[(row0 + i) * N + col0 + j] = acc[i * TN + j]


def make_inputs(rng, shape):
    m, n, k = shape["M"], shape["N"], shape["K"]
    return {"a": rng.standard_normal((m, k), dtype=np.float32),
            "b": rng.standard_normal((k, n), dtype=np.float32),
            "c": np.full((m, n), np.nan, np.float32),
            "M": np.int32(m), "N": np.int32(n), "K": np.int32(k)}


def _args(inputs):
    return tuple(inputs[k] for k in ("a", "b", "c", "M", "N", "K"))


def _grid(items_x, items_y, local):
    return (-(-items_x // local[0]) * local[0], -(-items_y // local[1]) * local[1])


def launch_2d(per_item_cols, per_item_rows):
    """One work-item per per_item_rows x per_item_cols block of C, TILE x TILE groups."""
    def launch(inputs, shape, local_size=None):
        local = local_size or (TILE, TILE)
        m, n = inputs["c"].shape
        return Launch(_grid(-(-n // per_item_cols), -(-m // per_item_rows), local), local,
                      _args(inputs))
    return launch


def launch_subgroup(inputs, shape, local_size=None, subgroup_size=SUBGROUP_SIZE):
    local = local_size or (subgroup_size * SUBGROUPS_PER_GROUP,)
    per_group = -(-local[0] // subgroup_size)
    groups = max(1, -(-inputs["c"].size // per_group))
    return Launch((groups * local[0],), local, _args(inputs))


def reference(inputs):
    c = inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64)
    return {"c": c.astype(np.float32)}


_COMMON = dict(cl_file="matmul.cl", make_inputs=make_inputs, reference=reference,
               outputs={"c": EXACT}, default_shape={"M": 256, "N": 256, "K": 256},
               tolerance=(1e-4, 1e-3), family="matmul")

register(KernelSpec(
    name="matmul", kernel=matmul, launch=launch_2d(1, 1),
    description="C = A B, naive: one work-item per element, K loads of A and of B each",
    **_COMMON))
register(KernelSpec(
    name="matmul_tiled", kernel=matmul_tiled, launch=launch_2d(1, 1),
    description=f"C = A B, {TILE}x{TILE} tiles of A and B staged in local memory",
    **_COMMON))
register(KernelSpec(
    name="matmul_subgroup", kernel=matmul_subgroup, launch=launch_subgroup,
    description="C = A B, one sub-group per element: lanes split K, shuffle-xor butterfly",
    subgroup_size=SUBGROUP_SIZE, requires=frozenset({"subgroups"}),
    **{**_COMMON, "cl_file": "matmul_subgroup.cl"}))
register(KernelSpec(
    name="matmul_regblock", kernel=matmul_regblock, launch=launch_2d(TN, TM),
    description=f"C = A B, a {TM}x{TN} block of C per work-item in private memory",
    **_COMMON))
