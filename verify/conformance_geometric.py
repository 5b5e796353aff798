"""The vector-only builtins of ``clsim conformance``: the geometric functions on float4 (dot,
cross, length, distance, normalize) and ``any``/``all`` on int4 and char16 (each component's
top bit; OpenCL C defines them for signed integer types only), as ``verify.conformance_vectors`` groups (width set, vector names already).

Bounds (OpenCL C 7.4, full profile): dot within max|input|^2 * (2n - 1) * FLT_EPSILON and each
cross component within max|input|^2 * 3 * FLT_EPSILON (absolute), length 0.25 + 0.5n ulp,
distance 2.5 + 2n ulp, normalize 2 + n ulp, for width n = 4. References in float64 (the
products of two floats are exact there), rounded once. Not judged: inputs with an inf or NaN
component, and for length, distance and normalize a sum of squares outside [FLT_MIN, FLT_MAX]
(where the spec lets an implementation overflow, underflow or return the input).
"""

from __future__ import annotations

import numpy as np

from verify.conformance_cases import Absolute, Call, Group

WIDTH = 4
_EPS = float(np.finfo(np.float32).eps)
_TINY, _HUGE = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)


def geometric_columns(seed: int, draws: int) -> tuple[np.ndarray, np.ndarray]:
    """Two float32 columns of 4-vectors: edge rows (zeros, ones, cancelling products, huge
    and tiny components, a non-finite one) and random vectors of mixed magnitudes."""
    rng = np.random.default_rng(seed)
    edge = [(0, 0, 0, 0), (1, 1, 1, 1), (1, -1, 1, -1), (1e18, 1, -1e18, 3), (1e-19, 0, 0, 0),
            (3e-20, 4e-20, 0, 0), (2.0**24 + 1, 1, -(2.0**24), 0.5), (np.inf, 1, 0, 0),
            (np.nan, 0, 0, 0), (-0.0, 0.0, -0.0, 0.0), (1e19, 1e19, 1e19, 1e19)]
    n = draws // WIDTH + len(edge)
    rand = rng.standard_normal((2, n, WIDTH)) * 10.0 ** rng.integers(-3, 4, (2, n, 1))
    a, b = rand[0], rand[1]
    a[:len(edge)] = edge
    b[:len(edge)] = edge[3:] + edge[:3]
    return a.astype(np.float32).ravel(), b.astype(np.float32).ravel()


def _rows(col: np.ndarray) -> np.ndarray:
    return col.astype(np.float64).reshape(-1, WIDTH)


def _per_vector(values: np.ndarray, n: int, dtype) -> np.ndarray:
    """A result per vector, at the vector's index of an n-long output (the rest not judged)."""
    out = np.zeros(n, dtype)
    out[:values.size] = values
    return out


def _mask(defined_rows: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, bool)
    out[:defined_rows.size] = defined_rows
    return out


def _sum_sq_ok(x: np.ndarray) -> np.ndarray:
    s = (x * x).sum(axis=1)
    return np.isfinite(x).all(axis=1) & (s >= _TINY) & (s <= _HUGE)


def geometric_group(seed: int, draws: int) -> Group:
    a, b = geometric_columns(seed, draws)
    x, y, n = _rows(a), _rows(b), a.size
    finite = np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1)
    big = np.maximum(np.abs(x).max(axis=1), np.abs(y).max(axis=1))
    with np.errstate(all="ignore"):
        dot = (x * y).sum(axis=1)
        cross = np.stack([x[:, 1] * y[:, 2] - x[:, 2] * y[:, 1],
                          x[:, 2] * y[:, 0] - x[:, 0] * y[:, 2],
                          x[:, 0] * y[:, 1] - x[:, 1] * y[:, 0], np.zeros(len(x))], axis=1)
        length = np.sqrt((x * x).sum(axis=1))
        dist_ok = _sum_sq_ok(x - y) & finite
        distance = np.sqrt(((x - y) ** 2).sum(axis=1))
        norm = x / length[:, None]
    dot_ok = finite & (np.abs(dot) <= _HUGE) & (big * big * 7 * _EPS <= _HUGE)
    calls = [
        Call("dot", (0, 1), ("float32",), (_per_vector(dot.astype(np.float32), n, np.float32),),
             (_mask(dot_ok, n),), (Absolute(_per_vector(big * big * 7 * _EPS, n, float)),)),
        Call("cross", (0, 1), ("float32",), (cross.astype(np.float32).ravel(),),
             (np.repeat(finite & (big * big * 3 * _EPS <= _HUGE), WIDTH),),
             (Absolute(np.repeat(big * big * 3 * _EPS, WIDTH)),)),
        Call("length", (0,), ("float32",), (_per_vector(length.astype(np.float32), n,
                                                        np.float32),),
             (_mask(_sum_sq_ok(x), n),), (2.25,)),
        Call("distance", (0, 1), ("float32",),
             (_per_vector(distance.astype(np.float32), n, np.float32),), (_mask(dist_ok, n),),
             (10.5,)),
        Call("normalize", (0,), ("float32",), (norm.astype(np.float32).ravel(),),
             (np.repeat(_sum_sq_ok(x), WIDTH),), (6.0,)),
    ]
    return Group("geometric float4", [a, b], calls, WIDTH)


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
    calls = [Call(name, (0,), ("int32",), (_per_vector(fn(tops, axis=1), n, np.int32),), (ok,))
             for name, fn in (("any", np.any), ("all", np.all))]
    return Group(f"any/all {dtype} x{width}", [col], calls, width)


def vector_only_groups(seed: int = 0, draws: int = 300, wanted=None) -> list[Group]:
    out = [geometric_group(seed, draws), any_all_group("int32", 4, seed, draws),
           any_all_group("int8", 16, seed + 1, draws)]
    for g in out:
        g.calls = [c for c in g.calls if wanted is None or c.name in wanted]
    return [g for g in out if g.calls]
