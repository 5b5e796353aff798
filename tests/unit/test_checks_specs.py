"""No false positives: every library kernel runs clean under ``checks="all"``.

Contract: each spec registered with ``clsim.spec`` (kernels_py/), run on a small shape with
its own launch plan and sub-group size, with ``checks="all"`` and ``report_all=True``, raises
nothing, reports no finding, warns about nothing and still matches its numpy reference. The
small shapes keep several work-groups wherever the launch plan has more than one, so the
cross-group rules are exercised. Plain-Python mode runs the same generated code as the JIT.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import clsim
from clsim.spec import all_specs

SPECS = all_specs()


# matmul's M, N, K at 24: 2 x 2 work-groups of 16 x 16 with a partial tile in each dimension
# (64^3 ran a quarter of a million checked steps, 5-20 s a kernel, with no partial K tile).
LIMITS = {"n": 3000, "rows": 6, "cols": 300, "groups": 4, "M": 24, "N": 24, "K": 24}
# quantize_q4_k: one work-item runs ~10**5 checked operations per block; its launch plan's
# group is 32 work-items, so the default 32 blocks were one full group and 8 are one group
# with idle work-items (the ib < nblocks guard) at a quarter of the time.
SPEC_LIMITS = {"quantize_q4_k": {"blocks": 8}}


def small_shape(spec) -> dict:
    """Each dimension of the default shape cut down, keeping every key."""
    limits = {**LIMITS, **SPEC_LIMITS.get(spec.name, {})}
    return {k: min(v, limits.get(k, 64)) for k, v in spec.default_shape.items()}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_library_kernel_has_no_findings(name):
    """checks="all" with report_all finds nothing in a correct library kernel, and the
    output still agrees with the reference."""
    spec = SPECS[name]
    shape = small_shape(spec)
    inputs = spec.make_inputs(np.random.default_rng(1), shape)
    launch = spec.launch(inputs, shape, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                           checks="all", report_all=True, subgroup_size=spec.subgroup_size,
                           jit=False)
    assert result.findings == [], "\n".join(str(f) for f in result.findings)
    rtol, atol = spec.tolerance
    for out, want in spec.reference(inputs).items():
        np.testing.assert_allclose(inputs[out], want, rtol=max(rtol, 1e-5), atol=atol)


def test_softmax_compiled_with_checks_has_no_findings():
    """The Numba-compiled softmax (the benchmark kernel) with checks="all" is clean too."""
    spec = SPECS["softmax"]
    shape = {"rows": 8, "cols": 1000}
    inputs = spec.make_inputs(np.random.default_rng(2), shape)
    launch = spec.launch(inputs, shape, None)
    result = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                       checks="all", report_all=True)
    assert result.findings == [] and not result.parallel
