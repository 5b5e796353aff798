"""Math and common functions: exp, sqrt, pow, fma, fmin/fmax, min/max, clamp, mix, sign...

Transcendentals are evaluated in float64 with ``math`` and rounded once to float32: both modes
call the same libm, so results agree bit for bit and sit well inside OpenCL's ULP bounds.
``native_*`` and ``half_*`` use the same implementation as the full-precision function.
"""

from __future__ import annotations

from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.rules import (
    call_common,
    call_helper,
    cast_all,
    common_type,
    float_result,
    need_float,
)
from clsim.compiler.helpers import helper

FLOATS = "float, double"
FAMILY = "math"

# name -> the float64 expression of v (NaN is handled before it).
UNARY = {
    "sqrt": "math.sqrt(v) if v >= 0.0 else math.nan",
    "rsqrt": ("1.0 / math.sqrt(v) if v > 0.0 else "
              "(math.copysign(math.inf, v) if v == 0.0 else math.nan)"),
    "exp": "math.exp(v) if v < 709.0 else math.inf",
    "exp2": "2.0 ** v if v < 1024.0 else math.inf",
    "exp10": "10.0 ** v if v < 308.0 else math.inf",
    "expm1": "math.expm1(v) if v < 709.0 else math.inf",
    "log": "math.log(v) if v > 0.0 else (-math.inf if v == 0.0 else math.nan)",
    "log2": "math.log2(v) if v > 0.0 else (-math.inf if v == 0.0 else math.nan)",
    "log10": "math.log10(v) if v > 0.0 else (-math.inf if v == 0.0 else math.nan)",
    "log1p": "math.log1p(v) if v > -1.0 else (-math.inf if v == -1.0 else math.nan)",
    "sin": "math.sin(v) if abs(v) != math.inf else math.nan",
    "cos": "math.cos(v) if abs(v) != math.inf else math.nan",
    "tan": "math.tan(v) if abs(v) != math.inf else math.nan",
    "asin": "math.asin(v) if abs(v) <= 1.0 else math.nan",
    "acos": "math.acos(v) if abs(v) <= 1.0 else math.nan",
    "atan": "math.atan(v)",
    "sinh": "math.sinh(v) if abs(v) < 710.0 else math.copysign(math.inf, v)",
    "cosh": "math.cosh(v) if abs(v) < 710.0 else math.inf",
    "tanh": "math.tanh(v)",
    "erf": "math.erf(v)",
    "erfc": "math.erfc(v)",
    "floor": "math.floor(v) if abs(v) < 4.5e15 else v",
    "ceil": "math.ceil(v) if abs(v) < 4.5e15 else v",
    "trunc": "math.trunc(v) if abs(v) < 4.5e15 else v",
    "fabs": "abs(v)",
}
_UNARY_FLOP = {"sqrt": "sqrt", "rsqrt": "sqrt", "fabs": "add", "floor": "add", "ceil": "add",
               "trunc": "add"}


def _per_type(stem: str, template: str) -> tuple:
    """The float32 and float64 helpers ``_STEM_T`` made from ``template`` ({t} is the type)."""
    return tuple(helper(f"_{stem}_{t}", template.format(t=t)) for t in ("float32", "float64"))


def unary_helpers(name: str) -> tuple:
    return _per_type(name, f"""
def _{name}_{{t}}(x):
    v = np.float64(x)
    if v != v:
        return np.{{t}}(v)
    return np.{{t}}({UNARY[name]})
""")


_ROUND = _per_type("round", """
def _round_{t}(x):
    v = np.float64(x)
    if v != v or abs(v) >= 4.5e15:
        return np.{t}(v)
    r = math.floor(abs(v) + 0.5)
    return np.{t}(math.copysign(r, v))
""")
# rint rounds half to even (the current rounding mode); Python's round() does exactly that.
_RINT = _per_type("rint", """
def _rint_{t}(x):
    v = np.float64(x)
    if v != v or abs(v) >= 4.5e15:
        return np.{t}(v)
    r = np.float64(round(v))
    return np.{t}(math.copysign(r, v))
""")
_POW = _per_type("pow", """
def _pow_{t}(x, y):
    a = np.float64(x)
    b = np.float64(y)
    if a != a or b != b:
        return np.{t}(math.nan) if not (b == 0.0 or a == 1.0) else np.{t}(1.0)
    if a == 0.0 and b < 0.0:
        return np.{t}(math.inf)
    if a < 0.0 and b != math.floor(b):
        return np.{t}(math.nan)
    if abs(a) != math.inf and abs(b) != math.inf and b * math.log2(abs(a)) > 1100.0:
        return np.{t}(math.inf if (a > 0.0 or b % 2.0 == 0.0) else -math.inf)
    return np.{t}(a ** b)
""")
_FMAX = _per_type("fmax", """
def _fmax_{t}(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return b if a < b else a
""")
_FMIN = _per_type("fmin", """
def _fmin_{t}(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return b if b < a else a
""")
# fma must round once. a*b of two float32 is exact in float64; the float64 sum is then rounded
# to odd (a neighbour with an odd last bit when inexact), after which rounding to float32 is
# correct: round-to-odd with 2+ spare bits avoids double rounding.
_FMA = (helper("_fma_float32", """
def _fma_float32(a, b, c):
    p = np.float64(a) * np.float64(b)
    q = np.float64(c)
    s = p + q
    if s != s or abs(s) == math.inf:
        return np.float32(s)
    bp = s - q
    e = (p - bp) + (q - (s - bp))
    if e != 0.0:
        m, ex = math.frexp(s)
        mant = np.int64(m * 9007199254740992.0)
        if mant % 2 == 0:
            s = np.nextafter(s, math.inf if e > 0.0 else -math.inf)
    return np.float32(s)
"""), helper("_fma_float64", """
def _fma_float64(a, b, c):
    return np.float64(a) * np.float64(b) + np.float64(c)
"""))
_SIGN = _per_type("sign", """
def _sign_{t}(x):
    if x != x:
        return x
    if x > 0.0:
        return np.{t}(1.0)
    if x < 0.0:
        return np.{t}(-1.0)
    return x
""")
MIN = helper("_min", "def _min(a, b):\n    return b if b < a else a")
MAX = helper("_max", "def _max(a, b):\n    return b if a < b else a")
_CLAMP = helper("_clamp", "def _clamp(x, lo, hi):\n    m = lo if x < lo else x\n"
                          "    return hi if hi < m else m")
_MIX = helper("_mix", "def _mix(x, y, a):\n    return x + (y - x) * a")


def _emit_mad(gen, codes, types, call):
    a, b, c = cast_all(gen, codes, types, float_result(types))
    return f"(({a} * {b}) + {c})"


def _emit_recip(gen, codes, types, call):
    to = float_result(types)
    return f"({gen.const(1.0, to)} / {gen.cast(codes[0], types[0], to)})"


def _emit_divide(gen, codes, types, call):
    a, b = cast_all(gen, codes, types, float_result(types))
    return f"({a} / {b})"


def _emit_copysign(gen, codes, types, call):
    to = float_result(types)
    a, b = cast_all(gen, codes, types, to)
    return gen.cast(f"math.copysign({a}, {b})", "float64", to)


def _float_fn(name, n, emit, helpers=(), flop=None, **doc):
    args = ", ".join("xyz"[:n])
    return Builtin(name, FAMILY, need_float(name, n), emit, helpers=helpers, flop=flop,
                   c=doc.pop("c", f"{name}({args})"), types=doc.pop("types", FLOATS), **doc)


def _entries() -> list[Builtin]:
    rows = [_float_fn(name, 1, call_helper(name), unary_helpers(name),
                      _UNARY_FLOP.get(name, "transcendental")) for name in UNARY]
    native = ("native_exp", "exp"), ("native_log", "log"), ("native_sqrt", "sqrt"), (
        "native_rsqrt", "rsqrt"), ("native_sin", "sin"), ("native_cos", "cos"), (
        "half_exp", "exp")
    for alias, target in native:
        rows.append(_float_fn(alias, 1, call_helper(target), unary_helpers(target),
                              _UNARY_FLOP.get(target, "transcendental"),
                              note=f"same as {target}()"))
    rows += [
        _float_fn("round", 1, call_helper("round"), _ROUND, "add",
                  note="half away from zero"),
        _float_fn("rint", 1, call_helper("rint"), _RINT, "add", note="half to even"),
        _float_fn("pow", 2, call_helper("pow"), _POW, "transcendental"),
        _float_fn("powr", 2, call_helper("pow"), _POW, "transcendental"),
        _float_fn("fmax", 2, call_helper("fmax"), _FMAX, "add", note="ignores a NaN"),
        _float_fn("fmin", 2, call_helper("fmin"), _FMIN, "add", note="ignores a NaN"),
        _float_fn("fma", 3, call_helper("fma"), _FMA, "fma", note="rounded once"),
        _float_fn("mad", 3, _emit_mad, (), "fma", note="multiply and add, rounded apart"),
        _float_fn("native_recip", 1, _emit_recip, (), "div"),
        _float_fn("native_divide", 2, _emit_divide, (), "div"),
        _float_fn("copysign", 2, _emit_copysign),
        _float_fn("mix", 3, call_common("_mix"), (_MIX,), "fma", note="x + (y - x) * a"),
        _float_fn("sign", 1, call_helper("sign"), _SIGN),
        Builtin("min", FAMILY, common_type("min", 2), call_common("_min"), helpers=(MIN,),
                flop="add", c="min(x, y)", types="any number",
                note="y < x ? y : x; Python's min() is the same builtin"),
        Builtin("max", FAMILY, common_type("max", 2), call_common("_max"), helpers=(MAX,),
                flop="add", c="max(x, y)", types="any number",
                note="x < y ? y : x; Python's max() is the same builtin"),
        Builtin("clamp", FAMILY, common_type("clamp", 3), call_common("_clamp"),
                helpers=(_CLAMP,), flop="add", c="clamp(x, lo, hi)", types="any number"),
    ]
    return rows


ENTRIES = _entries()
