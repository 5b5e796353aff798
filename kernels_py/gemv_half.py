"""gemv with half weights: y = W x, W ``np.float16`` (rows x cols), x and y float32.

- ``gemv_half``: a row per work-group, as ``gemv``, each weight converted to float with
  ``(float)w[i]`` (``half`` types: the twin needs ``cl_khr_fp16``).
- ``gemv_vload_half``: the same through ``vload_half(i, w)``, which needs no fp16 arithmetic
  (PoCL and Oclgrind here have none): the path for such devices.
- ``gemv_half_subgroup``: a row per sub-group, as ``gemv_subgroup``, with ``half`` types.
- ``gemv_vload_half_subgroup``: a row per sub-group through ``vload_half``.
- ``gemv_vload_half_nrows``: ``N_DST`` rows per sub-group through ``vload_half``, as
  ``gemv_nrows``: half weights and each ``x`` element loaded once for ``N_DST`` rows; rows
  past ``nrows`` are neither read nor written.
- ``gemv_half_nrows``: the same with ``half`` types (``(float)w[i]``, ``cl_khr_fp16``), as
  llama.cpp's f16 GEMV takes its weights.

Every weight is converted to float before it is used, each work-item adds its products in
column order and the lanes are combined in a fixed order (the local tree, or the shuffle-xor
butterfly), so all six are exact against a device and give the float32 kernels' bits on the
weights converted to float32. Half weights halve the bytes of W, the bulk of the traffic.
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
    vload_half,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.common import subgroup_sum_butterfly, tree_reduce_sum
from kernels_py.gemv import MAX_WG, N_DST, SUBGROUP_SIZE, launch_per_group, subgroup_launch


@kernel
def gemv_half(w, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(MAX_WG, np.float32)
    base = row * ncols
    acc = 0.0
    for c in range(lid, ncols, wg):
        acc += np.float32(w[base + c]) * x[c]
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    if lid == 0:
        y[row] = scratch[0]


@kernel
def gemv_vload_half(w, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(MAX_WG, np.float32)
    base = row * ncols
    acc = 0.0
    for c in range(lid, ncols, wg):
        acc += vload_half(base + c, w) * x[c]
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    if lid == 0:
        y[row] = scratch[0]


@kernel
def gemv_half_subgroup(w, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if row < nrows:
        base = row * ncols
        acc = 0.0
        for c in range(lane, ncols, width):
            acc += np.float32(w[base + c]) * x[c]
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def gemv_vload_half_subgroup(w, x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if row < nrows:
        base = row * ncols
        acc = 0.0
        for c in range(lane, ncols, width):
            acc += vload_half(base + c, w) * x[c]
        total = subgroup_sum_butterfly(acc)
        if lane == 0:
            y[row] = total


@kernel
def gemv_vload_half_nrows(w, x, y, nrows, ncols):
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
                    acc[r] += vload_half((first + r) * ncols + c, w) * xc
        k = 0
        while k < N_DST:  # a while loop: sub-group collectives inside a per-sub-group branch
            total = subgroup_sum_butterfly(acc[k])
            if lane == 0 and first + k < nrows:
                y[first + k] = total
            k += 1


@kernel
def gemv_half_nrows(w, x, y, nrows, ncols):
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
                    acc[r] += np.float32(w[(first + r) * ncols + c]) * xc
        k = 0
        while k < N_DST:  # a while loop: sub-group collectives inside a per-sub-group branch
            total = subgroup_sum_butterfly(acc[k])
            if lane == 0 and first + k < nrows:
                y[first + k] = total
            k += 1


def make_inputs(rng, shape):
    rows, cols = shape["rows"], shape["cols"]
    return {"w": rng.standard_normal((rows, cols), dtype=np.float32).astype(np.float16),
            "x": rng.standard_normal(cols, dtype=np.float32),
            "y": np.full(rows, np.nan, np.float32),
            "nrows": np.int32(rows), "ncols": np.int32(cols)}


def reference(inputs):
    y = inputs["w"].astype(np.float64) @ inputs["x"].astype(np.float64)
    return {"y": y.astype(np.float32)}


_COMMON = dict(make_inputs=make_inputs, reference=reference, outputs={"y": EXACT},
               default_shape={"rows": 1024, "cols": 4096}, tolerance=(1e-4, 1e-3),
               family="gemv")
_SUBGROUP = dict(launch=subgroup_launch(1), subgroup_size=SUBGROUP_SIZE)
_VLOAD_SUBGROUP = dict(cl_file="gemv_half_vload_subgroup.cl", requires=frozenset({"subgroups"}),
                       subgroup_size=SUBGROUP_SIZE)

register(KernelSpec(
    name="gemv_half", kernel=gemv_half, launch=launch_per_group, cl_file="gemv_half.cl",
    requires=frozenset({"fp16"}),
    description="y = W x, half W (cl_khr_fp16), a row per work-group, local tree", **_COMMON))
register(KernelSpec(
    name="gemv_vload_half", kernel=gemv_vload_half, launch=launch_per_group,
    cl_file="gemv_half_vload.cl",
    description="y = W x, half W read with vload_half (no fp16 needed), a row per work-group",
    **_COMMON))
register(KernelSpec(
    name="gemv_half_subgroup", kernel=gemv_half_subgroup, cl_file="gemv_half_subgroup.cl",
    requires=frozenset({"fp16", "subgroups"}),
    description="y = W x, half W (cl_khr_fp16), a row per sub-group, shuffle-xor butterfly",
    **_COMMON, **_SUBGROUP))
register(KernelSpec(
    name="gemv_vload_half_subgroup", kernel=gemv_vload_half_subgroup,
    launch=subgroup_launch(1),
    description="y = W x, half W read with vload_half, a row per sub-group, butterfly",
    **_COMMON, **_VLOAD_SUBGROUP))
register(KernelSpec(
    name="gemv_vload_half_nrows", kernel=gemv_vload_half_nrows, launch=subgroup_launch(N_DST),
    description=f"y = W x, half W read with vload_half, {N_DST} rows per sub-group "
                "(llama.cpp's N_DST), rows past the end never read",
    **_COMMON, **_VLOAD_SUBGROUP))
register(KernelSpec(
    name="gemv_half_nrows", kernel=gemv_half_nrows, launch=subgroup_launch(N_DST),
    description=f"y = W x, half W (cl_khr_fp16), {N_DST} rows per sub-group (llama.cpp's "
                "N_DST), rows past the end never read",
    cl_file="gemv_half_subgroup.cl", requires=frozenset({"fp16", "subgroups"}),
    subgroup_size=SUBGROUP_SIZE, **_COMMON))
