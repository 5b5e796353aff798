"""float32 ``exp`` is a float64 polynomial rounded once (clsim/compiler/builtins/math_poly.py).

The rule (docs/language.md#numerics): clsim's float32 ``exp(x)`` is ``float32(E(x))`` where
``E`` is within 1 ulp of the exact double result, so it equals ``float32(libm exp(double x))``
except where the exact value lies within about an ulp of double of a float32 rounding midpoint;
there either neighbour of the midpoint may come out. JIT and no-JIT give the same bits.
An exhaustive comparison over every float32 in [-104, 88.7] against this machine's libm found no
difference and two inputs whose libm result lies within 2 double ulps of a midpoint (below).
"""

import math

import mpmath
import numpy as np
import pytest
from numba import njit

from clsim.runtime.jit_helpers import use
from verify.probe_kernels import evaluate

F = np.float32
EDGE = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72283935546875, 88.72284,
        88.7228, -87.33654, -103.97208, -103.9721, -104.0, -150.0, 150.0, 1e-30, -1e-30,
        2.0**-149, -(2.0**-149), 0.5, -0.5, 1e-8, 20.0, -20.0, 3.4028235e38, -3.4028235e38]
# float32 bit patterns whose exp lies within 2 double ulps of a float32 rounding midpoint,
# found by the exhaustive scan (all 2.2e9 inputs whose result is neither 0 nor inf).
MIDPOINT_BITS = [0xBBF0EDF1, 0xC16912CD]
mpmath.mp.prec = 200


def _libm32(x: float) -> F:
    if x != x:
        return F(x)
    return F(math.exp(x) if x <= 709.782712893384 else math.inf)


def _inputs(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([np.array(EDGE, F), rng.uniform(-110, 95, count).astype(F),
                           (rng.standard_normal(count) * 4).astype(F),
                           rng.uniform(-1e-3, 1e-3, count // 4).astype(F)])


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    nan = np.isnan(a) & np.isnan(b)
    return (a.view(np.uint32) == b.view(np.uint32)) | nan


def test_float32_exp_equals_libm_rounded_once_away_from_midpoints():
    """On edge values and 45 000 random inputs the JIT result is float32(libm exp(double))."""
    x = _inputs(20000, 1)
    (got,) = evaluate("exp", [x], [F], jit=True)
    want = np.array([_libm32(float(v)) for v in x], F)
    bad = ~_same_bits(got, want)
    assert not bad.any(), list(zip(x[bad][:5], got[bad][:5], want[bad][:5], strict=True))


def test_jit_and_no_jit_exp_are_the_same_bits():
    """The polynomial is the same IEEE double arithmetic in both modes (no contraction)."""
    x = _inputs(600, 2)
    (jit,) = evaluate("exp", [x], [F], jit=True)
    (plain,) = evaluate("exp", [x], [F], jit=False)
    assert _same_bits(jit, plain).all()


def test_float64_core_is_within_one_ulp_of_the_exact_value():
    """E(v) for doubles in the range whose float32 result is finite and nonzero: <= 1 ulp."""
    rng = np.random.default_rng(3)
    (helper,) = use("_exp_poly64")
    core = njit(lambda v: helper(v))  # (the shared helpers have no CPython wrapper)
    worst = 0.0
    for v in np.concatenate([rng.uniform(-104, 89, 3000), rng.uniform(-1, 1, 1000)]):
        got = core(np.float64(v))
        exact = mpmath.exp(mpmath.mpf(float(v)))
        worst = max(worst, float(abs(mpmath.mpf(float(got)) - exact)) / np.spacing(float(got)))
    assert worst <= 1.0, worst


@pytest.mark.parametrize("bits", MIDPOINT_BITS, ids=hex)
def test_midpoint_inputs_give_a_neighbour_of_the_midpoint(bits):
    """Constructed hard cases: the exact exp(x) lies within 3 double ulps of the midpoint
    between two float32s; clsim returns one of those two, the same in both modes."""
    x = np.array([bits], np.uint32).view(F)
    exact = mpmath.exp(mpmath.mpf(float(x[0])))
    low = F(float(exact))
    low = low if mpmath.mpf(float(low)) <= exact else np.nextafter(low, F(-np.inf))
    high = np.nextafter(low, F(np.inf))
    midpoint = (mpmath.mpf(float(low)) + mpmath.mpf(float(high))) / 2
    assert abs(exact - midpoint) <= 3 * np.spacing(float(exact))  # a hard case indeed
    (jit,) = evaluate("exp", [x], [F], jit=True)
    (plain,) = evaluate("exp", [x], [F], jit=False)
    assert jit[0] in (low, high)
    assert jit.view(np.uint32)[0] == plain.view(np.uint32)[0]
