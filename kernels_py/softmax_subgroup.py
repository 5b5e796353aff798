"""softmax_subgroup: row softmax, one sub-group per row (ggml's ``kernel_soft_max`` shape).

Each sub-group owns one row: its lanes stride over the columns for the maximum
(``sub_group_reduce_max``), then write exp(x - max) to ``y`` while summing it
(``sub_group_reduce_add``), then divide in place. No local memory and no work-group barrier:
a work-group holds ``get_num_sub_groups()`` rows, so any local size works (ggml launches one
sub-group per work-group; a local size that is not a multiple of the sub-group size gives a
smaller last sub-group, which strides by its own size). A row index past the end makes the whole
sub-group skip the row, a condition uniform per sub-group (masked, not divergence).
"""

import numpy as np

from clsim import (
    INFINITY,
    exp,
    fmax,
    get_group_id,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_reduce_add,
    sub_group_reduce_max,
)
from clsim.spec import KernelSpec, Launch, register, ulp
from kernels_py.softmax import reference as softmax_reference

SUBGROUP_SIZE = 32
ROWS_PER_GROUP = 4


@kernel
def softmax_subgroup(x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if row < nrows:
        base = row * ncols
        lmax = -INFINITY
        for c in range(lane, ncols, width):
            lmax = fmax(lmax, x[base + c])
        row_max = sub_group_reduce_max(lmax)

        lsum = 0.0
        for c in range(lane, ncols, width):
            e = exp(x[base + c] - row_max)
            lsum += e
            y[base + c] = e
        total = sub_group_reduce_add(lsum)

        for c in range(lane, ncols, width):
            y[base + c] = y[base + c] / total


def make_inputs(rng, shape):
    rows, cols = shape["rows"], shape["cols"]
    x = (rng.standard_normal((rows, cols), dtype=np.float32) * 4).astype(np.float32)
    return {"x": x, "y": np.zeros((rows, cols), np.float32), "nrows": np.int32(rows),
            "ncols": np.int32(cols)}


def launch(inputs, shape, local_size=None, subgroup_size=SUBGROUP_SIZE):
    """Whole work-groups of ``local // subgroup_size`` rows (default 4 sub-groups of 32)."""
    local = local_size or (subgroup_size * ROWS_PER_GROUP,)
    rows = inputs["x"].shape[0]
    per_group = -(-local[0] // subgroup_size)
    groups = -(-rows // per_group)
    return Launch((groups * local[0],), local,
                  (inputs["x"], inputs["y"], inputs["nrows"], inputs["ncols"]))


SPEC = register(KernelSpec(
    name="softmax_subgroup",
    description="row softmax, one sub-group per row: sub_group_reduce_max/add, no local memory",
    kernel=softmax_subgroup,
    cl_file="softmax_subgroup.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=softmax_reference,
    # exp is 3 ulp per term, the divide 2.5; and OpenCL leaves the order of the float sum in
    # sub_group_reduce_add free (the simulator folds in lane order, a device picks its own
    # tree), which moves the sum by a few ulp.
    outputs={"y": ulp(16)},
    default_shape={"rows": 1024, "cols": 1024},
    tolerance=(1e-5, 1e-7),
    family="softmax",
    subgroup_size=SUBGROUP_SIZE,
    requires=frozenset({"subgroups"}),
))
