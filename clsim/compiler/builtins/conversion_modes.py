"""Explicit conversions with a rounding mode or saturation: ``convert_T_sat``,
``convert_T_rte/_rtz/_rtp/_rtn`` and ``convert_T_sat_<mode>`` (OpenCL C 6.4.3), scalars.

To an integer: a float is rounded by the mode (default _rtz, C's truncation), then either
converted as C's cast does (``_f2i_T``) or, with ``_sat``, clamped to T's range (NaN gives 0);
an integer is clamped with ``_sat`` and wrapped without. To float/double: the value is rounded
to nearest once, then moved one step toward zero / +inf / -inf when that rounding went the
wrong way for the mode, which is decided exactly (in the source's own type for 64-bit
integers, so long to float rounds once).
"""

from __future__ import annotations

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.conversion import CONVERT
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "conversion"
MODES = ("rte", "rtz", "rtp", "rtn")
_ROUND = {"rte": "np.rint", "rtz": "np.trunc", "rtp": "np.ceil", "rtn": "np.floor"}
MODE_CODE = {"rte": 0, "rtz": 1, "rtp": 2, "rtn": 3}
_ISAT = helper("_isat", """
def _isat(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
""")


def _fsat_helper(t: str):
    lo, hi = int(np.iinfo(t).min), int(np.iinfo(t).max)
    # float64 bounds: the first value past each end of T's range (exact powers of two).
    top = float(hi + 1)
    return helper(f"_fsat_{t}", f"""
def _fsat_{t}(v):
    if v != v:
        return np.{t}(0)
    if v >= {top!r}:
        return np.{t}({hi})
    if v < {float(lo)!r}:
        return np.{t}({lo})
    return np.{t}({"np.int64(v)" if lo < 0 else "np.uint64(abs(v))"})
""")


def _cmp_source(src: str, dst: str) -> str:
    """Helper ``_cvtf_SRC_DST(x, mode)``: x to float type DST rounded by mode 0..3."""
    if src in ("int64", "uint64"):
        limit = "9.223372036854775808e18" if src == "int64" else "1.8446744073709551616e19"
        low = "-9.223372036854775808e18" if src == "int64" else "0.0"
        back = "np.int64(f)" if src == "int64" else "np.uint64(f)"
        order = f"""
    if f >= {limit}:
        c = 1
    elif f < {low}:
        c = -1
    else:
        g = {back}
        c = 1 if g > x else (-1 if g < x else 0)"""
    else:
        order = """
    v = np.float64(x)
    c = 1 if np.float64(f) > v else (-1 if np.float64(f) < v else 0)"""
    return f"""
def _cvtf_{src}_{dst}(x, mode):
    f = np.{dst}(x)
    if f != f:
        return f{order}
    if c == 0 or mode == 0:
        return f
    if mode == 1 and ((c > 0 and f > 0.0) or (c < 0 and f < 0.0)):
        return np.nextafter(f, np.{dst}(0.0))
    if mode == 2 and c < 0:
        return np.nextafter(f, np.{dst}(math.inf))
    if mode == 3 and c > 0:
        return np.nextafter(f, np.{dst}(-math.inf))
    return f
"""


_SOURCES = (*ct.INT_TYPES, "float32", "float64")
_CVTF = tuple(helper(f"_cvtf_{s}_{d}", _cmp_source(s, d)) for d in ("float32", "float64")
              for s in _SOURCES)
_FSAT = tuple(_fsat_helper(t) for t in ct.INT_TYPES)
HELPERS = (*_CVTF, _ISAT, *_FSAT)  # every helper of these conversions (vector_convert too)


def _rule(name: str, to: str):
    def rule(types, call):
        if len(types) != 1 or not ct.is_scalar(types[0]) or types[0] == "bool":
            raise node_error(call, f"{name}() converts one number (not bool)")
        return to

    return rule


def emit_int(to: str, sat: bool, mode: str | None):
    def emit(gen, codes, types, call):
        src, x = types[0], codes[0]
        if ct.is_float(src):
            v = f"{_ROUND[mode or 'rtz']}(np.float64({x}))"
            return gen.helper(f"_fsat_{to}") + f"({v})" if sat else gen.cast(v, "float64", to)
        if not sat:
            return gen.cast(x, src, to)
        s, d = np.iinfo(src), np.iinfo(to)
        lo, hi = max(int(s.min), int(d.min)), min(int(s.max), int(d.max))
        clamped = (gen.helper("_isat") + f"({x}, {gen.const(lo, src)}, {gen.const(hi, src)})")
        return gen.cast(clamped, src, to)

    return emit


def _emit_float(to: str, mode: str):
    def emit(gen, codes, types, call):
        src = types[0]
        if src == "float16":  # every half is exact in float and double: no mode changes it
            return gen.cast(codes[0], src, to)
        return gen.helper(f"_cvtf_{src}_{to}") + f"({codes[0]}, {MODE_CODE[mode]})"

    return emit


def _entries() -> list[Builtin]:
    rows = []
    for c, t in CONVERT.items():
        if ct.is_float(t):
            rows += [Builtin(f"convert_{c}_{m}", FAMILY, _rule(f"convert_{c}_{m}", t),
                             _emit_float(t, m), helpers=_CVTF, c=f"convert_{c}_{m}(x)",
                             types="any number", note=f"rounded {m}")
                     for m in MODES]
            continue
        for sat in (False, True):
            for mode in (None, *MODES):
                if not sat and mode is None:
                    continue
                suffix = ("_sat" if sat else "") + (f"_{mode}" if mode else "")
                name = f"convert_{c}{suffix}"
                note = ("clamped to the range, NaN gives 0; " if sat else "") + (
                    f"floats rounded {mode}" if mode else "floats truncated")
                rows.append(Builtin(name, FAMILY, _rule(name, t), emit_int(t, sat, mode),
                                    helpers=(_ISAT, *_FSAT), c=f"{name}(x)",
                                    types="any number", note=note))
    return rows


ENTRIES = _entries()
