"""Quantized GEMV on the split layout, the forms kernels_py.gemv_quant lacks: Q4_0's
sub-group form, and Q8_0 split into a quant buffer ``q`` (32 ``int8`` a block) and a half
scale buffer ``d``, with its conversion kernels.

- ``gemv_q4_0_split_subgroup``: ``gemv_q4_0_split``'s blocks, a sub-group per row as
  ``gemv_q4_0_subgroup`` (lanes stride over the row's blocks, shuffle-xor butterfly). A block
  reads the same numbers in the same order as the interleaved one: the same bits.
- ``gemv_q8_0_split`` / ``gemv_q8_0_split_subgroup``: ``gemv_q8_0`` / ``gemv_q8_0_subgroup``
  on the split Q8_0 layout, a work-group (local tree) or a sub-group per row: the same bits as
  their interleaved forms.
- ``convert_block_q8_0``: interleaved Q8_0 blocks to (``q``, ``d``), one work-item a block;
  ``restore_block_q8_0`` its inverse. Halves are copied as halves (the twins as their 16 bits
  through ``ushort``), so a round trip is bit-exact on any bytes, NaN payloads included.
"""

import numpy as np

import clsim
from clsim import (
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    view,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.common import subgroup_sum_butterfly
from kernels_py.gemv_quant import (
    GGML,
    SUBGROUP_SIZE,
    group_total,
    launch_blocks,
    launch_rows,
    make_inputs,
    q4_0_split_dot,
    reference,
    split_reference,
    subgroup_rows_launch,
)
from kernels_py.gguf_structs import BLOCK_Q8_0, QK


@clsim.func
def q8_0_split_dot(q, d, k, x, x_at):
    """Split-layout Q8_0 block k (quants q[32k:32k+32], scale d[k]) dotted with x[x_at:+32],
    in q8_0_dot's order."""
    sumq = 0.0
    for j in range(QK):
        sumq += np.float32(q[k * QK + j]) * x[x_at + j]
    return np.float32(d[k]) * sumq


@kernel
def gemv_q8_0_split(q, d, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK
    acc = 0.0
    for b in range(lid, nb, wg):
        acc += q8_0_split_dot(q, d, row * nb + b, x, b * QK)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q4_0_split_subgroup(q, d, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        nb = ncols // QK
        acc = 0.0
        for b in range(lane, nb, get_sub_group_size()):
            acc += q4_0_split_dot(q, d, row * nb + b, x, b * QK)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def gemv_q8_0_split_subgroup(q, d, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        nb = ncols // QK
        acc = 0.0
        for b in range(lane, nb, get_sub_group_size()):
            acc += q8_0_split_dot(q, d, row * nb + b, x, b * QK)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def convert_block_q8_0(blocks, q, d, nblocks):
    b = get_global_id(0)
    if b < nblocks:
        d[b] = blocks[b].d
        for j in range(QK):
            q[b * QK + j] = blocks[b].qs[j]


@kernel
def restore_block_q8_0(q, d, blocks, nblocks):
    b = get_global_id(0)
    y = view(blocks, BLOCK_Q8_0, 0)
    if b < nblocks:
        y[b].d = d[b]
        for j in range(QK):
            y[b].qs[j] = q[b * QK + j]


def join_q8_0(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """numpy: the split Q8_0 buffers back to interleaved blocks, as bytes."""
    blocks = np.empty(d.size, BLOCK_Q8_0)
    blocks["d"], blocks["qs"] = d, q.reshape(-1, QK)
    return blocks.view(np.uint8)


def convert_inputs(rng, shape):
    """Q8_0 blocks in, the split buffers zeroed: a kernel writing nothing must not pass."""
    inputs = _Q8(rng, shape)
    inputs["q"], inputs["d"] = np.zeros_like(inputs["q"]), np.zeros_like(inputs["d"])
    return inputs


def restore_inputs(rng, shape):
    """The split layout in, a zeroed byte buffer for the blocks out (outputs are byte buffers
    viewed as blocks, so every tool compares them as bytes)."""
    inputs = _Q8(rng, shape)
    inputs["blocks"] = np.zeros(inputs["blocks"].nbytes, np.uint8)
    return inputs


_Q4, _Q8 = make_inputs(GGML.Q4_0), make_inputs(GGML.Q8_0)
_SPLIT_ARGS = ("q", "d", "x", "y", "nrows", "ncols")
_GEMV = dict(outputs={"y": EXACT}, tolerance=(1e-4, 1e-3),
             default_shape={"rows": 4096, "blocks": 128}, family="gemv_quant")
_SUBGROUP = dict(cl_file="gemv_quant_split_subgroup.cl", launch=subgroup_rows_launch(_SPLIT_ARGS),
                 subgroup_size=SUBGROUP_SIZE, requires=frozenset({"subgroups"}), **_GEMV)
_CONVERT = dict(cl_file="gemv_quant_split.cl", default_shape={"rows": 4096, "blocks": 128},
                family="gguf")

register(KernelSpec(
    name="gemv_q4_0_split_subgroup", kernel=gemv_q4_0_split_subgroup, make_inputs=_Q4,
    reference=reference(GGML.Q4_0),
    description="y = W x, Q4_0 split into quant and scale buffers, a sub-group per row, "
                "shuffle-xor butterfly",
    **_SUBGROUP))
register(KernelSpec(
    name="gemv_q8_0_split", kernel=gemv_q8_0_split, make_inputs=_Q8,
    launch=launch_rows(_SPLIT_ARGS), reference=reference(GGML.Q8_0),
    cl_file="gemv_quant_split.cl",
    description="y = W x, Q8_0 split into quant and scale buffers, a work-group per row",
    **_GEMV))
register(KernelSpec(
    name="gemv_q8_0_split_subgroup", kernel=gemv_q8_0_split_subgroup, make_inputs=_Q8,
    reference=reference(GGML.Q8_0),
    description="y = W x, Q8_0 split into quant and scale buffers, a sub-group per row, "
                "shuffle-xor butterfly",
    **_SUBGROUP))
register(KernelSpec(
    name="convert_block_q8_0", kernel=convert_block_q8_0, make_inputs=convert_inputs,
    launch=launch_blocks(("blocks", "q", "d", "nblocks")), reference=split_reference,
    outputs={"q": EXACT, "d": EXACT},
    description="Q8_0 blocks to the split layout (int8 quants, half scales)",
    **_CONVERT))
register(KernelSpec(
    name="restore_block_q8_0", kernel=restore_block_q8_0, make_inputs=restore_inputs,
    launch=launch_blocks(("q", "d", "blocks", "nblocks")),
    reference=lambda inputs: {"blocks": join_q8_0(inputs["q"], inputs["d"])},
    outputs={"blocks": EXACT},
    description="the split Q8_0 layout back to interleaved blocks (convert_block_q8_0 "
                "inverse)",
    **_CONVERT))
