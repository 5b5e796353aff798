"""The geometric functions of ``clsim conformance`` (dot, cross, length, distance, normalize on
float, float2-4, double, double2-4; fast_length, fast_distance, fast_normalize on float,
float2-4) and ``any``/``all`` on int4 and char16, as ``verify.conformance_vectors`` groups.

Edge rows per width: ±0 vectors, denormals (alone and in pairs, whose squares underflow),
components whose squares underflow or overflow the type (length 5e-20 from (3e-20, 4e-20),
(1e30, 1e30) in float, 1e200 in double, FLT_MAX), cancelling products, ±inf, NaN, inf with
NaN; then random vectors of mixed magnitudes, and b = a, b = -a pairs for distance.

Bounds (OpenCL C 7.4, full profile, width n): dot max^2 (2n - 1) eps and each cross component
max^2 3 eps absolute (eps = FLT_EPSILON for float and, as the spec's double table writes it,
for double too; ``strict=True`` uses DBL_EPSILON); length 2.75 + 0.5n ulp (double 5.5 + n),
distance 2.5 + 2n (5.5 + 2n), normalize 2 + n (4.5 + n), fast_length 8191.5 + n,
fast_distance 8191.5 + 2n, fast_normalize 8192 + n. length, distance and normalize are judged
everywhere, overflow and underflow included (OpenCL C 7.5.1: "without overflow or
extraordinary precision loss due to underflow"), with normalize's special cases (zero vector
returned, NaN gives NaNs, inf components become ±1 and the others ±0). Not judged: dot and
cross where a product or the sum of |products| leaves the type's range (the spec asks no
overflow-free dot); length/distance of a vector with both an inf and a NaN; the fast_ forms
off finite vectors whose sum of squares is in [FLT_MIN, FLT_MAX] (the spec lets them
overflow or return p there), but fast_normalize of a zero vector (p). With an inf or NaN
input, dot and cross must give IEEE's value exactly. References: exact rationals (dot,
cross) and mpmath at 200 bits, rounded once (to double, then to float: within 2^-29 ulp).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from verify.conformance_cases import Absolute, Call, Group

WIDTHS = (1, 2, 3, 4)
_C = {"float32": "float", "float64": "double"}
_BOUNDS = {  # name -> (float, double): ulp bound as a function of the width
    "length": (lambda n: 2.75 + 0.5 * n, lambda n: 5.5 + n),
    "distance": (lambda n: 2.5 + 2 * n, lambda n: 5.5 + 2 * n),
    "normalize": (lambda n: 2 + n, lambda n: 4.5 + n),
    "fast_length": (lambda n: 8191.5 + n, None),
    "fast_distance": (lambda n: 8191.5 + 2 * n, None),
    "fast_normalize": (lambda n: 8192 + n, None),
}


def _edges(t: str) -> list[tuple]:
    """Edge vectors (four components; a width takes the first n)."""
    info = np.finfo(t)
    sub, tiny, top = float(np.nextafter(info.dtype.type(0), 1)), float(info.tiny), float(info.max)
    big, small = (1e30, 3e-20) if t == "float32" else (1e200, 3e-170)
    inf, nan = np.inf, np.nan
    return [(0, 0, 0, 0), (-0.0, -0.0, -0.0, -0.0), (-0.0, 0, -0.0, 0), (1, 1, 1, 1),
            (1, -1, 1, -1), (3, 4, 0, 0), (sub, 0, 0, 0), (sub, sub, sub, sub),
            (3 * sub, 4 * sub, 0, 0), (tiny, tiny, 0, -tiny), (small, small * 4 / 3, 0, 0),
            (big, big, big, big), (-big, 1, big, 0), (top, 0, 0, 0), (top, top, 0, 0),
            (top / 2, -top / 2, top / 2, 0), (inf, 1, 0, 0), (-inf, inf, 0, 1),
            (0, 0, -inf, 0), (nan, 0, 0, 0), (1, nan, 1, 1), (inf, nan, 0, 0),
            (1e18 if t == "float32" else 1e150, 1, -1e18 if t == "float32" else -1e150, 3),
            (2.0**24 + 1, 1, -(2.0**24), 0.5), (1, 1e-8, -1e-8, 1e-8), (0, -2.5, 0, 0)]


def geometric_columns(t: str, width: int, seed: int, draws: int):
    """Two columns of ``width``-vectors (flattened, ``t``): edge rows, random rows."""
    rng = np.random.default_rng(seed)
    edge = np.array(_edges(t), np.float64)[:, :width]
    rows = max(draws // width, 8)
    scale = 10.0 ** rng.integers(-12, 13, (rows, 1)) if t == "float32" else \
        10.0 ** rng.integers(-150, 151, (rows, 1))
    mixed = rng.standard_normal((2, rows, width)) * scale * 10.0 ** rng.integers(
        -3, 4, (2, rows, width))
    a = np.concatenate([edge, edge, edge[::-1], mixed[0]])
    half = rows // 2
    b = np.concatenate([np.roll(edge, 5, axis=0), edge, -edge[::-1],
                        mixed[1][:half], mixed[0][half:]])  # b = a, b = -a, then b near a
    b[-(rows - half):] += mixed[1][half:] * 1e-3
    with np.errstate(over="ignore"):
        return a.astype(t).ravel(), b.astype(t).ravel()


def _mp():
    import mpmath

    ctx = mpmath.mp.clone()
    ctx.prec = 200
    return ctx


def _round(values, t: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.array([float(v) for v in values], np.float64).astype(t)


def _products_fit(x, y, top: float) -> bool:
    """Every finite product normal or zero, and the sum of |products| within the range: the
    spec's absolute bound assumes products that neither overflow nor round in the denormal
    range (whose spacing, 2^-149 in float, exceeds max^2 (2n-1) FLT_EPSILON there)."""
    prods = [abs(Fraction(a) * Fraction(b)) for a, b in zip(x, y, strict=True)
             if np.isfinite(a) and np.isfinite(b)]
    tiny = Fraction(float(np.finfo(np.float64 if top > 1e300 else np.float32).tiny))
    return sum(prods, Fraction(0)) <= Fraction(top) and all(p == 0 or p >= tiny for p in prods)


def _float(q: Fraction) -> float:
    """The double nearest ``q`` (±inf beyond DBL_MAX)."""
    try:
        return float(q)
    except OverflowError:
        return np.inf if q > 0 else -np.inf


def _dot(x, y, eps, top):
    """(value, tolerance, defined) of one dot product."""
    if all(np.isfinite(x)) and all(np.isfinite(y)):
        exact = sum((Fraction(a) * Fraction(b) for a, b in zip(x, y, strict=True)), Fraction(0))
        big = max(abs(v) for v in (*x, *y))
        tol = big * big * (2 * len(x) - 1) * eps
        return _float(exact), tol, _products_fit(x, y, top) and tol <= top
    with np.errstate(all="ignore"):
        ieee = float(np.sum(np.asarray(x, np.float64) * np.asarray(y, np.float64)))
    return ieee, 0.0, _products_fit(x, y, top)


def _cross(x, y, eps, top):
    """Per component (value, tolerance, defined): xyz, then w = 0 exactly for 4-vectors."""
    finite = [abs(v) for v in (*x[:3], *y[:3]) if np.isfinite(v)]
    big = max(finite, default=0.0)
    out = []
    for c in range(3):
        i, j = (c + 1) % 3, (c + 2) % 3
        ops = (x[i], y[j], x[j], y[i])
        fits = _products_fit((x[i], x[j]), (y[j], y[i]), top)
        if all(np.isfinite(ops)):
            exact = Fraction(x[i]) * Fraction(y[j]) - Fraction(x[j]) * Fraction(y[i])
            tol = big * big * 3 * eps
            out.append((_float(exact), tol, fits and tol <= top))
        else:
            with np.errstate(all="ignore"):
                ieee = float(np.float64(x[i]) * y[j] - np.float64(x[j]) * y[i])
            out.append((ieee, 0.0, fits))
    return out + [(0.0, 0.0, True)] * (len(x) - 3)


def _norm2(mp, v):
    return mp.fsum(mp.mpf(c) ** 2 for c in v)


def _length(mp, v) -> tuple[float, bool]:
    """(length, defined): inf wins over finite, NaN gives NaN, both together not judged."""
    has_inf, has_nan = any(np.isinf(v)), any(np.isnan(v))
    if has_inf or has_nan:
        return (np.inf if has_inf else np.nan), not (has_inf and has_nan)
    return float(mp.sqrt(_norm2(mp, v))), True


def _difference(x, y, mp):
    """x - y exactly (mpf) for finite vectors; IEEE's values in double where a component is
    inf or NaN (the result is then inf or NaN whatever the finite ones are)."""
    if all(np.isfinite(x)) and all(np.isfinite(y)):
        return [mp.mpf(a) - mp.mpf(b) for a, b in zip(x, y, strict=True)]
    with np.errstate(invalid="ignore"):
        return (np.asarray(x, np.float64) - np.asarray(y, np.float64)).tolist()


def _finite(v) -> bool:
    """Finite vector: mpf components are (``_difference`` makes them of finite inputs only)."""
    return all(not isinstance(c, float) or np.isfinite(c) for c in v)


def _normalize(mp, v) -> list[float]:
    if any(np.isnan(v)):
        return [np.nan] * len(v)
    if all(c == 0 for c in v):
        return list(v)
    if any(np.isinf(v)):  # OpenCL C 7.5.1
        v = [float(np.copysign(1.0, c)) if np.isinf(c) else 0.0 * c for c in v]
    r = mp.sqrt(_norm2(mp, v))
    return [float(mp.mpf(c) / r) if c != 0 else c for c in v]


def _sum_sq_in_range(mp, v, t: str) -> bool:
    info = np.finfo(t)
    if not _finite(v):
        return False
    s = mp.fsum(mp.mpf(c) ** 2 for c in v)
    return float(info.tiny) <= s <= float(info.max)


def _per_vector(values, n: int, dtype) -> np.ndarray:
    """A result per vector, at the vector's index of an n-long output (the rest not judged)."""
    out = np.zeros(n, dtype)
    out[:len(values)] = values
    return out


def _mask(defined_rows, n: int) -> np.ndarray:
    out = np.zeros(n, bool)
    out[:len(defined_rows)] = defined_rows
    return out


def _scalar_calls(x, y, t, w, n, eps, top) -> list[Call]:
    mp = _mp()
    dots = [_dot(a, b, eps, top) for a, b in zip(x, y, strict=True)]
    lengths = [_length(mp, a) for a in x]
    diffs = [_difference(a, b, mp) for a, b in zip(x, y, strict=True)]
    dists = [_length(mp, d) if not _finite(d) else (float(mp.sqrt(_norm2(mp, d))), True)
             for d in diffs]
    calls = [Call("dot", (0, 1), (t,), (_per_vector(_round([d[0] for d in dots], t), n, t),),
                  (_mask([d[2] for d in dots], n),),
                  (Absolute(_per_vector([d[1] for d in dots], n, float)),), shows="vector")]
    for name, refs, cols in (("length", lengths, (0,)), ("distance", dists, (0, 1))):
        bound = _BOUNDS[name][t == "float64"](w)
        calls.append(Call(name, cols, (t,), (_per_vector(_round([r[0] for r in refs], t), n,
                                                         t),),
                          (_mask([r[1] for r in refs], n),), (bound,), shows="vector"))
        if t == "float32":
            fast = [ok and _sum_sq_in_range(mp, v, t) for (_, ok), v in
                    zip(refs, x if name == "length" else diffs, strict=True)]
            calls.append(Call(f"fast_{name}", cols, (t,), calls[-1].wants, (_mask(fast, n),),
                              (_BOUNDS[f"fast_{name}"][0](w),), shows="vector"))
    return calls


def _vector_calls(x, y, t, w, n, eps, top) -> list[Call]:
    mp = _mp()
    norms = [_normalize(mp, a) for a in x]
    want = _round([c for v in norms for c in v], t)
    calls = [Call("normalize", (0,), (t,), (want,), (np.ones(n, bool),),
                  (_BOUNDS["normalize"][t == "float64"](w),), shows="component")]
    if t == "float32":
        fast = [_sum_sq_in_range(mp, a, t) or all(c == 0 for c in a) for a in x]
        calls.append(Call("fast_normalize", (0,), (t,), (want,), (np.repeat(fast, w),),
                          (_BOUNDS["fast_normalize"][0](w),), shows="component"))
    if w >= 3:
        comps = [c for a, b in zip(x, y, strict=True) for c in _cross(a, b, eps, top)]
        calls.append(Call("cross", (0, 1), (t,), (_round([c[0] for c in comps], t),),
                          (np.array([c[2] for c in comps]),),
                          (Absolute(np.array([c[1] for c in comps])),), shows="component"))
    return calls


def geometric_group(t: str, width: int, seed: int, draws: int, strict: bool = False) -> Group:
    """Every geometric call on ``t`` vectors of ``width`` (1: scalars). ``strict``: dot and
    cross of double within DBL_EPSILON instead of the spec's FLT_EPSILON."""
    a, b = geometric_columns(t, width, seed, draws)
    x = [tuple(r) for r in a.astype(np.float64).reshape(-1, width).tolist()]
    y = [tuple(r) for r in b.astype(np.float64).reshape(-1, width).tolist()]
    eps = float(np.finfo(t if strict else "float32").eps)
    top = float(np.finfo(t).max)
    calls = _scalar_calls(x, y, t, width, a.size, eps, top)
    calls += _vector_calls(x, y, t, width, a.size, eps, top)
    name = _C[t] if width == 1 else f"{_C[t]}{width}"
    return Group(f"geometric {name}", [a, b], calls, width)


def any_all_group(dtype: str, width: int, seed: int, draws: int) -> Group:
    """any/all: 1 when the top bit of any / every component is set (OpenCL C 6.15.6)."""
    from verify.conformance_cases import int_column

    rng = np.random.default_rng(seed)
    col = int_column(dtype, rng, draws)
    col = np.resize(col, -(-col.size // width) * width)
    signs = np.full((8, width), np.iinfo(dtype).max, dtype)
    signs[np.arange(8) % 2 == 0, 0] = np.iinfo(dtype).max ^ np.iinfo(dtype).max  # zero
    col = np.concatenate([col, np.where(np.eye(8, width, dtype=bool), ~signs, signs).ravel()])
    tops = (col.view(f"i{col.dtype.itemsize}") < 0).reshape(-1, width)
    n, ok = col.size, _mask(np.ones(len(tops), bool), col.size)
    calls = [Call(name, (0,), ("int32",), (_per_vector(fn(tops, axis=1), n, np.int32),), (ok,),
                  shows="vector")
             for name, fn in (("any", np.any), ("all", np.all))]
    return Group(f"any/all {dtype} x{width}", [col], calls, width)


def vector_only_groups(seed: int = 0, draws: int = 300, wanted=None) -> list[Group]:
    out = [geometric_group(t, w, seed + w, draws) for t in _C for w in WIDTHS]
    out += [any_all_group("int32", 4, seed, draws), any_all_group("int8", 16, seed + 1, draws)]
    for g in out:
        g.calls = [c for c in g.calls if wanted is None or c.name in wanted]
    return [g for g in out if g.calls]
