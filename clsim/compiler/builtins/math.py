"""Math and common functions: exp, sqrt, pow, fma, fmin/fmax, min/max, clamp, mix, sign...

Transcendentals are evaluated in float64 with ``math`` and rounded once to float32: both modes
call the same libm, so results agree bit for bit and sit well inside OpenCL's ULP bounds.
float32 ``exp`` is the exception: a vectorisable float64 polynomial (``math_poly``).
``native_*`` and ``half_*`` use the same implementation as the full-precision function.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math_exact import FMA as _FMA
from clsim.compiler.builtins.math_poly import FLOAT32 as POLY_FLOAT32
from clsim.compiler.builtins.math_poly import HELPERS as POLY_HELPERS
from clsim.compiler.builtins.rules import (
    call_common,
    call_helper,
    cast_all,
    common_type,
    float_only_result,
    float_result,
    need_float,
)
from clsim.compiler.helpers import helper

FLOATS = "float, double"
FAMILY = "math"

# name -> the float64 expression of v (NaN is handled before it). Every guard keeps Python's
# ``math`` from raising (domain, overflow) where C returns a value, so no-JIT mode never crashes;
# each cut-off is the largest argument whose float64 result is finite.
UNARY = {
    "sqrt": "math.sqrt(v) if v >= 0.0 else math.nan",
    "rsqrt": ("1.0 / math.sqrt(v) if v > 0.0 else "
              "(math.copysign(math.inf, v) if v == 0.0 else math.nan)"),
    "exp": "math.exp(v) if v <= 709.782712893384 else math.inf",
    "exp2": "2.0 ** v if v < 1024.0 else math.inf",
    "exp10": "10.0 ** v if v <= 308.2547155599167 else math.inf",
    "expm1": "math.expm1(v) if v <= 709.782712893384 else math.inf",
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
    "sinh": "math.sinh(v) if abs(v) <= 710.4758600739439 else math.copysign(math.inf, v)",
    "cosh": "math.cosh(v) if abs(v) <= 710.4758600739439 else math.inf",
    "tanh": "math.tanh(v)",
    "asinh": "math.asinh(v)",
    "acosh": "math.acosh(v) if v >= 1.0 else math.nan",
    "atanh": ("math.atanh(v) if abs(v) < 1.0 else "
              "(math.copysign(math.inf, v) if abs(v) == 1.0 else math.nan)"),
    "asinpi": "math.asin(v) / math.pi if abs(v) <= 1.0 else math.nan",
    "acospi": "math.acos(v) / math.pi if abs(v) <= 1.0 else math.nan",
    "atanpi": "math.atan(v) / math.pi",
    "cbrt": "_cbrt_core(v)",
    "erf": "math.erf(v)",
    "erfc": "math.erfc(v)",
    # np.floor/ceil/trunc keep the sign of zero (ceil(-0.5) is -0.0) and are exact at any size.
    "floor": "np.floor(v)",
    "ceil": "np.ceil(v)",
    "trunc": "np.trunc(v)",
    "logb": "math.frexp(v)[1] - 1.0 if v != 0.0 and abs(v) != math.inf else "
            "(-math.inf if v == 0.0 else math.inf)",
}
# Helpers a UNARY expression calls beyond math/np.
_UNARY_DEPS = {"cbrt": ("_cbrt_core",)}
_UNARY_FLOP = {"sqrt": "sqrt", "rsqrt": "sqrt", "fabs": "add", "floor": "add", "ceil": "add",
               "trunc": "add"}


def _per_type(stem: str, template: str, inline: bool = False) -> tuple:
    """The float32 and float64 helpers ``_STEM_T`` made from ``template`` ({t} is the type)."""
    return tuple(helper(f"_{stem}_{t}", template.format(t=t), inline=inline)
                 for t in ("float32", "float64"))


def unary_helpers(name: str) -> tuple:
    deps = _UNARY_DEPS.get(name, ())
    template = f"""
def _{name}_{{t}}(x):
    v = np.float64(x)
    if v != v:
        return np.{{t}}(v)
    return np.{{t}}({UNARY[name]})
"""
    poly = (POLY_FLOAT32[name], *POLY_HELPERS) if name in POLY_FLOAT32 else ()
    return (*poly, *(helper(f"_{name}_{t}", template.format(t=t), deps)
                     for t in ("float32", "float64") if not (poly and t == "float32")))


# cbrt from pow and one Newton step, in plain arithmetic: np.cbrt (no-JIT) and libm's cbrt
# (JIT) differ in the last bit, this gives the same bits in both modes.
_CBRT = helper("_cbrt_core", """
def _cbrt_core(v):
    a = abs(v)
    if a == 0.0 or a == math.inf:
        return v
    e = math.frexp(a)[1]
    k = (e - e % 3) // 3
    m = math.ldexp(a, -3 * k)
    r = m ** (1.0 / 3.0)
    r = r - (r * r * r - m) / (3.0 * r * r)
    return math.copysign(math.ldexp(r, k), v)
""")
# round: half away from zero. v - trunc(v) is exact, so the halfway test is too (adding 0.5
# first would round 0.49999999999999994 up to 1.0).
_ROUND = _per_type("round", """
def _round_{t}(x):
    v = np.float64(x)
    t = np.trunc(v)
    if v == v and abs(v - t) >= 0.5:
        t = t + math.copysign(1.0, v)
    return np.{t}(t)
""")
_RINT = _per_type("rint", """
def _rint_{t}(x):
    return np.{t}(np.rint(np.float64(x)))
""")
# pow's special cases are C99 Annex F's (OpenCL C 7.5.1); an odd integer y keeps x's sign.
_POW_CORE = helper("_pow_core", """
def _pow_core(a, b):
    if b == 0.0 or a == 1.0:
        return 1.0
    if a != a or b != b:
        return math.nan
    odd = abs(b) < 9007199254740992.0 and b == np.floor(b) and abs(np.fmod(b, 2.0)) == 1.0
    if a == 0.0:
        if b < 0.0:
            return math.copysign(math.inf, a) if odd else math.inf
        return a if odd else 0.0
    if abs(b) == math.inf:
        if a == -1.0:
            return 1.0
        return (math.inf if b > 0.0 else 0.0) if abs(a) > 1.0 else (
            0.0 if b > 0.0 else math.inf)
    if a < 0.0 and b != np.floor(b):
        return math.nan
    r = np.float64(abs(a)) ** b
    return -r if (a < 0.0 and odd) else r
""")
_POW = tuple(helper(f"_pow_{t}", f"""
def _pow_{t}(x, y):
    return np.{t}(_pow_core(np.float64(x), np.float64(y)))
""", ("_pow_core",)) for t in ("float32", "float64"))
# powr(x, y) is exp2(y * log2(x)): defined for x >= 0 only, with its own special cases.
_POWR = tuple(helper(f"_powr_{t}", f"""
def _powr_{t}(x, y):
    a = np.float64(x)
    b = np.float64(y)
    if a != a or b != b or a < 0.0:
        return np.{t}(math.nan)
    if a == 0.0:
        return np.{t}(math.nan if b == 0.0 else (math.inf if b < 0.0 else 0.0))
    if a == math.inf and b == 0.0:
        return np.{t}(math.nan)
    if a == 1.0:
        return np.{t}(math.nan if abs(b) == math.inf else 1.0)
    return np.{t}(_pow_core(a, b))
""", ("_pow_core",)) for t in ("float32", "float64"))
# fmax/fmin as three selects and one return: LLVM if-converts them in a work-item loop, which
# early returns keep it from doing ("Control flow cannot be substituted for a select").
_FMAX = _per_type("fmax", """
def _fmax_{t}(a, b):
    m = b if a < b else a
    m = a if b != b else m
    return b if a != a else m
""", inline=True)
_FMIN = _per_type("fmin", """
def _fmin_{t}(a, b):
    m = b if b < a else a
    m = a if b != b else m
    return b if a != a else m
""", inline=True)
# sign(NaN) is 0.0 (OpenCL C 6.15.4); sign(+-0) keeps the zero.
_SIGN = _per_type("sign", """
def _sign_{t}(x):
    if x != x:
        return np.{t}(0.0)
    if x > 0.0:
        return np.{t}(1.0)
    if x < 0.0:
        return np.{t}(-1.0)
    return x
""")
# fabs and copysign only touch the sign bit (IEEE 754-2008 5.5.1, and every device measured):
# a NaN keeps its payload and gets the sign asked for, so they work on the bits.
_SIGN_BIT = {"float32": ("uint32", 0x80000000), "float64": ("uint64", 0x8000000000000000)}


def _sign_bit_helpers(stem: str, template: str) -> tuple:
    return tuple(helper(f"_{stem}_{t}", template.format(t=t, u=u, sign=hex(sign),
                                                        magnitude=hex(sign - 1)))
                 for t, (u, sign) in _SIGN_BIT.items())


FABS = _sign_bit_helpers("fabs", """
def _fabs_{t}(x):
    return _bitcast_{t}(np.{u}(_bitcast_{u}(np.{t}(x)) & np.{u}({magnitude})))
""")
_COPYSIGN = _sign_bit_helpers("copysign", """
def _copysign_{t}(x, y):
    magnitude = _bitcast_{u}(np.{t}(x)) & np.{u}({magnitude})
    return _bitcast_{t}(np.{u}(magnitude | (_bitcast_{u}(np.{t}(y)) & np.{u}({sign}))))
""")
MIN = helper("_min", "def _min(a, b):\n    return b if b < a else a", inline=True)
MAX = helper("_max", "def _max(a, b):\n    return b if a < b else a", inline=True)
_CLAMP = helper("_clamp", "def _clamp(x, lo, hi):\n    m = lo if x < lo else x\n"
                          "    return hi if hi < m else m")
# Float clamp is fmin(fmax(x, lo), hi) (OpenCL C 6.15.4): clamp(NaN, -1, 1) is -1 on devices.
_FCLAMP = tuple(helper(f"_clamp_{t}", f"""
def _clamp_{t}(x, lo, hi):
    return _fmin_{t}(_fmax_{t}(x, lo), hi)
""", (f"_fmax_{t}", f"_fmin_{t}")) for t in ("float32", "float64"))
_MIX = helper("_mix", "def _mix(x, y, a):\n    return x + (y - x) * a")


def _emit_mad(gen, codes, types, call):
    to = float_result(types)
    if to == "float16":  # fused on half, as devices with fp16 compute it (builtins/half.py)
        return gen.helper("_fma_float16") + "(" + ", ".join(
            cast_all(gen, codes, types, "float32")) + ")"
    a, b, c = cast_all(gen, codes, types, to)
    return f"(({a} * {b}) + {c})"


def _emit_mix(gen, codes, types, call):
    if float_result(types) == "float16":  # y - x rounded to half, then fused (half.py)
        return gen.helper("_mix_float16") + "(" + ", ".join(
            cast_all(gen, codes, types, "float32")) + ")"
    return call_common("_mix")(gen, codes, types, call)


def _emit_recip(gen, codes, types, call):
    to = float_only_result(types)
    return f"({gen.const(1.0, to)} / {gen.cast(codes[0], types[0], to)})"


def _emit_divide(gen, codes, types, call):
    a, b = cast_all(gen, codes, types, float_only_result(types))
    return f"({a} / {b})"


def _emit_clamp(gen, codes, types, call):
    args = ", ".join(cast_all(gen, codes, types, call.ctype))
    if ct.is_float(call.ctype):
        return gen.helper(f"_clamp_{call.ctype}") + f"({args})"
    return gen.helper("_clamp") + f"({args})"


FLOAT_ONLY = "float (a double converts to float)"


def _float_fn(name, n, emit, helpers=(), flop=None, **doc):
    args = ", ".join("xyz"[:n])
    only = name.startswith(("half_", "native_"))  # gentype is float (OpenCL C 6.15.2)
    rule = need_float(name, n, float_only_result if only else float_result)
    return Builtin(name, FAMILY, rule, emit, helpers=helpers, flop=flop,
                   c=doc.pop("c", f"{name}({args})"),
                   types=doc.pop("types", FLOAT_ONLY if only else FLOATS), **doc)


def _entries() -> list[Builtin]:
    rows = [_float_fn(name, 1, call_helper(name), (*unary_helpers(name), _CBRT),
                      _UNARY_FLOP.get(name, "transcendental")) for name in UNARY]
    native = ("native_exp", "exp"), ("native_log", "log"), ("native_sqrt", "sqrt"), (
        "native_rsqrt", "rsqrt"), ("native_sin", "sin"), ("native_cos", "cos"), (
        "half_exp", "exp")
    for alias, target in native:
        rows.append(_float_fn(alias, 1, call_helper(target, float_only_result),
                              unary_helpers(target),
                              _UNARY_FLOP.get(target, "transcendental"),
                              note=f"same as {target}()"))
    rows += [
        _float_fn("round", 1, call_helper("round"), _ROUND, "add",
                  note="half away from zero"),
        _float_fn("rint", 1, call_helper("rint"), _RINT, "add", note="half to even"),
        _float_fn("pow", 2, call_helper("pow"), (*_POW, _POW_CORE), "transcendental"),
        _float_fn("powr", 2, call_helper("powr"), (*_POWR, _POW_CORE), "transcendental",
                  note="x >= 0 only: NaN for x < 0, (0, 0), (1, inf), (inf, 0)"),
        _float_fn("fmax", 2, call_helper("fmax"), _FMAX, "add", note="ignores a NaN"),
        _float_fn("fmin", 2, call_helper("fmin"), _FMIN, "add", note="ignores a NaN"),
        _float_fn("fma", 3, call_helper("fma"), _FMA, "fma", note="rounded once"),
        _float_fn("mad", 3, _emit_mad, (), "fma",
                  note="multiply and add, rounded apart (on half: rounded once, as fma)"),
        _float_fn("native_recip", 1, _emit_recip, (), "div"),
        _float_fn("native_divide", 2, _emit_divide, (), "div"),
        _float_fn("copysign", 2, call_helper("copysign"), _COPYSIGN,
                  note="the sign bit only: a NaN keeps its payload"),
        _float_fn("fabs", 1, call_helper("fabs"), FABS, "add",
                  note="clears the sign bit only: a NaN keeps its payload"),
        _float_fn("mix", 3, _emit_mix, (_MIX,), "fma",
                  note="x + (y - x) * a (on half: fma(y - x, a, x), y - x rounded to half)"),
        _float_fn("sign", 1, call_helper("sign"), _SIGN),
        Builtin("min", FAMILY, common_type("min", 2), call_common("_min"), helpers=(MIN,),
                flop="add", c="min(x, y)", types="any number",
                note="y < x ? y : x; Python's min() is the same builtin"),
        Builtin("max", FAMILY, common_type("max", 2), call_common("_max"), helpers=(MAX,),
                flop="add", c="max(x, y)", types="any number",
                note="x < y ? y : x; Python's max() is the same builtin"),
        Builtin("clamp", FAMILY, common_type("clamp", 3), _emit_clamp,
                helpers=(_CLAMP, *_FCLAMP, *_FMAX, *_FMIN), flop="add",
                c="clamp(x, lo, hi)", types="any number",
                note="floats: fmin(fmax(x, lo), hi), so a NaN x gives lo"),
    ]
    return rows


ENTRIES = _entries()
