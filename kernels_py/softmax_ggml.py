"""softmax_ggml: row softmax with ggml's options, one sub-group per row (llama.cpp's shape).

As ``kernel_soft_max`` in llama.cpp's OpenCL backend: each value is ``x * scale + slope *
mask`` before the softmax, where ``mask`` (rows x cols, shared by every head, -inf where
attention is masked) is optional and ``slope`` is the ALiBi slope of the row's head ``h``:
``m0 ** (h + 1)`` for the first ``n_head_log2`` heads, ``m1 ** (2 (h - n_head_log2) + 1)``
after, 1 when ``max_bias`` is 0. The language has no pointers, so "no mask" is ``has_mask = 0``
with a one-element dummy buffer (ggml passes a null pointer). The slope is a product of
``exp`` factors of ``base`` computed by repeated multiplication, not ``pow``: the same bits on
every device (``pow`` may be 16 ulp off); it can differ from ggml's ``pow`` by a few ulp.

The rest is softmax_subgroup: ``sub_group_reduce_max``, then exp while summing with
``sub_group_reduce_add``, then divide; a work-group holds ``get_num_sub_groups()`` rows, so a
sub-group smaller than the work-group is fine here (llama.cpp's kernel assumes they are equal).
"""

import math

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

SUBGROUP_SIZE = 32
ROWS_PER_GROUP = 4


@kernel
def softmax_ggml(x, mask, y, nrows, ncols, rows_per_head, has_mask, scale, max_bias, m0, m1,
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
        lmax = -INFINITY
        for c in range(lane, ncols, width):
            lmax = fmax(lmax, x[start + c] * scale + (slope * mask[mrow + c] if has_mask
                                                      else 0.0))
        row_max = sub_group_reduce_max(lmax)

        lsum = 0.0
        for c in range(lane, ncols, width):
            e = exp((x[start + c] * scale + (slope * mask[mrow + c] if has_mask else 0.0))
                    - row_max)
            lsum += e
            y[start + c] = e
        total = sub_group_reduce_add(lsum)

        for c in range(lane, ncols, width):
            y[start + c] = y[start + c] / total


def alibi_parameters(heads: int, max_bias: float) -> tuple[float, float, int]:
    """(m0, m1, n_head_log2) as llama.cpp's host code computes them for the kernel."""
    n_head_log2 = 1 << math.floor(math.log2(heads))
    m0 = 2.0 ** (-max_bias / n_head_log2)
    m1 = 2.0 ** (-(max_bias / 2.0) / n_head_log2)
    return m0, m1, n_head_log2


def make_inputs(rng, shape, with_mask=True, max_bias=8.0):
    heads, rows, cols = shape["heads"], shape["rows"], shape["cols"]
    x = (rng.standard_normal((heads * rows, cols), dtype=np.float32) * 4).astype(np.float32)
    mask = np.where(rng.random((rows, cols)) < 0.2, -np.inf, 0.0).astype(np.float32)
    mask[:, 0] = 0.0  # no fully masked row (that is NaN, as in ggml)
    m0, m1, n_head_log2 = alibi_parameters(heads, max_bias)
    return {"x": x, "mask": mask if with_mask else np.zeros(1, np.float32),
            "y": np.zeros_like(x), "nrows": np.int32(heads * rows), "ncols": np.int32(cols),
            "rows_per_head": np.int32(rows), "has_mask": np.int32(with_mask),
            "scale": np.float32(0.125), "max_bias": np.float32(max_bias),
            "m0": np.float32(m0), "m1": np.float32(m1), "n_head_log2": np.int32(n_head_log2)}


ARGS = ("x", "mask", "y", "nrows", "ncols", "rows_per_head", "has_mask", "scale", "max_bias",
        "m0", "m1", "n_head_log2")


def launch(inputs, shape, local_size=None, subgroup_size=SUBGROUP_SIZE):
    local = local_size or (subgroup_size * ROWS_PER_GROUP,)
    per_group = -(-local[0] // subgroup_size)
    groups = max(1, -(-int(inputs["nrows"]) // per_group))
    return Launch((groups * local[0],), local, tuple(inputs[k] for k in ARGS))


def slopes(inputs) -> np.ndarray:
    """Each head's ALiBi slope (float64, ``pow`` as ggml)."""
    heads = int(inputs["nrows"]) // int(inputs["rows_per_head"])
    if float(inputs["max_bias"]) <= 0:
        return np.ones(heads)
    k, m0, m1 = int(inputs["n_head_log2"]), float(inputs["m0"]), float(inputs["m1"])
    return np.array([m0 ** (h + 1) if h < k else m1 ** (2 * (h - k) + 1) for h in range(heads)])


def reference(inputs):
    rows = int(inputs["rows_per_head"])
    v = inputs["x"].astype(np.float64) * float(inputs["scale"])
    if int(inputs["has_mask"]):
        heads = v.shape[0] // rows
        bias = slopes(inputs)[:, None, None] * inputs["mask"].astype(np.float64)[None]
        v = v + bias.reshape(heads * rows, -1)
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


SPEC = register(KernelSpec(
    name="softmax_ggml",
    description="row softmax with ggml's scale, optional mask and ALiBi slope, a sub-group "
                "per row",
    kernel=softmax_ggml,
    cl_file="softmax_ggml.cl",
    make_inputs=make_inputs,
    launch=launch,
    reference=reference,
    # as softmax_subgroup: exp 3 ulp per term, the divide 2.5, and the device's order of the
    # float sum in sub_group_reduce_add.
    outputs={"y": ulp(16)},
    default_shape={"heads": 8, "rows": 128, "cols": 1024},
    tolerance=(1e-5, 1e-7),
    family="softmax",
    subgroup_size=SUBGROUP_SIZE,
    requires=frozenset({"subgroups"}),
))
