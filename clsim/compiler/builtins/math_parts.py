"""Builtins with pointer out-arguments, spelled as tuples in Python:
``m, e = frexp(x)``, ``f, i = modf(x)``, ``f, fl = fract(x)``, ``s, c = sincos(x)``,
``r, q = remquo(x, y)`` (C: ``m = frexp(x, &e)`` and so on; the tuple lists the return value
first, then what C writes through the pointer).

Each is rewritten once at parse time (``on_parse``): the tuple assignment's value becomes a
tuple of one call per component (``frexp`` -> ``__frexp_0(x), __frexp_1(x)``), non-public
builtins of this table with ordinary helpers, so typing and code generation need nothing new.
The arguments are evaluated once per component: they must not call builtins with effects.
"""

from __future__ import annotations

import ast

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math import FLOATS, unary_helpers
from clsim.compiler.builtins.math_more import _body_helpers
from clsim.compiler.builtins.registry import lookup
from clsim.compiler.builtins.rules import call_helper, float_result, need_float
from clsim.compiler.diagnostics import builtin_name, compile_error, node_error
from clsim.compiler.helpers import helper

FAMILY = "math"
_T = ("float32", "float64")
_ONE_BELOW = {"float32": "0.99999994", "float64": "0.9999999999999999"}

# name -> (arity, [(component helper body computing the component from float64 a (, b)),
#                   result kind: "float" or "int"])
_PARTS = {
    "frexp": (1, [("return np.{t}(a if (a != a or abs(a) == math.inf) else math.frexp(a)[0])",
                   "float"),
                  ("return np.int32(0 if (a != a or abs(a) == math.inf) else "
                   "math.frexp(a)[1])", "int")]),
    "modf": (1, [("return np.{t}(math.copysign(0.0, a) if abs(a) == math.inf else "
                  "math.copysign(a - np.trunc(a), a))", "float"),
                 ("return np.{t}(np.trunc(a))", "float")]),
    "fract": (1, [("return np.{t}(a if a != a else (math.copysign(0.0, a) if abs(a) == "
                   "math.inf else math.copysign(min(a - np.floor(a), {one_below}), a) if a == "
                   "0.0 else min(a - np.floor(a), {one_below})))", "float"),
                  ("return np.{t}(np.floor(a))", "float")]),
    "sincos": (1, [("return _sin_{t}(a)", "float"), ("return _cos_{t}(a)", "float")]),
    "remquo": (2, [("return _remainder_{t}(a, b)", "float"),
                   ("return _remquo_q(np.float64(a), np.float64(b))", "int")]),
}
_DEPS = {"sincos": ("_sin_{t}", "_cos_{t}"), "remquo": ("_remainder_{t}", "_remquo_q")}
# The low 7 bits of the integral quotient nearest x/y (ties to even), with the sign of x/y:
# fmod by 128|y| is exact, then at most 128 exact subtractions and the halfway test.
_REMQUO_Q = helper("_remquo_q", """
def _remquo_q(a, b):
    if a != a or b != b or b == 0.0 or abs(a) == math.inf:
        return np.int32(0)
    ab = abs(b)
    r = abs(np.fmod(a, 128.0 * ab)) if ab <= 1e306 else abs(a)
    q = 0
    while r >= ab:
        r = r - ab
        q += 1
    if r > ab - r or (r == ab - r and q % 2 == 1):
        q += 1
    q = q % 128
    return np.int32(-q if (a < 0.0) != (b < 0.0) else q)
""")


def _component_helpers(name: str, k: int) -> tuple:
    n, parts = _PARTS[name]
    body, _kind = parts[k]
    args = "x" if n == 1 else "x, y"
    unpack = "    a = np.float64(x)\n" + ("    b = np.float64(y)\n" if n == 2 else "")
    out = []
    for t in _T:
        deps = tuple(d.format(t=t) for d in _DEPS.get(name, ()))
        src = (f"def ___{name}_{k}_{t}({args}):\n{unpack}    "
               + body.format(t=t, one_below=_ONE_BELOW[t]))
        if name == "sincos" or (name == "remquo" and k == 0):
            src = src.replace("(a)", "(x)").replace("(a, b)", "(x, y)")
        out.append(helper(f"___{name}_{k}_{t}", src, deps))
    return tuple(out)


def _component_rule(name: str, k: int):
    n, parts = _PARTS[name]
    base = need_float(name, n)

    def rule(types, call):
        t = base(types, call)
        return "int32" if parts[k][1] == "int" else t

    return rule


def _emit_component(name: str, k: int):
    def emit(gen, codes, types, call):
        to = float_result(types)
        args = [gen.cast(c, s, to) for c, s in zip(codes, types, strict=True)]
        return gen.helper(f"___{name}_{k}_{to}") + "(" + ", ".join(args) + ")"

    return emit


def _on_parse(name: str, n_parts: int):
    def on_parse(parsed, call):
        for node in ast.walk(parsed.tree):
            if isinstance(node, ast.Assign) and node.value is call:
                target = node.targets[0]
                if isinstance(target, ast.Tuple) and len(target.elts) == n_parts:
                    _rewrite(node, call, name, n_parts)
                    return
        names = ", ".join("ab"[:n_parts])
        raise compile_error(call.loc, (
            f"{name}() gives {n_parts} values (C writes the second through a pointer): "
            f"unpack them, e.g. {names} = {name}(...)"))

    return on_parse


def _rewrite(assign: ast.Assign, call: ast.Call, name: str, n_parts: int) -> None:
    for sub in ast.walk(call):
        entry = lookup(builtin_name(sub))
        if sub is not call and entry is not None and entry.effects:
            raise compile_error(call.loc, f"{name}(): compute the argument first (it calls "
                                          f"{entry.name}(), which has effects)")
    calls = []
    for k in range(n_parts):
        func = ast.Name(id=f"__{name}_{k}", ctx=ast.Load())
        func.resolved = ("builtin", f"__{name}_{k}")
        new = ast.Call(func=func, args=call.args, keywords=[])
        for node in (func, new):
            node.loc = call.loc
            ast.copy_location(node, call)
        calls.append(new)
    value = ast.Tuple(elts=calls, ctx=ast.Load())
    value.loc = call.loc
    ast.copy_location(value, call)
    assign.value = value


def _public_rule(name: str):
    def rule(types, call):
        raise node_error(call, f"{name}() must be unpacked: a, b = {name}(...)")

    return rule


_NOTES = {"frexp": "m, e = frexp(x): x = m * 2**e, 0.5 <= |m| < 1",
          "modf": "f, i = modf(x): fractional and integral parts, both with x's sign",
          "fract": "f, fl = fract(x): min(x - floor(x), 1 - ulp), floor(x)",
          "sincos": "s, c = sincos(x)",
          "remquo": "r, q = remquo(x, y): remainder and 7 low bits of the quotient, signed"}


def _entries() -> list[Builtin]:
    rows = []
    for name, (n, parts) in _PARTS.items():
        extra = (*unary_helpers("sin"), *unary_helpers("cos")) if name == "sincos" else (
            (*_body_helpers("remainder"), _REMQUO_Q) if name == "remquo" else ())
        rows.append(Builtin(name, FAMILY, _public_rule(name), call_helper(name),
                            on_parse=_on_parse(name, len(parts)),
                            c=f"{name}(x{', y' if n == 2 else ''}, &out)",
                            py=f"a, b = {name}(x{', y' if n == 2 else ''})", types=FLOATS,
                            note=_NOTES[name]))
        for k in range(len(parts)):
            rows.append(Builtin(f"__{name}_{k}", FAMILY, _component_rule(name, k),
                                _emit_component(name, k),
                                helpers=(*_component_helpers(name, k), *extra),
                                flop="transcendental", public=False))
    return rows


ENTRIES = _entries()
del ct
