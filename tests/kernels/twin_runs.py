"""Running a library spec's kernel and another form of it on the same inputs, for the tests
that check one source against its other form (tests/kernels/test_*_round_trip.py,
test_cl_twins_translated.py).

Hypothesis' first drawn case is its simplest (all zeros), where `a + b` and `a - b` agree:
each comparison also runs the spec's own generator on a small shape, whose inputs are random.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

import clsim
from clsim.spec import differing_elements
from verify.fuzz import spec_cases
from verify.testing import quick_shape_budget

# matmul's M, N, K: plain Python runs M*N*K steps (64^3 took 20-50 s a kernel, run twice);
# 24 leaves a partial 16-tile (matmul_tiled) in each dimension, which 64 did not.
LIMITS = {"n": 3000, "rows": 6, "cols": 300, "groups": 4, "M": 24, "N": 24, "K": 24}
# Kernels whose every block is costly in plain Python: quantize_q4_k's search for each
# block's scales took 3.9 s a run at its 32 blocks, a dequantize of 64 K-quant blocks (256
# work-items each) 0.8 s; a few blocks take the same paths (the drawn cases add the edges).
SPEC_LIMITS = {"quantize_q4_k": {"blocks": 8}, "dequantize_q4_k": {"blocks": 16},
               "dequantize_q6_k": {"blocks": 16}}
DRAWN_UNITS = 2048
DRAWN_ELEMENTS = 2048


def small_shape(spec) -> dict:
    """Each dimension of the default shape cut down, keeping every key."""
    limits = {**LIMITS, **SPEC_LIMITS.get(spec.name, {})}
    return {k: min(v, limits.get(k, 64)) for k, v in spec.default_shape.items()}


def small_launch(spec, seed: int = 7):
    """The spec's generated inputs at ``small_shape`` and its launch plan for them."""
    shape = small_shape(spec)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    return inputs, spec.launch(inputs, shape, None)


def generated_outputs(kernel, spec, seed: int = 7) -> dict:
    """The outputs of ``kernel`` run (plain Python) on the spec's generated inputs."""
    inputs, launch = small_launch(spec, seed)
    clsim.run(kernel, launch.global_size, launch.local_size, launch.args, jit=False,
              subgroup_size=spec.subgroup_size)
    return {out: inputs[out] for out in spec.outputs}


# The Python twin's outputs on the generated inputs, by spec name: both files compare other
# forms against them, and a worker that runs both runs the twin once.
_TWIN_OUTPUTS: dict[str, dict] = {}


def _expected_outputs(kernel, spec) -> dict:
    if kernel is not spec.kernel:
        return generated_outputs(kernel, spec)
    if spec.name not in _TWIN_OUTPUTS:
        outputs = generated_outputs(kernel, spec)
        for array in outputs.values():
            array.setflags(write=False)  # shared between tests: nobody may change them
        _TWIN_OUTPUTS[spec.name] = outputs
    return _TWIN_OUTPUTS[spec.name]


def assert_same_outputs(spec, kernel, other, what: str) -> None:
    """``other`` gives ``kernel``'s outputs bit for bit on the spec's generated inputs."""
    want, got = _expected_outputs(kernel, spec), generated_outputs(other, spec)
    for out in spec.outputs:
        assert differing_elements(got[out], want[out]) == 0, \
            f"{spec.name}: output '{out}' differs {what} (generated inputs)"


def drawn_units(spec) -> int:
    """The drawn cases' shape units: about ``DRAWN_ELEMENTS`` buffer elements, at most
    ``DRAWN_UNITS`` (a K-quant block is one unit of 256 work-items: 2048 units drew launches
    of 500 blocks, 5 s of plain Python a kernel, where a few blocks take the same paths)."""
    return quick_shape_budget(spec, elements=DRAWN_ELEMENTS, most=DRAWN_UNITS)


def _case_outputs(kernel, spec, case) -> dict:
    args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in case.args.items()}
    clsim.run(kernel, case.global_size, case.local_size, tuple(args.values()), jit=False,
              subgroup_size=spec.subgroup_size)
    return args


def assert_same_on_drawn_cases(spec, kernel, other, what: str, examples: int) -> None:
    """``other`` gives ``kernel``'s outputs bit for bit on the verifier's drawn cases (edge
    values included), kept small: both run without Numba."""

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(spec_cases(spec, max_elements=drawn_units(spec), vary_local=False))
    def agree(case):
        want, got = _case_outputs(kernel, spec, case), _case_outputs(other, spec, case)
        for out in spec.outputs:
            assert differing_elements(got[out], want[out]) == 0, \
                f"{spec.name}: output '{out}' differs {what}"

    agree()
