"""Completing sub-group steps: counting the pending steps of one thread's arena.

Instrumented kernels call ``end`` after each pass of a work-item loop, never per access or per
lane. Compiled once with ``numba.njit(cache=True)`` and imported by every generated module,
so instrumented kernels do not recompile it. The sector and bank rules are
``clsim.traffic.counting``'s (called for the rare irregular steps); this module adds the fast
answers for coalesced and conflict-free steps and the bookkeeping of ``clsim.traffic.layout``.

Importing this module imports Numba; ``clsim.traffic`` itself does not import it.
"""

from __future__ import annotations

import numba

from clsim.traffic import counting
from clsim.traffic.layout import (
    C_A0,
    C_BANK_WIDTH,
    C_BANKS,
    C_CAP,
    C_KSTRIDE,
    C_LINE,
    C_N0,
    C_NL,
    C_NSG,
    C_NSLOTS,
    C_SECTOR,
    C_SHIFTS,
    C_SIMD,
    C_STAMP0,
    C_X0,
    S0,
    S_COLS,
    S_EXECS,
    S_LINES,
    S_NBYTES,
    S_OVERFLOW,
    S_PENDING,
    S_REPLAYS,
    S_SECTORS,
    S_SPACE,
    S_STEPS,
    SPACE_GLOBAL,
)

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)
_count_sectors = _jit(counting.count_sectors)
_bank_replays = _jit(counting.bank_replays)


@_jit
def _units(first, last, size, shift):
    """Units of ``size`` bytes (a power of two when ``shift >= 0``) spanned by [first, last]."""
    if shift >= 0:
        return (last >> shift) - (first >> shift) + 1
    return last // size - first // size + 1


@_jit
def _global_slow(T, row, a0, n, nb):
    """A step whose lanes are not consecutive: counting.count_sectors decides."""
    sectors, lines = _count_sectors(T[a0:a0 + n], nb, n, T[C_SECTOR], T[C_LINE])
    T[row + S_SECTORS] += sectors
    T[row + S_LINES] += lines


@_jit
def _local_slow(T, row, a0, n, nb, x0):
    """A local step that may conflict: its words (a wide access covers several) go to
    ``T[x0:]`` for counting.bank_replays."""
    w = T[C_BANK_WIDTH]
    room = T[C_N0] - x0
    m = 0
    for i in range(a0, a0 + n):
        for word in range(T[i] // w, (T[i] + nb - 1) // w + 1):
            if m < room:
                T[x0 + m] = word
                m += 1
    T[row + S_REPLAYS] += _bank_replays(T[x0:x0 + m], m, T[C_BANKS])


@_jit
def _lost(T, row, lost, nb):
    """Accesses that found no room in the step buffer: single-lane steps, flagged."""
    T[row + S_OVERFLOW] += lost
    T[row + S_EXECS] += lost
    T[row + S_STEPS] += lost
    if T[row + S_SPACE] == SPACE_GLOBAL:
        T[row + S_SECTORS] += lost * ((nb + T[C_SECTOR] - 1) // T[C_SECTOR])
        T[row + S_LINES] += lost * ((nb + T[C_LINE] - 1) // T[C_LINE])


@_jit
def end(T):
    """After a pass of a work-item loop (and at group start): count and clear every pending
    step, and start a new pass (new lane stamps).

    One function with the common cases inline, calling out only for rare steps: every call
    and array view here costs reference counting, more than counting a step itself.
    """
    simd, ks, cap, x0 = T[C_SIMD], T[C_KSTRIDE], T[C_CAP], T[C_X0]
    for s in range(T[C_NSLOTS]):
        row = S0 + s * S_COLS
        if T[row + S_PENDING] == 0:
            continue
        T[row + S_PENDING] = 0
        nb = T[row + S_NBYTES]
        is_global = T[row + S_SPACE] == SPACE_GLOBAL
        for q in range(s * T[C_NSG], (s + 1) * T[C_NSG]):  # q: this slot's sub-groups
            lost = 0
            for k in range(cap + 1):  # steps are dense: a lane's k-th run follows its first k
                cell = k * ks + q
                n = T[T[C_N0] + cell]
                if n == 0:
                    break
                T[T[C_N0] + cell] = 0
                if k == cap:  # runs past the capacity: their addresses were not kept
                    lost += n
                    break
                if n > simd:  # more lanes than the SIMD width: only if hooks misfire
                    lost += n - simd
                    n = simd
                T[row + S_EXECS] += n
                T[row + S_STEPS] += 1
                first = T[C_A0] + cell * (simd + 1)
                # Consecutive (global) or non-decreasing (local) addresses: the fast answers.
                ordered = True
                for i in range(first + 1, first + n):
                    if T[i] != T[i - 1] + nb if is_global else T[i] < T[i - 1]:
                        ordered = False
                        break
                lo, hi = T[first], T[first + n - 1] + nb - 1
                if is_global and ordered:
                    T[row + S_SECTORS] += _units(lo, hi, T[C_SECTOR], T[C_SHIFTS])
                    T[row + S_LINES] += _units(lo, hi, T[C_LINE], T[C_SHIFTS + 1])
                elif is_global:
                    _global_slow(T, row, first, n, nb)
                elif T[C_BANKS] > 0 and not (
                        ordered and _units(lo, hi, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) <= T[C_BANKS]):
                    _local_slow(T, row, first, n, nb, x0)
            if lost > 0:
                _lost(T, row, lost, nb)
    T[C_STAMP0] += T[C_NL]
