"""Source of the run-time helpers the traffic instrument compiles into kernels.

Registered with ``clsim.compiler.helpers`` at import, like the engine's own helpers: plain
Python in the Numba subset, so one definition serves the JIT and the no-JIT modes. The general
sector and bank counters are ``clsim.traffic.counting``'s functions, copied in by source, so the
generated code runs the unit-tested functions.

All state lives in two launch-level arrays:

* ``T`` (int64) is an arena: config and counters at fixed indices (``C_*``), then sections
  whose start the config holds: per-site rows of ``S_COLS`` columns (``S_*``), per kernel
  argument ``(first flag in M, data pointer, elements)`` plus a dummy row, a word scratch for
  bank counting, ``N[k, slot]`` (how many lanes of the pending sub-group ran their k-th access
  of ``slot``; row ``cap`` collects accesses past the capacity) and ``A[k, slot, n]`` (the
  byte address of the n-th of them; lanes arrive in lane order; column ``simd`` is a dump).
* ``M`` (uint8) holds one read flag then one write flag per element of every global buffer.

Performance rule: the per-access helpers are straight-line code (``min``/``max``, no branches,
no calls). Numba then inlines them with no reference-count traffic on ``T``/``M``; a branch
around a call makes Numba keep increfs per access, which costs more than the counting. Work
that needs branches happens once per sub-group step (``_tr_flush``), called from group code.

This module holds source text only; which generated code calls these helpers, and when, is
``clsim.traffic.instrument``'s business.
"""

from __future__ import annotations

import inspect

from clsim.compiler import helpers as hp
from clsim.traffic import counting

_define = getattr(hp, "register_helper", hp._define)

# Config and counters.
(C_SIMD, C_SECTOR, C_LINE, C_BANKS, C_BANK_WIDTH, C_CAP, C_NSLOTS, C_SP, C_SG_START, C_SG_END,
 C_STAMP, C_M_WRITE, C_B0, C_X0, C_N0, C_A0) = range(16)
C_FLOPS = 16  # one counter per FLOP_KINDS entry
C_STACK = 32  # partial linear indices of multi-dimensional local accesses
C_STACK_DEPTH = 32
S0 = C_STACK + C_STACK_DEPTH  # first site row
# Site columns.
(S_STAMP, S_COUNT, S_MAXK, S_NBYTES, S_SPACE, S_EXECS, S_STEPS, S_SECTORS, S_LINES, S_REPLAYS,
 S_OVERFLOW) = range(11)
S_COLS = 11
SPACE_GLOBAL, SPACE_LOCAL = 1, 2
B_COLS = 3


def _renamed(fn, name: str) -> str:
    """``fn``'s source under another name, its module constants (defaults) inlined."""
    src = inspect.getsource(fn).replace(f"def {fn.__name__}(", f"def {name}(", 1)
    for const in ("SECTOR_BYTES", "LINE_BYTES", "DEFAULT_BANKS", "DEFAULT_BANK_WIDTH"):
        src = src.replace(f"= {const}", f"= {getattr(counting, const)}")
    return src


def _src(text: str) -> str:
    """Substitute the layout constants into helper source written with ``{NAME}`` fields."""
    names = {k: v for k, v in globals().items() if k.isupper() and isinstance(v, int)}
    return text.format(**names)


_define("_tr_count_sectors", _renamed(counting.count_sectors, "_tr_count_sectors"))
_define("_tr_bank_replays", _renamed(counting.bank_replays, "_tr_bank_replays"))

# One completed global step: n lanes at byte addresses a[:n], nb bytes each. Lanes on
# consecutive addresses (coalesced code) are answered directly; anything else goes to
# counting.count_sectors.
_define("_tr_global_step", _src("""
def _tr_global_step(T, row, a, n, nb):
    sector = T[{C_SECTOR}]
    line = T[{C_LINE}]
    contiguous = True
    for i in range(1, n):
        if a[i] != a[i - 1] + nb:
            contiguous = False
            break
    if contiguous:
        last = a[n - 1] + nb - 1
        T[row + {S_SECTORS}] += last // sector - a[0] // sector + 1
        T[row + {S_LINES}] += last // line - a[0] // line + 1
    else:
        sec, lin = _tr_count_sectors(a, nb, n, sector, line)
        T[row + {S_SECTORS}] += sec
        T[row + {S_LINES}] += lin
"""), ("_tr_count_sectors",))

# One completed local step. Non-decreasing addresses spanning fewer words than there are banks
# cannot conflict (broadcasts included); anything else is expanded to words (a wide access
# covers several) for counting.bank_replays.
_define("_tr_local_step", _src("""
def _tr_local_step(T, row, a, n, nb):
    banks = T[{C_BANKS}]
    if banks <= 0:
        return
    w = T[{C_BANK_WIDTH}]
    ordered = True
    for i in range(1, n):
        if a[i] < a[i - 1]:
            ordered = False
            break
    if ordered and (a[n - 1] + nb - 1) // w - a[0] // w < banks:
        return
    x0 = T[{C_X0}]
    room = T[{C_N0}] - x0
    m = 0
    for i in range(n):
        for word in range(a[i] // w, (a[i] + nb - 1) // w + 1):
            if m < room:
                T[x0 + m] = word
                m += 1
    T[row + {S_REPLAYS}] += _tr_bank_replays(T[x0:x0 + m], m, banks)
"""), ("_tr_bank_replays",))

# Count every pending step and clear it. Accesses that found no room (past the capacity, or more
# lanes than the SIMD width in one step: never in a well-formed loop) are counted as single-lane
# steps of the sectors a lone access needs, and reported in S_OVERFLOW.
_define("_tr_flush", _src("""
def _tr_flush(T):
    ns = T[{C_NSLOTS}]
    simd = T[{C_SIMD}]
    cap = T[{C_CAP}]
    n0 = T[{C_N0}]
    for s in range(ns):
        row = {S0} + s * {S_COLS}
        mk = T[row + {S_MAXK}]
        if mk == 0:
            continue
        nb = T[row + {S_NBYTES}]
        lost = 0
        for k in range(mk):
            cell = n0 + k * ns + s
            n = T[cell]
            T[cell] = 0
            if k == cap or n > simd:
                lost += n if k == cap else n - simd
                n = 0 if k == cap else simd
            if n == 0:
                continue
            T[row + {S_EXECS}] += n
            T[row + {S_STEPS}] += 1
            a0 = T[{C_A0}] + (k * ns + s) * (simd + 1)
            if T[row + {S_SPACE}] == {SPACE_GLOBAL}:
                _tr_global_step(T, row, T[a0:a0 + n], n, nb)
            else:
                _tr_local_step(T, row, T[a0:a0 + n], n, nb)
        if lost > 0:
            T[row + {S_OVERFLOW}] += lost
            T[row + {S_EXECS}] += lost
            T[row + {S_STEPS}] += lost
            if T[row + {S_SPACE}] == {SPACE_GLOBAL}:
                T[row + {S_SECTORS}] += lost * ((nb + T[{C_SECTOR}] - 1) // T[{C_SECTOR}])
                T[row + {S_LINES}] += lost * ((nb + T[{C_LINE}] - 1) // T[{C_LINE}])
        T[row + {S_MAXK}] = 0
"""), ("_tr_global_step", "_tr_local_step"))

# A lane outside the pending sub-group (called from the work-item loop when it moves on):
# count the pending steps, make the lane's sub-group the pending one.
_define("_tr_new_sg", _src("""
def _tr_new_sg(T, lid):
    _tr_flush(T)
    simd = T[{C_SIMD}]
    T[{C_SG_START}] = (lid // simd) * simd
    T[{C_SG_END}] = T[{C_SG_START}] + simd
"""), ("_tr_flush",))

# After a work-item loop (and at group start): nothing pending, next lane opens a sub-group.
_define("_tr_end", _src("""
def _tr_end(T):
    _tr_flush(T)
    T[{C_SG_START}] = 0
    T[{C_SG_END}] = -1
"""), ("_tr_flush",))

# One lane's access of slot s at byte address addr: its k-th execution of the slot since the
# lane started (the lane stamp changes per lane and loop pass) joins step k.
_define("_tr_rec", _src("""
def _tr_rec(T, s, addr):
    row = {S0} + s * {S_COLS}
    stamp = T[{C_STAMP}]
    k = T[row + {S_COUNT}] * (T[row + {S_STAMP}] == stamp)
    T[row + {S_STAMP}] = stamp
    T[row + {S_COUNT}] = k + 1
    k = min(k, T[{C_CAP}])
    ns = T[{C_NSLOTS}]
    simd = T[{C_SIMD}]
    cell = T[{C_N0}] + k * ns + s
    n = T[cell]
    T[T[{C_A0}] + (k * ns + s) * (simd + 1) + min(n, simd)] = addr
    T[cell] = n + 1
    T[row + {S_MAXK}] = max(T[row + {S_MAXK}], k + 1)
"""))

_define("_tr_l", """
def _tr_l(T, s, idx, isz):
    _tr_rec(T, s, idx * isz)
    return idx
""", ("_tr_rec",))


def _global_helper(name: str, marks: str) -> str:
    return _src(f"""
def {name}(T, M, s, p, idx, isz):
    _tr_rec(T, s, idx * isz)
    b = T[{{C_B0}}] + p * {{B_COLS}}
    e = T[b] + min(max(idx, 0), T[b + 2] - 1)
{marks}
    return idx
""")


# Scalar global accesses: read, write, or both (atomics); the element index is clamped, so a
# bad index (checks off) cannot write outside the flags.
_define("_tr_gr", _global_helper("_tr_gr", "    M[e] = 1"), ("_tr_rec",))
_define("_tr_gw", _global_helper("_tr_gw", f"    M[T[{C_M_WRITE}] + e] = 1"), ("_tr_rec",))
_define("_tr_grw", _global_helper(
    "_tr_grw", f"    M[e] = 1\n    M[T[{C_M_WRITE}] + e] = 1"), ("_tr_rec",))

# vloadN/vstoreN: N elements from idx; rw is 0 (read) or 1 (write).
_define("_tr_gv", _src("""
def _tr_gv(T, M, s, p, idx, isz, w, rw):
    _tr_rec(T, s, idx * isz)
    b = T[{C_B0}] + p * {B_COLS}
    size = T[b + 2]
    base = T[b] + rw * T[{C_M_WRITE}]
    for j in range(w):
        M[base + min(max(idx + j, 0), size - 1)] = 1
    return idx
"""), ("_tr_rec",))

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
    q = {C_STACK} + min(max(T[{C_SP}] - 1, 0), {C_STACK_DEPTH} - 1)
    T[q] = T[q] * dim + i
    return i
"""))
_define("_tr_lm", _src("""
def _tr_lm(T, s, idx, dim, isz):
    sp = T[{C_SP}] - 1
    T[{C_SP}] = sp
    lin = T[{C_STACK} + min(max(sp, 0), {C_STACK_DEPTH} - 1)] * dim + idx
    _tr_rec(T, s, lin * isz)
    return idx
"""), ("_tr_rec",))
