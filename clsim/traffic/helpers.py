"""Source of the per-access helpers the traffic instrument compiles into kernels.

Registered with ``clsim.compiler.helpers`` at import, like the engine's own helpers: plain
Python in the Numba subset, so one definition serves the JIT and the no-JIT modes. The state
they update is described in ``clsim.traffic.layout``; completing the steps (after each
work-item loop, not per access) is ``clsim.traffic.steps``, compiled once and imported by the
generated module.

Performance rule: a recorder is straight-line code (``min``/``max``, no branches, no calls,
unsigned indices) doing one load and three stores: the lane's run counter, its address in
``L`` and the slot's pending flag. The footprint flags are set after the loop, per step, from
the addresses. Every figure that does not change within a group (counter base, capacity,
lanes per group, slot) arrives as an argument the caller holds in a register or as a
constant, so nothing is re-read from the arena per access.

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
    return text.format(**names)


# Lane lid (of nl per group) runs slot s at byte address addr: its n-th run of the slot in this
# pass of the work-item loop goes to L[s, n // 8, lid, n % 8] (layout.py: a lane fills one
# cache line before the next), and the slot's pending flag becomes the highest lane that ran it,
# plus 1; c0 and p0 are the arena's counter and pending-flag bases, cap
# the runs kept per lane and pass (a multiple of 8). Pasted into every recorder.
# Indices are unsigned: Numba fixes up every signed index for negative values (a shift, an
# and, an add each), a third of a recorder's work.
_RECORD = """
    c = np.uint64(c0 + s * nl + lid)
    n = T[c]
    T[c] = n + 1
    k = min(n, cap)
    L[np.uint64((((s * ((cap >> 3) + 1) + (k >> 3)) * nl + lid) << 3) + (k & 7))] = addr
    p = np.uint64(p0 + s)
    T[p] = max(T[p], lid + 1)""".strip("\n")
_LANE = "T, L, c0, p0, cap, nl, s, lid"


def _recorder(source: str) -> str:
    """``source`` with ``RECORD`` replaced by the recording of ``addr``, ``LANE`` by the lane's
    arguments."""
    return source.replace("    RECORD", _RECORD).replace("LANE", _LANE)


_define("_tr_l", _recorder("""
def _tr_l(LANE, idx, isz):
    addr = idx * isz
    RECORD
    return idx
"""))

# A multi-dimensional local access whose leading indices can be evaluated twice (plain index
# arithmetic): ``lead`` is their partial linear index.
_define("_tr_l2", _recorder("""
def _tr_l2(LANE, lead, idx, dim, isz):
    addr = (lead * dim + idx) * isz
    RECORD
    return idx
"""))

# Global accesses: the address carries the buffer's argument index (``vb``); the footprint
# flags are set by ``steps.end`` from the step's addresses. Loads, stores, atomics and
# vloadN/vstoreN record alike (the site's kind and width are in its arena row).
_define("_tr_g", _recorder("""
def _tr_g(LANE, vb, idx, isz):
    addr = vb + idx * isz
    RECORD
    return idx
"""))


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

# Multi-dimensional local arrays whose leading indices cannot be evaluated twice (they contain
# an access or a call): the leading indices are folded into a partial linear index on a small
# stack, the last one completes it.
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
def _tr_lm(LANE, idx, dim, isz):
    sp = T[{C_SP}] - 1
    T[{C_SP}] = sp
    addr = (T[{C_STACK} + min(max(sp, 0), {C_STACK_DEPTH} - 1)] * dim + idx) * isz
    RECORD
    return idx
""")))

# A C11 atomic_load or atomic_store (the site table says only "atomic"): sets its slot's kind
# (``layout.R_ATOMIC_LOAD`` or ``R_STORE``) in this thread's arena row, then returns the index
# for the recorder; ``at`` is the slot's kind column.
_define("_tr_k", """
def _tr_k(T, at, kind, idx):
    T[at] = kind
    return idx
""")

# A group function's lane array of one access's indices (``recorders.block``), allocated once
# per thread by the launcher (its name is one the launcher takes for per-thread scratch) with
# every lane ``NOT_RUN`` and, after the lanes, the highest lane that ran it plus 1 at 0, as
# ``block`` leaves it after each pass.
_define("_unset_lanes_int64", f"""
def _unset_lanes_int64(lanes):
    index = np.full(lanes + 1, {layout.NOT_RUN}, np.int64)
    index[lanes] = 0
    return index
""")
