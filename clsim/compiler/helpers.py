"""Source of the runtime helpers that generated kernels call.

Each helper is plain Python in the subset Numba compiles, so one definition serves the JIT and
the no-JIT (pdb-steppable) modes: the generated module includes the source of every helper it
uses and, in JIT mode, decorates it with ``njit``. Values are always numpy scalars in no-JIT mode
(never Python ints), which is what makes ``np.int32(x)`` wrap in both modes alike.

Here: the engine's own helpers (integer wrapping, float-to-int conversion, bounds and division
checks) and the error-record codes. A builtin's helpers travel with its entry in the builtin
table (``clsim.compiler.builtins``); instruments add theirs with ``register_helper``.
"""

from __future__ import annotations

from dataclasses import dataclass

from clsim.compiler.ctypes import FLOAT_TYPES, INT_TYPES
from clsim.runtime import record as rec

# Error codes and the error record's layout are clsim.runtime.record's; these names stay for the
# emitters that use them.
ERR_OOB_LOAD = rec.OOB_LOAD
ERR_OOB_STORE = rec.OOB_STORE
ERR_DIVERGENT_BRANCH = rec.DIVERGENT_BRANCH
ERR_EXIT_BEFORE_BARRIER = rec.EXIT_BEFORE_BARRIER
ERR_DIV_ZERO = rec.DIV_ZERO
ERR_SUBGROUP = rec.SUBGROUP_ERROR
ERR_COLLECTIVE_DIVERGENCE = rec.COLLECTIVE_DIVERGENCE
ERR_SG_BRANCH = rec.SG_BRANCH
ERR_SG_PARTIAL = rec.SG_PARTIAL
ERR_SG_NONUNIFORM_ARG = rec.SG_NONUNIFORM_ARG
ERR_SG_RANGE = rec.SG_RANGE
ERR_WG_PARTIAL = rec.WG_PARTIAL
ERR_OOB_ATOMIC = rec.OOB_ATOMIC
ERR_MISALIGNED = rec.MISALIGNED
ERR_OOB_VIEW_STORE = rec.OOB_VIEW_STORE
ERR_FIELDS = rec.FIELDS


@dataclass(frozen=True)
class Helper:
    """One runtime helper: its name, its source (a top-level ``def``), the helpers it calls."""

    name: str
    source: str
    deps: tuple[str, ...] = ()
    # Calls go to ``NAME_il``, the helper as an intrinsic emitting its instructions in the
    # caller (clsim.runtime.straightline; the source must be straight-line arithmetic): a
    # call of a Numba function left in a work-item loop keeps LLVM from vectorising it, and
    # Numba's own inlining costs compile time per call site. No-JIT: NAME_il is NAME.
    inline: bool = False


def helper(name: str, source: str, deps: tuple[str, ...] = (), inline: bool = False) -> Helper:
    return Helper(name, source.strip("\n"), deps, inline)


# The engine's own helpers (conversions, bounds, division); builtins carry theirs in the table.
CORE: dict[str, Helper] = {}
# Helpers added by instruments (traffic counting, checks) through register_helper.
_REGISTERED: dict[str, Helper] = {}


def _define(name: str, source: str, deps: tuple[str, ...] = ()) -> None:
    CORE[name] = helper(name, source, deps)


def register_helper(name: str, source: str, deps: tuple[str, ...] = ()) -> None:
    """Add a runtime helper (plain Python in Numba's subset) that ``gen.helper(name)`` pulls in."""
    _REGISTERED[name] = helper(name, source, deps)


# Float to integer is C's cast (truncation). In range it is exact for every width, long and
# ulong included; NaN gives 0, beyond the 64-bit range it saturates, and narrower types wrap
# the 64-bit value (out of range is undefined in C; this is one fixed, mode-independent choice).
_F2I_SIGNED = """
def _f2i_{t}(x):
    v = np.float64(x)
    if v != v:
        return np.{t}(0)
    if v >= 9.223372036854775808e18:
        return np.{t}(np.int64(9223372036854775807))
    if v < -9.223372036854775808e18:
        return np.{t}(np.int64(-9223372036854775807 - 1))
    return np.{t}(np.int64(v))
"""
_F2I_ULONG = """
def _f2i_uint64(x):
    v = np.float64(x)
    if v != v:
        return np.uint64(0)
    if v >= 1.8446744073709551616e19:
        return np.uint64(18446744073709551615)
    if v >= 9.223372036854775808e18:
        return np.uint64(v)
    if v < -9.223372036854775808e18:
        v = -9.223372036854775808e18
    return np.uint64(np.int64(v))
"""
# Integer // and % as C: truncation toward zero, one helper per type so that Numba never mixes
# unsigned and signed operands (uint64 with int64 becomes float64 in Numba). x / -1 wraps
# (LONG_MIN / -1 is LONG_MIN, what devices give for C's undefined case) and x % -1 is 0.
_IDIV_SIGNED = """
def _idiv_{t}(a, b, err, site, lid):
    if b == 0:
        _oob(err, np.int64({DIV_ZERO}), site, np.int64(0), np.int64(0), lid)
        return np.{t}(0)
    if b == -1:
        return np.{t}(np.{t}(0) - a)
    q = a // b
    if q * b != a and (a < 0) != (b < 0):
        q = q + np.{t}(1)
    return np.{t}(q)
"""
_IREM_SIGNED = """
def _irem_{t}(a, b, err, site, lid):
    if b == 0:
        _oob(err, np.int64({DIV_ZERO}), site, np.int64(0), np.int64(0), lid)
        return np.{t}(0)
    if b == -1:
        return np.{t}(0)
    r = a % b
    if r != 0 and (a < 0) != (b < 0):
        r = r - b
    return np.{t}(r)
"""
_IDIV_UNSIGNED = """
def _idiv_{t}(a, b, err, site, lid):
    if b == 0:
        _oob(err, np.int64({DIV_ZERO}), site, np.int64(0), np.int64(0), lid)
        return np.{t}(0)
    return np.{t}(a // b)
"""
_IREM_UNSIGNED = """
def _irem_{t}(a, b, err, site, lid):
    if b == 0:
        _oob(err, np.int64({DIV_ZERO}), site, np.int64(0), np.int64(0), lid)
        return np.{t}(0)
    return np.{t}(a % b)
"""
for _t in INT_TYPES:
    _define(f"_w_{_t}", f"def _w_{_t}(x):\n    return np.{_t}(x)")
    _define(f"_f2i_{_t}", _F2I_ULONG if _t == "uint64" else _F2I_SIGNED.format(t=_t))
    _signed = not _t.startswith("u")
    for _stem, _src in (("idiv", _IDIV_SIGNED if _signed else _IDIV_UNSIGNED),
                        ("irem", _IREM_SIGNED if _signed else _IREM_UNSIGNED)):
        _define(f"_{_stem}_{_t}", rec.fill(_src.replace("{t}", _t)), ("_oob",))
for _t in FLOAT_TYPES:
    _define(f"_w_{_t}", f"def _w_{_t}(x):\n    return np.{_t}(x)")
# A group's arrays (local, private, context, masks): np.empty is a Numba overload compiled anew
# in every process for each shape and dtype it is called with (0.1-0.2 s each), these are
# compiled once per machine with the shared helpers (clsim.compiler.shared_helpers).
for _t in (*INT_TYPES, "float32", "float64", "bool_"):
    _define(f"_empty_{_t}", f"def _empty_{_t}(shape):\n    return np.empty(shape, np.{_t})")
_define("_zeros_bool_", "def _zeros_bool_(shape):\n    return np.zeros(shape, np.bool_)")

_define(
    "_oob",
    rec.fill("""
def _oob(err, code, site, index, length, lid):
    if err[{CODE}] == 0:
        err[{CODE}] = code
        err[{SITE}] = site
        err[{INDEX}] = index
        err[{LENGTH}] = length
        err[{LID}] = lid
"""),
)
_define(
    "_ck",
    rec.fill("""
def _ck(index, length, err, site, lid):
    if index < 0 or index >= length:
        _oob(err, np.int64({OOB_LOAD}), site, np.int64(index), length, lid)
        return 0
    return index
"""),
    ("_oob",),
)
# An access of ``nbytes`` through a view at byte ``off``: _ck with the view's error code.
_define(
    "_ckv",
    rec.fill("""
def _ckv(off, length, err, site, lid, nbytes):
    if off < 0 or off >= length:
        _oob(err, np.int64({OOB_VIEW_LOAD}), site, np.int64(off), length, lid)
        err[{COUNT_A}] = nbytes
        return 0
    return off
"""),
    ("_oob",),
)
# A vector access through a view at byte ``off``: ``off`` when it is aligned to ``size``,
# else the MISALIGNED error is recorded and 0 returned (a safe offset, as _ck does).
_define(
    "_al",
    rec.fill("""
def _al(off, size, err, site, lid):
    if off % size != 0:
        _oob(err, np.int64({MISALIGNED}), site, np.int64(off), size, lid)
        return 0
    return off
"""),
    ("_oob",),
)

# Proving a region's indices (clsim.compiler.proven): ``acc`` is (lowest, highest, sum of
# magnitudes, still proven) of an index so far; a term is sign * f1 * f2 * v for v in
# [vlo, vhi]. Any value of 2**31 or more in magnitude gives up: the proof then cannot also
# show that no int32 arithmetic of the index wraps (and no int64 product here overflows).
# Branch-free (``&``), so LLVM hoists the parts that do not change out of a barrier loop.
_define("_proof_term", """
def _proof_term(acc, sign, f1, f2, vlo, vhi):
    lo, hi, mag, ok = acc
    c = sign * f1 * f2
    a = c * vlo
    z = c * vhi
    least = a if a < z else z
    most = z if a < z else a
    ok = (ok & (-2147483648 < f1) & (f1 < 2147483648) & (-2147483648 < f2)
          & (f2 < 2147483648) & (-2147483648 < vlo) & (vhi < 2147483648)
          & (-2147483648 < least) & (most < 2147483648))
    return (lo + least, hi + most, mag + (most if most > -least else -least), ok)
""")
_define("_proof_in", """
def _proof_in(acc, length):
    lo, hi, mag, ok = acc
    return ok & (lo >= 0) & (hi < length) & (mag < 2147483648)
""")
# The lowest and highest of a context array's first n values (a private's range in a group).
_define("_proof_span", """
def _proof_span(values, n):
    lo = np.int64(values[0])
    hi = lo
    for i in range(1, n):
        v = np.int64(values[i])
        lo = v if v < lo else lo
        hi = v if v > hi else hi
    return lo, hi
""")


INLINED = "_il"  # the suffix of a helper's inlined variant (clsim.runtime.jit_helpers)


def find(name: str, table: dict[str, Helper]) -> Helper:
    """The helper ``name``: the engine's, the builtin ``table``'s or an instrument's."""
    for source in (CORE, table, _REGISTERED):
        if name in source:
            return source[name]
    raise KeyError(f"internal: no runtime helper named {name}")


def helper_sources(names: set[str], table: dict[str, Helper],
                   imported: set[str] | None = None) -> list[str]:
    """The sources of the named helpers and everything they call, dependencies first.
    ``table`` holds the builtin table's helpers (``clsim.compiler.builtins.HELPERS``). With
    ``imported`` (a JIT kernel, whose engine and table helpers come from the shared module),
    only instruments' helpers are returned and the others reached are added to ``imported``."""
    ordered: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        if imported is not None and name not in _REGISTERED:
            imported.add(name)
            return
        if name.endswith(INLINED):  # no-JIT: the inlined variant is the helper itself
            visit(name.removesuffix(INLINED))
            ordered.append(f"{name} = {name.removesuffix(INLINED)}")
            return
        h = find(name, table)
        for dep in h.deps:
            visit(dep)
        ordered.append(h.source)

    for name in sorted(names):
        visit(name)
    return ordered
