"""Conversions (``convert_T``: C's cast) and bit reinterpretation (``as_T``)."""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.half import F2H
from clsim.compiler.diagnostics import node_error

FAMILY = "conversion"

# OpenCL C type name -> numpy dtype name
CONVERT = {
    "char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16", "int": "int32",
    "uint": "uint32", "long": "int64", "ulong": "uint64", "float": "float32",
    "double": "float64",
}
AS = ("char", "uchar", "short", "ushort", "int", "uint", "float", "long", "ulong", "double")
# as_short / as_ushort also take a half (its bits, as as_half takes them back)


def _convert_rule(to):
    def rule(types, call):
        if len(types) != 1 or not ct.is_scalar(types[0]):
            raise node_error(call, f"conversion to {to} takes one number")
        return to

    return rule


def _convert_emit(to):
    def emit(gen, codes, types, call):
        return gen.cast(codes[0], types[0], to)

    return emit


def _as_rule(to):
    size = ct.bits(to) // 8

    def rule(types, call):
        if len(types) != 1 or not ct.is_scalar(types[0]) or ct.bits(types[0]) != size * 8:
            got = ct.short(types[0]) if types else "nothing"
            raise node_error(call, f"as_{ct.cname(to)}() reinterprets {size}-byte values; "
                                   f"got {got}")
        if size < 4 and not ct.is_int(types[0]) and types[0] != "float16":
            raise node_error(call, f"as_{ct.cname(to)}() of a {ct.cname(types[0])} is not "
                                   "supported; reinterpret char/short/half values only")
        return to

    return rule


def _as_emit(to):
    def emit(gen, codes, types, call):
        if types[0] == "float16":  # a half value lives in a float32: its half bits
            return gen.cast(gen.helper("_f2h") + f"({codes[0]})", "uint16", to)
        if ct.is_int(types[0]) and ct.is_int(to):
            return gen.cast(codes[0], types[0], to)  # same width: a wrapping cast keeps the bits
        return gen.bitcast(codes[0], types[0], to)

    return emit


ENTRIES = [
    *(Builtin(f"convert_{c}", FAMILY, _convert_rule(t), _convert_emit(t), c=f"convert_{c}(x)",
              types="any number", note="C's cast: float to int truncates toward zero")
      for c, t in CONVERT.items()),
    *(Builtin(f"as_{c}", FAMILY, _as_rule(CONVERT[c]), _as_emit(CONVERT[c]), c=f"as_{c}(x)",
              helpers=(F2H,) if c in ("short", "ushort") else (),
              types=f"any {ct.bits(CONVERT[c]) // 8}-byte number", note="same bits")
      for c in AS),
]
