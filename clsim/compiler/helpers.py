"""Source of the runtime helpers that generated kernels call.

Each helper is plain Python in the subset Numba compiles, so one definition serves the JIT and
the no-JIT (pdb-steppable) modes: the generated module includes the source of every helper it
uses and, in JIT mode, decorates it with ``njit``. Values are always numpy scalars in no-JIT mode
(never Python ints), which is what makes ``np.int32(x)`` wrap in both modes alike.

Transcendentals are evaluated in float64 with ``math`` and rounded once to float32: both modes
call the same libm, so results agree bit for bit and sit well inside OpenCL's ULP bounds.
"""

from __future__ import annotations

from clsim.compiler.ctypes import FLOAT_TYPES, INT_TYPES

# Error codes written to the error record; decoded by clsim.runtime.errors.
ERR_OOB_LOAD = 1
ERR_OOB_STORE = 2
ERR_DIVERGENT_BRANCH = 3
ERR_EXIT_BEFORE_BARRIER = 4
ERR_DIV_ZERO = 5
ERR_SUBGROUP = 6
ERR_COLLECTIVE_DIVERGENCE = 7
# Sub-groups, collectives and atomics (clsim.compiler.subgroups, atomics); field [14] holds the
# sub-group id (-1 for a work-group collective), [10] a second work-item (first lane...).
ERR_SG_BRANCH = 8  # condition around a sub-group collective differs within a sub-group
ERR_SG_PARTIAL = 9  # a collective reached by some lanes of a sub-group (others returned)
ERR_SG_NONUNIFORM_ARG = 10  # broadcast lane / work_group_broadcast id differs between lanes
ERR_SG_RANGE = 11  # lane, shuffle source or local id out of range
ERR_WG_PARTIAL = 12  # a work-group collective reached by some work-items (others returned)
ERR_OOB_ATOMIC = 13  # atomic update outside a buffer or local array

# Error record layout: [code, site, index, length, lid, a, b, gx, gy, gz, x, L0, L1, L2, sg, y]
ERR_FIELDS = 16

_SOURCES: dict[str, str] = {}
_DEPS: dict[str, tuple[str, ...]] = {}


def _define(name: str, source: str, deps: tuple[str, ...] = ()) -> None:
    _SOURCES[name] = source.strip("\n")
    _DEPS[name] = deps


def register_helper(name: str, source: str, deps: tuple[str, ...] = ()) -> None:
    """Add a runtime helper (plain Python in Numba's subset) that ``gen.helper(name)`` pulls in."""
    _define(name, source, deps)


for _t in INT_TYPES:
    _define(f"_w_{_t}", f"def _w_{_t}(x):\n    return np.{_t}(x)")
    _define(
        f"_f2i_{_t}",
        f"""
def _f2i_{_t}(x):
    v = np.float64(x)
    if v != v:
        return np.{_t}(0)
    if v >= 9.2e18:
        v = 9.2e18
    elif v <= -9.2e18:
        v = -9.2e18
    return np.{_t}(np.int64(v))
""",
    )
for _t in FLOAT_TYPES:
    _define(f"_w_{_t}", f"def _w_{_t}(x):\n    return np.{_t}(x)")

_define(
    "_oob",
    """
def _oob(err, code, site, index, length, lid):
    if err[0] == 0:
        err[0] = code
        err[1] = site
        err[2] = index
        err[3] = length
        err[4] = lid
""",
)
_define(
    "_ck",
    """
def _ck(index, length, err, site, lid):
    if index < 0 or index >= length:
        _oob(err, np.int64(1), site, np.int64(index), length, lid)
        return 0
    return index
""",
    ("_oob",),
)
_define(
    "_idiv",
    """
def _idiv(a, b, err, site, lid):
    if b == 0:
        _oob(err, np.int64(5), site, np.int64(0), np.int64(0), lid)
        return a - a
    q = a // b
    if a % b != 0 and (a < 0) != (b < 0):
        q = q + 1
    return q
""",
    ("_oob",),
)
_define(
    "_irem",
    """
def _irem(a, b, err, site, lid):
    if b == 0:
        _oob(err, np.int64(5), site, np.int64(0), np.int64(0), lid)
        return a - a
    r = a % b
    if r != 0 and (a < 0) != (b < 0):
        r = r - b
    return r
""",
    ("_oob",),
)

_MATH_UNARY = {
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

MATH_UNARY_NAMES = tuple(_MATH_UNARY)

for _name, _expr in _MATH_UNARY.items():
    for _t in ("float32", "float64"):
        _define(
            f"_{_name}_{_t}",
            f"""
def _{_name}_{_t}(x):
    v = np.float64(x)
    if v != v:
        return np.{_t}(v)
    return np.{_t}({_expr})
""",
        )

for _t in ("float32", "float64"):
    _define(
        f"_round_{_t}",
        f"""
def _round_{_t}(x):
    v = np.float64(x)
    if v != v or abs(v) >= 4.5e15:
        return np.{_t}(v)
    r = math.floor(abs(v) + 0.5)
    return np.{_t}(math.copysign(r, v))
""",
    )
    # rint rounds half to even (the current rounding mode); Python's round() does exactly that.
    _define(
        f"_rint_{_t}",
        f"""
def _rint_{_t}(x):
    v = np.float64(x)
    if v != v or abs(v) >= 4.5e15:
        return np.{_t}(v)
    r = np.float64(round(v))
    return np.{_t}(math.copysign(r, v))
""",
    )
    _define(
        f"_pow_{_t}",
        f"""
def _pow_{_t}(x, y):
    a = np.float64(x)
    b = np.float64(y)
    if a != a or b != b:
        return np.{_t}(math.nan) if not (b == 0.0 or a == 1.0) else np.{_t}(1.0)
    if a == 0.0 and b < 0.0:
        return np.{_t}(math.inf)
    if a < 0.0 and b != math.floor(b):
        return np.{_t}(math.nan)
    if abs(a) != math.inf and abs(b) != math.inf and b * math.log2(abs(a)) > 1100.0:
        return np.{_t}(math.inf if (a > 0.0 or b % 2.0 == 0.0) else -math.inf)
    return np.{_t}(a ** b)
""",
    )
    _define(
        f"_fmax_{_t}",
        f"""
def _fmax_{_t}(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return b if a < b else a
""",
    )
    _define(
        f"_fmin_{_t}",
        f"""
def _fmin_{_t}(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return b if b < a else a
""",
    )

# fma must round once. a*b of two float32 is exact in float64; the float64 sum is then rounded
# to odd (a neighbour with an odd last bit when inexact), after which rounding to float32 is
# correct: round-to-odd with 2+ spare bits avoids double rounding.
_define(
    "_fma_float32",
    """
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
""",
)
_define(
    "_fma_float64",
    """
def _fma_float64(a, b, c):
    return np.float64(a) * np.float64(b) + np.float64(c)
""",
)

for _name, _src in {
    "_min": "def _min(a, b):\n    return b if b < a else a",
    "_max": "def _max(a, b):\n    return b if a < b else a",
    "_clamp": "def _clamp(x, lo, hi):\n    m = lo if x < lo else x\n    return hi if hi < m else m",
    "_iabs": "def _iabs(x):\n    return -x if x < 0 else x",
    "_isnan": "def _isnan(x):\n    return x != x",
    "_isinf": "def _isinf(x):\n    return x == math.inf or x == -math.inf",
    "_isfinite": "def _isfinite(x):\n    return x == x and x != math.inf and x != -math.inf",
    "_signbit": "def _signbit(x):\n    return math.copysign(1.0, np.float64(x)) < 0.0",
    "_mix": "def _mix(x, y, a):\n    return x + (y - x) * a",
    "_select": "def _select(a, b, c):\n    return b if c != 0 else a",
}.items():
    _define(_name, _src)
for _t in ("float32", "float64"):
    _define(
        f"_sign_{_t}",
        f"""
def _sign_{_t}(x):
    if x != x:
        return x
    if x > 0.0:
        return np.{_t}(1.0)
    if x < 0.0:
        return np.{_t}(-1.0)
    return x
""",
    )


def helper_sources(names: set[str]) -> list[str]:
    """The sources of the named helpers and everything they call, dependencies first."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for dep in _DEPS[name]:
            visit(dep)
        ordered.append(name)

    for name in sorted(names):
        visit(name)
    return [_SOURCES[name] for name in ordered]


def known(name: str) -> bool:
    return name in _SOURCES
