"""argmax_two_phase: argmax over many work-groups in two launches (pipeline ``argmax_two_phase``).

Launch 1 (``argmax_partials``): work-group g takes the contiguous chunk [g*chunk, (g+1)*chunk)
of ``x`` (chunk = ceil(n / groups)), its work-items stride over the chunk keeping their best
(value, index) pair, a local tree with ``beats`` leaves the group's best pair, and work-item 0
writes it to ``part_values[g]``, ``part_indices[g]`` (an empty chunk writes (-inf, n)). The host
waits for launch 1 (the queue's order, or clFinish), then launch 2 (``argmax_final``): one
work-group reduces the ``groups`` pairs the same way and writes the index. Chunks are
contiguous and visited in ascending order, so the lowest index wins every tie, and the
partials do not depend on the local size. Same NaN policy as ``argmax`` (first NaN wins).

Each launch is its own spec: the verifier checks each against its twin, and
``argmax_final``'s input generator computes the partials on the host, so it is verified with
its own inputs; ``clsim.spec.run_pipeline("argmax_two_phase", ...)`` runs both.
"""

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_groups,
    kernel,
    local_array,
)
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.argmax import MAX_WG, beats, best_pair, tree_reduce_argmax

PIPELINE = "argmax_two_phase"
LOCAL = 256


@kernel
def argmax_partials(x, part_values, part_indices, n):
    lid = get_local_id(0)
    wg = get_local_size(0)
    groups = get_num_groups(0)
    chunk = (n + groups - 1) // groups
    start = get_group_id(0) * chunk
    stop = min(start + chunk, n)
    values = local_array(MAX_WG, np.float32)
    indices = local_array(MAX_WG, np.int32)
    best_value = -clsim.INFINITY
    best_index = n
    for i in range(start + lid, stop, wg):
        v = x[i]
        if beats(v, i, best_value, best_index):
            best_value = v
            best_index = i
    values[lid] = best_value
    indices[lid] = best_index
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_argmax(values, indices, lid, wg)
    if lid == 0:
        part_values[get_group_id(0)] = values[0]
        part_indices[get_group_id(0)] = indices[0]


@kernel
def argmax_final(part_values, part_indices, out, ngroups):
    lid = get_local_id(0)
    wg = get_local_size(0)
    values = local_array(MAX_WG, np.float32)
    indices = local_array(MAX_WG, np.int32)
    best_value = -clsim.INFINITY
    best_index = 2147483647
    for g in range(lid, ngroups, wg):
        if beats(part_values[g], part_indices[g], best_value, best_index):
            best_value = part_values[g]
            best_index = part_indices[g]
    values[lid] = best_value
    indices[lid] = best_index
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_argmax(values, indices, lid, wg)
    if lid == 0:
        out[0] = indices[0]


def partials(x: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Launch 1 on the host: each chunk's best (value, index)."""
    n = x.size
    chunk = -(-n // groups)
    pairs = [best_pair(x[g * chunk:(g + 1) * chunk],
                       np.arange(g * chunk, min((g + 1) * chunk, n)), n)
             for g in range(groups)]
    return (np.array([p[0] for p in pairs], np.float32),
            np.array([p[1] for p in pairs], np.int32))


def make_inputs(rng, shape):
    """Every buffer of both launches; the partials pre-filled with a value no launch writes."""
    n, groups = shape["n"], shape["groups"]
    return {"x": rng.standard_normal(n, dtype=np.float32),
            "part_values": np.full(groups, np.nan, np.float32),
            "part_indices": np.full(groups, -1, np.int32),
            "out": np.full(1, -1, np.int32), "n": np.int32(n), "ngroups": np.int32(groups)}


def make_final_inputs(rng, shape):
    """Launch 2's inputs: launch 1's partials computed on the host from a drawn ``x``."""
    inputs = make_inputs(rng, shape)
    inputs["part_values"], inputs["part_indices"] = partials(inputs["x"], shape["groups"])
    return inputs


def launch_partials(inputs, shape, local_size=None):
    local = local_size or (LOCAL,)
    groups = inputs["part_values"].shape[0]
    return Launch((groups * local[0],), local,
                  (inputs["x"], inputs["part_values"], inputs["part_indices"], inputs["n"]))


def launch_final(inputs, shape, local_size=None):
    local = local_size or (LOCAL,)
    return Launch(local, local, (inputs["part_values"], inputs["part_indices"], inputs["out"],
                                 inputs["ngroups"]))


def reference_partials(inputs):
    values, indices = partials(inputs["x"][: int(inputs["n"])],
                               inputs["part_values"].shape[0])
    return {"part_values": values, "part_indices": indices}


def reference_final(inputs):
    """The best of the partials (np.argmax(x) when they are launch 1's)."""
    _, index = best_pair(inputs["part_values"], inputs["part_indices"].astype(np.int64), -1)
    return {"out": np.array([index], np.int32)}


_COMMON = dict(cl_file="argmax_two_phase.cl", default_shape={"n": 1 << 20, "groups": 64},
               family="argmax", pipeline=PIPELINE)

PARTIALS = register(KernelSpec(
    name="argmax_partials",
    description="argmax launch 1 of 2: each work-group's best (value, index) of its chunk",
    kernel=argmax_partials, make_inputs=make_inputs, launch=launch_partials,
    reference=reference_partials, outputs={"part_values": EXACT, "part_indices": EXACT},
    stage=0, **_COMMON))

FINAL = register(KernelSpec(
    name="argmax_final",
    description="argmax launch 2 of 2: one work-group reduces the per-group (value, index)",
    kernel=argmax_final, make_inputs=make_final_inputs, launch=launch_final,
    reference=reference_final, outputs={"out": EXACT}, stage=1, **_COMMON))
