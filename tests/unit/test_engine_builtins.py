"""Builtins against numpy, and the JIT and no-JIT modes against each other.

One kernel applies every unary math builtin so that a single compilation covers them all.
"""

import math

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel

UNARY = ["sqrt", "rsqrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc",
         "floor", "ceil", "trunc", "round", "fabs", "native_exp", "rint"]


def _reference(name, x64):
    with np.errstate(all="ignore"):
        table = {
            "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v), "exp": np.exp,
            "exp2": np.exp2, "exp10": lambda v: 10.0 ** v, "expm1": np.expm1, "log": np.log,
            "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sin": np.sin,
            "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
            "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
            "erf": np.vectorize(math.erf), "erfc": np.vectorize(math.erfc),
            "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
            "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5), "fabs": np.abs,
            "native_exp": np.exp, "rint": np.rint,
        }
        return table[name](x64).astype(np.float32)


@kernel
def all_unary(x, out, n):
    i = get_global_id(0)
    if i < n:
        v = x[i]
        out[0 * n + i] = clsim.sqrt(v)
        out[1 * n + i] = clsim.rsqrt(v)
        out[2 * n + i] = clsim.exp(v)
        out[3 * n + i] = clsim.exp2(v)
        out[4 * n + i] = clsim.exp10(v)
        out[5 * n + i] = clsim.expm1(v)
        out[6 * n + i] = clsim.log(v)
        out[7 * n + i] = clsim.log2(v)
        out[8 * n + i] = clsim.log10(v)
        out[9 * n + i] = clsim.log1p(v)
        out[10 * n + i] = clsim.sin(v)
        out[11 * n + i] = clsim.cos(v)
        out[12 * n + i] = clsim.tan(v)
        out[13 * n + i] = clsim.asin(v)
        out[14 * n + i] = clsim.acos(v)
        out[15 * n + i] = clsim.atan(v)
        out[16 * n + i] = clsim.sinh(v)
        out[17 * n + i] = clsim.cosh(v)
        out[18 * n + i] = clsim.tanh(v)
        out[19 * n + i] = clsim.erf(v)
        out[20 * n + i] = clsim.erfc(v)
        out[21 * n + i] = clsim.floor(v)
        out[22 * n + i] = clsim.ceil(v)
        out[23 * n + i] = clsim.trunc(v)
        out[24 * n + i] = clsim.round(v)
        out[25 * n + i] = clsim.fabs(v)
        out[26 * n + i] = clsim.native_exp(v)
        out[27 * n + i] = clsim.rint(v)


def _inputs():
    rng = np.random.default_rng(1)
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, np.inf, -np.inf, np.nan,
                        1e-40, 88.0, 89.0, -104.0, 3.4e38, 1e-7], np.float32)
    return np.concatenate([special, rng.uniform(-5, 5, 200).astype(np.float32),
                           rng.uniform(0, 100, 50).astype(np.float32)])


def _run_unary(jit):
    x = _inputs()
    n = x.size
    out = np.zeros(len(UNARY) * n, np.float32)
    clsim.run(all_unary, (n,), None, (x, out, np.int32(n)), jit=jit)
    return x, out.reshape(len(UNARY), n)


@pytest.fixture(scope="module")
def unary_results():
    return _run_unary(jit=True)


def _ulps(a, b):
    ai = a.view(np.int32).astype(np.int64)
    bi = b.view(np.int32).astype(np.int64)
    ai = np.where(ai < 0, -(ai & 0x7FFFFFFF), ai)
    bi = np.where(bi < 0, -(bi & 0x7FFFFFFF), bi)
    return np.abs(ai - bi)


@pytest.mark.parametrize("name", UNARY)
def test_unary_builtin_matches_numpy_within_one_ulp(unary_results, name):
    """Each math builtin is float32(f(float64 x)): within 1 ulp of numpy's float64 result."""
    x, out = unary_results
    got = out[UNARY.index(name)]
    want = _reference(name, x.astype(np.float64))
    both_nan = np.isnan(got) & np.isnan(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), name
    ulps = np.where(both_nan, 0, _ulps(got, want))
    assert ulps.max() <= 1, (name, x[np.argmax(ulps)], got[np.argmax(ulps)])


def test_jit_and_no_jit_give_identical_bytes_for_transcendentals(unary_results):
    """One implementation serves both modes, so even libm-backed results agree bit for bit."""
    _, jitted = unary_results
    _, plain = _run_unary(jit=False)
    assert jitted.tobytes() == plain.tobytes()


@kernel
def binary_ops(a, b, out, n):
    i = get_global_id(0)
    if i < n:
        x = a[i]
        y = b[i]
        out[0 * n + i] = clsim.fmax(x, y)
        out[1 * n + i] = clsim.fmin(x, y)
        out[2 * n + i] = clsim.fma(x, y, x)
        out[3 * n + i] = clsim.mad(x, y, x)
        out[4 * n + i] = clsim.pow(clsim.fabs(x), y)
        out[5 * n + i] = max(x, y)
        out[6 * n + i] = min(x, y)
        out[7 * n + i] = clsim.clamp(x, -1.0, 1.0)
        out[8 * n + i] = clsim.select(x, y, x < y)
        out[9 * n + i] = clsim.copysign(x, y)
        out[10 * n + i] = abs(x)
        out[11 * n + i] = clsim.mix(x, y, 0.25)
        out[12 * n + i] = x / y
        out[13 * n + i] = x * 0.1


def test_binary_builtins_match_numpy():
    """fmax/fmin (NaN-ignoring), fma (single rounding), mad, pow, min/max/clamp/select."""
    rng = np.random.default_rng(2)
    n = 300
    a = rng.uniform(-3, 3, n).astype(np.float32)
    b = rng.uniform(-3, 3, n).astype(np.float32)
    a[:4] = [np.nan, 1.0, np.nan, 2.0]
    b[:4] = [1.0, np.nan, np.nan, 2.0]
    out = np.zeros(14 * n, np.float32)
    clsim.run(binary_ops, (n,), (50,), (a, b, out, np.int32(n)), jit=False)
    out = out.reshape(14, n)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(out[0], np.fmax(a, b))
    np.testing.assert_array_equal(out[1], np.fmin(a, b))
    np.testing.assert_array_equal(out[2][4:], (a64 * b64 + a64).astype(np.float32)[4:])
    np.testing.assert_array_equal(out[3][4:], (a * b + a)[4:])
    np.testing.assert_allclose(out[4][4:], (np.abs(a64) ** b64)[4:].astype(np.float32),
                               rtol=2e-7)
    np.testing.assert_array_equal(out[5][4:], np.maximum(a, b)[4:])
    np.testing.assert_array_equal(out[6][4:], np.minimum(a, b)[4:])
    np.testing.assert_array_equal(out[7][4:], np.clip(a, -1, 1)[4:])
    np.testing.assert_array_equal(out[8][4:], np.where(a < b, b, a)[4:])
    np.testing.assert_array_equal(out[9], np.copysign(a, b))
    np.testing.assert_array_equal(out[10], np.abs(a))
    np.testing.assert_array_equal(out[11][4:], (a + (b - a) * np.float32(0.25))[4:])
    np.testing.assert_array_equal(out[12][4:], (a / b)[4:])
    # A bare Python float is a float32 literal: x * 0.1 is a float32 multiply.
    np.testing.assert_array_equal(out[13], a * np.float32(0.1))


def test_fma_rounds_once_where_separate_rounding_differs():
    """fma(a, b, c) is correctly rounded even when a*b+c in float32 steps would not be."""
    a = np.array([1.0 + 2.0**-23], np.float32)
    b = np.array([1.0 - 2.0**-23], np.float32)
    c = np.array([-1.0], np.float32)
    out = np.zeros(14, np.float32)
    clsim.run(binary_ops, (1,), (1,), (a, b, out, np.int32(1)), jit=False)
    exact = (1.0 + 2.0**-23) * (1.0 - 2.0**-23) + (1.0 + 2.0**-23)
    assert out[2] == np.float32(exact)
    del c
