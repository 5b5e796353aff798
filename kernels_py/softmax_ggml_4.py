"""softmax_ggml_4: softmax_ggml with float4 loads and arithmetic (llama.cpp's
``kernel_soft_max_4``, ported line for line in tests/device/test_llama_style_softmax.py).

The options are softmax_ggml's (``x * scale + slope * mask``, the mask optional through
``has_mask``, the ALiBi slope by repeated multiplication); what changes is the width: each
lane takes a float4 of the row per step (``vload4``, element-aligned, so rows whose length
is not a multiple of 4 are fine), keeps float4 running maxima and sums and folds them into one
float, ``fmax(fmax(s0, s1), fmax(s2, s3))`` and ``s0 + s1 + s2 + s3``. Unlike llama.cpp's
kernel it does not drop the ``ncols % 4`` last columns: the lanes add them one at a time, and
it places rows by sub-group, so a sub-group smaller than the work-group is fine.

Policy as softmax_ggml: ulp(16) (the device's exp, divide and order of the sub-group sum).
"""

from clsim import (
    INFINITY,
    exp,
    float4,
    fmax,
    get_group_id,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_reduce_add,
    sub_group_reduce_max,
    vload4,
    vstore4,
)
from clsim.spec import KernelSpec, register, ulp
from kernels_py.softmax_ggml import SUBGROUP_SIZE, launch, make_inputs, reference

VW = 4


@kernel
def softmax_ggml_4(x, mask, y, nrows, ncols, rows_per_head, has_mask, scale, max_bias, m0, m1,
                   n_head_log2):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    if row < nrows:
        head = row // rows_per_head
        mrow = (row % rows_per_head) * ncols
        slope = 1.0
        if max_bias > 0.0:
            base = m0 if head < n_head_log2 else m1
            power = head + 1 if head < n_head_log2 else 2 * (head - n_head_log2) + 1
            for _ in range(power):
                slope = slope * base
        start = row * ncols
        n4 = ncols // VW
        tail = n4 * VW

        lmax4 = float4(-INFINITY)
        for i in range(lane, n4, width):
            bias = float4(0.0)
            if has_mask:
                bias = slope * vload4(0, mask + mrow + VW * i)
            lmax4 = fmax(lmax4, vload4(0, x + start + VW * i) * scale + bias)
        lmax = fmax(fmax(lmax4.s0, lmax4.s1), fmax(lmax4.s2, lmax4.s3))
        for c in range(tail + lane, ncols, width):
            lmax = fmax(lmax, x[start + c] * scale + (slope * mask[mrow + c] if has_mask
                                                      else 0.0))
        row_max = sub_group_reduce_max(lmax)

        lsum4 = float4(0.0)
        for i in range(lane, n4, width):
            bias = float4(0.0)
            if has_mask:
                bias = slope * vload4(0, mask + mrow + VW * i)
            e4 = exp((vload4(0, x + start + VW * i) * scale + bias) - row_max)
            lsum4 += e4
            vstore4(e4, 0, y + start + VW * i)
        lsum = lsum4.s0 + lsum4.s1 + lsum4.s2 + lsum4.s3
        for c in range(tail + lane, ncols, width):
            e = exp((x[start + c] * scale + (slope * mask[mrow + c] if has_mask else 0.0))
                    - row_max)
            lsum += e
            y[start + c] = e
        total = sub_group_reduce_add(lsum)

        for i in range(lane, n4, width):
            vstore4(vload4(0, y + start + VW * i) / total, 0, y + start + VW * i)
        for c in range(tail + lane, ncols, width):
            y[start + c] = y[start + c] / total


register(KernelSpec(
    name="softmax_ggml_4",
    description="softmax_ggml with float4 loads and arithmetic (llama.cpp's kernel_soft_max_4), "
                "column tails included, a sub-group per row",
    kernel=softmax_ggml_4, cl_file="softmax_ggml_4.cl", make_inputs=make_inputs,
    launch=launch, reference=reference,
    outputs={"y": ulp(16)},  # as softmax_ggml: the device's exp, divide and sub-group sum order
    default_shape={"heads": 8, "rows": 128, "cols": 1024}, tolerance=(1e-5, 1e-7),
    family="softmax", subgroup_size=SUBGROUP_SIZE, requires=frozenset({"subgroups"})))
