"""Quantized GEMV with N_DST rows per sub-group (llama.cpp's layout of ``mul_mv_q4_0_f32`` and
``mul_mv_q8_0_f32``): y = W x, W in Q4_0 or Q8_0 struct blocks, x float32.

A sub-group takes rows ``first .. first + N_DST - 1``; a lane takes the row's blocks
``lane, lane + width, ...`` as in kernels_py.gemv_quant's sub-group kernels, but loads the 32
values of x for block b once, into a private array, and uses them for all N_DST rows (x's
global traffic falls by N_DST). Each row's sum is the one-row-per-sub-group kernel's, in its
order (a block's ``d * sum(q * x)``, the lane's blocks in order, a shuffle-xor butterfly):
the same bits, so exact against the twin.

Rows past ``nrows`` (a matrix with fewer rows than N_DST, or a last sub-group with fewer) are
never read: llama.cpp guards only the store and reads up to N_DST - 1 rows past the tensor;
here every weight load is under ``first + r < nrows``.
"""

import numpy as np

import clsim
from clsim import (
    get_group_id,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    private_array,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.common import subgroup_sum_butterfly
from kernels_py.gemv_quant import (
    GGML,
    SUBGROUP_SIZE,
    make_inputs,
    q4_0_dot,
    q8_0_dot,
    reference,
    subgroup_rows_launch,
)
from kernels_py.gguf_structs import QK

N_DST = 4  # rows per sub-group, llama.cpp's N_DST


@clsim.func
def load_block_x(x, b, xs):
    """x's 32 values of block b into the private array xs (loaded once for N_DST rows)."""
    for k in range(QK):
        xs[k] = x[b * QK + k]


@clsim.func
def store_rows(acc, y, first, nrows, lane):
    """Each of the N_DST rows' butterfly sums stored by lane 0, rows past nrows skipped."""
    k = 0
    while k < N_DST:  # a while loop: sub-group collectives inside a per-sub-group branch
        total = subgroup_sum_butterfly(acc[k])
        if lane == 0 and first + k < nrows:
            y[first + k] = total
        k += 1


@kernel
def gemv_q4_0_nrows(blocks, x, y, nrows, ncols):
    first = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST
    lane = get_sub_group_local_id()
    if first < nrows:
        nb = ncols // QK
        acc = private_array(N_DST, np.float32, fill=0.0)
        xs = private_array(QK, np.float32)
        for b in range(lane, nb, get_sub_group_size()):
            load_block_x(x, b, xs)
            for r in range(N_DST):
                if first + r < nrows:
                    acc[r] += q4_0_dot(blocks, (first + r) * nb + b, xs, 0)
        store_rows(acc, y, first, nrows, lane)


@kernel
def gemv_q8_0_nrows(blocks, x, y, nrows, ncols):
    first = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST
    lane = get_sub_group_local_id()
    if first < nrows:
        nb = ncols // QK
        acc = private_array(N_DST, np.float32, fill=0.0)
        xs = private_array(QK, np.float32)
        for b in range(lane, nb, get_sub_group_size()):
            load_block_x(x, b, xs)
            for r in range(N_DST):
                if first + r < nrows:
                    acc[r] += q8_0_dot(blocks, (first + r) * nb + b, xs, 0)
        store_rows(acc, y, first, nrows, lane)


_LAUNCH = subgroup_rows_launch(("blocks", "x", "y", "nrows", "ncols"), QK, N_DST)
_SPEC = dict(cl_file="gemv_quant_nrows.cl", launch=_LAUNCH, outputs={"y": EXACT},
             tolerance=(1e-4, 1e-3), default_shape={"rows": 4096, "blocks": 128},
             family="gemv_quant", subgroup_size=SUBGROUP_SIZE,
             requires=frozenset({"subgroups"}))

register(KernelSpec(
    name="gemv_q4_0_nrows", kernel=gemv_q4_0_nrows, make_inputs=make_inputs(GGML.Q4_0),
    reference=reference(GGML.Q4_0),
    description=f"y = W x, W in Q4_0 blocks, {N_DST} rows per sub-group (llama.cpp's N_DST), "
                "x loaded once for them, rows past the end never read",
    **_SPEC))
register(KernelSpec(
    name="gemv_q8_0_nrows", kernel=gemv_q8_0_nrows, make_inputs=make_inputs(GGML.Q8_0),
    reference=reference(GGML.Q8_0),
    description=f"y = W x, W in Q8_0 blocks, {N_DST} rows per sub-group (llama.cpp's N_DST), "
                "x loaded once for them, rows past the end never read",
    **_SPEC))
