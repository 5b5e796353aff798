"""softmax over rows: one work-group per row, numerically stable three-pass form.

Pass 1 finds the row maximum, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum; both
reductions are local-memory trees in a fixed pairwise order (kernels_py.common).
"""

import numpy as np

from clsim import (
    CLK_LOCAL_MEM_FENCE,
    INFINITY,
    barrier,
    exp,
    fmax,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
)
from clsim.spec import KernelSpec, Launch, register, ulp
from kernels_py.common import tree_reduce_max, tree_reduce_sum

MAX_WG = 1024


@kernel
def softmax(x, y, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    base = row * ncols
    scratch = local_array(MAX_WG, np.float32)

    row_max = -INFINITY
    for c in range(lid, ncols, wg):
        row_max = fmax(row_max, x[base + c])
    scratch[lid] = row_max
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_max(scratch, lid, wg)
    row_max = scratch[0]
    barrier(CLK_LOCAL_MEM_FENCE)

    total = 0.0
    for c in range(lid, ncols, wg):
        total += exp(x[base + c] - row_max)
    scratch[lid] = total
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    total = scratch[0]

    for c in range(lid, ncols, wg):
        y[base + c] = exp(x[base + c] - row_max) / total


def make_inputs(rng, shape):
    rows, cols = shape["rows"], shape["cols"]
    x = (rng.standard_normal((rows, cols), dtype=np.float32) * 4).astype(np.float32)
    return {"x": x, "y": np.zeros((rows, cols), np.float32), "ncols": np.int32(cols)}


def launch(inputs, shape, local_size=None):
    local = local_size or (min(256, MAX_WG),)
    rows = inputs["x"].shape[0]
    return Launch((rows * local[0],), local, (inputs["x"], inputs["y"], inputs["ncols"]))


def reference(inputs):
    x = inputs["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


SPEC = register(KernelSpec(
    name="softmax",
    description="row softmax, one work-group per row, max/exp-sum/normalise with local trees",
    kernel=softmax,
    cl_file="softmax.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    # exp is 3 ulp per term; the sum carries the terms' relative error and the divide adds 2.5.
    outputs={"y": ulp(16)},
    default_shape={"rows": 1024, "cols": 1024},
    tolerance=(1e-5, 1e-7),
))
