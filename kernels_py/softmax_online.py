"""softmax_online: row softmax in two passes over ``x`` instead of three (online softmax).

One work-group per row. Each work-item keeps a running maximum ``m`` and a running sum ``s`` of
exp(x - m) over its columns: a larger element rescales the sum by exp(m_old - m_new) before it
is counted. The work-items' (m, s) pairs meet in a local-memory tree with the same rescaling,
then every element is written as exp(x - m) / s. One read of the row fewer than the three-pass
``softmax``, at the price of an exp per rescale.

``rescaled`` keeps the -inf cases defined: an empty (m = -inf) side contributes nothing, and
equal maxima (including two infinities) skip the exp, so a row of -inf gives NaN as the
three-pass form does rather than an extra NaN from exp(-inf - -inf).
"""

import numpy as np

import clsim
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
from clsim.spec import KernelSpec, register, ulp
from kernels_py.softmax import launch, make_inputs, reference

MAX_WG = 1024


@clsim.func
def rescaled(s, m_old, m_new):
    """s * exp(m_old - m_new): a sum of exp(x - m_old) re-expressed against m_new >= m_old."""
    if m_old == m_new:
        return s
    if m_old == -INFINITY:
        return 0.0 * s  # not 0.0: a NaN sum (a NaN in the row) must still propagate
    return s * exp(m_old - m_new)


@kernel
def softmax_online(x, y, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    base = row * ncols
    maxima = local_array(MAX_WG, np.float32)
    sums = local_array(MAX_WG, np.float32)

    m = -INFINITY
    s = 0.0
    for c in range(lid, ncols, wg):
        v = x[base + c]
        if v > m:
            s = rescaled(s, m, v) + 1.0
            m = v
        else:
            s += rescaled(1.0, v, m)
    maxima[lid] = m
    sums[lid] = s
    barrier(CLK_LOCAL_MEM_FENCE)
    active = wg
    while active > 1:
        half_ = (active + 1) // 2
        if lid < active - half_:
            m1 = maxima[lid]
            m2 = maxima[lid + half_]
            top = fmax(m1, m2)
            sums[lid] = rescaled(sums[lid], m1, top) + rescaled(sums[lid + half_], m2, top)
            maxima[lid] = top
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_
    m = maxima[0]
    s = sums[0]

    for c in range(lid, ncols, wg):
        y[base + c] = exp(x[base + c] - m) / s


SPEC = register(KernelSpec(
    name="softmax_online",
    description="row softmax, one work-group per row, running max + rescaled sum (2 passes)",
    kernel=softmax_online,
    cl_file="softmax_online.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    # exp 3 ulp per term and per rescale, the divide 2.5: the device's exp moves the sum by a
    # few ulp more than in the three-pass form, since each rescale multiplies its error in.
    outputs={"y": ulp(16)},
    default_shape={"rows": 1024, "cols": 1024},
    tolerance=(1e-5, 1e-7),
    family="softmax",
))
