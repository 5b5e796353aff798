"""Source of the per-access helpers the traffic instrument compiles into kernels.

Registered with ``clsim.compiler.helpers`` at import, like the engine's own helpers: plain
Python in the Numba subset, so one definition serves the JIT and the no-JIT modes. The state
they update is described in ``clsim.traffic.layout``; completing the steps (after each
work-item loop, not per access) is ``clsim.traffic.steps``, compiled once and imported by the
generated module.

Performance rule: the per-access helpers are straight-line code (``min``/``max``, no branches,
no calls). Numba then inlines them with no reference counting on ``T``/``M``; a branch around
a call makes Numba keep increfs per access, which costs more than the counting itself.

This module holds source text only; which generated code calls these helpers, and when, is
``clsim.traffic.instrument``'s business.
"""

from __future__ import annotations

from clsim.compiler import helpers as hp
from clsim.traffic import layout

_define = hp.register_helper


def _src(text: str) -> str:
    """Substitute the layout constants into helper source written with ``{NAME}`` fields."""
    names = {k: v for k, v in vars(layout).items() if k.isupper()}
    return text.format(RUN_MASK=(1 << layout.RUN_BITS) - 1, **names)


# The generated module imports numba.get_thread_id (0 outside parallel code, plain Python in
# no-JIT mode) and the step counter (a Numba dispatcher): see TrafficInstrument.imports().
# Lane lid runs slot s at byte address addr: its k-th run of the slot in this pass of the
# work-item loop joins step k of its sub-group, counted after the loop. q = s * sub-groups +
# the lane's sub-group, and simd, fold at compile time. Pasted into every recorder (one
# function less to compile per kernel).
_RECORD = _src("""
    row = {S0} + s * {S_COLS}
    runs = T[row + {S_RUNS}]
    stamp = T[{C_STAMP0}] + lid
    k = min((runs & {RUN_MASK}) * ((runs >> {RUN_BITS}) == stamp), T[{C_CAP}])
    T[row + {S_RUNS}] = (stamp << {RUN_BITS}) | (k + 1)
    cell = k * T[{C_KSTRIDE}] + q
    n = T[T[{C_N0}] + cell]
    T[T[{C_N0}] + cell] = n + 1
    T[T[{C_A0}] + cell * (simd + 1) + min(n, simd)] = addr""").strip("\n")
_PENDING = _src("    T[row + {S_PENDING}] = 1")


def _recorder(source: str) -> str:
    """``source`` with ``RECORD`` replaced by the recording of ``addr``."""
    return source.replace("    RECORD", _RECORD + "\n" + _PENDING)


_define("_tr_l", _recorder("""
def _tr_l(T, s, q, lid, simd, idx, isz):
    addr = idx * isz
    RECORD
    return idx
"""))

_GLOBAL = """
def NAME(T, M, s, q, lid, simd, off, size, idx, isz):
    addr = idx * isz
    RECORD
    e = off + min(max(idx, 0), size - 1)
MARKS
    return idx
"""
_READ = "    M[e] = 1"
_WRITE = _src("    M[T[{C_M_WRITE}] + e] = 1")

# Scalar global accesses: read, write, or both (atomics). The element index is clamped, so a
# bad index (checks off) cannot set a flag outside its buffer's.
for _name, _marks in (("_tr_gr", _READ), ("_tr_gw", _WRITE), ("_tr_grw", _READ + "\n" + _WRITE)):
    _define(_name, _recorder(_GLOBAL.replace("NAME", _name).replace("MARKS", _marks)))

# vloadN/vstoreN: N elements from idx; rw is 0 (read) or 1 (write).
_define("_tr_gv", _recorder(_src("""
def _tr_gv(T, M, s, q, lid, simd, off, size, idx, isz, w, rw):
    addr = idx * isz
    RECORD
    base = off + rw * T[{C_M_WRITE}]
    for j in range(w):
        M[base + min(max(idx + j, 0), size - 1)] = 1
    return idx
""")))

# A buffer reached through a helper function's parameter: which kernel argument is it? The
# dummy row after the arguments catches anything else.
_define("_tr_param", _src("""
def _tr_param(T, arr):
    ptr = arr.ctypes.data
    b0 = T[{C_B0}]
    last = (T[{C_X0}] - b0) // {B_COLS} - 1
    for p in range(last):
        b = b0 + p * {B_COLS}
        if T[b + 2] > 0 and T[b + 1] == ptr:
            return p
    return last
"""))

# Multi-dimensional local arrays: the leading indices are folded into a partial linear index on
# a small stack (an index may itself contain an access), the last one completes it.
_define("_tr_i0", _src("""
def _tr_i0(T, i):
    sp = T[{C_SP}]
    T[{C_STACK} + min(sp, {C_STACK_DEPTH} - 1)] = i
    T[{C_SP}] = sp + 1
    return i
"""))
_define("_tr_i1", _src("""
def _tr_i1(T, i, dim):
    top = {C_STACK} + min(max(T[{C_SP}] - 1, 0), {C_STACK_DEPTH} - 1)
    T[top] = T[top] * dim + i
    return i
"""))
_define("_tr_lm", _recorder(_src("""
def _tr_lm(T, s, q, lid, simd, idx, dim, isz):
    sp = T[{C_SP}] - 1
    T[{C_SP}] = sp
    addr = (T[{C_STACK} + min(max(sp, 0), {C_STACK_DEPTH} - 1)] * dim + idx) * isz
    RECORD
    return idx
""")))
