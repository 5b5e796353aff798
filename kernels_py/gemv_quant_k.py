"""Quantized GEMV with Q4_K weights: y = W x, W in ``block_q4_K`` structs (interleaved GGUF
layout: 256 values a super-block, kernels_py.gguf_structs), x float32.

A super-block is eight 32-value sub-blocks, each with a six-bit scale ``sc`` and min ``m``
(ggml's ``get_scale_min_k4``, the helpers of kernels_py.gguf_dequant). A sub-block adds
``(d * sc) * sum(q_k * x_k) - (dmin * m) * sum(x_k)``: the quants times x and x alone summed in
element order, scaled once each, as ggml's dot products factor the min out. A work-item takes
one sub-block at a time (llama.cpp's ``kernel_mul_mv_q4_K_f32`` gives a lane 32 weights too),
adds its sub-blocks in order, and the work-items meet in a fixed order, so every output is
exact against a device.

- ``gemv_q4_k``: one work-group per row, local-memory tree (no sub-groups needed).
- ``gemv_q4_k_subgroup``: one sub-group per row, shuffle-xor butterfly.

Rows are whole super-blocks (``ncols`` a multiple of 256; the launch plans refuse others).
"""

import numpy as np

import clsim
from clsim import (
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.common import subgroup_sum_butterfly
from kernels_py.gemv_quant import (
    SUBGROUP_SIZE,
    group_total,
    launch_rows,
    reference,
    subgroup_rows_launch,
)
from kernels_py.gguf_dequant import min_k4, nibble, scale_k4
from kernels_py.gguf_structs import GGML, QK_K, random_blocks

SUB = 32  # values per sub-block
SUBS = QK_K // SUB


def fuzz_shapes():
    """The verifier's shapes: rows of at most 8 super-blocks keep a drawn case quick on
    Oclgrind. Built on demand: importing the library must not import Hypothesis."""
    from hypothesis import strategies as st

    return st.builds(lambda r, b: {"rows": r, "blocks": b}, st.integers(1, 9),
                     st.integers(1, 8))


@clsim.func
def q4_k_sub_dot(w, ib, j, x, x_at):
    """Sub-block j of Q4_K block w[ib] dotted with x[x_at:x_at+32]. Each x value is loaded
    once, into a register, for both sums (as ggml's kernel keeps its lane's x in yl/yh)."""
    sumq = 0.0
    sumx = 0.0
    for k in range(SUB):
        q = nibble(np.int32(w[ib].qs[SUB * (j // 2) + k]), j % 2 == 1)
        xk = x[x_at + k]
        sumq += np.float32(q) * xk
        sumx += xk
    scale = np.float32(w[ib].d) * np.float32(scale_k4(w, ib, j))
    offset = np.float32(w[ib].dmin) * np.float32(min_k4(w, ib, j))
    return scale * sumq - offset * sumx


@kernel
def gemv_q4_k(blocks, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK_K
    acc = 0.0
    for t in range(lid, nb * SUBS, wg):
        acc += q4_k_sub_dot(blocks, row * nb + t // SUBS, t % SUBS, x, t * SUB)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q4_k_subgroup(blocks, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        nb = ncols // QK_K
        acc = 0.0
        for t in range(lane, nb * SUBS, get_sub_group_size()):
            acc += q4_k_sub_dot(blocks, row * nb + t // SUBS, t % SUBS, x, t * SUB)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


def make_inputs(rng, shape):
    """Random quant and six-bit scale bytes (every pattern is a valid block), finite half
    scales of a realistic size (ggml's d and dmin are max / 63 of the sub-block fits)."""
    rows, cols = shape["rows"], shape["blocks"] * QK_K
    blocks = random_blocks(rng, rows * shape["blocks"], "Q4_K")
    blocks["d"] = np.abs(rng.standard_normal(blocks.size) * 2e-3).astype(np.float16)
    blocks["dmin"] = np.abs(rng.standard_normal(blocks.size) * 2e-3).astype(np.float16)
    return {"blocks": blocks, "x": rng.standard_normal(cols, dtype=np.float32),
            "y": np.full(rows, np.nan, np.float32), "nrows": np.int32(rows),
            "ncols": np.int32(cols)}


_ROW_ARGS = ("blocks", "x", "y", "nrows", "ncols")
_GEMV = dict(make_inputs=make_inputs, reference=reference(GGML.Q4_K), outputs={"y": EXACT},
             tolerance=(1e-4, 1e-3), default_shape={"rows": 4096, "blocks": 16},
             fuzz_shapes=fuzz_shapes, family="gemv_quant")

register(KernelSpec(
    name="gemv_q4_k", kernel=gemv_q4_k, cl_file="gemv_quant_k.cl",
    launch=launch_rows(_ROW_ARGS, QK_K),
    description="y = W x, W in Q4_K blocks (interleaved), a work-group per row, a work-item "
                "per 32-value sub-block",
    **_GEMV))
register(KernelSpec(
    name="gemv_q4_k_subgroup", kernel=gemv_q4_k_subgroup, cl_file="gemv_quant_k_subgroup.cl",
    launch=subgroup_rows_launch(_ROW_ARGS, QK_K), subgroup_size=SUBGROUP_SIZE,
    requires=frozenset({"subgroups"}),
    description="y = W x, W in Q4_K blocks, a sub-group per row, shuffle-xor butterfly",
    **_GEMV))
