"""matmul with local tiles, register blocks and float4 loads and arithmetic, all three at once.

``matmul_regblock_float4``: a work-group of LX x LY = 16 x 16 work-items computes a BM x BN =
64 x 64 block of C; each work-item a 4 x 4 block in four ``float4`` accumulators (one per
row, the course's "one work-item handles several outputs"). Per BK = 16 steps of K the group
stages a 64 x 16 tile of A and a 16 x 64 tile of B in local memory, every work-item loading
one ``float4`` of each (the course's "vectorised load and compute"): A along K (stored
transposed, so a column of four rows of the block is one ``vload4`` from local memory), B
along N. Per k a work-item then does two ``vload4`` from local memory and four ``float4``
multiply-adds: 16 products for 8 local floats, where ``matmul_tiled`` reads 2 per product.
Each element of A is loaded from global memory once per 64 columns of C and each element of B
once per 64 rows (``matmul_tiled``: per 16).

Boundaries: a ``float4`` that would cross the end of a row of A (K) or of B (N) is loaded
one element at a time with zeros past the end, a row of A past M or of B past K is all
zeros; a row of C past M is not stored and a ``float4`` of C crossing N is stored element by
element. So any M, N, K works and nothing outside A, B or C is touched.

Every element of C adds its products in ascending k from 0.0 (the zeros of the padding add
+0.0), as the naive ``matmul``: the bits are the naive kernel's up to the sign of a zero, and
exact against a device. The work-group shape is baked into the tile sizes: the launch plan
refuses another local size.
"""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    float4,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
    vload4,
    vstore4,
)
from clsim.errors import InvalidNDRangeError
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.matmul import make_inputs, reference

VW = 4  # float4: the width of every load, store and multiply-add, and the register block side
LX = 16
LY = 16
BM = LY * VW  # rows of C per work-group
BN = LX * VW  # columns of C per work-group
BK = 16  # steps of K per tile


@clsim.func
def load_float4(p, off, inside):
    """p[off .. off+3] as a float4 when ``inside`` >= 4 of them lie inside the row, else the
    first ``inside`` of them and zeros (a vload4 there would read past the row)."""
    if inside >= VW:
        return vload4(0, p + off)
    return float4(p[off] if inside > 0 else 0.0, p[off + 1] if inside > 1 else 0.0,
                  p[off + 2] if inside > 2 else 0.0, p[off + 3] if inside > 3 else 0.0)


@clsim.func
def store_float4(c, acc, row, col0, M, N):
    """Row ``row`` of C from column col0: one vstore4 when all four columns are inside, else
    the columns inside one at a time; nothing for a row past M."""
    if row < M:
        off = row * N + col0
        if col0 + VW <= N:
            vstore4(acc, 0, c + off)
        else:
            if col0 < N:
                c[off] = acc.s0
            if col0 + 1 < N:
                c[off + 1] = acc.s1
            if col0 + 2 < N:
                c[off + 2] = acc.s2


@kernel
def matmul_regblock_float4(a, b, c, M, N, K):
    tx = get_local_id(0)
    ty = get_local_id(1)
    lin = ty * LX + tx
    row_blk = get_group_id(1) * BM
    col_blk = get_group_id(0) * BN
    a_t = local_array(BK * BM, np.float32)  # A's tile transposed: a_t[k * BM + m]
    b_t = local_array(BK * BN, np.float32)  # B's tile: b_t[k * BN + n]
    a_m = lin // (BK // VW)  # the float4 of A this work-item loads: row a_m, k 4*a_q..
    a_q = lin % (BK // VW)
    b_k = lin // (BN // VW)  # the float4 of B: row b_k, columns 4*b_q..
    b_q = lin % (BN // VW)
    acc0 = float4(0.0)
    acc1 = float4(0.0)
    acc2 = float4(0.0)
    acc3 = float4(0.0)
    for t in range(0, K, BK):
        a_row = row_blk + a_m
        a_col = t + a_q * VW
        a4 = load_float4(a, a_row * K + a_col, K - a_col if a_row < M else 0)
        a_t[(a_q * VW) * BM + a_m] = a4.s0
        a_t[(a_q * VW + 1) * BM + a_m] = a4.s1
        a_t[(a_q * VW + 2) * BM + a_m] = a4.s2
        a_t[(a_q * VW + 3) * BM + a_m] = a4.s3
        b_row = t + b_k
        b_col = col_blk + b_q * VW
        b4 = load_float4(b, b_row * N + b_col, N - b_col if b_row < K else 0)
        vstore4(b4, b_k * (BN // VW) + b_q, b_t)
        barrier(CLK_LOCAL_MEM_FENCE)
        for kk in range(BK):
            av = vload4(kk * (BM // VW) + ty, a_t)  # rows 4ty..4ty+3 of the block at k
            bv = vload4(kk * (BN // VW) + tx, b_t)  # columns 4tx..4tx+3 at k
            acc0 += av.s0 * bv
            acc1 += av.s1 * bv
            acc2 += av.s2 * bv
            acc3 += av.s3 * bv
        barrier(CLK_LOCAL_MEM_FENCE)
    row0 = row_blk + ty * VW
    col0 = col_blk + tx * VW
    store_float4(c, acc0, row0, col0, M, N)
    store_float4(c, acc1, row0 + 1, col0, M, N)
    store_float4(c, acc2, row0 + 2, col0, M, N)
    store_float4(c, acc3, row0 + 3, col0, M, N)


def launch_blocks(inputs, shape, local_size=None):
    """One LX x LY work-group per BM x BN block of C (the tile sizes are baked in)."""
    if local_size is not None and tuple(local_size) != (LX, LY):
        raise InvalidNDRangeError(
            f"matmul_regblock_float4: local size {tuple(local_size)} does not match its "
            f"{BM}x{BN} tiles. Launch it with local size ({LX}, {LY}) (or none).")
    m, n = inputs["c"].shape
    return Launch((-(-n // BN) * LX, -(-m // BM) * LY), (LX, LY),
                  tuple(inputs[k] for k in ("a", "b", "c", "M", "N", "K")))


register(KernelSpec(
    name="matmul_regblock_float4", kernel=matmul_regblock_float4, launch=launch_blocks,
    description=f"C = A B, {BM}x{BN} tiles of A and B in local memory (float4 loads), a "
                f"{VW}x{VW} block of C per work-item in float4 registers",
    cl_file="matmul_tiled_vec.cl", make_inputs=make_inputs, reference=reference,
    outputs={"c": EXACT}, default_shape={"M": 256, "N": 256, "K": 256},
    tolerance=(1e-4, 1e-3), family="matmul"))
