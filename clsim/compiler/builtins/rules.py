"""Typing rules and emitters shared by many builtins (the shapes most entries take).

A rule is ``rule(types, call) -> result type``; an emitter is
``emit(gen, codes, types, call) -> source``. The builders here make the common ones: "one
float", "n numbers of a common type", "call helper _NAME_T on the arguments cast to T".
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.registry import HELPERS
from clsim.compiler.diagnostics import node_error


def float_result(types) -> str:
    """The floating type a math builtin computes in: double if any argument is, half if every
    floating argument is half, else float."""
    if "float64" in types:
        return "float64"
    floats = [t for t in types if ct.is_float(t)]
    return "float16" if floats and all(t == "float16" for t in floats) else "float32"


def float_only_result(types) -> str:
    """The type a float-only builtin (``half_*``, ``native_*``: gentype is float) computes in:
    a double argument converts to float, as C's overload resolution does on the devices."""
    t = float_result(types)
    return "float32" if t == "float64" else t


def need_float(name: str, n: int = 1, result=float_result):
    """``n`` scalar numbers, computed as float (or double if one is double; ``result``
    picks)."""
    what = "one number" if n == 1 else f"{n} numbers"

    def rule(types, call):
        if len(types) != n or not all(ct.is_scalar(t) for t in types):
            raise node_error(call, f"{name}() takes {what}")
        return result(types)

    return rule


def common_type(name: str, n: int):
    """``n`` scalar numbers converted to their common type (C's usual arithmetic conversions)."""

    def rule(types, call):
        if len(types) != n or not all(ct.is_scalar(t) for t in types):
            raise node_error(call, f"{name}() takes {n} numbers")
        t = types[0]
        for other in types[1:]:
            t = ct.arithmetic(t, other)
        return t

    return rule


def cast_all(gen, codes, types, to) -> list[str]:
    return [gen.cast(code, t, to) for code, t in zip(codes, types, strict=True)]


def call_helper(stem: str, result=float_result):
    """Emit ``_STEM_T(args...)`` with every argument cast to the float type T
    (``result(types)``)."""

    def emit(gen, codes, types, call):
        to = result(types)
        if to == "float16":  # the float helper, rounded to half (half values are floats)
            args = cast_all(gen, codes, types, "float32")
            if f"_{stem}_float16" in HELPERS:  # a half version where rounding twice differs
                return gen.helper(f"_{stem}_float16") + "(" + ", ".join(args) + ")"
            inner = gen.helper(f"_{stem}_float32") + "(" + ", ".join(args) + ")"
            return gen.cast(inner, "float32", "float16")
        args = cast_all(gen, codes, types, to)
        return gen.helper(f"_{stem}_{to}") + "(" + ", ".join(args) + ")"

    return emit


def call_common(helper: str):
    """Emit ``helper(args...)`` with every argument cast to the call's result type."""

    def emit(gen, codes, types, call):
        args = cast_all(gen, codes, types, call.ctype)
        code = gen.helper(helper) + "(" + ", ".join(args) + ")"
        return gen.wrap(code, call.ctype) if call.ctype == "float16" else code

    return emit
