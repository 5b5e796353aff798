"""Regression tests for OpenCL C's exact semantics of builtins (issue 11, "Wrong today").

Each case is one builtin call on the simulator in both modes, compared bit for bit with the
value the OpenCL C spec (or, where it leaves a choice, the devices) gives. A NaN matches any NaN.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel
from verify.probe_kernels import evaluate, evaluate_many

F, D = np.float32, np.float64
NAN, INF = np.nan, np.inf

# (builtin, argument dtype, arguments, expected result)
CASES = [
    ("pow", D, (0.0, 2.0), 0.0),
    ("pow", D, (-2.0, INF), INF),
    ("pow", D, (-0.0, -1.0), -INF),
    ("pow", D, (-0.0, 3.0), -0.0),
    ("pow", D, (-0.0, 2.0), 0.0),
    ("pow", D, (NAN, 0.0), 1.0),
    ("pow", D, (1.0, NAN), 1.0),
    ("pow", D, (-1.0, -INF), 1.0),
    ("pow", D, (0.5, -INF), INF),
    ("pow", D, (-INF, -3.0), -0.0),
    ("pow", D, (-2.0, 0.5), NAN),
    ("pow", D, (-2.0, 3.0), -8.0),
    ("pow", F, (10.0, 1e10), INF),
    ("powr", D, (-2.0, 2.0), NAN),
    ("powr", D, (0.0, 0.0), NAN),
    ("powr", D, (1.0, INF), NAN),
    ("powr", D, (INF, 0.0), NAN),
    ("powr", D, (0.0, -1.0), INF),
    ("powr", D, (2.0, 3.0), 8.0),
    ("floor", D, (-0.0,), -0.0),
    ("ceil", F, (-0.5,), -0.0),
    ("trunc", D, (-0.5,), -0.0),
    ("floor", D, (4500000000000000.5,), 4500000000000000.0),
    ("ceil", D, (4500000000000000.5,), 4500000000000001.0),
    ("trunc", D, (-4500000000000000.5,), -4500000000000000.0),
    ("round", D, (4500000000000000.5,), 4500000000000001.0),
    ("rint", D, (4500000000000000.5,), 4500000000000000.0),
    ("round", D, (0.49999999999999994,), 0.0),
    ("round", F, (-0.25,), -0.0),
    ("round", F, (-2.5,), -3.0),
    ("rint", F, (-2.5,), -2.0),
    ("sign", F, (NAN,), 0.0),
    ("sign", D, (-0.0,), -0.0),
    ("clamp", F, (NAN, -1.0, 1.0), -1.0),
    ("clamp", D, (5.0, -1.0, 1.0), 1.0),
    ("fabs", F, (-NAN,), NAN),
    ("fma", D, (1e308, 1e308, -INF), -INF),
    ("fma", D, (1 + 2**-30, 1 + 2**-30, -1.0), 2**-29 + 2**-60),
    ("fma", D, (2.0**600, 2.0**600, -INF), -INF),
    ("fma", D, (1.5 * 2.0**1023, 2.0, -(2.0**1023) * 1.75), 1.25 * 2.0**1023),
    ("exp", D, (709.5,), math.exp(709.5)),
    ("expm1", D, (709.7,), math.expm1(709.7)),
    ("exp10", D, (308.2,), 10.0**308.2),
    ("sinh", D, (710.0,), math.sinh(710.0)),
    ("cosh", D, (-710.4,), math.cosh(-710.4)),
    ("exp", D, (710.0,), INF),
]


def _bits_equal(got, want) -> bool:
    if np.isnan(want):
        return bool(np.isnan(got))
    return got.tobytes() == np.asarray(want, got.dtype).tobytes()


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_builtin_values_are_the_specs(jit):
    """Every case above gives the spec's value exactly (sign of zero included); no-JIT mode
    never raises where C returns a value. One launch per type and arity: every builtin of that
    shape runs on every row (one compile instead of one per builtin), each row's own builtin
    is checked."""
    groups: dict = {}
    for name, dt, args, want in CASES:
        groups.setdefault((dt, len(args)), []).append((name, args, want))
    wrong = []
    for (dt, nargs), rows in groups.items():
        names = list(dict.fromkeys(name for name, _, _ in rows))
        cols = [np.array([args[k] for _, args, _ in rows], dt) for k in range(nargs)]
        got = evaluate_many(names, cols, dt, jit=jit)
        for j, (name, args, want) in enumerate(rows):
            value = got[names.index(name), j:j + 1]
            if not _bits_equal(value, want):
                wrong.append((name, dt.__name__, args, value[0], want))
    assert wrong == []


def _exact_fma(a, b, c) -> float:
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    try:
        return float(exact)  # Fraction -> float rounds correctly (to nearest, ties to even)
    except OverflowError:
        return float("inf") if exact > 0 else float("-inf")


def _fma_inputs():
    rng = np.random.default_rng(11)
    n = 3000
    a = rng.uniform(1, 2, n) * 2.0 ** rng.integers(-500, 500, n)
    b = rng.uniform(1, 2, n) * 2.0 ** rng.integers(-500, 500, n)
    # c near -a*b makes the sum cancel: the case where rounding twice goes wrong.
    c = -(a * b) * (1 + rng.uniform(-1e-9, 1e-9, n))
    c[::3] = rng.uniform(-1, 1, n)[::3] * 2.0 ** rng.integers(-1074, 1000, n)[::3]
    # Ties: a*b exactly halfway between two doubles, c a tiny nudge either way or zero.
    a[:200] = 1 + 2.0**-52
    b[:200] = 1 + 2.0**-1 + 2.0**-52 * rng.integers(0, 2**20, 200)
    c[:200] = rng.choice([0.0, 2.0**-200, -(2.0**-200)], 200)
    # Tiny results: subnormal range, where the final scaling must round only once.
    a[200:400] = rng.uniform(1, 2, 200) * 2.0**-540
    b[200:400] = rng.uniform(1, 2, 200) * 2.0**-530
    c[200:400] = rng.uniform(-1, 1, 200) * 2.0**-1060
    return a, b, c


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_double_fma_is_correctly_rounded(jit):
    """fma(a, b, c) in double equals the exactly computed a*b+c rounded once (Fraction), also
    for cancellation, ties, huge and subnormal results."""
    a, b, c = _fma_inputs()
    (got,) = evaluate("fma", [a, b, c], [D], jit=jit)
    want = np.array([_exact_fma(x, y, z) for x, y, z in zip(a, b, c, strict=True)])
    bad = np.flatnonzero(got.view(np.int64) != want.view(np.int64))
    assert bad.size == 0, [(a[k], b[k], c[k], got[k], want[k]) for k in bad[:5]]


def test_float_fma_is_correctly_rounded():
    rng = np.random.default_rng(12)
    a = rng.uniform(-4, 4, 2000).astype(F)
    b = rng.uniform(-4, 4, 2000).astype(F)
    c = (-(a.astype(D) * b) * (1 + rng.uniform(-1e-6, 1e-6, 2000))).astype(F)
    (got,) = evaluate("fma", [a, b, c], [F], jit=True)
    want = np.array([np.float32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                     for x, y, z in zip(a, b, c, strict=True)], F)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_float_to_64_bit_integer_conversions_are_exact_in_range(jit):
    """convert_long/convert_ulong of in-range floats are exact (no clamp at 9.2e18)."""
    x = np.array([9.22e18, -9.22e18, 2.0**62, -(2.0**63), 1.5, -1.5], F)
    (got,) = evaluate("convert_long", [x], [np.int64], jit=jit)
    assert got.tolist() == [int(v) for v in [9.22e18, -9.22e18, 2.0**62, -(2.0**63), 1, -1]] or \
        got.tolist() == [int(np.float32(v)) if abs(v) > 2 else int(v)
                         for v in [9.22e18, -9.22e18, 2.0**62, -(2.0**63), 1.5, -1.5]]
    u = np.array([1e19, 2.0**63, 2.0**64 - 2.0**40, 0.5, 1e20], F)
    (got,) = evaluate("convert_ulong", [u], [np.uint64], jit=jit)
    assert got.tolist() == [int(np.float32(1e19)), 2**63, int(np.float32(2.0**64 - 2.0**40)),
                            0, 2**64 - 1]
    d = np.array([1.8e19, 9.3e18, np.nan], D)
    (got,) = evaluate("convert_ulong", [d], [np.uint64], jit=jit)
    assert got.tolist() == [18000000000000000000, 9300000000000000000, 0]


@kernel
def divide(a, b, q, r):
    i = get_global_id(0)
    q[i] = a[i] // b[i]
    r[i] = a[i] % b[i]


DIVISION = {
    np.uint64: [(2**53 + 1, 1), (2**64 - 1, 1), (2**64 - 1, 3), (2**64 - 1, 2**63), (5, 7)],
    np.int64: [(-(2**63), -1), (-7, 2), (7, -2), (-(2**63), 3), (2**63 - 1, -(2**62))],
    np.int32: [(-(2**31), -1), (-7, 2), (7, -2), (2**31 - 1, 2)],
    np.uint32: [(2**32 - 1, 7), (2**31, 2**31 + 1)],
}


def _c_div(a, b, bits, signed):
    if signed and b == -1:
        q = -a
        q = (q + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
        return q, 0
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return q, a - q * b


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("dtype", list(DIVISION), ids=lambda t: t.__name__)
def test_integer_division_is_exact_and_identical_in_both_modes(jit, dtype):
    """// and % truncate like C for every width (ulong never goes through float64);
    LONG_MIN // -1 wraps to LONG_MIN and LONG_MIN % -1 is 0 in both modes."""
    rows = DIVISION[dtype]
    a = np.array([r[0] for r in rows], dtype)
    b = np.array([r[1] for r in rows], dtype)
    q, r = np.zeros_like(a), np.zeros_like(a)
    clsim.run(divide, (a.size,), None, (a, b, q, r), jit=jit)
    info = np.iinfo(dtype)
    want = [_c_div(x, y, info.bits, info.min < 0) for x, y in rows]
    assert list(zip(q.tolist(), r.tolist(), strict=True)) == want
