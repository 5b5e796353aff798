"""More math builtins: fmod, remainder, hypot, atan2, atan2pi, ldexp, pown, rootn, nextafter,
fdim, maxmag, minmag, ilogb, sinpi, cospi, tanpi; the native_/half_ forms of the rest.

Same shape as ``math.py``: one helper per float type (``_STEM_float32``/``_STEM_float64``),
computed in float64 and rounded once, or exactly where the function is exact (fmod, remainder,
ldexp, nextafter, fdim's subtraction in its own type). Every branch that Python's ``math``
would refuse (domain, overflow) is handled first, so no-JIT mode never raises.
"""

from __future__ import annotations

from clsim.compiler import ctypes as ct
from clsim.compiler.builtins.entry import Builtin
from clsim.compiler.builtins.math import (
    _FMAX,
    _FMIN,
    _POW_CORE,
    FLOAT_ONLY,
    FLOATS,
    UNARY,
    unary_helpers,
)
from clsim.compiler.builtins.rules import call_helper, float_only_result, float_result, need_float
from clsim.compiler.diagnostics import node_error
from clsim.compiler.helpers import helper

FAMILY = "math"
_T = ("float32", "float64")


def _typed(stem: str, body: str, deps: tuple[str, ...] = ()) -> tuple:
    """Helpers ``_STEM_T`` whose body computes float64 ``r`` from float64 ``a`` (``b``, ``n``)."""
    return tuple(helper(f"_{stem}_{t}", body.format(t=t), tuple(d.format(t=t) for d in deps))
                 for t in _T)


# sinpi of any finite a, exact at integers and halves: sin(pi * r) for r = a mod 2, reduced to
# [-0.5, 0.5] by exact subtractions.
_SINPI_CORE = helper("_sinpi_core", """
def _sinpi_core(a):
    r = np.fmod(abs(a), 2.0)
    if r == 0.0 or r == 1.0:
        s = 0.0
    elif r == 0.5:
        s = 1.0
    elif r == 1.5:
        s = -1.0
    elif r > 1.5:
        s = math.sin(math.pi * (r - 2.0))
    elif r > 0.5:
        s = math.sin(math.pi * (1.0 - r))
    else:
        s = math.sin(math.pi * r)
    return -s if math.copysign(1.0, a) < 0.0 else s
""")
_COSPI_CORE = helper("_cospi_core", """
def _cospi_core(a):
    r = np.fmod(abs(a), 2.0)
    if r == 0.5 or r == 1.5:
        return 0.0
    return _sinpi_core(0.5 - r)
""", ("_sinpi_core",))

_HEAD1 = ("def _{stem}_{{t}}(x):\n    a = np.float64(x)\n    if a != a:\n"
          "        return np.{{t}}(a)\n")
_HEAD2 = ("def _{stem}_{{t}}(x, y):\n    a = np.float64(x)\n    b = np.float64(y)\n"
          "    if a != a or b != b:\n        return np.{{t}}(math.nan)\n")

_BODIES = {
    "sinpi": (1, """    if abs(a) == math.inf:
        return np.{t}(math.nan)
    return np.{t}(_sinpi_core(a))
""", ("_sinpi_core",)),
    "cospi": (1, """    if abs(a) == math.inf:
        return np.{t}(math.nan)
    return np.{t}(_cospi_core(a))
""", ("_cospi_core", "_sinpi_core")),
    "tanpi": (1, """    if abs(a) == math.inf:
        return np.{t}(math.nan)
    c = _cospi_core(a)
    s = _sinpi_core(a)
    if c == 0.0:
        return np.{t}(math.copysign(math.inf, s))
    return np.{t}(s / c)
""", ("_cospi_core", "_sinpi_core")),
    "fmod": (2, """    if b == 0.0 or abs(a) == math.inf:
        return np.{t}(math.nan)
    if abs(b) == math.inf:
        return np.{t}(a)
    return np.{t}(np.fmod(a, b))
""", ()),
    # IEEE remainder: a - n*b with n the nearest integer to a/b (ties to even), exact.
    "remainder": (2, """    if b == 0.0 or abs(a) == math.inf:
        return np.{t}(math.nan)
    if abs(b) == math.inf:
        return np.{t}(a)
    ab = abs(b)
    r = abs(np.fmod(a, 2.0 * ab)) if ab <= 8.98846567431158e307 else abs(a)
    odd = False
    if r >= ab:
        r = r - ab
        odd = True
    if r > ab - r or (r == ab - r and odd):
        r = r - ab
    return np.{t}(-r if math.copysign(1.0, a) < 0.0 else r)
""", ()),
    "hypot": (2, """    return np.{t}(_hypot_core(a, b))
""", ("_hypot_core",)),
    "atan2": (2, """    return np.{t}(math.atan2(a, b))
""", ()),
    "atan2pi": (2, """    if abs(a) == math.inf and abs(b) == math.inf:
        return np.{t}(math.copysign(0.25 if b > 0.0 else 0.75, a))
    return np.{t}(math.atan2(a, b) / math.pi)
""", ()),
    "fdim": (2, """    if x > y:
        return np.{t}(x - y)
    return np.{t}(0.0)
""", ()),
    "maxmag": (2, """    if abs(a) > abs(b):
        return np.{t}(x)
    if abs(b) > abs(a):
        return np.{t}(y)
    return _fmax_{t}(np.{t}(x), np.{t}(y))
""", ("_fmax_{t}",)),
    "minmag": (2, """    if abs(a) < abs(b):
        return np.{t}(x)
    if abs(b) < abs(a):
        return np.{t}(y)
    return _fmin_{t}(np.{t}(x), np.{t}(y))
""", ("_fmin_{t}",)),
    "nextafter": (2, """    return np.nextafter(np.{t}(x), np.{t}(y))
""", ()),
}
_TWO_PROD = helper("_two_prod", """
def _two_prod(a, b):
    p = a * b
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl
""")
# hypot(inf, NaN) is inf (C99 F.9.4.3), so the NaN check of _HEAD2 comes after it.
_HYPOT_CORE = helper("_hypot_core", """
def _hypot_core(a, b):
    x = abs(a)
    y = abs(b)
    if x == math.inf or y == math.inf:
        return math.inf
    if x < y:
        x, y = y, x
    if y == 0.0:
        return x
    e = math.frexp(x)[1]
    xs = math.ldexp(x, -e)
    ys = math.ldexp(y, -e)
    h = math.sqrt(xs * xs + ys * ys)
    # One correction from the exact residual xs^2 + ys^2 - h^2 (Dekker products), as in
    # Borges, "An improved algorithm for hypot(a, b)" (2019): then at most rarely off by 1 ulp.
    px, ex = _two_prod(xs, xs)
    py, ey = _two_prod(ys, ys)
    ph, eh = _two_prod(h, h)
    h = h + (((px - ph) + py) + ((ex + ey) - eh)) / (2.0 * h)
    if math.frexp(h)[1] + e > 1024:
        return math.inf
    return math.ldexp(h, e)
""", ("_two_prod",))


def _two_arg_source(stem: str, body: str) -> str:
    if stem == "hypot":
        return ("def _hypot_{t}(x, y):\n    a = np.float64(x)\n    b = np.float64(y)\n"
                "    if abs(a) == math.inf or abs(b) == math.inf:\n"
                "        return np.{t}(math.inf)\n"
                "    if a != a or b != b:\n        return np.{t}(math.nan)\n" + body)
    if stem in ("maxmag", "minmag"):  # a NaN loses to the other argument, as in fmax/fmin
        return (f"def _{stem}_{{t}}(x, y):\n    a = np.float64(x)\n    b = np.float64(y)\n"
                + body)
    if stem == "nextafter":
        return ("def _nextafter_{t}(x, y):\n" + body)
    return _HEAD2.format(stem=stem) + body


def _body_helpers(stem: str) -> tuple:
    n, body, deps = _BODIES[stem]
    src = _HEAD1.format(stem=stem) + body if n == 1 else _two_arg_source(stem, body)
    return _typed(stem, src, deps)


# ilogb: FP_ILOGB0 (INT_MIN) for 0, FP_ILOGBNAN (INT_MAX) for NaN and INT_MAX for inf, as libclc.
_ILOGB = tuple(helper(f"_ilogb_{t}", f"""
def _ilogb_{t}(x):
    a = np.float64(x)
    if a != a or abs(a) == math.inf:
        return np.int32(2147483647)
    if a == 0.0:
        return np.int32(-2147483647 - 1)
    return np.int32(math.frexp(a)[1] - 1)
""") for t in _T)
_LDEXP = tuple(helper(f"_ldexp_{t}", f"""
def _ldexp_{t}(x, n):
    a = np.float64(x)
    if a != a or a == 0.0 or abs(a) == math.inf:
        return np.{t}(a)
    k = np.int64(n)
    e = math.frexp(a)[1]
    if e + k > 1024:
        return np.{t}(math.copysign(math.inf, a))
    if e + k < -1080:
        return np.{t}(math.copysign(0.0, a))
    return np.{t}(math.ldexp(a, int(k)))
""") for t in _T)
_POWN = tuple(helper(f"_pown_{t}", f"""
def _pown_{t}(x, n):
    return np.{t}(_pow_core(np.float64(x), np.float64(n)))
""", ("_pow_core",)) for t in _T)
_ROOTN = tuple(helper(f"_rootn_{t}", f"""
def _rootn_{t}(x, n):
    a = np.float64(x)
    k = np.int64(n)
    if a != a or k == 0:
        return np.{t}(math.nan)
    odd = k % 2 != 0
    if a == 0.0:
        if k < 0:
            return np.{t}(math.copysign(math.inf, a) if odd else math.inf)
        return np.{t}(a if odd else 0.0)
    if a < 0.0 and not odd:
        return np.{t}(math.nan)
    if abs(a) == math.inf:
        r = 0.0 if k < 0 else math.inf
        return np.{t}(-r if (a < 0.0) else r)
    return np.{t}(_rootn_core(a, k))
""", ("_rootn_core",)) for t in _T)
# |a| ** (1/n) is off by up to |log a| * ulp(1/n): scale a to about 1 by a power 2**(n*j) and
# take one Newton step on r**n = a (accurate to about 1 ulp in double).
_ROOTN_CORE = helper("_rootn_core", """
def _rootn_core(a, k):
    x = abs(a)
    j = 0
    if abs(k) <= 1000:
        j = (math.frexp(x)[1] - 1) // k
        x = math.ldexp(x, int(-k * j))
    r = x ** (1.0 / np.float64(k))
    rn = r ** np.float64(k)
    r = r - (rn - x) / (np.float64(k) * rn / r)
    if j > 1000:  # the root overflows (rootn(4.9e-324, -1)): math.ldexp would raise
        r = math.ldexp(r, int(j) - 1000) * 1.0715086071862673e301
    else:
        r = math.ldexp(r, int(j))
    return -r if a < 0.0 else r
""")


def _float_int_rule(name: str):
    def rule(types, call):
        if len(types) != 2 or not ct.is_scalar(types[0]) or not ct.is_int(types[1]):
            raise node_error(call, f"{name}(x, n) takes a number and an integer")
        return float_result(types[:1])

    return rule


def _emit_float_int(stem: str):
    def emit(gen, codes, types, call):
        to = float_result(types[:1])
        x = gen.cast(codes[0], types[0], to)
        n = gen.cast(codes[1], types[1], "int32")
        return gen.helper(f"_{stem}_{to}") + f"({x}, {n})"

    return emit


def _ilogb_rule(types, call):
    if len(types) != 1 or not ct.is_scalar(types[0]):
        raise node_error(call, "ilogb(x) takes one number")
    return "int32"


def _emit_ilogb(gen, codes, types, call):
    to = float_result(types)
    return gen.helper(f"_ilogb_{to}") + f"({gen.cast(codes[0], types[0], to)})"


def _fn(name, n, emit, helpers, flop=None, **doc):
    return Builtin(name, FAMILY, need_float(name, n), emit, helpers=helpers, flop=flop,
                   c=doc.pop("c", f"{name}({', '.join('xyz'[:n])})"),
                   types=doc.pop("types", FLOATS), **doc)


_CORES = (_SINPI_CORE, _COSPI_CORE, _HYPOT_CORE, _TWO_PROD)
_NOTES = {"remainder": "IEEE remainder (ties to even)", "fdim": "x - y if x > y, else +0",
          "maxmag": "the larger magnitude; fmax on a tie", "tanpi": "tan(pi x)",
          "minmag": "the smaller magnitude; fmin on a tie", "sinpi": "sin(pi x), exact at halves",
          "cospi": "cos(pi x), exact at halves", "atan2pi": "atan2(y, x) / pi"}
_NATIVE = {"native_exp2": "exp2", "native_log2": "log2", "native_exp10": "exp10",
           "native_log10": "log10", "native_tan": "tan", "half_cos": "cos", "half_exp2": "exp2",
           "half_exp10": "exp10", "half_log": "log", "half_log2": "log2", "half_log10": "log10",
           "half_rsqrt": "rsqrt", "half_sin": "sin", "half_sqrt": "sqrt", "half_tan": "tan"}


def _entries() -> list[Builtin]:
    extra = {"maxmag": _FMAX, "minmag": _FMIN}
    rows = [_fn(stem, _BODIES[stem][0], call_helper(stem),
                (*_body_helpers(stem), *_CORES, *extra.get(stem, ())),
                "transcendental" if stem in ("sinpi", "cospi", "tanpi", "hypot", "atan2",
                                             "atan2pi") else "add",
                note=_NOTES.get(stem, "")) for stem in _BODIES]
    rows += [
        Builtin("ldexp", FAMILY, _float_int_rule("ldexp"), _emit_float_int("ldexp"),
                helpers=_LDEXP, flop="add", c="ldexp(x, n)", types="float, double; n int",
                note="x * 2**n, rounded once"),
        Builtin("pown", FAMILY, _float_int_rule("pown"), _emit_float_int("pown"),
                helpers=(*_POWN, _POW_CORE), flop="transcendental", c="pown(x, n)",
                types="float, double; n int", note="pow with an integer exponent"),
        Builtin("rootn", FAMILY, _float_int_rule("rootn"), _emit_float_int("rootn"),
                helpers=(*_ROOTN, _ROOTN_CORE), flop="transcendental", c="rootn(x, n)",
                types="float, double; n int", note="x ** (1/n); NaN for x < 0 and even n"),
        Builtin("ilogb", FAMILY, _ilogb_rule, _emit_ilogb, helpers=_ILOGB, c="ilogb(x)",
                types=FLOATS, note="int exponent; INT_MIN for 0, INT_MAX for NaN and inf"),
    ]
    for alias, target in _NATIVE.items():
        assert target in UNARY
        rows.append(Builtin(alias, FAMILY, need_float(alias, 1, float_only_result),
                            call_helper(target, float_only_result), helpers=unary_helpers(target),
                            flop="transcendental", c=f"{alias}(x)", types=FLOAT_ONLY,
                            note=f"same as {target}()"))
    return rows


ENTRIES = _entries()
