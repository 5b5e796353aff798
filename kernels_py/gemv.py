"""gemv: y = W x in float32 (W row-major, rows x cols), three ways to split a row.

- ``gemv``: one work-group per row; work-items stride over the columns, a local-memory tree
  (fixed pairwise order, kernels_py.common) adds their partial dot products.
- ``gemv_subgroup``: one sub-group per row, no local memory and no barrier; the lanes' partials
  are added by a shuffle-xor butterfly (``subgroup_sum_butterfly``), whose order is fixed, so
  a device gives the simulator's bits.
- ``gemv_nrows``: each sub-group computes ``N_DST`` rows, as llama.cpp's ``N_DST``: every ``x``
  element it loads is used ``N_DST`` times. Rows past ``nrows`` (the last sub-group when
  ``nrows`` is not a multiple of ``N_DST``, or a matrix with fewer rows than ``N_DST``) are
  neither read nor written: llama.cpp's kernels read past the tensor there.

Every variant adds each lane's products in column order and combines lanes in a fixed order,
so all outputs are exact against a device.
"""

import numpy as np

from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    local_array,
    private_array,
)
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.common import subgroup_sum_butterfly, tree_reduce_sum

MAX_WG = 1024
SUBGROUP_SIZE = 16
SUBGROUPS_PER_GROUP = 4
N_DST = 4


@kernel
def gemv(w, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(MAX_WG, np.float32)
    base = row * ncols
    acc = 0.0
    for c in range(lid, ncols, wg):
        acc += w[base + c] * x[c]
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    if lid == 0:
        y[row] = scratch[0]


@kernel
def gemv_subgroup(w, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if row < nrows:
        base = row * ncols
        acc = 0.0
        for c in range(lane, ncols, width):
            acc += w[base + c] * x[c]
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def gemv_nrows(w, x, y, nrows, ncols):
    first = (get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if first < nrows:
        acc = private_array(N_DST, np.float32)
        for z in range(N_DST):
            acc[z] = 0.0
        for c in range(lane, ncols, width):
            xc = x[c]
            for r in range(N_DST):
                if first + r < nrows:
                    acc[r] += w[(first + r) * ncols + c] * xc
        k = 0
        while k < N_DST:  # a while loop: sub-group collectives inside a per-sub-group branch
            total = subgroup_sum_butterfly(acc[k])
            if lane == 0 and first + k < nrows:
                y[first + k] = total
            k += 1


def make_inputs(rng, shape):
    rows, cols = shape["rows"], shape["cols"]
    return {"w": rng.standard_normal((rows, cols), dtype=np.float32),
            "x": rng.standard_normal(cols, dtype=np.float32),
            "y": np.full(rows, np.nan, np.float32),
            "nrows": np.int32(rows), "ncols": np.int32(cols)}


def _args(inputs):
    return (inputs["w"], inputs["x"], inputs["y"], inputs["nrows"], inputs["ncols"])


def launch_per_group(inputs, shape, local_size=None):
    local = local_size or (256,)
    return Launch((inputs["w"].shape[0] * local[0],), local, _args(inputs))


def subgroup_launch(rows_per_subgroup):
    """Whole work-groups of SUBGROUPS_PER_GROUP sub-groups, each taking rows_per_subgroup rows
    (a given local size must be a multiple of the sub-group size: the butterfly needs full
    sub-groups)."""
    def launch(inputs, shape, local_size=None, subgroup_size=SUBGROUP_SIZE):
        local = local_size or (subgroup_size * SUBGROUPS_PER_GROUP,)
        rows_per_group = -(-local[0] // subgroup_size) * rows_per_subgroup
        groups = max(1, -(-inputs["w"].shape[0] // rows_per_group))
        return Launch((groups * local[0],), local, _args(inputs))
    return launch


def reference(inputs):
    y = inputs["w"].astype(np.float64) @ inputs["x"].astype(np.float64)
    return {"y": y.astype(np.float32)}


_COMMON = dict(cl_file="gemv.cl", make_inputs=make_inputs, reference=reference,
               outputs={"y": EXACT}, default_shape={"rows": 1024, "cols": 4096},
               tolerance=(1e-4, 1e-3), family="gemv")
_SUBGROUP = dict(subgroup_size=SUBGROUP_SIZE, requires=frozenset({"subgroups"}),
                 cl_file="gemv_subgroup.cl")

register(KernelSpec(
    name="gemv", kernel=gemv, launch=launch_per_group,
    description="y = W x, one work-group per row, local-memory tree over the partial dots",
    **_COMMON))
register(KernelSpec(
    name="gemv_subgroup", kernel=gemv_subgroup, launch=subgroup_launch(1),
    description="y = W x, one sub-group per row, shuffle-xor butterfly (fixed order)",
    **{**_COMMON, **_SUBGROUP}))
register(KernelSpec(
    name="gemv_nrows", kernel=gemv_nrows, launch=subgroup_launch(N_DST),
    description=f"y = W x, {N_DST} rows per sub-group (llama.cpp's N_DST), rows past the end "
                "never read",
    **{**_COMMON, **_SUBGROUP}))
