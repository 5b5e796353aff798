"""argmax_subgroup: argmax by one work-group, sub-group collectives instead of a local tree.

Each work-item strides over ``x`` keeping its best (value, index) pair (``beats``: lowest index
on ties, first NaN wins). A sub-group then finds its best pair with three collectives whose
result does not depend on the order a device combines the lanes in (maximum, minimum and
"any" are exact in any order): whether any lane holds a NaN, the largest non-NaN value, and the
smallest index among the lanes holding the winner (NaN, else a value equal to that maximum; -0.0
equals +0.0). Lane 0 of each sub-group writes its pair to local memory, and after one barrier
sub-group 0 reduces those pairs the same way. Any sub-group size, any local size: a smaller
last sub-group takes part like the others.
"""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    INFINITY,
    barrier,
    get_local_id,
    get_local_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    local_array,
    sub_group_any,
    sub_group_reduce_max,
    sub_group_reduce_min,
)
from clsim.spec import EXACT, KernelSpec, register
from kernels_py.argmax import beats
from kernels_py.argmax import launch as argmax_launch
from kernels_py.argmax import make_inputs as argmax_inputs
from kernels_py.argmax import reference as argmax_reference

SUBGROUP_SIZE = 16
MAX_SUBGROUPS = 1024


@clsim.func
def subgroup_best_index(value, index, empty):
    """The index of the sub-group's best (value, index) pair, in every lane."""
    has_nan = sub_group_any(1 if clsim.isnan(value) else 0)
    top = sub_group_reduce_max(-INFINITY if clsim.isnan(value) else value)
    chosen = clsim.isnan(value) if has_nan != 0 else value == top
    return sub_group_reduce_min(index if chosen else empty)


@kernel
def argmax_subgroup(x, out, n):
    lid = get_local_id(0)
    wg = get_local_size(0)
    lane = get_sub_group_local_id()
    sg_values = local_array(MAX_SUBGROUPS, np.float32)
    sg_indices = local_array(MAX_SUBGROUPS, np.int32)
    best_value = -INFINITY
    best_index = n
    for i in range(lid, n, wg):
        v = x[i]
        if beats(v, i, best_value, best_index):
            best_value = v
            best_index = i
    index = subgroup_best_index(best_value, best_index, n)
    if lane == 0:
        sg_values[get_sub_group_id()] = x[index] if index < n else -INFINITY
        sg_indices[get_sub_group_id()] = index
    barrier(CLK_LOCAL_MEM_FENCE)
    if get_sub_group_id() == 0:
        value = -INFINITY
        k = n
        for s in range(lane, get_num_sub_groups(), get_sub_group_size()):
            if beats(sg_values[s], sg_indices[s], value, k):
                value = sg_values[s]
                k = sg_indices[s]
        winner = subgroup_best_index(value, k, n)
        if lane == 0:
            out[0] = winner


SPEC = register(KernelSpec(
    name="argmax_subgroup",
    description="argmax, one work-group: sub_group_any/reduce_max/reduce_min, then sub-group 0",
    kernel=argmax_subgroup,
    cl_file="argmax_subgroup.cl",
    make_inputs=argmax_inputs,
    launch=argmax_launch,
    reference=argmax_reference,
    outputs={"out": EXACT},
    default_shape={"n": 1 << 16},
    family="argmax",
    subgroup_size=SUBGROUP_SIZE,
    requires=frozenset({"subgroups"}),
))
