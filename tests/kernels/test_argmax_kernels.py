"""The argmax family (argmax, argmax_subgroup, the two launches of argmax_two_phase) against
numpy.argmax over drawn lengths with tails, local sizes, sub-group sizes, ties and NaNs: every
variant gives numpy's index (lowest index on ties, first NaN wins, -0.0 equals +0.0).

Sweeps run in no-JIT mode (each new local or sub-group size would be a fresh Numba compile);
one JIT run covers 10**7 elements through both launches of the two-phase pipeline.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.errors import SimulationError
from clsim.spec import get_spec, pipeline_stages, run_pipeline


def _data(n, seed, mode):
    """Drawn data: normal, few distinct values (ties), with NaNs, all equal, or signed zeros."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n).astype(np.float32)
    if mode == "ties":
        x = np.round(x).astype(np.float32)
    elif mode == "nan":
        x[rng.integers(0, n, 1 + n // 50)] = np.nan
    elif mode == "equal":
        x[:] = x[0]
    elif mode == "zeros":
        x = np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(0.0)).astype(np.float32)
    elif mode == "neg_inf":
        x[:] = -np.inf
    return x


MODES = st.sampled_from(["normal", "ties", "nan", "equal", "zeros", "neg_inf"])


def _one_group(name, x, local, subgroup_size=None):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), {"n": x.size})
    inputs["x"] = x
    launch = spec.launch(inputs, {"n": x.size}, (local,))
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=subgroup_size or spec.subgroup_size)
    return int(inputs["out"][0])


@given(n=st.integers(1, 3000), local=st.sampled_from([1, 3, 32, 100, 256]),
       seed=st.integers(0, 2**16), mode=MODES)
def test_argmax_one_group(n, local, seed, mode):
    """The one-work-group tree gives numpy's index for any length and local size."""
    x = _data(n, seed, mode)
    assert _one_group("argmax", x, local) == np.argmax(x)


@given(n=st.integers(1, 3000), size=st.sampled_from([1, 4, 7, 8, 16, 32]),
       subgroups=st.integers(1, 4), extra=st.sampled_from([0, 0, 3]),
       seed=st.integers(0, 2**16), mode=MODES)
def test_argmax_subgroup(n, size, subgroups, extra, seed, mode):
    """The sub-group variant gives numpy's index for every sub-group size, including a local
    size that leaves a smaller last sub-group."""
    x = _data(n, seed, mode)
    assert _one_group("argmax_subgroup", x, size * subgroups + extra, size) == np.argmax(x)


@given(n=st.integers(1, 5000), groups=st.integers(1, 40),
       local=st.sampled_from([1, 7, 64, 256]), seed=st.integers(0, 2**16), mode=MODES)
def test_argmax_two_phase(n, groups, local, seed, mode):
    """Both launches, the host between them: launch 1's partials equal the host's per chunk
    (bit for bit, NaN as NaN), launch 2 gives numpy's index, also with more groups than
    elements (empty chunks)."""
    shape = {"n": n, "groups": groups}
    first = pipeline_stages("argmax_two_phase")[0]
    inputs = first.make_inputs(np.random.default_rng(seed), shape)
    inputs["x"] = _data(n, seed, mode)
    run_pipeline("argmax_two_phase", inputs, shape, (local,), jit=False)
    want = first.reference(inputs)
    np.testing.assert_array_equal(inputs["part_values"], want["part_values"])
    np.testing.assert_array_equal(inputs["part_indices"], want["part_indices"])
    assert inputs["out"][0] == np.argmax(inputs["x"])


def test_argmax_two_phase_ten_million():
    """10**7 elements (not a multiple of the work-group size) through both launches, with the
    maximum tied at both ends and a NaN-free input: the first of the tied indices wins."""
    n = 10**7 - 3
    shape = {"n": n, "groups": 1000}
    inputs = pipeline_stages("argmax_two_phase")[0].make_inputs(np.random.default_rng(5), shape)
    inputs["x"][[17, n - 1]] = np.float32(100.0)
    run_pipeline("argmax_two_phase", inputs, shape)
    assert inputs["out"][0] == 17


def test_pipeline_lists_its_stages_in_order_and_unknown_names_fail():
    """The two launches are stages 0 and 1 of one pipeline; a wrong name says which exist."""
    assert [s.name for s in pipeline_stages("argmax_two_phase")] == [
        "argmax_partials", "argmax_final"]
    with pytest.raises(SimulationError, match="argmax_two_phase"):
        pipeline_stages("argmax_three_phase")


def test_argmax_final_alone_reduces_host_partials():
    """Launch 2 verified alone: its generator builds launch 1's partials on the host."""
    spec = get_spec("argmax_final")
    shape = {"n": 4000, "groups": 33}
    inputs = spec.make_inputs(np.random.default_rng(9), shape)
    launch = spec.launch(inputs, shape, (16,))
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False)
    assert inputs["out"][0] == np.argmax(inputs["x"]) == spec.reference(inputs)["out"][0]
