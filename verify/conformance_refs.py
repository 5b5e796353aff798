"""References and bounds for ``verify.conformance``: what each builtin should give, and by how
many ULPs the OpenCL C spec lets it miss (full profile, OpenCL C spec section 7.4).

A reference is computed in float64 with C99's special values (numpy's ufuncs, ``math``), then
rounded once to float32; for double it is mpmath at 200 bits wherever the inputs and result are
finite and nonzero (the exact cases and special values stay numpy's, which follow C99).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

try:
    import mpmath
except ImportError:  # the double references then fall back on float64 (about 1 ulp)
    mpmath = None

_CR = 0  # correctly rounded / exact
BOUNDS: dict[str, float | None] = {
    "sqrt": 3, "rsqrt": 2, "exp": 3, "exp2": 3, "exp10": 3, "expm1": 3, "log": 3, "log2": 3,
    "log10": 3, "log1p": 2, "sin": 4, "cos": 4, "tan": 5, "asin": 4, "acos": 4, "atan": 5,
    "sinh": 4, "cosh": 4, "tanh": 5, "asinh": 4, "acosh": 4, "atanh": 5, "asinpi": 5,
    "acospi": 5, "atanpi": 5, "cbrt": 2, "erf": 16, "erfc": 16, "sinpi": 4, "cospi": 4,
    "tanpi": 6, "atan2": 6, "atan2pi": 6, "hypot": 4, "pow": 16, "powr": 16, "pown": 16,
    "rootn": 16, "floor": _CR, "ceil": _CR, "trunc": _CR, "round": _CR, "rint": _CR,
    "fabs": _CR, "copysign": _CR, "fmod": _CR, "remainder": _CR, "fdim": _CR, "fmax": _CR,
    "fmin": _CR, "maxmag": _CR, "minmag": _CR, "nextafter": _CR, "logb": _CR, "ilogb": _CR,
    "ldexp": _CR, "fma": _CR, "sign": _CR, "step": _CR, "degrees": 2, "radians": 2,
    "half_exp": 8192, "half_exp2": 8192, "half_exp10": 8192, "half_log": 8192,
    "half_log2": 8192, "half_log10": 8192, "half_sqrt": 8192, "half_rsqrt": 8192,
    "half_sin": 8192, "half_cos": 8192, "half_tan": 8192,
    "native_exp": None, "native_exp2": None, "native_exp10": None, "native_log": None,
    "native_log2": None, "native_log10": None, "native_sqrt": None, "native_rsqrt": None,
    "native_sin": None, "native_cos": None, "native_tan": None,
}
# Where the spec leaves the sign of a zero result open (fmax(-0, +0) may be either).
ZERO_SIGN_FREE = {"fmax", "fmin", "maxmag", "minmag"}
DOUBLE_BOUNDS = {"sqrt": _CR}


def bound(name: str, dt) -> float | None:
    if np.dtype(dt) == np.float64 and name in DOUBLE_BOUNDS:
        return DOUBLE_BOUNDS[name]
    return BOUNDS[name]


def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


def _round_away(x):
    t = np.trunc(x)
    r = t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)
    return np.where(np.isfinite(x), np.copysign(r, x), x)


def _logb(x):
    _m, e = np.frexp(x)
    r = (e - 1).astype(np.float64)
    return np.where(x == 0, -np.inf, np.where(np.isinf(x), np.inf, np.where(np.isnan(x), x, r)))


def _pi_fn(kind):
    def one(x):
        if not math.isfinite(x):
            return math.nan
        if mpmath is None:
            return {"sin": math.sin, "cos": math.cos}[kind](math.pi * x) if kind != "tan" \
                else math.tan(math.pi * x)
        with mpmath.workprec(200):
            s, c = mpmath.sinpi(x), mpmath.cospi(x)
            if kind == "sin":
                return math.copysign(0.0, x) if s == 0 else float(s)
            if kind == "cos":
                return float(c)
            if c == 0:
                return math.copysign(math.inf, float(s))
            return math.copysign(0.0, x * float(c)) if s == 0 else float(s / c)
    return _vec(one)


def _powr(x, y):
    if x != x or y != y or x < 0:
        return math.nan
    if x == 0:
        return math.nan if y == 0 else (math.inf if y < 0 else 0.0)
    if x == math.inf and y == 0:
        return math.nan
    if x == 1:
        return math.nan if math.isinf(y) else 1.0
    return float(np.power(x, y))


def _rootn(x, n):
    n = int(n)
    if x != x or n == 0:
        return math.nan
    odd = n % 2 != 0
    if x == 0:
        return (math.copysign(math.inf, x) if odd else math.inf) if n < 0 else (
            x if odd else 0.0)
    if x < 0 and not odd:
        return math.nan
    if math.isinf(x):
        r = 0.0 if n < 0 else math.inf
        return -r if x < 0 else r
    r = abs(x) ** (1.0 / n)
    return -r if x < 0 else r


def _rootn_mp(x, n) -> float:
    r = _rootn(x, n)
    if not math.isfinite(r) or r == 0 or not math.isfinite(x):
        return r
    with mpmath.workprec(200):
        v = float(mpmath.root(mpmath.mpf(abs(x)), n))
    return -v if x < 0 else v


def _fma(a, b, c):
    if all(map(math.isfinite, (a, b, c))):
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        try:
            return float(exact) if exact != 0 else (a * b + c)
        except OverflowError:
            return math.copysign(math.inf, exact)
    if math.isinf(c) and math.isfinite(a) and math.isfinite(b):
        return c
    return a * b + c


def _fma_float32(a, b, c) -> np.float32:
    """fma rounded once to float32 from the exact value (float64 first would round twice)."""
    if not all(map(math.isfinite, (a, b, c))) or a * b + c == 0:
        return np.float32(_fma(a, b, c))
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    f = np.float32(float(exact))
    if not np.isfinite(f):  # overflow at FLT_MAX + half an ulp (2**128 - 2**103)
        big = abs(exact) >= Fraction(2**128 - 2**103)
        return np.float32(math.copysign(math.inf if big else float(np.finfo(np.float32).max),
                                        exact))
    best = f
    for g in (np.nextafter(f, np.float32(-np.inf)), np.nextafter(f, np.float32(np.inf))):
        if not np.isfinite(g):
            continue
        dg, db = abs(Fraction(float(g)) - exact), abs(Fraction(float(best)) - exact)
        if dg < db or (dg == db and int(g.view(np.int32)) % 2 == 0):
            best = g
    return best


def _mag(pick):
    def one(x, y):
        if abs(x) != abs(y) and x == x and y == y:
            return x if pick(abs(x), abs(y)) else y
        return float(np.fmax(x, y) if pick(2, 1) else np.fmin(x, y))
    return _vec(one)


_NUMPY = {
    "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x), "exp": np.exp, "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "asinpi": lambda x: np.arcsin(x) / np.pi, "acospi": lambda x: np.arccos(x) / np.pi,
    "atanpi": lambda x: np.arctan(x) / np.pi, "cbrt": np.cbrt, "erf": _vec(math.erf),
    "erfc": _vec(math.erfc), "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": _round_away, "rint": np.rint, "fabs": np.fabs, "logb": _logb,
    "sinpi": _pi_fn("sin"), "cospi": _pi_fn("cos"), "tanpi": _pi_fn("tan"),
    "copysign": np.copysign, "fmod": np.fmod, "hypot": np.hypot, "atan2": np.arctan2,
    "atan2pi": lambda y, x: np.arctan2(y, x) / np.pi, "pow": np.power, "powr": _vec(_powr),
    "remainder": _vec(lambda x, y: math.nan if (y == 0 or math.isinf(x) or x != x or y != y)
                      else math.remainder(x, y)),
    "fdim": lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan,
                                  np.where(x > y, x - y, 0.0)),
    "fmax": np.fmax, "fmin": np.fmin, "maxmag": _mag(lambda a, b: a > b),
    "minmag": _mag(lambda a, b: a < b),
    "sign": lambda x: np.where(np.isnan(x), 0.0, np.where(x == 0, x, np.sign(x))),
    "step": lambda e, x: np.where(x < e, 0.0, 1.0),
    "degrees": lambda x: x * (180.0 / math.pi), "radians": lambda x: x * (math.pi / 180.0),
    "ldexp": lambda x, n: np.ldexp(x, n.astype(np.int64)), "pown": np.power,
    "rootn": _vec(_rootn), "fma": _vec(_fma), "ilogb": None, "nextafter": None,
}
_MP = {
    "exp": "exp", "expm1": "expm1", "log": "log", "log10": "log10", "log1p": "log1p",
    "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "asinh", "acosh": "acosh",
    "atanh": "atanh", "cbrt": "cbrt", "erf": "erf", "erfc": "erfc", "sqrt": "sqrt",
}


def _base(name: str) -> str:
    return name.removeprefix("half_").removeprefix("native_")


def reference(name: str, cols, dt) -> np.ndarray:
    """The correctly rounded result of ``name`` on the columns, in type ``dt``."""
    with np.errstate(all="ignore"):  # overflow to inf and NaN results are expected values
        return _reference(name, cols, dt)


def _reference(name: str, cols, dt) -> np.ndarray:
    base = _base(name)
    args = [c.astype(np.float64) if c.dtype.kind == "f" else c for c in cols]
    if base == "nextafter":
        return np.nextafter(cols[0].astype(dt), cols[1].astype(dt))
    if base == "ilogb":
        x = args[0]
        _m, e = np.frexp(x)
        r = np.where(x == 0, -(2.0**31), np.where(~np.isfinite(x), 2.0**31 - 1, e - 1.0))
        return r.astype(dt)
    if base == "rootn" and np.dtype(dt) == np.float64 and mpmath is not None:
        return np.array([_rootn_mp(a, int(n)) for a, n in zip(*args, strict=True)])
    if base == "fma" and np.dtype(dt) == np.float32:
        return np.array([_fma_float32(*v) for v in zip(*args, strict=True)], np.float32)
    with np.errstate(all="ignore"):
        value = np.asarray(_NUMPY[base](*args), np.float64)
    if np.dtype(dt) == np.float64 and mpmath is not None and base in _MP:
        value = _mp_refine(value, args[0], _MP[base])
    with np.errstate(all="ignore"):
        return value.astype(dt)


def _mp_refine(value, x, fname: str) -> np.ndarray:
    out = value.copy()
    fn = getattr(mpmath, fname)
    with mpmath.workprec(200):
        for k in np.flatnonzero(np.isfinite(value) & (value != 0) & np.isfinite(x)):
            try:
                out[k] = float(fn(mpmath.mpf(float(x[k]))))
            except (ValueError, ZeroDivisionError, OverflowError, TypeError):
                pass
    return out
