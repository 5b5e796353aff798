"""Quantized GEMV: y = W x with W in GGUF Q4_0 or Q8_0 struct blocks, x float32.

Each row of W is ``ncols / 32`` blocks (GGUF rows are whole blocks: a launch plan refuses
``ncols`` not a multiple of 32). A block's contribution is ``d * sum_j(q_j * x_j)`` (ggml's
order: the quants times x summed in element order, then scaled once), its work-item adds those
in block order, and the lanes meet in a fixed order, so every output is exact against a device.
Blocks are read as ``w[ib].d`` (a half) and ``w[ib].qs[j]`` (kernels_py.gguf_structs).

- ``gemv_q4_0`` / ``gemv_q8_0``: interleaved GGUF layout (scale and quants in one block), one
  work-group per row, local-memory tree.
- ``gemv_q4_0_subgroup`` / ``gemv_q8_0_subgroup``: the same, one sub-group per row,
  shuffle-xor butterfly.
- ``gemv_q4_0_split_lanes``: the split layout with the work-items of a row sharing its blocks:
  work-item k takes quant byte k (elements j and j + 16 of its block) and scales their sum by
  the block's d, so neighbouring work-items read neighbouring bytes of ``q`` and ``x``.
- ``gemv_q4_0_split``: the "quantized weight splitting" layout llama.cpp's OpenCL backend
  converts Q4_0 to (``kernel_convert_block_q4_0``): the quants of all blocks in one buffer
  ``q`` (16 bytes a block), the half scales in another ``d``, so loads of either are
  contiguous; ``convert_block_q4_0`` makes it, ``restore_block_q4_0`` is its inverse.

The split layout's sub-group form and Q8_0 split: kernels_py.gemv_quant_split. N_DST rows per
sub-group (llama.cpp's layout): kernels_py.gemv_quant_nrows. Q4_K:
kernels_py.gemv_quant_k (interleaved) and gemv_quant_k_split (split layout).
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
    view,
)
from clsim.errors import InvalidArgumentError
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.common import subgroup_sum_butterfly, tree_reduce_sum
from kernels_py.gguf_structs import BLOCK_Q4_0, BLOCKS, QK

GGML = gguf.GGMLQuantizationType
MAX_WG = 1024
LOCAL = 64
SUBGROUP_SIZE = 16
SUBGROUPS_PER_GROUP = 4


@clsim.func
def q4_0_dot(w, ib, x, x_at):
    """Q4_0 block w[ib] dotted with x[x_at:x_at+32]."""
    sumq = 0.0
    for j in range(QK // 2):
        byte = np.int32(w[ib].qs[j])
        sumq += np.float32((byte & 15) - 8) * x[x_at + j]
        sumq += np.float32((byte >> 4) - 8) * x[x_at + j + QK // 2]
    return np.float32(w[ib].d) * sumq


@clsim.func
def q4_0_split_dot(q, d, k, x, x_at):
    """Split-layout Q4_0 block k (quants q[16k:16k+16], scale d[k]) dotted with x[x_at:+32]."""
    sumq = 0.0
    for j in range(QK // 2):
        byte = np.int32(q[k * (QK // 2) + j])
        sumq += np.float32((byte & 15) - 8) * x[x_at + j]
        sumq += np.float32((byte >> 4) - 8) * x[x_at + j + QK // 2]
    return np.float32(d[k]) * sumq


@clsim.func
def q8_0_dot(w, ib, x, x_at):
    """Q8_0 block w[ib] dotted with x[x_at:x_at+32]."""
    sumq = 0.0
    for j in range(QK):
        sumq += np.float32(w[ib].qs[j]) * x[x_at + j]
    return np.float32(w[ib].d) * sumq


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
        acc += q4_0_dot(blocks, row * nb + b, x, b * QK)
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
        acc += q8_0_dot(blocks, row * nb + b, x, b * QK)
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
        acc += q4_0_split_dot(q, d, row * nb + b, x, b * QK)
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
        acc += np.float32(d[row * nb + b]) * s
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
            acc += q4_0_dot(blocks, row * nb + b, x, b * QK)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def gemv_q8_0_subgroup(blocks, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        nb = ncols // QK
        acc = 0.0
        for b in range(lane, nb, get_sub_group_size()):
            acc += q8_0_dot(blocks, row * nb + b, x, b * QK)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def convert_block_q4_0(blocks, q, d, nblocks):
    b = get_global_id(0)
    if b < nblocks:
        d[b] = blocks[b].d
        for j in range(QK // 2):
            q[b * (QK // 2) + j] = blocks[b].qs[j]


@kernel
def restore_block_q4_0(q, d, blocks, nblocks):
    b = get_global_id(0)
    y = view(blocks, BLOCK_Q4_0, 0)
    if b < nblocks:
        y[b].d = d[b]
        for j in range(QK // 2):
            y[b].qs[j] = q[b * (QK // 2) + j]


def split_blocks(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy: (quants, half scales) of interleaved Q4_0 or Q8_0 blocks."""
    return blocks["qs"].reshape(-1).copy(), blocks["d"].copy()


def make_inputs(qtype):
    def make(rng, shape):
        rows, cols = shape["rows"], shape["blocks"] * QK
        w = rng.standard_normal((rows, cols), dtype=np.float32)
        blocks = gguf.quants.quantize(w, qtype).reshape(-1).view(BLOCKS[qtype.name][0])
        inputs = {"blocks": blocks, "x": rng.standard_normal(cols, dtype=np.float32),
                  "y": np.full(rows, np.nan, np.float32), "nrows": np.int32(rows),
                  "ncols": np.int32(cols), "nblocks": np.int32(rows * shape["blocks"])}
        inputs["q"], inputs["d"] = split_blocks(blocks)  # for the split-layout variants
        return inputs
    return make


def check_whole_blocks(inputs, values_per_block: int) -> None:
    """GGUF rows are whole blocks: a row length that is not a multiple of the block would
    leave its tail out of every kernel's sum, so the launch plans refuse it."""
    ncols = int(inputs["ncols"])
    if ncols % values_per_block:
        raise InvalidArgumentError(
            f"quantized GEMV launch: ncols={ncols} is not a multiple of the block "
            f"({values_per_block} values); GGUF rows are whole blocks. Pad the row with zeros "
            f"to {-(-ncols // values_per_block) * values_per_block} columns before quantizing.",
            argument="ncols", value=ncols)


def launch_rows(names, values_per_block=QK):
    def launch(inputs, shape, local_size=None):
        check_whole_blocks(inputs, values_per_block)
        local = local_size or (LOCAL,)
        return Launch((int(inputs["nrows"]) * local[0],), local, tuple(inputs[k] for k in names))
    return launch


def subgroup_rows_launch(names, values_per_block=QK, rows_per_subgroup=1):
    """Whole work-groups of SUBGROUPS_PER_GROUP sub-groups (or the given local size), each
    sub-group taking rows_per_subgroup rows; ``names`` are the kernel's arguments in order."""
    def launch(inputs, shape, local_size=None, subgroup_size=SUBGROUP_SIZE):
        check_whole_blocks(inputs, values_per_block)
        local = local_size or (subgroup_size * SUBGROUPS_PER_GROUP,)
        rows_per_group = -(-local[0] // subgroup_size) * rows_per_subgroup
        groups = max(1, -(-int(inputs["nrows"]) // rows_per_group))
        return Launch((groups * local[0],), local, tuple(inputs[k] for k in names))
    return launch


def launch_blocks(names):
    def launch(inputs, shape, local_size=None):
        local = local_size or (LOCAL,)
        n = int(inputs["nblocks"])
        return Launch((max(1, -(-n // local[0])) * local[0],), local,
                      tuple(inputs[k] for k in names))
    return launch


def reference(qtype):
    def ref(inputs):
        w = gguf.quants.dequantize(inputs["blocks"].view(np.uint8), qtype).astype(np.float64)
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


def _restore_inputs(rng, shape):
    """The split layout in, a zeroed byte buffer for the blocks out (outputs are byte buffers
    viewed as blocks, so every tool compares them as bytes)."""
    inputs = _Q4(rng, shape)
    inputs["blocks"] = np.zeros(inputs["blocks"].nbytes, np.uint8)
    return inputs


def split_reference(inputs):
    q, d = split_blocks(inputs["blocks"])
    return {"q": q, "d": d}


def restore_reference(inputs):
    b = np.empty(int(inputs["nblocks"]), BLOCK_Q4_0)
    b["d"] = inputs["d"]
    b["qs"] = inputs["q"].reshape(-1, QK // 2)
    return {"blocks": b.view(np.uint8)}


_GEMV = dict(cl_file="gemv_quant.cl", outputs={"y": EXACT}, tolerance=(1e-4, 1e-3),
             default_shape={"rows": 4096, "blocks": 128}, family="gemv_quant")
_Q4, _Q8 = make_inputs(GGML.Q4_0), make_inputs(GGML.Q8_0)
_ROW_ARGS = ("blocks", "x", "y", "nrows", "ncols")
launch_subgroup_rows = subgroup_rows_launch(_ROW_ARGS)

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
    name="gemv_q8_0_subgroup", kernel=gemv_q8_0_subgroup, make_inputs=_Q8,
    launch=launch_subgroup_rows, reference=reference(GGML.Q8_0),
    description="y = W x, W in Q8_0 blocks, a sub-group per row, shuffle-xor butterfly",
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
    make_inputs=_restore_inputs,
    launch=launch_blocks(("q", "d", "blocks", "nblocks")), reference=restore_reference,
    outputs={"blocks": EXACT}, cl_file="gemv_quant.cl",
    default_shape={"rows": 4096, "blocks": 128}, family="gguf",
    description="the split Q4_0 layout back to interleaved blocks (convert_block_q4_0 inverse)"))
