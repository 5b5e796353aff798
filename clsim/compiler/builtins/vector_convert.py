"""Vector conversions ``convert_TN[_sat][_rte|_rtz|_rtp|_rtn]`` and bit casts ``as_TN``.

``convert_int4(v)`` is C's cast per component (float to int truncates toward zero, as the
scalar ``convert_int``). ``_sat`` clamps to the target's range (NaN gives 0); a rounding mode
picks how a float becomes an integer (``_rte`` to nearest even, ``_rtz`` toward zero, ``_rtp``
up, ``_rtn`` down). Components go through the scalar conversions' code
(``conversion_modes``), so a vector component converts exactly as the scalar builtin does,
rounding modes into float and double included (half components keep this module's helpers;
a directed mode into half is refused). ``as_TN(x)`` reinterprets the bytes of a value of the
same size (``as_uint4`` of a float4, ``as_uchar4`` of a uint), little-endian as every OpenCL
device clsim targets.
"""

from __future__ import annotations

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins import conversion_modes as modes
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.vector import ELEMENTS, WIDTHS
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "vector"
MODES = ("", "_rte", "_rtz", "_rtp", "_rtn")
# float64 expression of v rounded to an integral value by each mode
_ROUNDING = {"": "math.trunc(v)", "_rtz": "math.trunc(v)", "_rte": "np.float64(round(v))",
             "_rtp": "math.ceil(v)", "_rtn": "math.floor(v)"}


def _sat_helper(to: str, mode: str):
    info = _int_range(to)
    name = f"_sat{mode}_{to}"
    return helper(name, f"""
def {name}(x):
    v = np.float64(x)
    if v != v:
        return np.{to}(0)
    if v <= {info[0]}.0:
        return np.{to}({info[0]})
    if v >= {info[1]}.0:
        return np.{to}({info[1]})
    return np.{to}(np.{"int64" if ct.is_signed(to) else "uint64"}({_ROUNDING[mode]}))
""")


def _round_helper(to: str, mode: str):
    name = f"_cvt{mode}_{to}"
    return helper(name, f"""
def {name}(x):
    v = np.float64(x)
    if v != v:
        return np.{to}(0)
    if v >= 9.2e18:
        v = 9.2e18
    elif v <= -9.2e18:
        v = -9.2e18
    return np.{to}(np.int64({_ROUNDING[mode]}))
""")


def _int_range(t: str) -> tuple[int, int]:
    info = np.iinfo(t)
    return int(info.min), int(info.max)


def _int_sat_helpers(to: str) -> tuple:
    """Integer-to-integer saturation from a signed (_s) or unsigned (_u) source; each compares
    in int64 or uint64 so that no value wraps (or turns float) before the clamp."""
    lo, hi = _int_range(to)
    hi_s = min(hi, 2**63 - 1)
    signed = f"""
def _isat_s_{to}(x):
    v = np.int64(x)
    if v < np.int64({lo}):
        return np.{to}({lo})
    if v > np.int64({hi_s}):
        return np.{to}({hi_s})
    return np.{to}(v)
"""
    unsigned = f"""
def _isat_u_{to}(x):
    v = np.uint64(x)
    if v > np.uint64({hi}):
        return np.{to}({hi})
    return np.{to}(v)
"""
    return helper(f"_isat_s_{to}", signed), helper(f"_isat_u_{to}", unsigned)


def _convert_rule(vec: ct.VecT, sat: bool, mode: str):
    name = f"convert_{vec}{'_sat' if sat else ''}{mode}"

    def rule(types, call):
        if len(types) != 1 or not isinstance(types[0], ct.VecT) or types[0].width != vec.width:
            got = ct.short(types[0]) if types else "nothing"
            raise node_error(call, f"{name}() converts a {vec.width}-vector; got {got}")
        if vec.dtype == "float16" and mode not in ("", "_rte"):
            raise node_error(call, f"{name}: rounding modes other than _rte into half "
                                   "vectors are not supported; use convert_" + str(vec))
        return vec

    return rule


def _component(gen, code, src, to, sat, mode) -> str:
    """One component converted as the scalar builtin converts it (half: this module's)."""
    if "float16" not in (src, to):
        m = mode.lstrip("_") or None
        if ct.is_float(to):
            return gen.cast(code, src, to) if m is None else (
                gen.helper(f"_cvtf_{src}_{to}") + f"({code}, {modes.MODE_CODE[m]})")
        if not sat and m is None:
            return gen.cast(code, src, to)
        return modes.emit_int(to, sat, m)(gen, [code], [src], None)
    if ct.is_float(to) or (ct.is_int(src) and not sat):
        return gen.cast(code, src, to)
    if ct.is_int(src):  # integer to integer, saturating
        sign = "s" if ct.is_signed(src) else "u"
        return gen.helper(f"_isat_{sign}_{to}") + f"({code})"
    stem = f"_sat{mode}_{to}" if sat else f"_cvt{mode}_{to}"
    return gen.helper(stem) + f"({code})"


def _convert_emit(vec: ct.VecT, sat: bool, mode: str):
    def emit(gen, codes, types, call):
        src = types[0].dtype
        return gen.vec_lift(codes, lambda n: "(" + ", ".join(
            _component(gen, f"{n[0]}[{k}]", src, vec.dtype, sat, mode)
            for k in range(vec.width)) + ",)")

    return emit


def _convert_entries() -> list[Builtin]:
    rows = []
    for dtype in ELEMENTS.values():
        helpers = modes.HELPERS
        if ct.is_int(dtype):
            helpers += (*_int_sat_helpers(dtype), *(_sat_helper(dtype, m) for m in MODES),
                        *(_round_helper(dtype, m) for m in MODES))
        for w in WIDTHS:
            vec = ct.VecT(dtype, w)
            for sat in (False, True):
                if sat and ct.is_float(dtype):
                    continue
                for mode in MODES:
                    name = f"convert_{vec}{'_sat' if sat else ''}{mode}"
                    listed = name in ("convert_float4", "convert_int4_sat_rte")
                    rows.append(Builtin(
                        name, FAMILY, _convert_rule(vec, sat, mode),
                        _convert_emit(vec, sat, mode), helpers=helpers, listed=listed,
                        c=f"{name}(v)", types="any vector of the same width",
                        note=("C's cast per component" if name == "convert_float4" else
                              "every TN; _sat clamps (NaN to 0), _rte/_rtz/_rtp/_rtn round "
                              "floats to integers")))
    return rows


# -- as_TN ------------------------------------------------------------------------------------
def _size(t) -> int:
    if isinstance(t, ct.VecT):
        return ct.bits(t.dtype) // 8 * (4 if t.width == 3 else t.width)
    return ct.bits(t) // 8


def _as_rule(vec: ct.VecT):
    def rule(types, call):
        t = types[0] if len(types) == 1 else None
        ok = t is not None and ((ct.is_scalar(t) and t != "bool") or isinstance(t, ct.VecT))
        if not ok or _size(t) != _size(vec):
            got = ct.short(t) if t is not None else "nothing"
            raise node_error(call, f"as_{vec}() reinterprets {_size(vec)}-byte values; "
                                   f"got {got}")
        if (vec.width == 3) != (isinstance(t, ct.VecT) and t.width == 3):
            raise node_error(call, f"as_{vec}(): 3-component vectors reinterpret only other "
                                   "3-component vectors")
        return vec

    return rule


def _unsigned(t: str) -> str:
    return {8: "uint8", 16: "uint16", 32: "uint32", 64: "uint64"}[ct.bits(t)]


def _to_bits(gen, code, t) -> str:
    if t == "float16":
        return gen.helper("_f2h") + f"({code})"
    if ct.is_float(t):
        return gen.bitcast(code, t, _unsigned(t))
    return gen.cast(code, t, _unsigned(t))


def _from_bits(gen, code, t) -> str:
    if t == "float16":
        return gen.helper("_h2f") + f"({code})"
    if ct.is_float(t):
        return gen.bitcast(code, _unsigned(t), t)
    return gen.cast(code, _unsigned(t), t)


def _as_emit(vec):
    """Bit cast to ``vec`` (a VecT, or a scalar type for as_uint(uchar4) and the like)."""
    scalar = not isinstance(vec, ct.VecT)
    if scalar:
        vec = ct.VecT(vec, 1)

    def emit(gen, codes, types, call):
        src = types[0]
        s_t, d_t = ct.elem(src), vec.dtype
        s_bits, d_bits = ct.bits(s_t), ct.bits(d_t)

        def build(n):
            srcs = ([f"{n[0]}[{k}]" for k in range(src.width)]
                    if isinstance(src, ct.VecT) else [n[0]])
            words = [f"np.uint64({_to_bits(gen, c, s_t)})" for c in srcs]
            out = []
            for j in range(vec.width):
                lo = j * d_bits
                if d_bits >= s_bits:
                    parts = [f"({words[i]} << np.uint64({i * s_bits - lo}))"
                             for i in range(lo // s_bits, (lo + d_bits) // s_bits)]
                    word = "(" + " | ".join(parts) + ")"
                else:
                    i = lo // s_bits
                    mask = (1 << d_bits) - 1
                    word = f"(({words[i]} >> np.uint64({lo - i * s_bits})) & np.uint64({mask}))"
                out.append(_from_bits(gen, gen.cast(word, "uint64", _unsigned(d_t)), d_t))
            return out[0] if scalar else "(" + ", ".join(out) + ",)"

        return gen.vec_lift(codes, build)

    return emit


def as_scalar_of_vector(to: str):
    """(rule, emit) of ``as_<scalar>(vector)``, e.g. as_uint(uchar4): the scalar entries in
    ``conversion`` take scalars; ``lift`` routes a vector argument here."""

    def rule(types, call):
        t = types[0] if len(types) == 1 else None
        if not isinstance(t, ct.VecT) or t.width == 3 or _size(t) != ct.bits(to) // 8:
            raise node_error(call, f"as_{ct.cname(to)}() reinterprets {ct.bits(to) // 8}-byte "
                                   f"values; got {ct.short(t) if t else 'nothing'}")
        return to

    return rule, _as_emit(to)


ENTRIES = [
    *_convert_entries(),
    *(Builtin(f"as_{ct.VecT(t, w)}", FAMILY, _as_rule(ct.VecT(t, w)), _as_emit(ct.VecT(t, w)),
              listed=(c, w) == ("float", 4), c="as_float4(x)",
              types="any value of the same size", note="every TN; same bytes, little-endian")
      for c, t in ELEMENTS.items() for w in WIDTHS),
]
