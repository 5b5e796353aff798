"""verify.reference: the simulator against a spec's numpy reference, within the spec's
tolerance or the output's own policy; the reference rounded to the output dtype first."""

from __future__ import annotations

import numpy as np

from clsim.spec import EXACT, magnitude, ulp
from verify.reference import compare_reference

X = {"x": np.array([1.0, 2.0, 3.0], np.float32)}


def test_within_tolerance_agrees_and_outside_names_both_values():
    ref = lambda inputs: {"y": inputs["x"].astype(np.float64) * 2}  # noqa: E731
    near = {"y": np.array([2.0, 4.0, 6.0001], np.float32)}
    assert compare_reference(ref, X, near, (1e-4, 0.0), {"y": EXACT}).equal
    far = {"y": np.array([2.0, 4.5, 7.0], np.float32)}
    result = compare_reference(ref, X, far, (1e-4, 0.0), {"y": EXACT})
    (diff,) = result.differences
    assert (diff.n_different, diff.flat_index) == (2, 1)
    assert "simulator 4.5, reference 4.0" in result.describe()


def test_output_policy_also_accepts():
    """Outside rtol/atol but within the output's ulp or magnitude policy: agreement."""
    ref = lambda inputs: {"y": np.array([1.0], np.float64)}  # noqa: E731
    sim = {"y": np.array([np.nextafter(np.float32(1), np.float32(2))], np.float32)}
    assert not compare_reference(ref, X, sim, (0.0, 0.0), {"y": EXACT}).equal
    assert compare_reference(ref, X, sim, (0.0, 0.0), {"y": ulp(1)}).equal
    wide = magnitude(4, scale=lambda inputs: np.float64(1.0))
    assert compare_reference(ref, X, sim, (0.0, 0.0), {"y": wide}).equal


def test_overflow_rounds_like_the_kernel_and_a_failing_reference_is_said():
    big = np.float32(3e38)
    ref = lambda inputs: {"y": np.array([float(big) * 2])}  # noqa: E731  (finite in float64)
    assert compare_reference(ref, X, {"y": np.array([np.inf], np.float32)}, (1e-5, 0),
                             {"y": EXACT}).equal

    def broken(inputs):
        raise KeyError("rows")

    result = compare_reference(broken, X, {"y": np.zeros(1, np.float32)}, (0, 0), {})
    assert not result.equal and "not compared, the reference raised KeyError" in \
        result.describe()
