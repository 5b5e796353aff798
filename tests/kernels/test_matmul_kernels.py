"""The matmul family (naive, local-memory tiled, sub-group, register-blocked) against numpy
over drawn M, N, K that are not multiples of the tile, the register block or the sub-group
(one row, one column, K = 1 included), and the variants that add in ascending k against each
other bit for bit.

Sweeps run in no-JIT mode (each new local or sub-group size would be a fresh Numba compile).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim.spec import get_spec

NAMES = ["matmul", "matmul_tiled", "matmul_subgroup", "matmul_regblock"]
DIMS = st.integers(1, 21)  # past one 16-tile and several 4-blocks


def _run(name, shape, seed=0, local=None, size=None):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    extra = {"subgroup_size": size} if size else {}
    launch = spec.launch(inputs, shape, local, **extra)
    clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=size or spec.subgroup_size)
    return spec, inputs


@given(m=DIMS, n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_variants_match_numpy_and_ascending_k_variants_agree_bitwise(m, n, k, seed):
    """Every variant matches numpy for any M, N, K; naive, tiled and register-blocked add the
    products in the same order, so they agree bit for bit (up to the sign of zero: a tile's
    zero padding adds +0.0)."""
    shape = {"M": m, "N": n, "K": k}
    results = {}
    for name in NAMES:
        spec, inputs = _run(name, shape, seed)
        rtol, atol = spec.tolerance
        np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=rtol,
                                   atol=atol)
        results[name] = inputs["c"] + np.float32(0.0)  # -0.0 -> +0.0
    for name in ("matmul_tiled", "matmul_regblock"):
        assert results[name].tobytes() == results["matmul"].tobytes(), name


@given(m=st.integers(1, 9), n=st.integers(1, 9), k=st.integers(1, 80),
       size=st.sampled_from([1, 2, 4, 8, 16, 32]), subgroups=st.integers(1, 3))
def test_subgroup_matmul_any_subgroup_size(m, n, k, size, subgroups):
    """The sub-group variant matches numpy for every power-of-two sub-group size and any
    number of sub-groups per work-group."""
    spec, inputs = _run("matmul_subgroup", {"M": m, "N": n, "K": k}, local=(size * subgroups,),
                        size=size)
    rtol, atol = spec.tolerance
    np.testing.assert_allclose(inputs["c"], spec.reference(inputs)["c"], rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", NAMES)
def test_untouched_padding_and_edges(name):
    """M = 1 and N, K one past the tile: every element of C is written (the NaN pre-fill is
    gone) and nothing past A, B or C is touched (the bounds check would raise)."""
    _, inputs = _run(name, {"M": 1, "N": 17, "K": 17})
    assert not np.isnan(inputs["c"]).any()
