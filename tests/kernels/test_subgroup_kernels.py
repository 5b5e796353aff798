"""The sub-group library kernels (softmax_subgroup, reduce_sum, prefix_sum) against their numpy
references over Hypothesis-drawn sub-group sizes (including 7), work-group sizes that are and
are not multiples of the sub-group size, and problem sizes with tails.

The sweeps run in no-JIT mode (the same generated code as plain Python: every new local or
sub-group size would otherwise be a fresh Numba compile); JIT/no-JIT byte identity is checked
separately.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.spec import get_spec

SIZES = st.sampled_from([1, 2, 4, 7, 8, 16, 32, 64])


def _run(spec, inputs, launch, size, jit=False, **kw):
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=jit,
              subgroup_size=size, **kw)


def _local(size, groups_of, extra):
    return (max(1, size * groups_of + extra),)


@given(size=SIZES, per_group=st.integers(1, 4), extra=st.sampled_from([0, 0, 1, 3]),
       rows=st.integers(1, 9), cols=st.integers(1, 300), seed=st.integers(0, 2**16))
def test_softmax_subgroup(size, per_group, extra, rows, cols, seed):
    """softmax_subgroup matches the float64 reference within its tolerance for every sub-group
    size and any number of sub-groups per work-group (the last one possibly smaller)."""
    spec = get_spec("softmax_subgroup")
    shape = {"rows": rows, "cols": cols}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    launch = spec.launch(inputs, shape, _local(size, per_group, extra), subgroup_size=size)
    _run(spec, inputs, launch, size)
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["y"], spec.reference(inputs)["y"], rtol=rtol, atol=atol)


@given(size=SIZES, per_group=st.integers(1, 8), extra=st.sampled_from([0, 0, 1, 5]),
       n=st.integers(1, 5000), groups=st.integers(1, 8), seed=st.integers(0, 2**16),
       shuffled=st.booleans())
def test_reduce_sum(size, per_group, extra, n, groups, seed, shuffled):
    """reduce_sum's per-group sums equal the reference exactly (its inputs make every partial
    sum exact, so even a shuffled reduction order cannot change a bit)."""
    spec = get_spec("reduce_sum")
    shape = {"n": n, "groups": groups}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    launch = spec.launch(inputs, shape, _local(size, per_group, extra))
    order = {"reduction_order": "shuffled", "reduction_seed": seed} if shuffled else {}
    _run(spec, inputs, launch, size, **order)
    assert inputs["partial"].tobytes() == spec.reference(inputs)["partial"].tobytes()


@given(size=SIZES, per_group=st.integers(1, 8), extra=st.sampled_from([0, 0, 1, 5]),
       n=st.integers(1, 3000), seed=st.integers(0, 2**16))
def test_prefix_sum(size, per_group, extra, n, seed):
    """prefix_sum equals numpy's int32 cumsum for any work-group size and tail."""
    spec = get_spec("prefix_sum")
    shape = {"n": n}
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    launch = spec.launch(inputs, shape, _local(size, per_group, extra))
    _run(spec, inputs, launch, size)
    assert (inputs["y"] == spec.reference(inputs)["y"]).all()


def test_reduce_sum_order_shows_on_general_data():
    """On data whose partial sums round, the shuffled order changes reduce_sum's bits for some
    seed while the fixed order is reproducible: what the option is for."""
    spec = get_spec("reduce_sum")
    shape = {"n": 4096, "groups": 2}
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    inputs["x"][:] = np.random.default_rng(1).standard_normal(4096).astype(np.float32) * 1e4
    launch = spec.launch(inputs, shape, (64,))

    def once(**kw):
        inputs["partial"][:] = 0
        _run(spec, inputs, launch, 16, **kw)
        return inputs["partial"].tobytes()

    assert once() == once()
    seen = {once(reduction_order="shuffled", reduction_seed=s) for s in range(6)}
    assert len(seen) > 1


@pytest.mark.parametrize("name", ["softmax_subgroup", "reduce_sum", "prefix_sum"])
def test_jit_matches_no_jit(name):
    """Numba-compiled and plain-Python runs give identical bytes (default sizes, reduced)."""
    spec = get_spec(name)
    shape = {k: min(v, 300) for k, v in spec.default_shape.items()}
    outs = []
    for jit in (True, False):
        inputs = spec.make_inputs(np.random.default_rng(3), shape)
        launch = spec.launch(inputs, shape, None)
        _run(spec, inputs, launch, spec.subgroup_size, jit=jit)
        outs.append(b"".join(inputs[o].tobytes() for o in spec.outputs))
    assert outs[0] == outs[1]


def test_specs_declare_subgroups():
    """The sub-group kernels declare their sub-group size, the 'subgroups' requirement and a
    family for reports (softmax_subgroup groups with softmax)."""
    for name, family in (("softmax_subgroup", "softmax"), ("reduce_sum", "reduce"),
                         ("prefix_sum", "scan")):
        spec = get_spec(name)
        assert spec.subgroup_size and "subgroups" in spec.requires
        assert spec.family_name == family and spec.cl_path.exists()
