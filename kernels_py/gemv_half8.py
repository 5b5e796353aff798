"""gemv with half weights loaded eight at a time: y = W x, W ``np.float16``, x and y float32.

A row per work-group, as ``gemv_half``; each work-item takes eight consecutive columns per
step (``VW`` = 8), loaded as one ``half8`` of W and one ``float8`` of x, and accumulates in a
``float8`` (float arithmetic throughout): an eighth of ``gemv_half``'s load instructions.

- ``gemv_half8``: W through ``half`` types: ``convert_float8(vload8(0, w + i))``
  (``cl_khr_fp16``).
- ``gemv_vload_half8``: W through ``vload_half8(0, w + i)``, which needs no fp16 arithmetic:
  the path for PoCL and Oclgrind here.

Columns past the last multiple of eight are added one at a time after the vector loop (so
no load crosses the end of a row, whatever ``ncols``), then each work-item folds its eight
components in a fixed order, ``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``, and the
local tree (``kernels_py.common``) adds the work-items. Every weight is converted to float
before it is used and every sum has a fixed order, so both are exact against a device. The
order is not ``gemv_half``'s (columns c, c + 8, ... per component), so the bits differ from
it; the tests compare with a numpy model of this order.
"""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    convert_float8,
    float8,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
    vload8,
    vload_half8,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.common import tree_reduce_sum
from kernels_py.gemv import MAX_WG, launch_per_group
from kernels_py.gemv_half import make_inputs, reference

VW = 8


@clsim.func
def fold8(v):
    """The eight components of v added pairwise in a fixed order (the twin's order)."""
    return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7))


@kernel
def gemv_half8(w, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(MAX_WG, np.float32)
    base = row * ncols
    c_vec = ncols - ncols % VW
    acc8 = float8(0.0)
    for c in range(lid * VW, c_vec, wg * VW):
        acc8 += convert_float8(vload8(0, w + base + c)) * vload8(0, x + c)
    acc = fold8(acc8)
    for c in range(c_vec + lid, ncols, wg):
        acc += np.float32(w[base + c]) * x[c]
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    if lid == 0:
        y[row] = scratch[0]


@kernel
def gemv_vload_half8(w, x, y, nrows, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(MAX_WG, np.float32)
    base = row * ncols
    c_vec = ncols - ncols % VW
    acc8 = float8(0.0)
    for c in range(lid * VW, c_vec, wg * VW):
        acc8 += vload_half8(0, w + base + c) * vload8(0, x + c)
    acc = fold8(acc8)
    for c in range(c_vec + lid, ncols, wg):
        acc += clsim.vload_half(base + c, w) * x[c]
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    if lid == 0:
        y[row] = scratch[0]


def launch(inputs, shape, local_size=None):
    """A row per work-group of 64: 512 columns per step, so a 4096-column row takes 8."""
    return launch_per_group(inputs, shape, local_size or (64,))


_COMMON = dict(launch=launch, make_inputs=make_inputs,
               reference=reference, outputs={"y": EXACT},
               default_shape={"rows": 1024, "cols": 4096}, tolerance=(1e-4, 1e-3),
               family="gemv")

register(KernelSpec(
    name="gemv_half8", kernel=gemv_half8, requires=frozenset({"fp16"}), cl_file="gemv_half.cl",
    description="y = W x, half W loaded as half8 (cl_khr_fp16), float8 accumulation, a row "
                "per work-group", **_COMMON))
register(KernelSpec(
    name="gemv_vload_half8", kernel=gemv_vload_half8, cl_file="gemv_half_vload.cl",
    description="y = W x, half W read with vload_half8 (no fp16 needed), float8 "
                "accumulation, a row per work-group", **_COMMON))
