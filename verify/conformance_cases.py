"""The exact part of ``clsim conformance``: inputs and references for the builtins whose result
the OpenCL C spec fixes bit for bit (integer builtins, conversions with ``_sat`` and rounding
modes, bit casts, relational functions, and the tuple-returning math builtins).

A ``Call`` is one builtin applied to some input columns of a ``Group`` (one kernel), with its
reference and the mask of inputs where the spec defines the result (a float-to-integer
conversion without ``_sat`` out of range, ``clamp`` with lo > hi, ``frexp``'s exponent of inf
are undefined or unspecified and not judged). References are Python integers and exact
rationals (``fractions``), rounded once by the conversion's mode. Running and judging the
groups is ``verify.conformance_exact``; this module computes nothing on a backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from verify.conformance_refs import reference

INT_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
FLOAT_TYPES = ("float32", "float64")
_C = {"int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
      "uint32": "uint", "int64": "long", "uint64": "ulong", "float32": "float",
      "float64": "double"}
MODES = ("", "_rte", "_rtz", "_rtp", "_rtn")
# (mantissa bits with the hidden one, smallest normal exponent, largest exponent)
_FORMATS = {"float16": (11, -14, 15), "float32": (24, -126, 127), "float64": (53, -1022, 1023)}


@dataclass(frozen=True)
class Absolute:
    """A judge by absolute error: |got - want| <= tolerance, per element (the geometric
    functions' bounds, OpenCL C 7.4: dot and cross in units of max|input|^2 * FLT_EPSILON)."""

    tolerance: np.ndarray

    def __eq__(self, other):  # compared with the judge names ("bits", ...): never equal
        return self is other

    __hash__ = object.__hash__


@dataclass(frozen=True)
class OneOf:
    """A judge that accepts the value (sign of zero included) or ``alternative``: mad on
    float is a correctly rounded fma or a multiply and an add each rounded (OpenCL C 7.4)."""

    alternative: np.ndarray

    def __eq__(self, other):  # compared with the judge names ("bits", ...): never equal
        return self is other

    __hash__ = object.__hash__


@dataclass
class Call:
    """One builtin call of a group: ``name(cols[k] for k in args)`` -> ``outs`` components."""

    name: str
    args: tuple[int, ...]
    outs: tuple[str, ...]
    wants: tuple[np.ndarray, ...]
    defined: tuple[np.ndarray, ...]
    # per component: "exact" (the value, sign of zero included; NaN = NaN), "bits" (bytes),
    # "quo7" (remquo's quotient: sign and 7 low bits), a float bound in ULPs, or Absolute
    judge: tuple = ()
    scalar: str = ""  # a vector call's scalar builtin (verify.conformance_vectors)
    # how an example shows its inputs: "element" (the element at the output's index), "vector"
    # (output i is vector i's result: dot, any), "component" (output i is a component of
    # vector i // width: cross, normalize)
    shows: str = "element"

    def how(self, k: int):
        return self.judge[k] if self.judge else "exact"


@dataclass
class Group:
    """One kernel: input columns (one dtype each) and the calls evaluated on them."""

    key: str
    cols: list[np.ndarray]
    calls: list[Call]
    width: int = 1  # the calls take vectors of this many components (verify.conformance_vectors)
    subgroup: int = 0  # the sub-group size the group runs at (verify.conformance_collectives)

    def inputs_at(self, call: Call, i: int) -> list:
        """The inputs behind output element ``i`` of ``call``, for examples and reports."""
        if call.shows == "element":
            return [self.cols[k][i].item() for k in call.args]
        v = i if call.shows == "vector" else i // self.width
        w = self.width
        return [self.cols[k][v * w:(v + 1) * w].tolist() for k in call.args]

    def type_name(self, col: int) -> str:
        """The rows' type for calls whose first argument is column ``col``: the numpy name
        of a scalar ("int32"), the OpenCL C name of a vector ("int4")."""
        name = self.cols[col].dtype.name
        return name if self.width == 1 else f"{_C[name]}{self.width}"


# ---- exact rounding -------------------------------------------------------------------------

def _round_int(q: Fraction, mode: str) -> int:
    if mode in ("", "_rtz"):
        return math.trunc(q)
    if mode == "_rte":
        return round(q)  # Fraction rounds half to even
    return math.ceil(q) if mode == "_rtp" else math.floor(q)


def round_to_float(q: Fraction, dst: str, mode: str) -> float:
    """The exact rational ``q`` rounded once to ``dst`` by ``mode`` ('' is _rte), as a float
    whose value is exactly representable in ``dst`` (or ±inf)."""
    if q == 0:
        return 0.0
    p, emin, emax = _FORMATS[dst]
    sign, a = (-1, -q) if q < 0 else (1, q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    m = a / quantum
    if mode in ("", "_rte"):
        k = round(m)
    elif mode == "_rtz" or (mode == "_rtp") == (sign < 0):
        k = math.floor(m)
    else:
        k = math.ceil(m)
    top = Fraction(2) ** (emax + 1)
    if k * quantum >= top:
        largest = float(top - Fraction(2) ** (emax - p + 1))
        to_inf = mode in ("", "_rte") or (mode == "_rtp" and sign > 0) or (
            mode == "_rtn" and sign < 0)
        return sign * (math.inf if to_inf else largest)
    return sign * float(k * quantum)


def convert_reference(x, src: str, dst: str, sat: bool, mode: str):
    """``convert_<dst><_sat><mode>(x)`` for one value of type ``src``: (value, defined)."""
    if dst in FLOAT_TYPES:
        if src in FLOAT_TYPES and not math.isfinite(float(x)):
            return float(x), True
        q = Fraction(int(x)) if src in INT_TYPES else Fraction(float(x))
        return math.copysign(round_to_float(q, dst, mode), float(x)), True
    info = np.iinfo(dst)
    if src in FLOAT_TYPES:
        v = float(x)
        if v != v:
            return 0, sat
        if math.isinf(v):
            return (info.max if v > 0 else info.min) if sat else 0, sat
        r = _round_int(Fraction(v), mode)
    else:
        r = int(x)
    if sat:
        return min(max(r, info.min), info.max), True
    if src in FLOAT_TYPES:
        inside = info.min <= r <= info.max
        return (r if inside else 0), inside
    wrapped = r % 2**info.bits
    return (wrapped - 2**info.bits if info.min < 0 and wrapped > info.max else wrapped), True


# ---- inputs ---------------------------------------------------------------------------------

def int_column(t: str, rng, draws: int, shift: int = 0) -> np.ndarray:
    info = np.iinfo(t)
    edge = [0, 1, 2, 3, info.max, info.min, info.max - 1, info.min + 1, info.max // 2,
            info.min // 2, 2**(info.bits - 2) + 1]
    edge += [v for v in (-1, -2, 255, 127, 128, -128, 2**24 + 1, 2**53 + 1, 2**24 - 1,
                         2**31, 2**63 - 2**39, 2**63 + 2**39 + 1) if info.min <= v <= info.max]
    edge = edge[shift % len(edge):] + edge[:shift % len(edge)]
    draws_ = rng.integers(info.min, info.max, draws, dtype=np.dtype(t), endpoint=True)
    small = rng.integers(max(info.min, -300), min(info.max, 300), draws // 4, endpoint=True)
    return np.concatenate([np.array(edge, t), draws_, small.astype(t)])


def float_column(t: str, rng, draws: int) -> np.ndarray:
    from verify.conformance import edge_values

    limits = [0.5, 1.5, 2.5, 127.5, 128.0, 128.5, 255.5, 256.0, 32767.5, 32768.0, 65535.5,
              65536.0, 2**31 - 0.5, 2.0**31, 2.0**32 - 0.5, 2.0**32, 2.0**63, 2.0**64,
              9.22e18, 1e19, 2.0**24 + 1, 2.0**53 + 1, 3.4028235677973366e38, 1e-40, 1e-310]
    vals = [v for b in limits for v in (b, -b)]
    rand = np.concatenate([rng.uniform(-300, 300, draws // 2),
                           rng.standard_normal(draws - draws // 2) *
                           10.0 ** rng.integers(-40, 40, draws - draws // 2)])
    with np.errstate(over="ignore"):
        return np.concatenate([edge_values(np.dtype(t).type), np.array(vals, t),
                               rand.astype(t)])


def _ints(arr) -> list[int]:
    return [int(v) for v in arr.tolist()]


def _vector(values, dt) -> np.ndarray:
    out = np.empty(len(values), dt)
    for k, v in enumerate(values):
        out[k] = v
    return out


# ---- integer builtins -----------------------------------------------------------------------

def _unsigned(t: str) -> str:
    return t if t.startswith("u") else "u" + t


def _wrap(v: int, t: str) -> int:
    info = np.iinfo(t)
    v %= 2**info.bits
    return v - 2**info.bits if info.min < 0 and v > info.max else v


def integer_reference(name: str, t: str, args: list[int]) -> int | None:
    """C's value of integer builtin ``name`` on type ``t`` (None: undefined by the spec)."""
    info = np.iinfo(t)
    width, mask = info.bits, 2**info.bits - 1
    x, y, z = (*args, 0, 0)[:3]
    u, k = x & mask, (y & mask) % width
    table = {
        "abs": lambda: abs(x), "clz": lambda: width - u.bit_length(),
        "ctz": lambda: width if u == 0 else (u & -u).bit_length() - 1,
        "popcount": lambda: bin(u).count("1"),
        "rotate": lambda: _wrap((u << k) | (u >> (width - k)), t) if k else x,
        "abs_diff": lambda: abs(x - y), "hadd": lambda: (x + y) >> 1,
        "rhadd": lambda: (x + y + 1) >> 1,
        "bitselect": lambda: _wrap((u & ~(z & mask)) | (y & mask & z & mask), t),
        "mul_hi": lambda: (x * y) >> width, "mad_hi": lambda: _wrap(((x * y) >> width) + z, t),
        "add_sat": lambda: min(max(x + y, info.min), info.max),
        "sub_sat": lambda: min(max(x - y, info.min), info.max),
        "min": lambda: min(x, y), "max": lambda: max(x, y),
        "clamp": lambda: None if y > z else min(max(x, y), z),
        "select": lambda: y if z != 0 else x,
        "mul24": lambda: _wrap(x * y, t), "mad24": lambda: _wrap(x * y + z, t),
        "upsample": lambda: (x << width) | (y & mask),
    }
    return table[name]()


_INT_CALLS = {  # name -> (argument columns, result: "T", "U" unsigned T, "W" twice as wide)
    "abs": ((0,), "U"), "clz": ((0,), "T"), "ctz": ((0,), "T"), "popcount": ((0,), "T"),
    "rotate": ((0, 1), "T"), "hadd": ((0, 1), "T"), "rhadd": ((0, 1), "T"),
    "add_sat": ((0, 1), "T"), "sub_sat": ((0, 1), "T"), "mul_hi": ((0, 1), "T"),
    "min": ((0, 1), "T"), "max": ((0, 1), "T"), "abs_diff": ((0, 1), "U"),
    "bitselect": ((0, 1, 2), "T"), "mad_hi": ((0, 1, 2), "T"), "clamp": ((0, 1, 2), "T"),
    "select": ((0, 1, 2), "T"), "upsample": ((0, 3), "W"), "mul24": ((4, 5), "T"),
    "mad24": ((4, 5, 6), "T"),
}
_WIDER = {"int8": "int16", "uint8": "uint16", "int16": "int32", "uint16": "uint32",
          "int32": "int64", "uint32": "uint64"}


def _int24_column(t: str, rng, n: int) -> np.ndarray:
    lo, hi = (-(2**23), 2**23 - 1) if t == "int32" else (0, 2**24 - 1)
    edge = [lo, hi, 0, 1, lo + 1, hi - 1, 4096]
    return np.concatenate([np.array(edge, t), rng.integers(lo, hi, n - len(edge),
                                                            endpoint=True).astype(t)])


def integer_group(t: str, seed: int, draws: int, wanted=None) -> Group:
    rng = np.random.default_rng(seed)
    cols = [int_column(t, rng, draws, shift) for shift in (0, 3, 6)]
    n = cols[0].size
    cols.append(cols[1].view(_unsigned(t)).copy())
    cols += [_int24_column(t, rng, n) if t in ("int32", "uint32") else cols[0]
             for _ in range(3)]
    values = [_ints(c) for c in cols]
    calls = []
    for name, (argk, kind) in _INT_CALLS.items():
        if (name == "upsample" and t not in _WIDER) or (
                name in ("mul24", "mad24") and t not in ("int32", "uint32")) or (
                wanted is not None and name not in wanted):
            continue
        out = {"T": t, "U": _unsigned(t), "W": _WIDER.get(t)}[kind]
        refs = [integer_reference(name, t, [values[k][i] for k in argk]) for i in range(n)]
        defined = np.array([r is not None for r in refs])
        want = _vector([0 if r is None else r for r in refs], out)
        calls.append(Call(name, argk, (out,), (want,), (defined,)))
    return Group(f"integer {t}", cols, calls)


# ---- conversions and bit casts --------------------------------------------------------------

def _conversion_names(dst: str) -> list[tuple[str, bool, str]]:
    sats = (False, True) if dst in INT_TYPES else (False,)
    return [(f"convert_{_C[dst]}{'_sat' if sat else ''}{mode}", sat, mode)
            for sat in sats for mode in MODES]


def conversion_group(src: str, seed: int, draws: int, wanted=None) -> Group:
    """Every ``convert_T(_sat)(_mode)`` and same-size ``as_T`` from one source type."""
    rng = np.random.default_rng(seed)
    col = float_column(src, rng, draws) if src in FLOAT_TYPES else int_column(src, rng, draws)
    if src in FLOAT_TYPES:
        col = np.concatenate([col, col[:64] * np.array(0.5, src)])
    values = col.tolist()
    calls = []
    for dst in (*INT_TYPES, *FLOAT_TYPES):
        for name, sat, mode in _conversion_names(dst):
            if wanted is not None and name not in wanted:
                continue
            refs = [convert_reference(v, src, dst, sat, mode) for v in values]
            want = _vector([r[0] for r in refs], dst)
            calls.append(Call(name, (0,), (dst,), (want,), (np.array([r[1] for r in refs]),)))
        if np.dtype(dst).itemsize == np.dtype(src).itemsize:
            calls.append(Call(f"as_{_C[dst]}", (0,), (dst,), (col.view(dst).copy(),),
                              (np.ones(col.size, bool),), ("bits",)))
    return Group(f"conversion from {_C[src]}", [col], calls)


# ---- float relational, min/max/clamp/select and tuple results -------------------------------

_RELATIONAL = {
    "isnan": lambda x, y: np.isnan(x), "isinf": lambda x, y: np.isinf(x),
    "isfinite": lambda x, y: np.isfinite(x), "signbit": lambda x, y: np.signbit(x),
    "isnormal": lambda x, y: np.isfinite(x) & (np.abs(x) >= np.finfo(x.dtype).tiny),
    "isequal": np.equal, "isnotequal": np.not_equal, "isgreater": np.greater,
    "isgreaterequal": np.greater_equal, "isless": np.less, "islessequal": np.less_equal,
    "islessgreater": lambda x, y: np.less(x, y) | np.greater(x, y),
    "isordered": lambda x, y: ~(np.isnan(x) | np.isnan(y)),
    "isunordered": lambda x, y: np.isnan(x) | np.isnan(y),
}


def _fract_reference(x: np.ndarray):
    with np.errstate(invalid="ignore"):
        fl = np.floor(x)
        f = np.fmin(x - fl, np.nextafter(x.dtype.type(1), x.dtype.type(0)))
    f = np.where(np.isinf(x), np.copysign(x.dtype.type(0), x), np.where(np.isnan(x), x, f))
    return np.where(x == 0, x, f).astype(x.dtype), fl


def _remquo_quotient(x: float, y: float) -> int | None:
    if not (math.isfinite(x) and y == y) or y == 0:
        return None
    if math.isinf(y):
        return 0
    n = abs(round(Fraction(x) / Fraction(y))) % 128
    return -n if (x < 0) != (y < 0) else n


def float_group(t: str, seed: int, draws: int) -> Group:
    from verify.conformance import inputs

    dt = np.dtype(t)
    x, y = inputs(dt.type, 2, "f", seed, draws)
    z = np.roll(x, 7)
    cond = np.resize(np.array([0, 1, -1, 2, np.iinfo(np.int32).min], "int64"), x.size)
    cond = cond.astype(np.int32 if t == "float32" else np.int64)
    with np.errstate(invalid="ignore"):  # mix's weight a, in [0, 1] (NaN for inf)
        weight = np.abs(np.remainder(z.astype(np.float64), 2.0) - 1.0).astype(dt)
    cols, ok, calls = [x, y, z, cond, weight], np.ones(x.size, bool), []
    with np.errstate(all="ignore"):
        for name, fn in _RELATIONAL.items():
            argk = (0,) if name in ("isnan", "isinf", "isfinite", "signbit", "isnormal") \
                else (0, 1)
            calls.append(Call(name, argk, ("int32",), (fn(x, y).astype(np.int32),), (ok,)))
        no_nan = ~(np.isnan(x) | np.isnan(y))
        calls.append(Call("min", (0, 1), (t,), (np.where(y < x, y, x),), (no_nan,)))
        calls.append(Call("max", (0, 1), (t,), (np.where(x < y, y, x),), (no_nan,)))
        clamp_ok = ~(np.isnan(y) | np.isnan(z)) & (y <= z)
        calls.append(Call("clamp", (0, 1, 2), (t,), (np.fmin(np.fmax(x, y), z),), (clamp_ok,)))
        calls.append(Call("select", (0, 1, 3), (t,), (np.where(cond != 0, y, x),), (ok,)))
        u = f"u{dt.itemsize}"
        picked = (x.view(u) & ~z.view(u)) | (y.view(u) & z.view(u))
        calls.append(Call("bitselect", (0, 1, 2), (t,), (picked.view(dt),), (ok,), ("bits",)))
        m, e = np.frexp(x)
        calls.append(Call("frexp", (0,), (t, "int32"), (m.astype(dt), e.astype(np.int32)),
                          (ok, np.isfinite(x))))
        frac, whole = np.modf(x)
        calls.append(Call("modf", (0,), (t, t), (frac, whole), (ok, ok)))
        calls.append(Call("fract", (0,), (t, t), _fract_reference(x), (ok, ok)))
        calls.append(Call("sincos", (0,), (t, t), (reference("sin", [x], dt.type),
                                                    reference("cos", [x], dt.type)),
                          (ok, ok), (4, 4)))
        quo = [_remquo_quotient(a, b) for a, b in zip(x.tolist(), y.tolist(), strict=True)]
        calls.append(Call("remquo", (0, 1), (t, "int32"),
                          (reference("remainder", [x, y], dt.type),
                           np.array([0 if q is None else q for q in quo], np.int32)),
                          (ok, np.array([q is not None for q in quo])), ("exact", "quo7")))
    if t == "float32":
        calls += _tolerance_calls(x, y, z, weight)
    return Group(f"float {_C[t]}", cols, calls)


def _tolerance_calls(x, y, z, a) -> list[Call]:
    """smoothstep (absolute 1e-5), mix (absolute 1e-3) and mad (fma or mul then add) on float
    (OpenCL C 7.4; on double all three are implementation-defined). Judged where the spec
    defines them (smoothstep: e0 < e1, no NaN; mix: a in [0, 1]) and no difference overflows;
    mix where |x|, |y| <= 1000 (beyond, one float rounding of x exceeds 1e-3)."""
    f, d = np.float32, np.float64
    with np.errstate(all="ignore"):
        e0, e1, v = (c.astype(d) for c in (y, z, x))
        small = (np.abs(e0) <= 1e37) & (np.abs(e1) <= 1e37) & (np.abs(v) <= 1e37)
        t = np.clip((v - e0) / (e1 - e0), 0.0, 1.0)
        smooth = (t * t * (3 - 2 * t)).astype(f)
        smooth_ok = (e0 < e1) & small
        mixed = (v + (e0 - v) * a.astype(d)).astype(f)
        mix_ok = (np.abs(v) <= 1000) & (np.abs(e0) <= 1000) & np.isfinite(a)
        fma = np.array([_fma_round(p, q, r) for p, q, r in zip(x.tolist(), y.tolist(),
                                                                 z.tolist(), strict=True)], f)
        two = (x * y).astype(f) + z
    ok = np.ones(x.size, bool)
    return [Call("smoothstep", (1, 2, 0), ("float32",), (smooth,), (smooth_ok,),
                 (Absolute(np.array(1e-5)),)),
            Call("mix", (0, 1, 4), ("float32",), (mixed,), (mix_ok,),
                 (Absolute(np.array(1e-3)),)),
            Call("mad", (0, 1, 2), ("float32",), (fma,), (ok,), (OneOf(two),))]


def _fma_round(a: float, b: float, c: float) -> float:
    """fma(a, b, c) of floats: exact in rationals, rounded once to float."""
    if not all(math.isfinite(v) for v in (a, b, c)):
        with np.errstate(all="ignore"):
            return float(np.float64(a) * np.float64(b) + np.float64(c))
    return round_to_float(Fraction(a) * Fraction(b) + Fraction(c), "float32", "")


def groups(seed: int = 0, draws: int = 300, wanted=None) -> list[Group]:
    """Every group of the exact suite (``wanted``: only these builtin names, None: all; the
    references of the others are not computed)."""
    out = [integer_group(t, seed + k, draws, wanted) for k, t in enumerate(INT_TYPES)]
    out += [float_group(t, seed, draws) for t in FLOAT_TYPES]
    out += [conversion_group(t, seed + k, draws, wanted)
            for k, t in enumerate((*FLOAT_TYPES, *INT_TYPES))]
    return out
