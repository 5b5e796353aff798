"""prefix_sum: inclusive scan of int32 values by one work-group, tile by tile.

The group walks the array in tiles of its size: ``work_group_scan_inclusive_add`` scans a tile,
the running ``carry`` (the previous tiles' total) is added, and ``work_group_broadcast`` of the
tile's last value becomes the next carry. Integers wrap like C's int (and numpy's int32), so the
result is exact in any order.
"""

import numpy as np

from clsim import (
    get_local_id,
    get_local_size,
    kernel,
    work_group_broadcast,
    work_group_scan_inclusive_add,
)
from clsim.spec import EXACT, KernelSpec, Launch, register

SUBGROUP_SIZE = 16


@kernel
def prefix_sum(x, y, n):
    lid = get_local_id(0)
    wg = get_local_size(0)
    carry = 0
    for base in range(0, n, wg):
        i = base + lid
        v = 0
        if i < n:
            v = x[i]
        s = work_group_scan_inclusive_add(v) + carry
        if i < n:
            y[i] = s
        carry = work_group_broadcast(s, wg - 1)


def make_inputs(rng, shape):
    n = shape["n"]
    x = rng.integers(-1000, 1001, n).astype(np.int32)
    return {"x": x, "y": np.zeros(n, np.int32), "n": np.int32(n)}


def launch(inputs, shape, local_size=None):
    local = local_size or (256,)
    return Launch(local, local, (inputs["x"], inputs["y"], inputs["n"]))


def reference(inputs):
    x = inputs["x"][: int(inputs["n"])]
    return {"y": np.cumsum(x, dtype=np.int32)}


SPEC = register(KernelSpec(
    name="prefix_sum",
    description="inclusive int32 scan by one work-group: work_group_scan_inclusive_add + carry",
    kernel=prefix_sum,
    cl_file="prefix_sum.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    outputs={"y": EXACT},
    default_shape={"n": 1 << 16},
    family="scan",
    subgroup_size=SUBGROUP_SIZE,
    requires=frozenset({"subgroups"}),
))
