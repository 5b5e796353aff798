"""softmax_vec: the three-pass row softmax with float4 loads and arithmetic.

One work-group per row, as ``softmax``. Each work-item reads four columns per step with
``vload4`` (a row starts at any element, so the loads are element-aligned only, which vloadN
allows) and keeps float4 partials; the four lanes of a partial are folded as
(x + y) + (z + w) before the local-memory tree. Columns past the last full float4 are handled
one by one. Against ``softmax``: a quarter of the loop iterations and of the load
instructions, the same bytes; the sums are formed in a different order, so the two variants
agree within the ulp policy, not bit for bit.
"""

import numpy as np

from clsim import (
    CLK_LOCAL_MEM_FENCE,
    INFINITY,
    barrier,
    exp,
    float4,
    fmax,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
    vload4,
    vstore4,
)
from clsim.spec import KernelSpec, register, ulp
from kernels_py.common import tree_reduce_max, tree_reduce_sum
from kernels_py.softmax import launch, make_inputs, reference

MAX_WG = 1024


@kernel
def softmax_vec(x, y, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    xr = x + row * ncols
    yr = y + row * ncols
    n4 = ncols // 4
    scratch = local_array(MAX_WG, np.float32)

    m4 = float4(-INFINITY)
    for c in range(lid, n4, wg):
        m4 = fmax(m4, vload4(c, xr))
    row_max = fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w))
    for c in range(4 * n4 + lid, ncols, wg):
        row_max = fmax(row_max, xr[c])
    scratch[lid] = row_max
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_max(scratch, lid, wg)
    row_max = scratch[0]
    barrier(CLK_LOCAL_MEM_FENCE)

    s4 = float4(0.0)
    for c in range(lid, n4, wg):
        s4 += exp(vload4(c, xr) - row_max)
    total = (s4.x + s4.y) + (s4.z + s4.w)
    for c in range(4 * n4 + lid, ncols, wg):
        total += exp(xr[c] - row_max)
    scratch[lid] = total
    barrier(CLK_LOCAL_MEM_FENCE)
    tree_reduce_sum(scratch, lid, wg)
    total = scratch[0]

    for c in range(lid, n4, wg):
        vstore4(exp(vload4(c, xr) - row_max) / total, c, yr)
    for c in range(4 * n4 + lid, ncols, wg):
        yr[c] = exp(xr[c] - row_max) / total


SPEC = register(KernelSpec(
    name="softmax_vec",
    description="row softmax, one work-group per row, three passes on float4 loads",
    kernel=softmax_vec,
    cl_file="softmax_vec.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    # As softmax: exp 3 ulp per term, the sum carries the terms' error, the divide adds 2.5.
    outputs={"y": ulp(16)},
    default_shape={"rows": 1024, "cols": 1024},
    tolerance=(1e-5, 1e-7),
    family="softmax",
))
