"""Relational functions: isnan, isinf, isfinite, signbit, the comparisons
isequal ... isunordered (false when an argument is NaN, except isnotequal and isunordered),
and select."""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "relational"

_TESTS = {
    "isnan": "def _isnan(x):\n    return x != x",
    "isinf": "def _isinf(x):\n    return x == math.inf or x == -math.inf",
    "isfinite": "def _isfinite(x):\n    return x == x and x != math.inf and x != -math.inf",
    "signbit": "def _signbit(x):\n    return math.copysign(1.0, np.float64(x)) < 0.0",
}
# Comparisons of two numbers converted to their common type; NaN compares unordered.
_COMPARE = {
    "isequal": "a == b", "isnotequal": "a != b", "isgreater": "a > b",
    "isgreaterequal": "a >= b", "isless": "a < b", "islessequal": "a <= b",
    "islessgreater": "a < b or a > b", "isordered": "a == a and b == b",
    "isunordered": "a != a or b != b",
}
# isnormal: finite and at least the type's smallest normal number (2^-126, 2^-1022).
_ISNORMAL = tuple(helper(f"_isnormal_{t}", f"def _isnormal_{t}(x):\n    a = abs(np.float64(x))\n"
                         f"    return a == a and a != math.inf and a >= {tiny!r}")
                  for t, tiny in (("float32", 2.0**-126), ("float64", 2.0**-1022)))
_SELECT = helper("_select", "def _select(a, b, c):\n    return b if c != 0 else a")


def _test_rule(types, call):
    if len(types) != 1 or not ct.is_scalar(types[0]):
        raise node_error(call, "this test takes one number")
    return "bool"


def _test_emit(name):
    def emit(gen, codes, types, call):
        return gen.helper(f"_{name}") + f"({codes[0]})"

    return emit


def _emit_isnormal(gen, codes, types, call):
    t = "float64" if types[0] == "float64" else "float32"
    return gen.helper(f"_isnormal_{t}") + f"({gen.cast(codes[0], types[0], t)})"


def _compare_rule(types, call):
    if len(types) != 2 or not all(ct.is_scalar(t) for t in types):
        raise node_error(call, "this comparison takes two numbers")
    return "bool"


def _compare_emit(name):
    def emit(gen, codes, types, call):
        to = ct.arithmetic(types[0], types[1])
        a, b = gen.cast(codes[0], types[0], to), gen.cast(codes[1], types[1], to)
        return gen.helper(f"_{name}") + f"({a}, {b})"

    return emit


def _select_rule(types, call):
    if len(types) != 3:
        raise node_error(call, "select(a, b, c) takes three arguments: c ? b : a")
    return ct.arithmetic(types[0], types[1])


def _emit_select(gen, codes, types, call):
    to = call.ctype
    a, b = gen.cast(codes[0], types[0], to), gen.cast(codes[1], types[1], to)
    return gen.helper("_select") + f"({a}, {b}, {codes[2]})"


ENTRIES = [
    *(Builtin(name, FAMILY, _test_rule, _test_emit(name), helpers=(helper(f"_{name}", src),),
              c=f"{name}(x)", types="float, double", note="bool (OpenCL: int)")
      for name, src in _TESTS.items()),
    Builtin("isnormal", FAMILY, _test_rule, _emit_isnormal, helpers=_ISNORMAL, c="isnormal(x)",
            types="float, double", note="bool (OpenCL: int); finite, nonzero, not subnormal"),
    *(Builtin(name, FAMILY, _compare_rule, _compare_emit(name),
              helpers=(helper(f"_{name}", f"def _{name}(a, b):\n    return {expr}"),),
              c=f"{name}(x, y)", types="float, double", note="bool (OpenCL: int); " + expr)
      for name, expr in _COMPARE.items()),
    Builtin("select", FAMILY, _select_rule, _emit_select, helpers=(_SELECT,),
            c="select(a, b, c)", types="any number", note="c ? b : a"),
]
