"""The builtin table: for each OpenCL builtin, its result type, its code, its traits.

One row per builtin (tables over branches): ``result(arg_types, loc)`` gives the OpenCL C result
type, ``emit(gen, args, types, node)`` the Python expression, ``helpers`` the runtime helpers it
needs, ``varying`` whether the result may differ between work-items even for uniform arguments,
``flop`` its category for the traffic model. Work-item functions and memory builtins (barrier,
local_array, vload) are handled by the code generator itself; they are listed here for typing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clsim.compiler.ctypes import (
    FLOAT_TYPES,
    INT_TYPES,
    VecT,
    arithmetic,
    is_float,
    is_int,
    is_scalar,
    promote,
    short,
)
from clsim.compiler.helpers import MATH_UNARY_NAMES


@dataclass(frozen=True)
class BuiltinRule:
    result: Callable
    emit: Callable | None = None
    helpers: Callable | None = None
    varying: bool = False
    flop: str | None = None


def _err(loc, what):
    from clsim.compiler.frontend import compile_error

    return compile_error(loc, what)


def _need_float(name):
    def rule(types, loc):
        if len(types) != 1 or not is_scalar(types[0]):
            raise _err(loc, f"{name}() takes one number")
        t = types[0]
        return t if t == "float64" else "float32"

    return rule


def _float_n(name, n):
    def rule(types, loc):
        if len(types) != n or not all(is_scalar(t) for t in types):
            raise _err(loc, f"{name}() takes {n} numbers")
        return "float64" if "float64" in types else "float32"

    return rule


def _common_n(name, n):
    def rule(types, loc):
        if len(types) != n or not all(is_scalar(t) for t in types):
            raise _err(loc, f"{name}() takes {n} numbers")
        t = types[0]
        for other in types[1:]:
            t = arithmetic(t, other)
        return t

    return rule


def _cast_all(gen, args, types, to):
    return [gen.cast(code, t, to) for code, t in zip(args, types, strict=True)]


def _math_emit(name):
    def emit(gen, args, types, node):
        to = "float64" if "float64" in types else "float32"
        casted = _cast_all(gen, args, types, to)
        return gen.helper(f"_{name}_{to}") + "(" + ", ".join(casted) + ")"

    return emit


RULES: dict[str, BuiltinRule] = {}

_TRANSCENDENTAL = {"sqrt", "rsqrt"}
for _name in MATH_UNARY_NAMES:
    _flop = "sqrt" if _name in _TRANSCENDENTAL else (
        "add" if _name in ("fabs", "floor", "ceil", "trunc") else "transcendental")
    RULES[_name] = BuiltinRule(_need_float(_name), _math_emit(_name), flop=_flop)
for _alias, _target in (
    ("native_exp", "exp"), ("native_log", "log"), ("native_sqrt", "sqrt"),
    ("native_rsqrt", "rsqrt"), ("native_sin", "sin"), ("native_cos", "cos"),
    ("half_exp", "exp"),
):
    RULES[_alias] = RULES.get(_target) or BuiltinRule(_need_float(_alias), _math_emit(_target))
RULES["round"] = BuiltinRule(_need_float("round"), _math_emit("round"), flop="add")
RULES["rint"] = BuiltinRule(_need_float("rint"), _math_emit("rint"), flop="add")
RULES["pow"] = BuiltinRule(_float_n("pow", 2), _math_emit("pow"), flop="transcendental")
RULES["powr"] = RULES["pow"]
RULES["fmax"] = BuiltinRule(_float_n("fmax", 2), _math_emit("fmax"), flop="add")
RULES["fmin"] = BuiltinRule(_float_n("fmin", 2), _math_emit("fmin"), flop="add")
RULES["fma"] = BuiltinRule(_float_n("fma", 3), _math_emit("fma"), flop="fma")


def _emit_mad(gen, args, types, node):
    to = "float64" if "float64" in types else "float32"
    a, b, c = _cast_all(gen, args, types, to)
    return f"(({a} * {b}) + {c})"


RULES["mad"] = BuiltinRule(_float_n("mad", 3), _emit_mad, flop="fma")


def _emit_recip(gen, args, types, node):
    to = "float64" if types[0] == "float64" else "float32"
    one = gen.const(1.0, to)
    return f"({one} / {gen.cast(args[0], types[0], to)})"


RULES["native_recip"] = BuiltinRule(_need_float("native_recip"), _emit_recip, flop="div")


def _emit_divide(gen, args, types, node):
    to = "float64" if "float64" in types else "float32"
    a, b = _cast_all(gen, args, types, to)
    return f"({a} / {b})"


RULES["native_divide"] = BuiltinRule(_float_n("native_divide", 2), _emit_divide, flop="div")


def _emit_minmax(op):
    def emit(gen, args, types, node):
        to = arithmetic(types[0], types[1])
        a, b = _cast_all(gen, args, types, to)
        return gen.helper(f"_{op}") + f"({a}, {b})"

    return emit


RULES["min"] = BuiltinRule(_common_n("min", 2), _emit_minmax("min"), flop="add")
RULES["max"] = BuiltinRule(_common_n("max", 2), _emit_minmax("max"), flop="add")


def _emit_clamp(gen, args, types, node):
    to = arithmetic(arithmetic(types[0], types[1]), types[2])
    x, lo, hi = _cast_all(gen, args, types, to)
    return gen.helper("_clamp") + f"({x}, {lo}, {hi})"


RULES["clamp"] = BuiltinRule(_common_n("clamp", 3), _emit_clamp, flop="add")


def _abs_rule(types, loc):
    if len(types) != 1 or not is_scalar(types[0]):
        raise _err(loc, "abs() takes one number")
    t = promote(types[0])
    return t if is_float(t) else ("u" + t if not t.startswith("u") else t)


def _emit_abs(gen, args, types, node):
    t = promote(types[0])
    x = gen.cast(args[0], types[0], t)
    if is_float(t):
        return gen.helper(f"_fabs_{t}") + f"({x})"
    # OpenCL abs of an int returns the unsigned type, so abs(INT_MIN) is 2**31.
    return gen.cast(gen.helper("_iabs") + f"({x})", t, _abs_rule(types, None))


RULES["abs"] = BuiltinRule(_abs_rule, _emit_abs, flop="add")


def _bool_rule(types, loc):
    if len(types) != 1 or not is_scalar(types[0]):
        raise _err(loc, "this test takes one number")
    return "bool"


for _test in ("isnan", "isinf", "isfinite", "signbit"):
    RULES[_test] = BuiltinRule(
        _bool_rule, lambda g, a, t, n, _test=_test: g.helper(f"_{_test}") + f"({a[0]})")


def _emit_copysign(gen, args, types, node):
    to = "float64" if "float64" in types else "float32"
    a, b = _cast_all(gen, args, types, to)
    return gen.cast(f"math.copysign({a}, {b})", "float64", to)


RULES["copysign"] = BuiltinRule(_float_n("copysign", 2), _emit_copysign)


def _select_rule(types, loc):
    if len(types) != 3:
        raise _err(loc, "select(a, b, c) takes three arguments: c ? b : a")
    return arithmetic(types[0], types[1])


def _emit_select(gen, args, types, node):
    to = _select_rule(types, None)
    a, b = gen.cast(args[0], types[0], to), gen.cast(args[1], types[1], to)
    return gen.helper("_select") + f"({a}, {b}, {args[2]})"


RULES["select"] = BuiltinRule(_select_rule, _emit_select)


def _emit_mix(gen, args, types, node):
    to = "float64" if "float64" in types else "float32"
    x, y, a = _cast_all(gen, args, types, to)
    return gen.helper("_mix") + f"({x}, {y}, {a})"


RULES["mix"] = BuiltinRule(_float_n("mix", 3), _emit_mix, flop="fma")


def _emit_sign(gen, args, types, node):
    to = "float64" if types[0] == "float64" else "float32"
    return gen.helper(f"_sign_{to}") + f"({gen.cast(args[0], types[0], to)})"


RULES["sign"] = BuiltinRule(_need_float("sign"), _emit_sign)

# Conversions: convert_T(x) is C's cast (float to int truncates toward zero).
_CONVERT = {
    "convert_char": "int8", "convert_uchar": "uint8", "convert_short": "int16",
    "convert_ushort": "uint16", "convert_int": "int32", "convert_uint": "uint32",
    "convert_long": "int64", "convert_ulong": "uint64", "convert_float": "float32",
    "convert_double": "float64",
}


def _convert_rule(to):
    def rule(types, loc):
        if len(types) != 1 or not is_scalar(types[0]):
            raise _err(loc, f"conversion to {to} takes one number")
        return to

    return rule


for _name, _to in _CONVERT.items():
    RULES[_name] = BuiltinRule(
        _convert_rule(_to), lambda g, a, t, n, _to=_to: g.cast(a[0], t[0], _to))

_AS = {
    "as_int": ("int32", 4), "as_uint": ("uint32", 4), "as_float": ("float32", 4),
    "as_long": ("int64", 8), "as_ulong": ("uint64", 8), "as_double": ("float64", 8),
}


def _as_rule(to, size):
    def rule(types, loc):
        from clsim.compiler.ctypes import bits

        if len(types) != 1 or not is_scalar(types[0]) or bits(types[0]) != size * 8:
            got = short(types[0]) if types else "nothing"
            raise _err(loc, f"as_{to}() reinterprets {size}-byte values; got {got}")
        return to

    return rule


for _name, (_to, _size) in _AS.items():
    RULES[_name] = BuiltinRule(
        _as_rule(_to, _size), lambda g, a, t, n, _to=_to: g.bitcast(a[0], t[0], _to))


def _vload_rule(width):
    def rule(types, loc):
        from clsim.compiler.ctypes import ArrayT

        if len(types) != 2 or not is_int(types[0]) or not isinstance(types[1], ArrayT):
            raise _err(loc, f"vload{width}(offset, buffer) takes an integer offset and a buffer")
        return VecT(types[1].dtype, width)

    return rule


def _vstore_rule(width):
    def rule(types, loc):
        from clsim.compiler.ctypes import ArrayT

        ok = (len(types) == 3 and isinstance(types[0], VecT) and types[0].width == width
              and is_int(types[1]) and isinstance(types[2], ArrayT))
        if not ok:
            got = ", ".join(short(t) for t in types)
            raise _err(loc, f"vstore{width}(vector, offset, buffer) takes a "
                            f"{width}-vector, an integer offset and a buffer; got ({got})")
        return None

    return rule


for _w in (2, 4, 8):
    RULES[f"vload{_w}"] = BuiltinRule(_vload_rule(_w), varying=True)
    RULES[f"vstore{_w}"] = BuiltinRule(_vstore_rule(_w), varying=True)

NUMERIC_TYPES = (*INT_TYPES, *FLOAT_TYPES)
