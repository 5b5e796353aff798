"""Integer functions: abs (OpenCL's abs of an integer returns the unsigned type)."""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math import FABS
from clsim.compiler.builtins.rules import call_helper
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "integer"

_IABS = helper("_iabs", "def _iabs(x):\n    return -x if x < 0 else x")


def _abs_rule(types, call):
    if len(types) != 1 or not ct.is_scalar(types[0]):
        raise node_error(call, "abs() takes one number")
    t = ct.promote(types[0])
    return t if ct.is_float(t) else ("u" + t if not t.startswith("u") else t)


def _emit_abs(gen, codes, types, call):
    t = ct.promote(types[0])
    if ct.is_float(t):
        return call_helper("fabs")(gen, codes, types, call)  # half through the float helper
    x = gen.cast(codes[0], types[0], t)
    # OpenCL abs of an int returns the unsigned type, so abs(INT_MIN) is 2**31.
    return gen.cast(gen.helper("_iabs") + f"({x})", t, call.ctype)


ENTRIES = [
    Builtin("abs", FAMILY, _abs_rule, _emit_abs, helpers=(_IABS, *FABS), flop="add",
            c="abs(x)", types="any number",
            note="integers give the unsigned type; Python's abs() is the same builtin"),
]
