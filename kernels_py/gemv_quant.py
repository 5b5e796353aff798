"""Quantized GEMV: y = W x with W in GGUF Q4_0 or Q8_0 blocks (uint8 bytes), x float32.

Each row of W is ``ncols / 32`` blocks. A block's contribution is ``d * sum_j(q_j * x_j)``
(ggml's order: the quants times x summed in element order, then scaled once), its work-item
adds those in block order, and the lanes meet in a fixed order, so every output is exact
against a device.

- ``gemv_q4_0`` / ``gemv_q8_0``: interleaved GGUF layout (scale and quants in one block), one
  work-group per row, local-memory tree.
- ``gemv_q4_0_subgroup``: the same, one sub-group per row, shuffle-xor butterfly.
- ``gemv_q4_0_split_lanes``: the split layout with the work-items of a row sharing its blocks:
  work-item k takes quant byte k (elements j and j + 16 of its block) and scales their sum by
  the block's d, so neighbouring work-items read neighbouring bytes of ``q`` and ``x``.
- ``gemv_q4_0_split``: the "quantized weight splitting" layout llama.cpp's OpenCL backend
  converts Q4_0 to (``kernel_convert_block_q4_0``): the quants of all blocks in one buffer
  ``q`` (16 bytes a block), the scales in another ``d`` (2 bytes a block), so loads of either
  are contiguous; ``convert_block_q4_0`` makes it, ``restore_block_q4_0`` is its inverse.
"""

import gguf
import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    local_array,
)
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.common import subgroup_sum_butterfly, tree_reduce_sum
from kernels_py.gguf_blocks import Q4_0_BYTES, Q8_0_BYTES, QK, half_to_float

GGML = gguf.GGMLQuantizationType
MAX_WG = 1024
LOCAL = 64
SUBGROUP_SIZE = 16
SUBGROUPS_PER_GROUP = 4


@clsim.func
def q4_0_dot(q, q_at, d, d_at, x, x_at):
    """One Q4_0 block (quants at q[q_at:q_at+16], half scale at d[d_at:d_at+2]) dotted with
    x[x_at:x_at+32]."""
    sumq = 0.0
    for j in range(QK // 2):
        byte = np.int32(q[q_at + j])
        sumq += np.float32((byte & 15) - 8) * x[x_at + j]
        sumq += np.float32((byte >> 4) - 8) * x[x_at + j + QK // 2]
    return half_to_float(d[d_at], d[d_at + 1]) * sumq


@clsim.func
def q8_0_dot(blocks, o, x, x_at):
    """One Q8_0 block at blocks[o:o+34] dotted with x[x_at:x_at+32]."""
    sumq = 0.0
    for j in range(QK):
        q = np.int32(blocks[o + 2 + j])
        sumq += np.float32(q - 256 if q >= 128 else q) * x[x_at + j]
    return half_to_float(blocks[o], blocks[o + 1]) * sumq


@clsim.func
def group_total(acc, lid, wg):
    """The work-group's sum of acc (a fixed-order local tree), in every work-item."""
    scratch = local_array(MAX_WG, np.float32)
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    return scratch[0]


@kernel
def gemv_q4_0(blocks, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK
    acc = 0.0
    for b in range(lid, nb, wg):
        o = (row * nb + b) * Q4_0_BYTES
        acc += q4_0_dot(blocks, o + 2, blocks, o, x, b * QK)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q8_0(blocks, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK
    acc = 0.0
    for b in range(lid, nb, wg):
        acc += q8_0_dot(blocks, (row * nb + b) * Q8_0_BYTES, x, b * QK)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q4_0_split(q, d, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK
    acc = 0.0
    for b in range(lid, nb, wg):
        k = row * nb + b
        acc += q4_0_dot(q, k * (QK // 2), d, k * 2, x, b * QK)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q4_0_split_lanes(q, d, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK
    acc = 0.0
    for k in range(lid, nb * (QK // 2), wg):  # neighbouring work-items, neighbouring bytes
        b = k // (QK // 2)
        xo = b * QK + k % (QK // 2)
        byte = np.int32(q[row * nb * (QK // 2) + k])
        s = np.float32((byte & 15) - 8) * x[xo] + np.float32((byte >> 4) - 8) * x[xo + QK // 2]
        dk = (row * nb + b) * 2
        acc += half_to_float(d[dk], d[dk + 1]) * s
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q4_0_subgroup(blocks, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        nb = ncols // QK
        acc = 0.0
        for b in range(lane, nb, get_sub_group_size()):
            o = (row * nb + b) * Q4_0_BYTES
            acc += q4_0_dot(blocks, o + 2, blocks, o, x, b * QK)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def convert_block_q4_0(blocks, q, d, nblocks):
    b = get_global_id(0)
    if b < nblocks:
        o = b * Q4_0_BYTES
        d[2 * b] = blocks[o]
        d[2 * b + 1] = blocks[o + 1]
        for j in range(QK // 2):
            q[b * (QK // 2) + j] = blocks[o + 2 + j]


@kernel
def restore_block_q4_0(q, d, blocks, nblocks):
    b = get_global_id(0)
    if b < nblocks:
        o = b * Q4_0_BYTES
        blocks[o] = d[2 * b]
        blocks[o + 1] = d[2 * b + 1]
        for j in range(QK // 2):
            blocks[o + 2 + j] = q[b * (QK // 2) + j]


def split_q4_0(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy: (quants, scale bytes) of interleaved Q4_0 blocks."""
    b = blocks.reshape(-1, Q4_0_BYTES)
    return b[:, 2:].reshape(-1).copy(), b[:, :2].reshape(-1).copy()


def make_inputs(qtype):
    def make(rng, shape):
        rows, cols = shape["rows"], shape["blocks"] * QK
        w = rng.standard_normal((rows, cols), dtype=np.float32)
        blocks = gguf.quants.quantize(w, qtype).reshape(-1)
        inputs = {"blocks": blocks, "x": rng.standard_normal(cols, dtype=np.float32),
                  "y": np.full(rows, np.nan, np.float32), "nrows": np.int32(rows),
                  "ncols": np.int32(cols), "nblocks": np.int32(rows * shape["blocks"])}
        if qtype == GGML.Q4_0:
            inputs["q"], inputs["d"] = split_q4_0(blocks)
        return inputs
    return make


def launch_rows(names):
    def launch(inputs, shape, local_size=None):
        local = local_size or (LOCAL,)
        return Launch((int(inputs["nrows"]) * local[0],), local, tuple(inputs[k] for k in names))
    return launch


def launch_subgroup_rows(inputs, shape, local_size=None, subgroup_size=SUBGROUP_SIZE):
    local = local_size or (subgroup_size * SUBGROUPS_PER_GROUP,)
    groups = max(1, -(-int(inputs["nrows"]) // -(-local[0] // subgroup_size)))
    return Launch((groups * local[0],), local,
                  tuple(inputs[k] for k in ("blocks", "x", "y", "nrows", "ncols")))


def launch_blocks(names):
    def launch(inputs, shape, local_size=None):
        local = local_size or (LOCAL,)
        n = int(inputs["nblocks"])
        return Launch((max(1, -(-n // local[0])) * local[0],), local,
                      tuple(inputs[k] for k in names))
    return launch


def reference(qtype):
    def ref(inputs):
        w = gguf.quants.dequantize(inputs["blocks"], qtype).astype(np.float64)
        w = w.reshape(int(inputs["nrows"]), int(inputs["ncols"]))
        return {"y": (w @ inputs["x"].astype(np.float64)).astype(np.float32)}
    return ref


def _emptied(make, names):
    """``make`` with the output buffers zeroed: a kernel that writes nothing must not pass."""
    def make_inputs(rng, shape):
        inputs = make(rng, shape)
        for name in names:
            inputs[name] = np.zeros_like(inputs[name])
        return inputs
    return make_inputs


def split_reference(inputs):
    q, d = split_q4_0(inputs["blocks"])
    return {"q": q, "d": d}


def restore_reference(inputs):
    b = np.empty((int(inputs["nblocks"]), Q4_0_BYTES), np.uint8)
    b[:, :2] = inputs["d"].reshape(-1, 2)
    b[:, 2:] = inputs["q"].reshape(-1, QK // 2)
    return {"blocks": b.reshape(-1)}


_GEMV = dict(cl_file="gemv_quant.cl", outputs={"y": EXACT}, tolerance=(1e-4, 1e-3),
             default_shape={"rows": 4096, "blocks": 128}, family="gemv_quant")
_Q4, _Q8 = make_inputs(GGML.Q4_0), make_inputs(GGML.Q8_0)
_ROW_ARGS = ("blocks", "x", "y", "nrows", "ncols")

register(KernelSpec(
    name="gemv_q4_0", kernel=gemv_q4_0, make_inputs=_Q4, launch=launch_rows(_ROW_ARGS),
    reference=reference(GGML.Q4_0),
    description="y = W x, W in Q4_0 blocks (interleaved GGUF layout), a work-group per row",
    **_GEMV))
register(KernelSpec(
    name="gemv_q8_0", kernel=gemv_q8_0, make_inputs=_Q8, launch=launch_rows(_ROW_ARGS),
    reference=reference(GGML.Q8_0),
    description="y = W x, W in Q8_0 blocks (interleaved GGUF layout), a work-group per row",
    **_GEMV))
register(KernelSpec(
    name="gemv_q4_0_split", kernel=gemv_q4_0_split, make_inputs=_Q4,
    launch=launch_rows(("q", "d", "x", "y", "nrows", "ncols")), reference=reference(GGML.Q4_0),
    description="y = W x, Q4_0 split into quant and scale buffers, a work-group per row",
    **_GEMV))
register(KernelSpec(
    name="gemv_q4_0_split_lanes", kernel=gemv_q4_0_split_lanes, make_inputs=_Q4,
    launch=launch_rows(("q", "d", "x", "y", "nrows", "ncols")), reference=reference(GGML.Q4_0),
    description="y = W x, split Q4_0, work-item k of a row takes quant byte k (coalesced)",
    **_GEMV))
register(KernelSpec(
    name="gemv_q4_0_subgroup", kernel=gemv_q4_0_subgroup, make_inputs=_Q4,
    launch=launch_subgroup_rows, reference=reference(GGML.Q4_0),
    description="y = W x, W in Q4_0 blocks, a sub-group per row, shuffle-xor butterfly",
    subgroup_size=SUBGROUP_SIZE, requires=frozenset({"subgroups"}),
    **{**_GEMV, "cl_file": "gemv_quant_subgroup.cl"}))
register(KernelSpec(
    name="convert_block_q4_0", kernel=convert_block_q4_0, make_inputs=_emptied(_Q4, ("q", "d")),
    launch=launch_blocks(("blocks", "q", "d", "nblocks")), reference=split_reference,
    outputs={"q": EXACT, "d": EXACT}, cl_file="gemv_quant.cl",
    default_shape={"rows": 4096, "blocks": 128}, family="gguf",
    description="Q4_0 blocks to the split layout (quants, scales), as kernel_convert_block_q4_0"))
register(KernelSpec(
    name="restore_block_q4_0", kernel=restore_block_q4_0,
    make_inputs=_emptied(_Q4, ("blocks",)),
    launch=launch_blocks(("q", "d", "blocks", "nblocks")), reference=restore_reference,
    outputs={"blocks": EXACT}, cl_file="gemv_quant.cl",
    default_shape={"rows": 4096, "blocks": 128}, family="gguf",
    description="the split Q4_0 layout back to interleaved blocks (convert_block_q4_0 inverse)"))
