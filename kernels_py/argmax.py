"""argmax: index of the largest element, one work-group, local-memory tree reduction.

Ties go to the lowest index. NaN policy (same as numpy.argmax): NaN counts as larger than every
number, so the result is the index of the first NaN when there is one; -0.0 and +0.0 are equal
(the lower index wins). ``beats`` is that total order on (value, index) pairs; every argmax
variant (argmax_two_phase, argmax_subgroup) reduces with it, so all agree on every input.
"""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
)
from clsim.spec import EXACT, KernelSpec, Launch, register

MAX_WG = 1024


@clsim.func
def beats(value, index, best_value, best_index):
    """True when (value, index) should replace (best_value, best_index) under the NaN policy."""
    if clsim.isnan(best_value):
        return clsim.isnan(value) and index < best_index
    if clsim.isnan(value):
        return True
    return value > best_value or (value == best_value and index < best_index)


@clsim.func
def tree_reduce_argmax(values, indices, lid, wg):
    """The best (value, index) pair of values/indices[0:wg] into slot 0, any wg."""
    active = wg
    while active > 1:
        half_ = (active + 1) // 2
        if lid < active - half_:
            if beats(values[lid + half_], indices[lid + half_], values[lid], indices[lid]):
                values[lid] = values[lid + half_]
                indices[lid] = indices[lid + half_]
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_


@kernel
def argmax(x, out, n):
    lid = get_local_id(0)
    wg = get_local_size(0)
    values = local_array(MAX_WG, np.float32)
    indices = local_array(MAX_WG, np.int32)
    best_value = -clsim.INFINITY
    best_index = n
    for i in range(lid, n, wg):
        v = x[i]
        if beats(v, i, best_value, best_index):
            best_value = v
            best_index = i
    values[lid] = best_value
    indices[lid] = best_index
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_argmax(values, indices, lid, wg)
    if lid == 0:
        out[0] = indices[0]


def best_pair(values: np.ndarray, indices: np.ndarray, empty: int) -> tuple[float, int]:
    """numpy twin of a ``beats`` reduction: the winning (value, index); (-inf, empty) if none."""
    if values.size == 0:
        return -np.inf, empty
    nan = np.isnan(values)
    chosen = nan if nan.any() else values == values.max()
    k = int(np.argmin(np.where(chosen, indices, np.iinfo(np.int64).max)))
    return values[k], int(indices[k])


def make_inputs(rng, shape):
    n = shape["n"]
    x = rng.standard_normal(n, dtype=np.float32)
    return {"x": x, "out": np.full(1, -1, np.int32), "n": np.int32(n)}


def launch(inputs, shape, local_size=None):
    local = local_size or (256,)
    return Launch(local, local, (inputs["x"], inputs["out"], inputs["n"]))


def reference(inputs):
    x = inputs["x"][: int(inputs["n"])]
    return {"out": np.array([np.argmax(x)], np.int32)}


SPEC = register(KernelSpec(
    name="argmax",
    description="index of the largest float (first on ties, first NaN wins), one work-group",
    kernel=argmax,
    cl_file="argmax.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    outputs={"out": EXACT},
    default_shape={"n": 1 << 16},
    family="argmax",
))
