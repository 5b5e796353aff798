"""The library's kernels against their numpy references: every kernel at a reduced default
shape in JIT mode, the base kernels over Hypothesis-drawn shapes and work-group sizes in
no-JIT mode (each drawn local size would be a fresh Numba compile), and JIT/no-JIT byte
identity on small shapes, at the default local size and, for the base kernels, at an odd one
(so the drawn sweeps' local sizes are covered compiled too)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.compiler.frontend import parse
from clsim.spec import all_specs

SPECS = all_specs()
BASE = ("vector_add", "argmax", "softmax")


def _launch(spec, shape, local, seed=0, jit=True, subgroup_size=None):
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    launch = spec.launch(inputs, shape, local)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=jit,
              subgroup_size=subgroup_size or spec.subgroup_size)
    return inputs


def _check(spec, inputs):
    expected = spec.reference(inputs)
    rtol, atol = spec.tolerance
    for name, want in expected.items():
        got = inputs[name]
        if np.issubdtype(want.dtype, np.integer):
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@given(n=st.integers(1, 5000), local=st.sampled_from([1, 7, 32, 64, 100, 256]))
def test_vector_add_any_size_and_local_size(n, local):
    """vector_add equals a + b bit for bit, with tails not a multiple of the group size."""
    spec = SPECS["vector_add"]
    inputs = _launch(spec, {"n": n}, (local,), jit=False)
    np.testing.assert_array_equal(inputs["c"], inputs["a"] + inputs["b"])


@given(n=st.integers(1, 4000), local=st.sampled_from([1, 3, 32, 100, 256, 1024]),
       seed=st.integers(0, 2**16), ties=st.booleans())
def test_argmax_matches_numpy_including_ties_and_nan(n, local, seed, ties):
    """argmax: first index of the maximum; ties go low; NaN wins (numpy.argmax's policy)."""
    spec = SPECS["argmax"]
    inputs = spec.make_inputs(np.random.default_rng(seed), {"n": n})
    if ties:
        inputs["x"][:] = np.round(inputs["x"])
    if seed % 5 == 0:
        inputs["x"][seed % n] = np.nan
    launch = spec.launch(inputs, {"n": n}, (local,))
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False)
    assert inputs["out"][0] == np.argmax(inputs["x"])


@given(rows=st.integers(1, 6), cols=st.integers(1, 700),
       local=st.sampled_from([1, 5, 32, 64, 96, 256]))
def test_softmax_matches_numpy(rows, cols, local):
    """softmax rows sum to one and match the float64 reference within the stated tolerance."""
    spec = SPECS["softmax"]
    inputs = _launch(spec, {"rows": rows, "cols": cols}, (local,), jit=False)
    _check(spec, inputs)


# JIT and plain Python agree: one kernel per family by default (the first by name); every
# other variant is a sweep of the same property, marked slow (plain Python runs the quantized
# GEMVs for a minute each).
_JIT_NAMES = [n for n in SPECS if n in BASE or not SPECS[n].requires]
_FAMILY_FIRST = {min(n for n in _JIT_NAMES if SPECS[n].family_name == f)
                 for f in {SPECS[n].family_name for n in _JIT_NAMES}}


# The default local size's compiled module is the one test_every_spec_runs_... compiles; the
# odd ones, one per base kernel, stand for the local sizes the sweeps above draw (a tail
# group, a group past the data, a non-power-of-two tree) at one compile each.
ODD_LOCAL = {"vector_add": (7,), "argmax": (100,), "softmax": (96,)}
_IDENTITY_CASES = [pytest.param(n, None, id=n,
                                marks=[] if n in _FAMILY_FIRST else [pytest.mark.slow])
                   for n in _JIT_NAMES] + [pytest.param(n, local, id=f"{n}-local{local[0]}")
                                           for n, local in ODD_LOCAL.items()]


@pytest.mark.parametrize(("name", "local"), _IDENTITY_CASES)
def test_jit_and_no_jit_identical_bytes(name, local):
    """The generated code gives identical bytes with and without Numba."""
    spec = SPECS[name]
    cap = 96 if len(spec.default_shape) < 3 else 24  # matmul: M*N*K work in plain Python
    shape = {k: min(v, cap) for k, v in spec.default_shape.items()}
    a = _launch(spec, shape, local, seed=3, jit=True)
    b = _launch(spec, shape, local, seed=3, jit=False)
    for out in spec.outputs:
        assert a[out].tobytes() == b[out].tobytes(), out


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_spec_runs_its_default_shape_against_its_reference(name):
    """Every registered kernel passes its own reference at a reduced default shape."""
    spec = SPECS[name]
    shape = {k: min(v, 2048) for k, v in spec.default_shape.items()}
    inputs = _launch(spec, shape, None)
    _check(spec, inputs)
    assert parse(spec.kernel).params


OPERATOR_FAMILIES = ("argmax", "softmax", "gemv", "gemv_quant", "matmul", "gguf")


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items()
                                        if s.family in OPERATOR_FAMILIES))
def test_default_launch_plans_fit_a_256_work_item_device(name):
    """Every operator's default launch plan runs on a device limited to 256 work-items per
    group (Adreno-class and many mobile GPUs), and asking for more names the limit."""
    spec = SPECS[name]
    shape = {k: min(v, 8) for k, v in spec.default_shape.items()}
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, None)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=spec.subgroup_size, max_work_group_size=256)
    _check(spec, inputs)


def test_a_work_group_above_the_device_limit_is_refused():
    """A 512-wide argmax group on a 256-limited device is an error that names both sizes."""
    spec = SPECS["argmax"]
    inputs = spec.make_inputs(np.random.default_rng(0), {"n": 1000})
    launch = spec.launch(inputs, {"n": 1000}, (512,))
    with pytest.raises(clsim.SimulationError, match="256"):
        clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
                  max_work_group_size=256)
