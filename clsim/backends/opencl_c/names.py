"""How OpenCL C spells clsim's types, literals and names.

Type names come from ``clsim.compiler.ctypes`` (``cname``); here: declarations of each kind of
variable (one table entry per kind of pointer/array/struct), literals that convert to the
simulator's value exactly, and renaming of Python names that are C keywords or type names.
"""

from __future__ import annotations

import math

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.structs import StructT

# Python names OpenCL C reserves: keywords, qualifiers, scalar and vector type names.
_VECTOR_BASES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
                 "double", "half")
RESERVED = frozenset({
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch",
    "typedef", "union", "unsigned", "void", "volatile", "while", "bool", "true", "false",
    "half", "uchar", "ushort", "uint", "ulong", "size_t", "ptrdiff_t", "intptr_t",
    "uintptr_t", "global", "local", "constant", "private", "kernel", "read_only",
    "write_only", "read_write", "uniform", "pipe", "complex", "imaginary", "image2d_t",
    "sampler_t", "event_t", "main",
    *(f"{b}{n}" for b in _VECTOR_BASES for n in ct.VECTOR_WIDTHS),
})

# Address-space qualifiers, by clsim's ArrayT.space.
SPACES = {"global": "__global", "constant": "__constant", "local": "__local",
          "private": "", "field": ""}


def c_name(name: str) -> str:
    """A Python identifier as a C identifier (``half`` becomes ``half_``)."""
    return name + "_" if name in RESERVED else name


class StructNames:
    """C typedef names of the packed structs a kernel uses, one per distinct layout."""

    def __init__(self):
        self.names: dict[StructT, str] = {}

    def of(self, st: StructT) -> str:
        if st not in self.names:
            fields = "_".join(f.name for f in st.fields)
            self.names[st] = f"struct{st.itemsize}_{fields}"
        return self.names[st]


def type_name(t, structs: StructNames) -> str:
    """The C name of a value type: scalar, vector or struct."""
    if isinstance(t, StructT):
        return structs.of(t)
    return ct.cname(t)


def pointer_decl(t, name: str, structs: StructNames) -> str:
    """``__global float* p``: a pointer parameter or variable of type ``t`` (a PtrT or a 1-D
    buffer ArrayT)."""
    if isinstance(t, ct.PtrT):
        space, elem = t.array.space, t.dtype
    else:
        space, elem = t.space, t.dtype
    qual = SPACES[space]
    return f"{qual + ' ' if qual else ''}{type_name(elem, structs)}* {name}"


def _qualified(space: str, text: str) -> str:
    qual = SPACES[space]
    return f"{qual} {text}" if qual else text


def _record_copy(t, name, structs, param):  # b = x[ib]: C's struct copy
    return f"{type_name(t.dtype, structs)} {name}"


def _pointer(t, name, structs, param):
    return pointer_decl(t, name, structs)


def _array_rows(t, name, structs, param):  # a 2-D array passed on: a pointer to its rows
    dims = "".join(f"[{n}]" for n in t.shape[1:])
    return _qualified(t.space, f"{type_name(t.dtype, structs)} (*{name}){dims}")


def _array(t, name, structs, param):
    dims = "".join(f"[{n}]" for n in t.shape)
    return _qualified(t.space, f"{type_name(t.dtype, structs)} {name}{dims}")


def _value(t, name, structs, param):
    return f"{type_name(t, structs)} {name}"


# How each kind of variable or parameter is declared: the first entry whose test holds.
# A new kind of pointer or array (the compiler's ``ctypes``) is one entry here.
DECLARATORS = (
    (lambda t, param: isinstance(t, ct.PtrT) and t.record_copy, _record_copy),
    (lambda t, param: isinstance(t, ct.PtrT), _pointer),
    (lambda t, param: isinstance(t, ct.ArrayT) and (param or t.shape is None)
     and t.shape is not None and len(t.shape) > 1, _array_rows),
    (lambda t, param: isinstance(t, ct.ArrayT) and (param or t.shape is None), _pointer),
    (lambda t, param: isinstance(t, ct.ArrayT), _array),
    (lambda t, param: True, _value),
)


def declaration(t, name: str, structs: StructNames, param: bool = False) -> str:
    """A C declaration of ``name`` with clsim type ``t`` (no initialiser); ``param``: as a
    function parameter (arrays decay to pointers)."""
    declare = next(how for test, how in DECLARATORS if test(t, param))
    return declare(t, name, structs, param)


_INT_SUFFIX = {"int32": "", "uint32": "u", "int64": "L", "uint64": "UL"}


def int_literal(value: int, t: str) -> str:
    """An integer constant of type ``t`` (C's literal types: int, uint, long, ulong; narrower
    types through a cast)."""
    value = int(value)
    if t == "bool":
        return "true" if value else "false"
    if t in _INT_SUFFIX:
        if t == "int64" and value == -(2**63):
            return "(-9223372036854775807L - 1L)"
        if t == "int32" and value == -(2**31):
            return "(-2147483647 - 1)"
        text = f"{value}{_INT_SUFFIX[t]}"
        return f"({text})" if value < 0 else text
    return f"(({ct.cname(t)}){value})"


def float_literal(value: float, t: str) -> str:
    """A float constant of type ``t`` that converts to exactly the simulator's value: the
    shortest decimal that round-trips through that type."""
    if math.isnan(value):
        return "NAN" if t == "float32" else f"(({ct.cname(t)})NAN)"
    if math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
        return text if t == "float32" else f"(({ct.cname(t)}){text})"
    if t == "float64":
        text = repr(float(value))
        return text if ("." in text or "e" in text) else text + ".0"
    text = np.format_float_positional(np.float32(value), unique=True, trim="0") \
        if 1e-4 <= abs(value) < 1e9 or value == 0 else \
        np.format_float_scientific(np.float32(value), unique=True, trim="0")
    if "." not in text and "e" not in text:
        text += ".0"
    literal = f"{text}f"
    if value < 0 or text.startswith("-"):
        literal = f"({literal})"
    return literal if t == "float32" else f"(({ct.cname(t)}){literal})"


def literal(value, t: str) -> str:
    """A Python or numpy number as a C constant of clsim type ``t``."""
    if ct.is_float(t):
        return float_literal(float(value), t)
    return int_literal(int(value), t)
