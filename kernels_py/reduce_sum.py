"""reduce_sum: one partial sum per work-group, sub-group stage then local-memory stage.

Work-group g sums its contiguous chunk of ``x`` (chunk = ceil(n / groups)); each work-item
strides over the chunk, ``sub_group_reduce_add`` combines the lanes of each sub-group, lane 0 of
every sub-group writes its sum to local memory, and after the barrier sub-group 0 alone (a
condition uniform per sub-group, so only that sub-group's lanes take part) adds those with a
second ``sub_group_reduce_add`` and lane 0 writes ``partial[g]``. The final total is
``partial.sum()`` on the host (or a second launch).

Float order: the simulator folds each sub-group in lane order; OpenCL leaves the order free. The
spec's inputs are multiples of 1/4 small enough that every partial sum is exact, so any order
gives the same bits and the device comparison is exact; use ``reduction_order="shuffled"`` on
your own data to see whether it matters there.
"""

import numpy as np

from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_groups,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    local_array,
    sub_group_reduce_add,
)
from clsim.spec import EXACT, KernelSpec, Launch, register

SUBGROUP_SIZE = 16
MAX_SUBGROUPS = 1024  # a 1024-work-item group with sub-groups of 1


@kernel
def reduce_sum(x, partial, n):
    groups = get_num_groups(0)
    chunk = (n + groups - 1) // groups
    start = get_group_id(0) * chunk
    stop = min(start + chunk, n)
    acc = 0.0
    for i in range(start + get_local_id(0), stop, get_local_size(0)):
        acc += x[i]
    s = sub_group_reduce_add(acc)

    sums = local_array(MAX_SUBGROUPS, np.float32)
    if get_sub_group_local_id() == 0:
        sums[get_sub_group_id()] = s
    barrier(CLK_LOCAL_MEM_FENCE)

    if get_sub_group_id() == 0:
        v = 0.0
        for k in range(get_sub_group_local_id(), get_num_sub_groups(), get_sub_group_size()):
            v += sums[k]
        total = sub_group_reduce_add(v)
        if get_sub_group_local_id() == 0:
            partial[get_group_id(0)] = total


def make_inputs(rng, shape):
    """Multiples of 1/4 in [-2, 2]: every partial sum of up to 2**21 of them is exact."""
    n, groups = shape["n"], shape["groups"]
    x = (rng.integers(-8, 9, n) / 4).astype(np.float32)
    return {"x": x, "partial": np.zeros(groups, np.float32), "n": np.int32(n)}


def launch(inputs, shape, local_size=None):
    local = local_size or (256,)
    groups = inputs["partial"].shape[0]
    return Launch((groups * local[0],), local, (inputs["x"], inputs["partial"], inputs["n"]))


def reference(inputs):
    x = inputs["x"][: int(inputs["n"])].astype(np.float64)
    groups = inputs["partial"].shape[0]
    chunk = -(-x.size // groups)
    sums = [x[g * chunk:(g + 1) * chunk].sum() for g in range(groups)]
    return {"partial": np.array(sums, np.float32)}


SPEC = register(KernelSpec(
    name="reduce_sum",
    description="per-group float sums: sub_group_reduce_add, then local memory and sub-group 0",
    kernel=reduce_sum,
    cl_file="reduce_sum.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    # exact: the inputs make every partial sum exact, so the (free) float order cannot show.
    outputs={"partial": EXACT},
    default_shape={"n": 1 << 20, "groups": 64},
    family="reduce",
    subgroup_size=SUBGROUP_SIZE,
    requires=frozenset({"subgroups"}),
))
