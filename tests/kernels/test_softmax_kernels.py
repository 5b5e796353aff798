"""The softmax family's newer variants against the float64 reference: the online (running max,
rescaled sum) form over drawn rows and local sizes and rows of 1 to 32768 columns; ggml's
options (scale, optional mask, ALiBi slopes, max_bias 0) at several sub-group sizes, scalar
and float4 (softmax_ggml_4, with column tails). And the
llama.cpp bug class: a kernel that strides by the work-group but reduces over the sub-group
normalises each part of a row separately when the sub-group is smaller than the work-group;
simulating at the device's sub-group size shows it.

Sweeps run in no-JIT mode (each new local or sub-group size would be a fresh Numba compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim import (
    INFINITY,
    exp,
    fmax,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    sub_group_reduce_add,
    sub_group_reduce_max,
)
from clsim.spec import get_spec
from kernels_py.softmax_ggml import make_inputs as ggml_inputs


def _close(spec, inputs):
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=rtol, atol=atol)


def _run(spec, inputs, launch, size=None, kernel_fn=None):
    clsim.run(kernel_fn or spec.kernel, launch.global_size, launch.local_size, launch.args,
              jit=False, subgroup_size=size or spec.subgroup_size)


@given(rows=st.integers(1, 5), cols=st.integers(1, 600),
       local=st.sampled_from([1, 5, 32, 96, 256]), seed=st.integers(0, 2**16),
       ascending=st.booleans())
def test_softmax_online_matches_reference(rows, cols, local, seed, ascending):
    """The online form matches the float64 softmax, also on ascending rows (a rescale at every
    element, the worst case for its error)."""
    spec = get_spec("softmax_online")
    shape = {"rows": rows, "cols": cols}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    if ascending:
        inputs["x"].sort(axis=1)
    launch = spec.launch(inputs, shape, (local,))
    _run(spec, inputs, launch)
    _close(spec, inputs)


@pytest.mark.parametrize("cols", [1, 2, 1000, 32768])
def test_softmax_online_row_lengths(cols):
    """Rows of 1 to 32768 columns (JIT, the default local size)."""
    spec = get_spec("softmax_online")
    shape = {"rows": 2, "cols": cols}
    inputs = spec.make_inputs(np.random.default_rng(cols), shape)
    launch = spec.launch(inputs, shape, None)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args)
    _close(spec, inputs)


def test_softmax_online_special_rows():
    """A row of -inf is NaN (as the three-pass form); a row with one NaN is NaN; a -inf among
    finite values is 0."""
    spec = get_spec("softmax_online")
    x = np.array([[-np.inf] * 5, [1.0, np.nan, 2.0, 0.0, 0.0], [0.0, -np.inf, 0.0, 0.0, 0.0]],
                 np.float32)
    inputs = {"x": x, "y": np.zeros_like(x), "ncols": np.int32(5)}
    _run(spec, inputs, spec.launch(inputs, {"rows": 3, "cols": 5}, (4,)))
    assert np.isnan(inputs["y"][:2]).all()
    np.testing.assert_allclose(inputs["y"][2], [0.25, 0, 0.25, 0.25, 0.25])


@pytest.mark.parametrize("name", ["softmax_ggml", "softmax_ggml_4"])
@given(heads=st.integers(1, 9), rows=st.integers(1, 4), cols=st.integers(1, 300),
       size=st.sampled_from([4, 8, 16, 32]), with_mask=st.booleans(),
       max_bias=st.sampled_from([0.0, 8.0]), seed=st.integers(0, 2**16))
def test_softmax_ggml_options(name, heads, rows, cols, size, with_mask, max_bias, seed):
    """scale, mask (or none: the flag and a dummy buffer) and ALiBi slopes (heads past
    n_head_log2 use m1) match the float64 reference at every sub-group size; for the float4
    form also rows shorter than a float4 and rows with a tail of 1 to 3 columns."""
    spec = get_spec(name)
    shape = {"heads": heads, "rows": rows, "cols": cols}
    inputs = ggml_inputs(np.random.default_rng(seed), shape, with_mask, max_bias)
    _run(spec, inputs, spec.launch(inputs, shape, None, subgroup_size=size), size)
    _close(spec, inputs)


@kernel
def softmax_wg_stride(x, y, ncols):
    """llama.cpp's old kernel_soft_max: strides by the work-group, reduces over the sub-group."""
    base = get_group_id(0) * ncols
    lid = get_local_id(0)
    wg = get_local_size(0)
    lmax = -INFINITY
    for c in range(lid, ncols, wg):
        lmax = fmax(lmax, x[base + c])
    row_max = sub_group_reduce_max(lmax)
    lsum = 0.0
    for c in range(lid, ncols, wg):
        e = exp(x[base + c] - row_max)
        lsum += e
        y[base + c] = e
    total = sub_group_reduce_add(lsum)
    for c in range(lid, ncols, wg):
        y[base + c] = y[base + c] / total


def test_subgroup_smaller_than_work_group_normalises_half_rows():
    """With a 32-wide work-group per row: at sub-group size 32 the kernel is right; at 16 (the
    Intel and Adreno default) each half of the row is normalised alone, so rows sum to 2 and
    the simulator, run at the device's sub-group size, shows the wrong output."""
    spec = get_spec("softmax")
    shape = {"rows": 3, "cols": 200}
    for size, want_sum in ((32, 1.0), (16, 2.0)):
        inputs = spec.make_inputs(np.random.default_rng(4), shape)
        clsim.run(softmax_wg_stride, (3 * 32,), (32,), (inputs["x"], inputs["y"],
                                                         inputs["ncols"]),
                  subgroup_size=size, jit=False)
        np.testing.assert_allclose(inputs["y"].sum(axis=1), want_sum, rtol=1e-5)


@given(rows=st.integers(1, 4), cols=st.integers(1, 300),
       local=st.sampled_from([1, 3, 32, 64]), seed=st.integers(0, 2**16))
def test_softmax_vec_matches_reference(rows, cols, local, seed):
    """The float4 form over rows whose length is rarely a multiple of 4 (the scalar tail) and
    rows shorter than one float4 per work-item."""
    spec = get_spec("softmax_vec")
    shape = {"rows": rows, "cols": cols}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    _run(spec, inputs, spec.launch(inputs, shape, (local,)))
    _close(spec, inputs)


@pytest.mark.parametrize("cols", [1, 6, 1027, 32768])
def test_softmax_vec_row_lengths_agree_with_the_scalar_form(cols):
    """JIT, default local size: within 16 ulp of the three-pass scalar softmax (the same terms,
    summed in another order) and of the float64 reference."""
    vec, scalar = get_spec("softmax_vec"), get_spec("softmax")
    shape = {"rows": 2, "cols": cols}
    inputs = vec.make_inputs(np.random.default_rng(cols), shape)
    other = {k: np.copy(v) for k, v in inputs.items()}
    for spec, args in ((vec, inputs), (scalar, other)):
        launch = spec.launch(args, shape, None)
        clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args)
    _close(vec, inputs)
    gap = np.abs(inputs["y"].view(np.int32).astype(np.int64) - other["y"].view(np.int32))
    assert gap.max() <= 16
