"""Q4_K on the split layout (the course's "quantized weight splitting"): the 144-byte
``block_q4_K`` structs taken apart into four buffers, as llama.cpp's OpenCL backend does with
``kernel_convert_block_q4_K``: the quants ``q`` (128 bytes a super-block), the packed six-bit
scales and mins ``s`` (12 bytes), and the half super-block scales ``d`` and ``dm`` (ggml's
``d`` and ``dmin``). Loads of each kind are then contiguous across super-blocks.

- ``convert_block_q4_k``: interleaved blocks to the four buffers, one work-item a block;
  ``restore_block_q4_k`` is its inverse (a bit-exact round trip: halves are copied as halves,
  quant and scale bytes as bytes).
- ``gemv_q4_k_split_lanes``: the split layout with the work-items of a row sharing its
  super-blocks: work-item k takes quant byte k (a value of sub-block 2c and one of 2c + 1), so
  neighbouring work-items read neighbouring bytes of ``q`` and of ``x``; each value's term is
  ``(d * sc) * (q * x) - (dm * m) * x`` (more flops than factoring the sums, another order:
  exact against its twin, not the other variants' bits).
- ``gemv_q4_k_split`` / ``gemv_q4_k_split_subgroup``: y = W x on the split layout, a
  work-group (local tree) or a sub-group (shuffle-xor butterfly) per row, a work-item per
  32-value sub-block, each sub-block ``(d * sc) * sum(q * x) - (dm * m) * sum(x)`` with each x
  value loaded once. They read the numbers the interleaved kernels of
  kernels_py.gemv_quant_k read, in the same order: the same bits, so exact against the twins.

Rows are whole super-blocks (``ncols`` a multiple of 256; the launch plans refuse others).
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
    SUBGROUP_SIZE,
    group_total,
    launch_blocks,
    launch_rows,
    reference,
    subgroup_rows_launch,
)
from kernels_py.gemv_quant_k import fuzz_shapes
from kernels_py.gemv_quant_k import make_inputs as make_interleaved
from kernels_py.gguf_dequant import nibble
from kernels_py.gguf_structs import BLOCK_Q4_K, GGML, K_SCALE_SIZE, QK_K

SUB = 32  # values per sub-block
SUBS = QK_K // SUB
QS = QK_K // 2  # quant bytes per super-block


@clsim.func
def scale_k4_split(s, at, j):
    """Six-bit scale j (0..7) of the packed scales s[at:at+12] (ggml's get_scale_min_k4)."""
    if j < 4:
        return np.int32(s[at + j]) & 63
    return (np.int32(s[at + j + 4]) & 15) | ((np.int32(s[at + j - 4]) >> 6) << 4)


@clsim.func
def min_k4_split(s, at, j):
    """Six-bit min j (0..7) of the packed scales s[at:at+12] (ggml's get_scale_min_k4)."""
    if j < 4:
        return np.int32(s[at + j + 4]) & 63
    return (np.int32(s[at + j + 4]) >> 4) | ((np.int32(s[at + j]) >> 6) << 4)


@clsim.func
def q4_k_split_sub_dot(q, s, d, dm, k, j, x, x_at):
    """Sub-block j of split super-block k dotted with x[x_at:x_at+32]."""
    sumq = 0.0
    sumx = 0.0
    for i in range(SUB):
        v = nibble(np.int32(q[k * QS + SUB * (j // 2) + i]), j % 2 == 1)
        xi = x[x_at + i]
        sumq += np.float32(v) * xi
        sumx += xi
    scale = np.float32(d[k]) * np.float32(scale_k4_split(s, k * K_SCALE_SIZE, j))
    offset = np.float32(dm[k]) * np.float32(min_k4_split(s, k * K_SCALE_SIZE, j))
    return scale * sumq - offset * sumx


@kernel
def gemv_q4_k_split(q, s, d, dm, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK_K
    acc = 0.0
    for t in range(lid, nb * SUBS, wg):
        acc += q4_k_split_sub_dot(q, s, d, dm, row * nb + t // SUBS, t % SUBS, x, t * SUB)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@clsim.func
def q4_k_split_byte_dot(q, s, d, dm, row_at, blk, k, x, x_at):
    """Quant byte k (0..127) of split super-block blk dotted with its two x values: the low
    nibble is value 64c + i of the block (sub-block 2c), the high one value 64c + 32 + i
    (sub-block 2c + 1), c = k // 32, i = k % 32. Each term is (d*sc)*(q*x) - (dm*m)*x."""
    c = k // SUB
    x_lo = x[x_at + 2 * SUB * c + k % SUB]
    x_hi = x[x_at + 2 * SUB * c + k % SUB + SUB]
    byte = np.int32(q[row_at + k])
    scale = np.float32(d[blk])
    offset = np.float32(dm[blk])
    at = blk * K_SCALE_SIZE
    lo = ((scale * np.float32(scale_k4_split(s, at, 2 * c))) * (np.float32(byte & 15) * x_lo)
          - (offset * np.float32(min_k4_split(s, at, 2 * c))) * x_lo)
    hi = ((scale * np.float32(scale_k4_split(s, at, 2 * c + 1))) * (np.float32(byte >> 4) * x_hi)
          - (offset * np.float32(min_k4_split(s, at, 2 * c + 1))) * x_hi)
    return lo + hi


@kernel
def gemv_q4_k_split_lanes(q, s, d, dm, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    nb = ncols // QK_K
    acc = 0.0
    for k in range(lid, nb * QS, wg):  # neighbouring work-items, neighbouring quant bytes
        b = k // QS
        acc += q4_k_split_byte_dot(q, s, d, dm, (row * nb + b) * QS, row * nb + b, k % QS, x,
                                   b * QK_K)
    total = group_total(acc, lid, wg)
    if lid == 0:
        y[row] = total


@kernel
def gemv_q4_k_split_subgroup(q, s, d, dm, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        nb = ncols // QK_K
        acc = 0.0
        for t in range(lane, nb * SUBS, get_sub_group_size()):
            acc += q4_k_split_sub_dot(q, s, d, dm, row * nb + t // SUBS, t % SUBS, x, t * SUB)
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def convert_block_q4_k(blocks, q, s, d, dm, nblocks):
    b = get_global_id(0)
    if b < nblocks:
        d[b] = blocks[b].d
        dm[b] = blocks[b].dmin
        for j in range(K_SCALE_SIZE):
            s[b * K_SCALE_SIZE + j] = blocks[b].scales[j]
        for j in range(QS):
            q[b * QS + j] = blocks[b].qs[j]


@kernel
def restore_block_q4_k(q, s, d, dm, blocks, nblocks):
    b = get_global_id(0)
    y = view(blocks, BLOCK_Q4_K, 0)
    if b < nblocks:
        y[b].d = d[b]
        y[b].dmin = dm[b]
        for j in range(K_SCALE_SIZE):
            y[b].scales[j] = s[b * K_SCALE_SIZE + j]
        for j in range(QS):
            y[b].qs[j] = q[b * QS + j]


def split_q4_k(blocks: np.ndarray) -> dict[str, np.ndarray]:
    """numpy: the four split buffers (q, s, d, dm) of interleaved Q4_K blocks."""
    return {"q": blocks["qs"].reshape(-1).copy(), "s": blocks["scales"].reshape(-1).copy(),
            "d": blocks["d"].copy(), "dm": blocks["dmin"].copy()}


def join_q4_k(split: dict[str, np.ndarray]) -> np.ndarray:
    """numpy: split_q4_k's inverse, the blocks as bytes."""
    blocks = np.empty(split["d"].size, BLOCK_Q4_K)
    blocks["d"], blocks["dmin"] = split["d"], split["dm"]
    blocks["scales"] = split["s"].reshape(-1, K_SCALE_SIZE)
    blocks["qs"] = split["q"].reshape(-1, QS)
    return blocks.view(np.uint8)


def make_inputs(rng, shape):
    """make_interleaved's weights (and x) with their split buffers, and the block count."""
    inputs = make_interleaved(rng, shape)
    inputs.update(split_q4_k(inputs["blocks"]), nblocks=np.int32(inputs["blocks"].size))
    return inputs


def convert_inputs(rng, shape):
    """The blocks in, the four buffers zeroed: a kernel writing nothing must not pass."""
    inputs = make_inputs(rng, shape)
    for name in ("q", "s", "d", "dm"):
        inputs[name] = np.zeros_like(inputs[name])
    return inputs


def restore_inputs(rng, shape):
    """The split layout in, a zeroed byte buffer for the blocks out (outputs are byte buffers
    viewed as blocks, so every tool compares them as bytes)."""
    inputs = make_inputs(rng, shape)
    inputs["blocks"] = np.zeros(inputs["blocks"].nbytes, np.uint8)
    return inputs


_GEMV = dict(make_inputs=make_inputs, reference=reference(GGML.Q4_K), outputs={"y": EXACT},
             tolerance=(1e-4, 1e-3), default_shape={"rows": 4096, "blocks": 16},
             fuzz_shapes=fuzz_shapes, family="gemv_quant")
_SPLIT = ("q", "s", "d", "dm")
_SPLIT_ROW_ARGS = (*_SPLIT, "x", "y", "nrows", "ncols")
_CONVERT = dict(cl_file="gemv_quant_k_split.cl", default_shape={"rows": 4096, "blocks": 16},
                fuzz_shapes=fuzz_shapes, family="gguf")

register(KernelSpec(
    name="gemv_q4_k_split", kernel=gemv_q4_k_split, cl_file="gemv_quant_k_split.cl",
    launch=launch_rows(_SPLIT_ROW_ARGS, QK_K),
    description="y = W x, Q4_K split into quant, scale and two half buffers, a work-group "
                "per row, a work-item per 32-value sub-block",
    **_GEMV))
register(KernelSpec(
    name="gemv_q4_k_split_lanes", kernel=gemv_q4_k_split_lanes, cl_file="gemv_quant_k_split.cl",
    launch=launch_rows(_SPLIT_ROW_ARGS, QK_K),
    description="y = W x, split Q4_K, work-item k of a row takes quant byte k (two values of "
                "two sub-blocks; coalesced)",
    **_GEMV))
register(KernelSpec(
    name="gemv_q4_k_split_subgroup", kernel=gemv_q4_k_split_subgroup,
    cl_file="gemv_quant_k_split_subgroup.cl", launch=subgroup_rows_launch(_SPLIT_ROW_ARGS, QK_K),
    subgroup_size=SUBGROUP_SIZE, requires=frozenset({"subgroups"}),
    description="y = W x, split Q4_K, a sub-group per row, shuffle-xor butterfly",
    **_GEMV))
register(KernelSpec(
    name="convert_block_q4_k", kernel=convert_block_q4_k, make_inputs=convert_inputs,
    launch=launch_blocks(("blocks", *_SPLIT, "nblocks")),
    reference=lambda inputs: split_q4_k(inputs["blocks"]),
    outputs={name: EXACT for name in _SPLIT},
    description="Q4_K blocks to the split layout (quants, scales, d, dmin), as llama.cpp's "
                "kernel_convert_block_q4_K",
    **_CONVERT))
register(KernelSpec(
    name="restore_block_q4_k", kernel=restore_block_q4_k, make_inputs=restore_inputs,
    launch=launch_blocks((*_SPLIT, "blocks", "nblocks")),
    reference=lambda inputs: {"blocks": join_q4_k(inputs)}, outputs={"blocks": EXACT},
    description="the split Q4_K layout back to interleaved blocks (convert_block_q4_k "
                "inverse)",
    **_CONVERT))
