"""Geometric functions (OpenCL C 6.15.5): dot, cross, length, distance, normalize and the
float-only fast_length, fast_distance, fast_normalize, on float/double scalars and 2-, 3-,
4-vectors (the spec has no 8- or 16-wide forms; cross takes 3 and 4 only).

dot and cross round each product and sum in the element type (the order PoCL and the Intel
CPU runtime use). length, distance and normalize are computed "without overflow or
extraordinary precision loss due to underflow" (OpenCL C 7.5.1): float in double, double
scaled by a power of two when the largest component is beyond 2^±500. normalize follows the
spec's special cases: a zero vector is returned as it is, a NaN component gives all NaNs, and
infinite components become ±1 (the others ±0) before normalizing. The fast_ forms share the
accurate helpers (within their 8192-ulp bounds). Not here: any/all and vector constructors
(``vector``), component-wise math (``lift``).
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "vector"
_T = ("float32", "float64")
_N = (1, 2, 3, 4)
_FAST = ("fast_length", "fast_distance", "fast_normalize")


def _geo_rule(name, n, scalar_result):
    def rule(types, call):
        if len(types) != n or not all(ct.is_float(ct.elem(t)) for t in types):
            raise node_error(call, f"{name}() takes {n} float vector(s)")
        elems = [ct.elem(t) for t in types]
        if "float16" in elems:
            raise node_error(call, f"{name}() on half vectors is not supported: convert to "
                                   "float first, e.g. convert_float4(v)")
        if name in _FAST and "float64" in elems:
            raise node_error(call, f"{name}() exists for float only (OpenCL C 6.15.5); use "
                                   f"{name[len('fast_'):]}() on double")
        if n == 2 and elems[0] != elems[1]:
            raise node_error(call, f"{name}() needs two vectors of the same type")
        widths = {t.width for t in types if isinstance(t, ct.VecT)}
        if len(widths) > 1 or (n == 2 and isinstance(types[0], ct.VecT) != isinstance(
                types[1], ct.VecT)):
            raise node_error(call, f"{name}() needs two vectors of the same width")
        if name == "cross" and widths != {3} and widths != {4}:
            raise node_error(call, "cross() takes two float3 or two float4")
        if widths - {2, 3, 4}:
            raise node_error(call, f"{name}() takes scalars and 2-, 3- or 4-vectors (OpenCL C "
                                   f"6.15.5), got a {ct.short(types[0])}; split it, e.g. "
                                   f"{name}(v.lo{', w.lo' if n == 2 else ''})")
        return ct.elem(types[0]) if scalar_result else types[0]

    return rule


def _comps(name, t):
    return [f"{name}[{k}]" for k in range(t.width)] if isinstance(t, ct.VecT) else [name]


def _width(t) -> int:
    return t.width if isinstance(t, ct.VecT) else 1


# -- helpers: one per element type and width, components as arguments ------------------------
def _args(n: int) -> str:
    return ", ".join(f"a{k}" for k in range(n))


def _scale_lines(t: str, n: int) -> str:
    """``k``: 1, or a power of two that brings double components into [2^-474, 2^424] so that
    their squares neither overflow nor lose precision to underflow (scaling by 2^j only moves
    the exponent: exact); float components are exact in double and need none."""
    if t == "float32":
        return "    k = 1.0\n"
    big = "".join(f"    m = max(m, abs(x{k}))\n" for k in range(1, n))
    return (f"    m = abs(x0)\n{big}    k = 1.0\n    if m > {2.0**500!r}:\n"
            f"        k = {2.0**-600!r}\n    elif m < {2.0**-500!r}:\n"
            f"        k = {2.0**600!r}\n")


def _length_helper(t: str, n: int):
    xs = "".join(f"    x{k} = np.float64(a{k})\n" for k in range(n))
    special = "".join(f"    if math.isinf(x{k}):\n        return np.{t}(np.inf)\n"
                      for k in range(n))
    squares = " + ".join(f"(x{k} * k) * (x{k} * k)" for k in range(n))
    src = (f"def _geo_len_{t}_{n}({_args(n)}):\n{xs}{special}{_scale_lines(t, n)}"
           f"    r = math.sqrt({squares}) / k\n"
           f"    return np.{t}(r) if r == r else np.{t}(np.nan)\n")  # one NaN: see _QUIET
    return helper(f"_geo_len_{t}_{n}", src)


def _normalize_helper(t: str, n: int):
    xs = "".join(f"    x{k} = np.float64(a{k})\n" for k in range(n))
    nan = " or ".join(f"x{k} != x{k}" for k in range(n))
    inf = " or ".join(f"math.isinf(x{k})" for k in range(n))
    zero = " and ".join(f"x{k} == 0.0" for k in range(n))
    # OpenCL C 7.5.1: v[i] = isinf(v[i]) ? copysign(1.0, v[i]) : 0.0 * v[i]
    unit = "".join(f"        x{k} = math.copysign(1.0, x{k}) if math.isinf(x{k}) else "
                   f"0.0 * x{k}\n" for k in range(n))
    scaled = "".join(f"    y{k} = x{k} * k\n" for k in range(n))
    squares = " + ".join(f"y{k} * y{k}" for k in range(n))
    parts = [f"np.{t}(y{k} / r)" for k in range(n)]
    result = parts[0] if n == 1 else "(" + ", ".join(parts) + ",)"
    same = "a0" if n == 1 else f"({_args(n)},)"
    nans = f"np.{t}(np.nan)" if n == 1 else "(" + ", ".join([f"np.{t}(np.nan)"] * n) + ",)"
    src = (f"def _geo_norm_{t}_{n}({_args(n)}):\n{xs}    if {nan}:\n        return {nans}\n"
           f"    if {zero}:\n        return {same}\n    if {inf}:\n{unit}"
           f"{_scale_lines(t, n)}{scaled}    r = math.sqrt({squares})\n    return {result}\n")
    return helper(f"_geo_norm_{t}_{n}", src)


_LENGTH = tuple(_length_helper(t, n) for t in _T for n in _N)
# A NaN's payload and sign after float arithmetic differ between numpy and Numba's code (x86
# keeps an operand's payload, LLVM may commute the operands): dot and cross give the one NaN.
_QUIET = tuple(helper(f"_geo_quiet_{t}", f"""
def _geo_quiet_{t}(x):
    return x if x == x else np.{t}(np.nan)
""") for t in _T)
_NORMALIZE = tuple(_normalize_helper(t, n) for t in _T for n in _N)


# -- emitters -----------------------------------------------------------------------------------
def _pairwise_sum(terms: list[str]) -> str:
    """(p0 + p1) + (p2 + p3) for four terms, (p0 + p1) + p2 for three: the order PoCL and the
    Intel CPU runtime use in dot() (all 65,536 random float4 pairs bit-equal; a left fold
    differs in 29 % of them). Oclgrind sums in double and rounds once: no order matches it."""
    if len(terms) == 4:
        return f"(({terms[0]} + {terms[1]}) + ({terms[2]} + {terms[3]}))"
    total = terms[0]
    for term in terms[1:]:
        total = f"({total} + {term})"
    return total


def _emit_dot(gen, codes, types, call):
    t = call.ctype

    def build(n):
        prods = [f"({a} * {b})" for a, b in zip(_comps(n[0], types[0]), _comps(n[1], types[1]),
                                                 strict=True)]
        for _ in prods:
            gen.count_flop("fma", t)
        return f"{gen.helper(f'_geo_quiet_{t}')}({_pairwise_sum(prods)})"

    return gen.vec_lift(codes, build)


def _emit_length(gen, codes, types, call):
    t, w = ct.elem(types[0]), _width(types[0])
    fn = gen.helper(f"_geo_len_{t}_{w}")
    return gen.vec_lift(codes, lambda n: f"{fn}({', '.join(_comps(n[0], types[0]))})")


def _emit_distance(gen, codes, types, call):
    """length(p0 - p1), the differences taken in double for float (exact but for exponents
    29 apart) and in the element type for double (an overflow there means the distance is
    beyond DBL_MAX too)."""
    t, w = ct.elem(types[0]), _width(types[0])
    fn = gen.helper(f"_geo_len_{t}_{w}")

    def build(n):
        pairs = zip(_comps(n[0], types[0]), _comps(n[1], types[1]), strict=True)
        diffs = [f"(np.float64({a}) - np.float64({b}))" for a, b in pairs]
        return f"{fn}({', '.join(diffs)})"

    return gen.vec_lift(codes, build)


def _emit_normalize(gen, codes, types, call):
    t, w = ct.elem(types[0]), _width(types[0])
    fn = gen.helper(f"_geo_norm_{t}_{w}")
    return gen.vec_lift(codes, lambda n: f"{fn}({', '.join(_comps(n[0], types[0]))})")


def _emit_cross(gen, codes, types, call):
    t = call.ctype

    quiet = gen.helper(f"_geo_quiet_{t.dtype}")

    def build(n):
        a, b = n
        x = f"{quiet}({a}[1] * {b}[2] - {a}[2] * {b}[1])"
        y = f"{quiet}({a}[2] * {b}[0] - {a}[0] * {b}[2])"
        z = f"{quiet}({a}[0] * {b}[1] - {a}[1] * {b}[0])"
        parts = [x, y, z] + ([gen.const(0, t.dtype)] if t.width == 4 else [])
        return "(" + ", ".join(parts) + ",)"

    return gen.vec_lift(codes, build)


_GEO_TYPES = "float, float2, float3, float4; double, double2, double3, double4"
_FAST_TYPES = "float, float2, float3, float4"

ENTRIES = [
    Builtin("dot", FAMILY, _geo_rule("dot", 2, True), _emit_dot, helpers=_QUIET,
            c="dot(a, b)",
            types=_GEO_TYPES, note="products rounded, summed pairwise ((p0+p1)+(p2+p3))"),
    Builtin("cross", FAMILY, _geo_rule("cross", 2, False), _emit_cross, flop="fma",
            helpers=_QUIET,
            c="cross(a, b)", types="float3, float4, double3, double4 (w = 0)"),
    Builtin("length", FAMILY, _geo_rule("length", 1, True), _emit_length, flop="sqrt",
            helpers=_LENGTH, c="length(v)", types=_GEO_TYPES,
            note="without overflow or underflow (float in double, double scaled), rounded once"),
    Builtin("distance", FAMILY, _geo_rule("distance", 2, True), _emit_distance, flop="sqrt",
            helpers=_LENGTH, c="distance(a, b)", types=_GEO_TYPES, note="length(a - b)"),
    Builtin("normalize", FAMILY, _geo_rule("normalize", 1, False), _emit_normalize,
            flop="sqrt", helpers=_NORMALIZE, c="normalize(v)", types=_GEO_TYPES,
            note="v / length(v); zero stays zero, NaN gives NaNs, inf components become ±1"),
    Builtin("fast_length", FAMILY, _geo_rule("fast_length", 1, True), _emit_length,
            flop="sqrt", helpers=_LENGTH, c="fast_length(v)", types=_FAST_TYPES,
            note="as length (within the 8191.5 + n ulp bound)"),
    Builtin("fast_distance", FAMILY, _geo_rule("fast_distance", 2, True), _emit_distance,
            flop="sqrt", helpers=_LENGTH, c="fast_distance(a, b)", types=_FAST_TYPES,
            note="as distance (within the 8191.5 + 2n ulp bound)"),
    Builtin("fast_normalize", FAMILY, _geo_rule("fast_normalize", 1, False),
            _emit_normalize, flop="sqrt", helpers=_NORMALIZE, c="fast_normalize(v)",
            types=_FAST_TYPES, note="as normalize (within the 8192 + n ulp bound)"),
]
