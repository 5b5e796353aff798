"""Completing sub-group steps: counting the pending steps of one thread's arena.

Instrumented kernels call ``group`` at the start of each work-group and ``end`` after each pass
of a work-item loop, never per access or per lane. Both are reached through one C entry point,
``native`` (a ``numba.cfunc``, compiled once per machine and cached on disk), that the launch
passes to the kernel as an argument and ``call`` invokes by address: a kernel that called the
njit functions directly would link their code into each of its own functions and optimise and
compile it again there (about 9 s per caller on 2 cores; three callers per kernel).
The sector and bank rules are those of ``clsim.traffic.counting`` (its functions are the
reference the tests compare with); this module counts them in place on the lane logs of
``clsim.traffic.layout`` and appends each global step's sectors to the thread's sector stream
for the cache model (``clsim.traffic.cache``).

Importing this module imports Numba; ``clsim.traffic`` itself does not import it.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from clsim.traffic.layout import (
    B_COLS,
    BUFFER_SHIFT,
    C_B0,
    C_BANK_WIDTH,
    C_BANKS,
    C_CAP,
    C_CNT0,
    C_LINE,
    C_M_WRITE,
    C_NL,
    C_NSG,
    C_NSLOTS,
    C_PEND0,
    C_R_CAP,
    C_R_LEN,
    C_R_LOST,
    C_SECTOR,
    C_SHIFTS,
    C_SIMD,
    C_SP,
    C_X0,
    D_COLS,
    R_ATOMIC,
    R_MAX_RUN,
    R_SHIFT,
    R_STORE,
    S0,
    S_AFFINE,
    S_COLS,
    S_EXECS,
    S_ISZ,
    S_KIND,
    S_LINES,
    S_LOST,
    S_NBYTES,
    S_OVERFLOW,
    S_REPLAYS,
    S_SECTORS,
    S_SPACE,
    S_STEPS,
    SPACE_GLOBAL,
)

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)
# Inlined at Numba's level: a call passing arrays costs reference counting (atomic), more than
# the little these helpers do once per step.
_inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")
_SMALL_SORT = 64  # insertion sort up to this many entries, np.sort beyond


@_inline
def _unit(addr, size, shift):
    """The unit of ``size`` bytes (a power of two when ``shift >= 0``) holding byte ``addr``."""
    if shift >= 0:
        return addr >> shift
    return addr // size


@_inline
def _emit(T, R, sector, count, kind):
    """Append ``count`` consecutive sectors from ``sector`` to the stream (split into runs the
    entry format holds); a full stream counts them as lost (uncached)."""
    while count > 0:
        run = min(count, R_MAX_RUN)
        n = T[C_R_LEN]
        if n < T[C_R_CAP]:
            R[n] = (sector << R_SHIFT) | (run << 2) | kind
            T[C_R_LEN] = n + 1
        else:
            T[C_R_LOST] += run
        sector += run
        count -= run


@_inline
def _mark(M, first, count):
    """Set the flags ``M[first:first + count]``; lines whose flags are all set already are only
    read (M is shared: rewriting flags every group would bounce its lines between cores)."""
    clear = 0
    u = np.uint64(first)
    for i in range(np.uint64(count)):  # unsigned: see _gaps
        clear += M[u + i] == 0
    if clear:
        for i in range(np.uint64(count)):
            M[u + i] = 1


@_inline
def _footprint(T, M, lo, hi, isz, kind):
    """Flag the elements holding bytes [lo, hi] of one buffer (``lo`` carries its index) as
    read (loads), written (stores) or both (atomics); indices outside the buffer are clamped,
    as a bad index (checks off) must not flag another buffer's elements."""
    p = (lo + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT
    base = p << BUFFER_SHIFT
    b = T[C_B0] + p * B_COLS
    if p < 0 or b >= T[C_X0]:
        return
    size = T[b + 2]
    e0 = min(max((lo - base) // isz, 0), size - 1)
    e1 = min(max((hi - base) // isz, 0), size - 1)
    if kind != R_STORE:  # loads and atomics read
        _mark(M, T[b] + e0, e1 - e0 + 1)
    if kind == R_STORE or kind == R_ATOMIC:
        _mark(M, T[C_M_WRITE] + T[b] + e0, e1 - e0 + 1)


@_jit
def _sort(A, first, n):
    """Sort ``A[first:first + n]`` in place (steps are a sub-group: usually 32 entries)."""
    if n > _SMALL_SORT:
        A[first:first + n] = np.sort(A[first:first + n])
        return
    for i in range(first + 1, first + n):
        v = A[i]
        j = i - 1
        while j >= first and A[j] > v:
            A[j + 1] = A[j]
            j -= 1
        A[j + 1] = v


@_inline
def _coalesced(T, M, R, row, first, last, kind):
    """A global step covering bytes [first, last] without a gap: one run of sectors."""
    ss, sb = T[C_SHIFTS], T[C_SECTOR]
    s0 = _unit(first, sb, ss)
    count = _unit(last, sb, ss) - s0 + 1
    T[row + S_SECTORS] += count
    T[row + S_LINES] += (_unit(last, T[C_LINE], T[C_SHIFTS + 1])
                         - _unit(first, T[C_LINE], T[C_SHIFTS + 1]) + 1)
    r = T[C_R_LEN]
    if count <= R_MAX_RUN and r < T[C_R_CAP]:
        R[r] = (s0 << R_SHIFT) | (count << 2) | kind
        T[C_R_LEN] = r + 1
    else:
        _emit(T, R, s0, count, kind)
    _footprint(T, M, first, last, T[row + S_ISZ], kind)


@_inline
def _global_step(T, M, R, row, A, first, n, nb, kind):
    """Sectors and lines of one global step whose lanes are not consecutive
    (``A[first:first + n]``, the lanes' addresses), its sectors on the stream and its
    footprint: sorted (in the scratch area) and merged as ``counting.count_sectors`` does."""
    ss, ls = T[C_SHIFTS], T[C_SHIFTS + 1]
    sb, lb = T[C_SECTOR], T[C_LINE]
    isz = T[row + S_ISZ]
    x0 = T[C_X0] + T[C_SIMD]  # after the gathered lanes
    for i in range(n):
        T[x0 + i] = A[first + i]
    _sort(T, x0, n)
    run0, run_end, prev_line = np.int64(-1), np.int64(-2), np.int64(-1)
    sectors, lines = 0, 0
    for i in range(x0, x0 + n):
        a = T[i]
        if i == x0 or a != T[i - 1]:
            _footprint(T, M, a, a + nb - 1, isz, kind)
        fs, es = _unit(a, sb, ss), _unit(a + nb - 1, sb, ss)
        fl, el = _unit(a, lb, ls), _unit(a + nb - 1, lb, ls)
        if el > prev_line:
            lines += el - max(fl, prev_line + 1) + 1
            prev_line = el
        if es <= run_end:
            continue
        if fs > run_end + 1:  # a gap: the run so far is complete
            if run0 >= 0:
                _emit(T, R, run0, run_end - run0 + 1, kind)
            run0 = fs
        sectors += es - max(fs, run_end + 1) + 1
        run_end = es
    if run0 >= 0:
        _emit(T, R, run0, run_end - run0 + 1, kind)
    T[row + S_SECTORS] += sectors
    T[row + S_LINES] += lines


@_inline
def _local_step(T, row, A, first, n, nb):
    """Bank replays of one local step: words spanning fewer than ``banks`` words cannot share
    a bank; otherwise the words (a wide access covers several) are sorted and counted per bank
    as ``counting.bank_replays`` does."""
    banks, w, shift = T[C_BANKS], T[C_BANK_WIDTH], T[C_SHIFTS + 2]
    if banks <= 0:
        return
    lo, hi = A[first], A[first]
    for i in range(first + 1, first + n):
        lo, hi = min(lo, A[i]), max(hi, A[i])
    if _unit(hi + nb - 1, w, shift) - _unit(lo, w, shift) < banks:
        return
    x0 = T[C_X0] + T[C_SIMD]  # after the gathered lanes
    m = 0
    for i in range(first, first + n):
        for word in range(_unit(A[i], w, shift), _unit(A[i] + nb - 1, w, shift) + 1):
            T[x0 + m] = word
            m += 1
    _sort(T, x0, m)
    per_bank = x0 + m
    for b in range(banks):
        T[per_bank + b] = 0
    worst = 0
    for i in range(x0, x0 + m):
        if i > x0 and T[i] == T[i - 1]:
            continue  # the same word: one broadcast
        b = per_bank + T[i] % banks
        T[b] += 1
        worst = max(worst, T[b])
    T[row + S_REPLAYS] += worst - 1


@_inline
def _lost(T, row, lost, nb):
    """Runs past the capacity: counted as single-lane steps (their addresses were not kept),
    flagged; their sectors are uncached for the cache model."""
    T[row + S_OVERFLOW] += lost
    T[row + S_EXECS] += lost
    T[row + S_STEPS] += lost
    if T[row + S_SPACE] == SPACE_GLOBAL:
        sectors = lost * ((nb + T[C_SECTOR] - 1) // T[C_SECTOR])
        T[row + S_SECTORS] += sectors
        T[row + S_LINES] += lost * ((nb + T[C_LINE] - 1) // T[C_LINE])
        T[C_R_LOST] += sectors


@_inline
def _gaps(L, first, n, nb):
    """How many of the n lanes whose addresses are ``L[first]``, ``L[first + 8]``, ... are not
    where consecutive lanes would be (0: consecutive). Unsigned indices: Numba adds a negative-index
    fix-up to every signed one, which doubled the cost of this, the hottest loop here."""
    gaps = 0
    u = np.uint64(first)
    a0 = L[u]
    for i in range(n):  # against lane 0's address: one load per lane, whole vectors
        gaps += L[u + (np.uint64(i) << np.uint64(3))] != a0 + i * nb
    return gaps


@_inline
def _span(L, first, n):
    """The lowest and highest of ``L[first]``, ``L[first + 8]``, ... (n lanes)."""
    u = np.uint64(first)
    lo, hi = L[u], L[u]
    for i in range(np.uint64(1), np.uint64(n)):
        v = L[u + (i << np.uint64(3))]
        lo, hi = min(lo, v), max(hi, v)
    return lo, hi


@_inline
def _gathered(T, M, R, row, x0, n, nb, kind, is_global):
    """One step of ``n`` lanes whose addresses are gathered at ``T[x0:x0 + n]`` (lane
    order): its bank replays (local) or sectors, lines, stream entry and footprint."""
    T[row + S_EXECS] += n
    T[row + S_STEPS] += 1
    if not is_global:
        _local_step(T, row, T, x0, n, nb)
        return
    gaps = 0
    for i in range(x0 + 1, x0 + n):  # no early exit: the loop vectorises
        gaps += T[i] != T[i - 1] + nb
    if gaps == 0:
        _coalesced(T, M, R, row, T[x0], T[x0 + n - 1] + nb - 1, kind)
    else:
        _global_step(T, M, R, row, T, x0, n, nb, kind)


@_jit
def end(T, L, R, M):
    """After a pass of a work-item loop: count and clear every pending step.

    Step k of a sub-group is its lanes' k-th runs: read in place from ``L`` when every lane
    ran it and the addresses are consecutive (the common case), else gathered into the scratch.
    Slots logged as loop descriptors are counted by ``_loop_slot``.
    """
    simd, cap, nl, x0 = T[C_SIMD], T[C_CAP], T[C_NL], T[C_X0]
    c0, p0 = T[C_CNT0], T[C_PEND0]
    for s in range(T[C_NSLOTS]):
        if T[p0 + s] == 0:
            continue
        T[p0 + s] = 0
        row = S0 + s * S_COLS
        nb, kind = T[row + S_NBYTES], T[row + S_KIND]
        is_global = T[row + S_SPACE] == SPACE_GLOBAL
        if T[row + S_AFFINE] != 0:
            _loop_slot(T, L, M, R, s, row, nb, kind, is_global)
            continue
        cs, kb = c0 + s * nl, (cap >> 3) + 1
        for q in range(T[C_NSG]):
            lo, hi = q * simd, min(q * simd + simd, nl)
            kmin, kmax, lost = cap, 0, 0
            for lane in range(cs + lo, cs + hi):
                runs = T[lane]
                kmin, kmax = min(kmin, runs), max(kmax, runs)
                lost += max(runs - cap, 0)
            for k in range(min(kmax, cap)):
                at = ((s * kb + (k >> 3)) * nl << 3) + (k & 7)  # L index of lane 0's run k
                n = hi - lo
                if k < kmin and not is_global and T[C_BANKS] > 0:  # conflict-free? (no copy)
                    wlo, whi = _span(L, at + (lo << 3), n)
                    if _unit(whi + nb - 1, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) - _unit(
                            wlo, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) < T[C_BANKS]:
                        T[row + S_EXECS] += n
                        T[row + S_STEPS] += 1
                        continue
                if k < kmin and is_global:  # every lane ran it: consecutive? (no copy)
                    if _gaps(L, at + (lo << 3), n, nb) == 0:
                        T[row + S_EXECS] += n
                        T[row + S_STEPS] += 1
                        _coalesced(T, M, R, row, L[at + (lo << 3)],
                                   L[at + ((hi - 1) << 3)] + nb - 1, kind)
                        continue
                n = 0
                for lane in range(lo, hi):  # the lanes that ran it, in lane order
                    if T[cs + lane] > k:
                        T[x0 + n] = L[at + (lane << 3)]
                        n += 1
                if n > 0:
                    _gathered(T, M, R, row, x0, n, nb, kind, is_global)
            for lane in range(cs + lo, cs + hi):
                T[lane] = 0
            if lost > 0:
                _lost(T, row, lost, nb)


@_inline
def _entry(s, kb, nl, lane, e):
    """The ``L`` index of entry ``e`` of ``lane``'s log of slot ``s`` (layout.py)."""
    return (((s * kb + (e >> 3)) * nl + lane) << 3) + (e & 7)


@_jit
def _loop_slot(T, L, M, R, s, row, nb, kind, is_global):
    """Count a slot logged as loop descriptors (first address, step, runs; layout.py), with
    the same steps the per-run log gives: per sub-group, when every lane logged descriptors
    of equal steps and runs (the usual case) each descriptor is counted in closed form or run
    by run, else lanes are walked run by run (``_walk``)."""
    simd, cap, nl = T[C_SIMD], T[C_CAP], T[C_NL]
    cs, kb = T[C_CNT0] + s * nl, (cap >> 3) + 1
    for q in range(T[C_NSG]):
        lo, hi = q * simd, min(q * simd + simd, nl)
        entries = T[cs + lo]
        same = True
        for lane in range(lo, hi):
            same = same and T[cs + lane] == entries
        for e in range(0, entries if same else 0, D_COLS):
            step, runs = L[_entry(s, kb, nl, lo, e + 1)], L[_entry(s, kb, nl, lo, e + 2)]
            for lane in range(lo + 1, hi):
                same = same and L[_entry(s, kb, nl, lane, e + 1)] == step and L[
                    _entry(s, kb, nl, lane, e + 2)] == runs
        if same:
            for e in range(0, entries, D_COLS):
                _descriptor(T, L, M, R, s, kb, row, lo, hi, e, nb, kind, is_global)
        else:
            _walk(T, L, M, R, s, kb, row, lo, hi, nb, kind, is_global)
        for lane in range(cs + lo, cs + hi):
            T[lane] = 0
    lost = T[row + S_LOST]
    if lost > 0:
        T[row + S_LOST] = 0
        _lost(T, row, lost, nb)


@_inline
def _descriptor(T, L, M, R, s, kb, row, lo, hi, e, nb, kind, is_global):
    """Descriptor ``e`` of lanes ``lo..hi - 1``, equal in step and runs across them: run j
    is one step of every lane at ``first + step * j``. Consecutive global lanes make one
    run of sectors per step; local lanes conflict-free at run 0 stay so when the step is a
    whole number of bank words; anything else is gathered run by run."""
    nl, x0, n = T[C_NL], T[C_X0], hi - lo
    first = L[_entry(s, kb, nl, lo, e)]
    step, runs = L[_entry(s, kb, nl, lo, e + 1)], L[_entry(s, kb, nl, lo, e + 2)]
    lo_a, hi_a, gaps = first, first, 0
    for lane in range(lo, hi):
        a = L[_entry(s, kb, nl, lane, e)]
        lo_a, hi_a = min(lo_a, a), max(hi_a, a)
        gaps += a != first + (lane - lo) * nb
    if is_global and gaps == 0:
        T[row + S_EXECS] += n * runs
        T[row + S_STEPS] += runs
        for j in range(runs):
            _coalesced(T, M, R, row, first + step * j, first + step * j + n * nb - 1, kind)
        return
    banks, w, shift = T[C_BANKS], T[C_BANK_WIDTH], T[C_SHIFTS + 2]
    if not is_global and (banks <= 0 or (step % w == 0 and _unit(hi_a + nb - 1, w, shift)
                                         - _unit(lo_a, w, shift) < banks)):
        T[row + S_EXECS] += n * runs
        T[row + S_STEPS] += runs
        return
    for j in range(runs):
        for lane in range(lo, hi):
            T[x0 + lane - lo] = L[_entry(s, kb, nl, lane, e)] + step * j
        _gathered(T, M, R, row, x0, n, nb, kind, is_global)


@_inline
def _walk(T, L, M, R, s, kb, row, lo, hi, nb, kind, is_global):
    """Lanes ``lo..hi - 1`` whose descriptors differ: step k gathers every lane's k-th run,
    following a cursor (entry, run) per lane kept in the scratch after the step buffers."""
    nl, x0 = T[C_NL], T[C_X0]
    cs, xc = T[C_CNT0] + s * nl, T[C_CNT0] - 2 * T[C_SIMD]
    most = 0
    for lane in range(lo, hi):
        T[xc + 2 * (lane - lo)], T[xc + 2 * (lane - lo) + 1] = 0, 0
        runs = 0
        for e in range(0, T[cs + lane], D_COLS):
            runs += L[_entry(s, kb, nl, lane, e + 2)]
        most = max(most, runs)
    for _k in range(most):
        n = 0
        for lane in range(lo, hi):
            cur = xc + 2 * (lane - lo)
            e, j = T[cur], T[cur + 1]
            if e >= T[cs + lane]:
                continue
            T[x0 + n] = L[_entry(s, kb, nl, lane, e)] + L[_entry(s, kb, nl, lane, e + 1)] * j
            n += 1
            if j + 1 == L[_entry(s, kb, nl, lane, e + 2)]:
                T[cur], T[cur + 1] = e + D_COLS, 0
            else:
                T[cur + 1] = j + 1
        if n > 0:
            _gathered(T, M, R, row, x0, n, nb, kind, is_global)


@_jit
def group(T, L, R, M, g):
    """At the start of work-group ``g``: count what an early return left pending, then mark
    the group's start on the sector stream."""
    end(T, L, R, M)
    T[C_SP] = 0
    n = T[C_R_LEN]
    if n < T[C_R_CAP]:
        R[n] = -(g + 1)
        T[C_R_LEN] = n + 1


# The C entry point: arrays travel as (pointer, length) pairs; ``g >= 0`` starts group g, a
# negative ``g`` ends a pass.
_I64P = types.CPointer(types.int64)
_SIGNATURE = types.void(_I64P, types.int64, _I64P, types.int64, _I64P, types.int64,
                        types.CPointer(types.uint8), types.int64, types.int64)


@numba.cfunc(_SIGNATURE, cache=True, error_model="numpy", nogil=True)
def native(tp, tn, lp, ln, rp, rn, mp, mn, g):
    T = numba.carray(tp, (tn,))
    L = numba.carray(lp, (ln,))
    R = numba.carray(rp, (rn,))
    M = numba.carray(mp, (mn,))
    if g >= 0:
        group(T, L, R, M, g)
    else:
        end(T, L, R, M)


@_jit
def call(fn, T, L, R, M, g):
    """Call ``native`` (passed in as ``fn``) on the arrays: ``group`` when ``g >= 0``, else
    ``end``. Small, so it costs nothing to link into the kernel's functions."""
    fn(T.ctypes, T.size, L.ctypes, L.size, R.ctypes, R.size, M.ctypes, M.size, g)
