"""Completing sub-group steps: counting the pending steps of one thread's arena.

Instrumented kernels call ``end`` after each pass of a work-item loop and at the start of each
work-group (which also marks the group on the sector stream), never per access or per lane.
Both are reached through one C entry point, ``native`` (a ``numba.cfunc``, compiled once per
machine and cached on disk), that the launch passes to the kernel as an argument and ``call``
invokes by address: a kernel that called the njit functions directly would link their code
into each of its own functions and optimise and compile it again there (about 9 s per caller
on 2 cores; three callers per kernel).
The sector and bank rules are those of ``clsim.traffic.counting`` (its functions are the
reference the tests compare with); this module forms the steps from the lane logs of
``clsim.traffic.layout`` (runs, or loop descriptors counted in closed form) and
``clsim.traffic.step_rules`` counts each one in place and appends its sectors to the
thread's sector stream for the cache model (``clsim.traffic.cache``).

Importing this module imports Numba; ``clsim.traffic`` itself does not import it. Numba's
cache of ``native`` is stamped with this file alone, by its content (a hash, not its mtime:
touching it changes nothing): after editing ``step_rules``, ``recorders`` or ``layout``,
bump ``RULES`` below, or a stale ``native`` keeps running.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from clsim.traffic.layout import (
    BUFFER_SHIFT,
    C_BANK_WIDTH,
    C_BANKS,
    C_CAP,
    C_CNT0,
    C_LANES0,
    C_NL,
    C_NSG,
    C_NSLOTS,
    C_PEND0,
    C_R_CAP,
    C_R_LEN,
    C_SHIFTS,
    C_SIMD,
    C_SP,
    C_STAGE0,
    C_STAGED0,
    C_STRIDED0,
    C_X0,
    D_COLS,
    G_EXECS,
    G_MEMO,
    G_ORIGIN,
    G_REPLAYS,
    G_ROW,
    G_STEP,
    G_STEPS,
    G_TRIPS,
    G_X,
    G_Y,
    L_BASE,
    L_END,
    L_FIRST,
    L_ISZ,
    L_KEPT,
    L_ORIGIN,
    L_ROW,
    L_ROW_STRIDE,
    L_STRIDE,
    LANE_COLS,
    S0,
    S_AFFINE,
    S_COLS,
    S_EXECS,
    S_KIND,
    S_LOST,
    S_NBYTES,
    S_REPLAYS,
    S_SPACE,
    S_STEPS,
    SPACE_GLOBAL,
    STAGED_GIVEN_UP,
    STAGED_GRID,
    STAGED_LANES,
    STAGED_STRIDED,
    STRIDED_COLS,
    T_FIRST,
    T_LANE,
    T_LANES,
    T_SPAN,
    T_STEP,
    T_STRIDE,
)
from clsim.traffic.recorders import record
from clsim.traffic.step_rules import (
    coalesced,
    coalesced_runs,
    gathered,
    inline,
    jit,
    lane_gaps,
    lane_span,
    lost_runs,
    merged,
    near_lanes,
    spaced_runs,
    unit,
)

# The step rules' revision compiled into ``native`` (see the module docstring).
RULES = 32

# Rules with one call site are inlined by Numba into their caller, typed there once: compiled
# on their own, each was also optimised and compiled to machine code again in every function
# above it (Numba links a callee's whole code into each caller's module). ``step_rules``'
# rules, called from several places, stay ``jit`` (see its ``inline``).
_once = numba.njit(error_model="numpy", nogil=True, inline="always")


@_once
def end(T, L, R, M):
    """After a pass of a work-item loop: count and clear every pending step, slot by slot
    (``_slot``)."""
    staged0, p0 = T[C_STAGED0], T[C_PEND0]
    for s in range(T[C_NSLOTS]):
        staged = T[staged0 + s]
        if staged == STAGED_LANES and T[p0 + s] == 0 and _local_row_run(T, s):
            T[staged0 + s] = 0  # a tree reduction's pass, counted without calling ``_slot``
        elif staged != 0 or T[p0 + s] != 0:
            _slot(T, L, R, M, s)


@jit
def _slot(T, L, R, M, s):
    """``end`` of slot ``s``: its own function, so that ``end``'s scan of the slots is a
    tight loop (inlined, the counting's registers were spilled and reloaded for every slot:
    a fifth of softmax's step counting, whose passes leave most slots untouched).

    Step k of a sub-group is its lanes' k-th runs: read in place from ``L`` when every lane
    ran it and the addresses are consecutive (the common case), else gathered into the scratch.
    Slots logged as loop descriptors are counted by ``_loop_slot``.
    """
    simd, cap, nl, x0 = T[C_SIMD], T[C_CAP], T[C_NL], T[C_X0]
    c0, p0 = T[C_CNT0], T[C_PEND0]
    staged = T[T[C_STAGED0] + s]
    if staged != 0:
        T[T[C_STAGED0] + s] = 0
        if staged == STAGED_LANES:
            _lane_run(T, M, R, s)
        elif staged == STAGED_GIVEN_UP:
            _given_up(T, L, s)
        elif staged == STAGED_STRIDED:
            _strided_slot(T, M, R, s)
        elif staged == STAGED_GRID:
            _grid_slot(T, M, R, s)
        elif not _staged_slot(T, M, R, s):
            for lane in range(nl):
                unstage(T, L, s * nl + lane)
    top = T[p0 + s]  # the highest lane that ran the slot, plus 1 (or 1: descriptors)
    if top == 0:
        return
    T[p0 + s] = 0
    row = S0 + s * S_COLS
    nb, kind = T[row + S_NBYTES], T[row + S_KIND]
    is_global = T[row + S_SPACE] == SPACE_GLOBAL
    if T[row + S_AFFINE] != 0:
        _loop_slot(T, L, M, R, s, row, nb, kind, is_global)
        return
    cs, kb = c0 + s * nl, (cap >> 3) + 1
    for q in range(min(T[C_NSG], (top + simd - 1) // simd)):  # none above ``top`` ran it
        lo, hi = q * simd, min(q * simd + simd, nl)
        kmin, kmax, lost = cap, 0, 0
        for lane in range(cs + lo, cs + hi):
            runs = T[lane]
            kmin, kmax = min(kmin, runs), max(kmax, runs)
            lost += max(runs - cap, 0)
        if kmax == 0:
            continue  # no lane ran it (a tree reduction's idle sub-groups): nothing to clear
        for k in range(min(kmax, cap)):
            at = ((s * kb + (k >> 3)) * nl << 3) + (k & 7)  # L index of lane 0's run k
            n = hi - lo
            if k < kmin and not is_global and T[C_BANKS] > 0:  # conflict-free? (no copy)
                wlo, whi = lane_span(L, at + (lo << 3), n)
                if unit(whi + nb - 1, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) - unit(
                        wlo, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) < T[C_BANKS]:
                    T[row + S_EXECS] += n
                    T[row + S_STEPS] += 1
                    continue
            if k < kmin and is_global:  # every lane ran it: equally spaced? (no copy)
                first = at + (lo << 3)
                d = L[first + 8] - L[first] if n > 1 else nb
                if d >= 0 and lane_gaps(L, first, n, d) == 0:
                    if d != nb and (spaced_runs(T, M, R, row, L[first], n, d, 0, 1, nb, kind)
                                    or near_lanes(T, M, R, row, L[first], n, d, nb, kind)):
                        continue
                    T[row + S_EXECS] += n
                    T[row + S_STEPS] += 1
                    if d == nb:  # consecutive: one run of sectors
                        coalesced(T, M, R, row, L[first], L[first + (n - 1) * 8] + nb - 1,
                                  kind)
                    else:  # ascending already: merged where the log holds them
                        merged(T, M, R, row, L, first, 8, n, nb, kind)
                    continue
                if _row_segments(T, M, R, row, L, first, n, nb, kind):
                    continue
            n = 0
            for lane in range(lo, hi):  # the lanes that ran it, in lane order
                if T[cs + lane] > k:
                    T[x0 + n] = L[at + (lane << 3)]
                    n += 1
            if n > 0:
                gathered(T, M, R, row, x0, n, nb, kind, is_global)
        for lane in range(cs + lo, cs + hi):
            T[lane] = 0
        if lost > 0:
            lost_runs(T, row, lost, nb)


@_once
def _row_segments(T, M, R, row, L, first, n, nb, kind):
    """One global step whose ``n`` lanes (addresses ``L[first]``, ``L[first + 8]``, ...) are
    equal runs of consecutive elements, each run past the end of the last and within one
    buffer (a sub-group over two rows of a 16 x 16 group's tile): counted by ``merged`` over
    the runs, the lanes' sectors, lines, stream entries and flags, with its figures for the
    lanes (True); else nothing is counted (False). Merged lane by lane, a tiled matmul's
    guarded tile loads (``a[i] if c else 0.0``, logged per lane) took a third of its
    traffic run."""
    u = np.uint64(first)
    a0 = L[u]
    per = 1
    while per < n and L[u + np.uint64(per << 3)] == a0 + per * nb:
        per += 1
    if per == n or n % per != 0:
        return False
    width, x0, end = per * nb, T[C_X0], np.int64(-1)
    half = np.int64(1) << (BUFFER_SHIFT - 1)
    for r in range(n // per):
        at = first + ((r * per) << 3)
        start = L[np.uint64(at)]
        if start < end or lane_gaps(L, at, per, nb) != 0 or (
                (start + half) >> BUFFER_SHIFT != (start + width - 1 + half) >> BUFFER_SHIFT):
            return False
        T[x0 + r] = start
        end = start + width
    T[row + S_EXECS] += n
    T[row + S_STEPS] += 1
    merged(T, M, R, row, T, x0, 1, n // per, width, kind)
    return True


@_once
def _lane_run(T, M, R, s):
    """Count slot ``s``'s lane run (layout.py ``LANES``) with the steps ``end`` counts from
    the same addresses in the lane logs: per sub-group, the shortcuts of a whole sub-group's
    conflict-free local step or consecutive global step, else the lanes gathered. A
    sub-group within one row is affine (closed form); one across rows is gathered first."""
    x = T[C_LANES0] + LANE_COLS * s
    first, stop, address = T[x + L_FIRST], T[x + L_END], T[x + L_ORIGIN]
    stride, row_stride, lanes_per_row = T[x + L_STRIDE], T[x + L_ROW_STRIDE], T[x + L_ROW]
    fx, fy = first % lanes_per_row, first // lanes_per_row
    simd, nl, x0 = T[C_SIMD], T[C_NL], T[C_X0]
    row = S0 + s * S_COLS
    nb, kind = T[row + S_NBYTES], T[row + S_KIND]
    is_global = T[row + S_SPACE] == SPACE_GLOBAL
    banks = T[C_BANKS]
    if _local_row_run(T, s):
        return
    if is_global and stride == nb and fy == (stop - 1) // lanes_per_row:
        # Consecutive lanes in one row: each sub-group's part one run of sectors, the whole
        # sub-groups' runs counted together (``coalesced_runs``; a copy's three accesses).
        lo, q = first, first // simd
        while lo < stop:
            n = min(stop, q * simd + simd, nl) - lo
            runs = (stop - lo) // simd if n == simd else 1
            T[row + S_EXECS] += n * runs
            T[row + S_STEPS] += runs
            coalesced_runs(T, M, R, row, address + (lo - first) * nb, n * nb, n * nb, runs,
                           kind)
            lo, q = lo + n * runs, q + runs
        T[x + L_END] = -1
        return
    for q in range(first // simd, (stop - 1) // simd + 1):
        lo, hi = max(first, q * simd), min(stop, q * simd + simd, nl)
        n = hi - lo
        whole = lo == q * simd and hi == min(q * simd + simd, nl)
        a = address + stride * (lo % lanes_per_row - fx) + row_stride * (
            lo // lanes_per_row - fy)
        if lo // lanes_per_row == (hi - 1) // lanes_per_row:  # one row: affine
            if whole and not is_global and banks > 0:
                z = a + stride * (n - 1)
                if unit(max(a, z) + nb - 1, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) - unit(
                        min(a, z), T[C_BANK_WIDTH], T[C_SHIFTS + 2]) < banks:
                    T[row + S_EXECS] += n
                    T[row + S_STEPS] += 1
                    continue
            if whole and is_global and stride == nb:
                T[row + S_EXECS] += n
                T[row + S_STEPS] += 1
                coalesced(T, M, R, row, a, a + stride * (n - 1) + nb - 1, kind)
                continue
            for i in range(n):
                T[x0 + i] = a + stride * i
            gathered(T, M, R, row, x0, n, nb, kind, is_global)
            continue
        if is_global and stride == nb and lo % lanes_per_row == 0 and n % lanes_per_row == 0 \
                and row_stride >= lanes_per_row * nb:
            # Whole rows, each one contiguous segment, ascending: the lanes' step is the
            # segments' (``merged`` over contiguous lanes makes the same runs, lines and
            # flags as over the segment they cover).
            segments = n // lanes_per_row
            for i in range(segments):
                T[x0 + i] = a + row_stride * i
            T[row + S_EXECS] += n
            T[row + S_STEPS] += 1
            merged(T, M, R, row, T, x0, 1, segments, lanes_per_row * nb, kind)
            continue
        # The lanes' positions in their rows stepped along, not divided out per lane: a
        # 64-bit division per lane was most of a tiled matmul's step counting.
        lowest, highest, gaps = a, a, 0
        lx, v = lo % lanes_per_row, a
        for i in range(n):
            T[x0 + i] = v
            lowest, highest = min(lowest, v), max(highest, v)
            gaps += v != a + i * nb
            lx += 1
            v += stride
            if lx == lanes_per_row:
                lx = 0
                v += row_stride - stride * lanes_per_row
        if whole and not is_global and banks > 0 and unit(
                highest + nb - 1, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) - unit(
                lowest, T[C_BANK_WIDTH], T[C_SHIFTS + 2]) < banks:
            T[row + S_EXECS] += n
            T[row + S_STEPS] += 1
            continue
        if whole and is_global and gaps == 0:
            T[row + S_EXECS] += n
            T[row + S_STEPS] += 1
            coalesced(T, M, R, row, a, T[x0 + n - 1] + nb - 1, kind)
            continue
        gathered(T, M, R, row, x0, n, nb, kind, is_global)
    T[x + L_END] = -1


@inline
def _local_row_run(T, s):
    """Count slot ``s``'s lane run at once when it is local, in one row, and every
    sub-group of it spans fewer words than banks (a tree reduction's passes, a broadcast):
    a step per sub-group, no replays (True); else count nothing (False)."""
    x = T[C_LANES0] + LANE_COLS * s
    row = S0 + s * S_COLS
    if T[row + S_SPACE] == SPACE_GLOBAL:
        return False
    first, stop, lanes_per_row = T[x + L_FIRST], T[x + L_END], T[x + L_ROW]
    simd, nb, banks, w = T[C_SIMD], T[row + S_NBYTES], T[C_BANKS], T[C_BANK_WIDTH]
    # Divisions only where needed: seven per call were a fifth of softmax's step counting
    # (a tree reduction's passes). A 1-D group's lanes are one row; addresses are not
    # negative, so a power-of-two bank width is a mask and a shift.
    if stop > lanes_per_row and first // lanes_per_row != (stop - 1) // lanes_per_row:
        return False
    if banks > 0:
        # A sub-group's bytes span ``stride * (simd - 1) + nb`` at most; lanes a whole
        # number of words apart share their offset in a word, the first lane's.
        stride, shift = abs(T[x + L_STRIDE]), T[C_SHIFTS + 2]
        if shift >= 0:
            offset = T[x + L_ORIGIN] & (w - 1) if stride & (w - 1) == 0 else w - 1
            words = (offset + stride * (simd - 1) + nb - 1) >> shift
        else:
            offset = T[x + L_ORIGIN] % w if stride % w == 0 else w - 1
            words = (offset + stride * (simd - 1) + nb - 1) // w
        if words >= banks:
            return False
    T[row + S_EXECS] += stop - first
    T[row + S_STEPS] += (stop - 1) // simd + 1 - (first // simd if first > 0 else 0)
    T[x + L_END] = -1
    return True


@_once
def _given_up(T, L, s):
    """Move the lanes of slot ``s``'s lane run that was given up this pass into the logs, as
    ``recorders.record`` would have (layout.py ``LANES``)."""
    x = T[C_LANES0] + LANE_COLS * s
    first, kept, origin = T[x + L_FIRST], T[x + L_KEPT], T[x + L_ORIGIN]
    stride, row_stride, lanes_per_row = T[x + L_STRIDE], T[x + L_ROW_STRIDE], T[x + L_ROW]
    base, isz = T[x + L_BASE], T[x + L_ISZ]
    for lane in range(first, kept):
        at = origin + stride * (lane % lanes_per_row) + row_stride * (lane // lanes_per_row)
        record(T, L, T[C_CNT0], T[C_PEND0], T[C_CAP], T[C_NL], s, lane, base + at * isz)
    T[x + L_END] = -1


@inline
def unstage(T, L, at):
    """Move the loop descriptor lane ``at % nl`` staged for slot ``at // nl`` (layout.py
    ``STAGE``) into its log, as the last entries of its runs of the slot in this pass. A
    full log counts the runs as lost (``end`` counts those as single-lane steps)."""
    x = T[C_STAGE0] + 3 * at
    count = T[x + 2]
    if count <= 0:
        return
    T[x + 2] = 0
    nl, cap = T[C_NL], T[C_CAP]
    s, lane = at // nl, at % nl
    step = T[x] - T[x + 1] if count > 1 else 0
    row = S0 + s * S_COLS
    c = T[C_CNT0] + at
    n = T[c]
    if n + D_COLS > cap:
        T[row + S_LOST] += count
    else:
        kb = (cap >> 3) + 1
        L[_entry(s, kb, nl, lane, n)] = T[x] - step * (count - 1)
        L[_entry(s, kb, nl, lane, n + 1)] = step
        L[_entry(s, kb, nl, lane, n + 2)] = count
        T[c] = n + D_COLS
    T[T[C_PEND0] + s] = 1
    T[row + S_AFFINE] = 1


@inline
def _entry(s, kb, nl, lane, e):
    """The ``L`` index of entry ``e`` of ``lane``'s log of slot ``s`` (layout.py)."""
    return (((s * kb + (e >> 3)) * nl + lane) << 3) + (e & 7)


@_once
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
        lost_runs(T, row, lost, nb)


@_once
def _descriptor(T, L, M, R, s, kb, row, lo, hi, e, nb, kind, is_global):
    """Descriptor ``e`` of lanes ``lo..hi - 1``, equal in step and runs across them
    (``_lanes_loop``: lane i's first address at ``L[_entry(.., i, e)]``, 8 entries apart)."""
    nl = T[C_NL]
    at = _entry(s, kb, nl, lo, e)
    step, runs = L[_entry(s, kb, nl, lo, e + 1)], L[_entry(s, kb, nl, lo, e + 2)]
    _lanes_loop(T, M, R, row, L, at - 8 * lo, 8, 0, lo, hi, step, runs, nb, kind, is_global)


@inline
def _lanes_loop(T, M, R, row, A, base, stride, off, lo, hi, step, runs, nb, kind, is_global):
    """Lanes ``lo..hi - 1`` running ``runs`` runs ``step`` bytes apart, lane i's first at
    ``A[base + stride * i] + off``: run j is one step of every lane at ``first + step * j``.
    Consecutive global lanes make one run of sectors per step; local lanes conflict-free at
    run 0 stay so when the step is a whole number of bank words; anything else is gathered
    run by run."""
    x0, n = T[C_X0], hi - lo
    first = A[base + stride * lo] + off
    spacing = A[base + stride * (lo + 1)] + off - first if n > 1 else 0
    lo_a, hi_a, gaps, spaced = first, first, 0, 0
    for lane in range(lo, hi):
        a = A[base + stride * lane] + off
        lo_a, hi_a = min(lo_a, a), max(hi_a, a)
        gaps += a != first + (lane - lo) * nb
        spaced += a != first + (lane - lo) * spacing
    if _closed_lanes(T, M, R, row, first, lo_a, hi_a, gaps == 0, n, step, runs, nb, kind,
                     is_global):
        return
    if is_global and spaced == 0 and spaced_runs(T, M, R, row, first, n, spacing, step, runs,
                                                 nb, kind):
        return
    for j in range(runs):
        for lane in range(lo, hi):
            T[x0 + lane - lo] = A[base + stride * lane] + off + step * j
        gathered(T, M, R, row, x0, n, nb, kind, is_global)


@_once
def _closed_lanes(T, M, R, row, first, lowest, highest, consecutive, n, step, runs, nb, kind,
                  is_global):
    """``_lanes_loop``'s closed forms, for ``n`` lanes whose first addresses start at
    ``first`` and lie within [lowest, highest], ``nb`` apart when ``consecutive``: global
    lanes one run of sectors per step; local lanes conflict-free at run 0 stay so when the
    step is a whole number of bank words. True when they counted the lanes' ``runs``."""
    if is_global and consecutive:
        T[row + S_EXECS] += n * runs
        T[row + S_STEPS] += runs
        coalesced_runs(T, M, R, row, first, n * nb, step, runs, kind)
        return True
    banks, w, shift = T[C_BANKS], T[C_BANK_WIDTH], T[C_SHIFTS + 2]
    if not is_global and (banks <= 0 or (step % w == 0 and unit(highest + nb - 1, w, shift)
                                         - unit(lowest, w, shift) < banks)):
        T[row + S_EXECS] += n * runs
        T[row + S_STEPS] += runs
        return True
    return False


@inline
def _stage_step(T, x):
    """The step in bytes of the descriptor staged at ``T[x:x + 3]`` (0 for a single run)."""
    return T[x] - T[x + 1] if T[x + 2] > 1 else 0


@_once
def _staged_slot(T, M, R, s):
    """Count slot ``s``'s staged descriptors where they lie (layout.py ``STAGE``), without
    moving them into the lane logs, when that gives what ``unstage`` and ``_loop_slot``
    would: no lane logged a descriptor of it before in this pass, and in every sub-group
    the lanes ran equally many runs, equally far apart. Returns False, counting nothing,
    otherwise. Consecutive lanes' descriptors lie side by side here, where the logs hold
    them a cache line apart: the usual ``range(lid, n, wg)`` loop is counted reading a few
    lines per sub-group."""
    simd, nl = T[C_SIMD], T[C_NL]
    cs, x0 = T[C_CNT0] + s * nl, T[C_STAGE0] + 3 * s * nl
    for lane in range(nl):
        if T[cs + lane] != 0:
            return False
    for q in range(T[C_NSG]):
        lo, hi = q * simd, min(q * simd + simd, nl)
        runs, step = T[x0 + 3 * lo + 2], _stage_step(T, x0 + 3 * lo)
        for lane in range(lo + 1, hi):
            if T[x0 + 3 * lane + 2] != runs or _stage_step(T, x0 + 3 * lane) != step:
                return False
    row = S0 + s * S_COLS
    nb, kind = T[row + S_NBYTES], T[row + S_KIND]
    is_global = T[row + S_SPACE] == SPACE_GLOBAL
    T[row + S_AFFINE] = 1
    for q in range(T[C_NSG]):
        lo, hi = q * simd, min(q * simd + simd, nl)
        runs, step = T[x0 + 3 * lo + 2], _stage_step(T, x0 + 3 * lo)
        if runs > 0:  # the first address: the last run's, less the runs before it
            _lanes_loop(T, M, R, row, T, x0, 3, -step * (runs - 1), lo, hi, step, runs, nb,
                        kind, is_global)
    for lane in range(nl):
        T[x0 + 3 * lane + 2] = 0
    return True


@_once
def _strided_slot(T, M, R, s):
    """Count slot ``s``'s strided loop (layout.py ``STRIDED``) with the steps its lanes'
    descriptors would give staged one by one: ``_staged_slot``'s when in every sub-group
    the lanes ran equally many runs, else ``unstage`` and ``_loop_slot``'s, a sub-group of
    equal runs (``_descriptor``) or of lanes one run apart (``_walk``). A lane's runs fall
    with its id, so a sub-group's first and last lane tell."""
    x = T[C_STRIDED0] + STRIDED_COLS * s
    first, lane_b, step = T[x + T_FIRST], T[x + T_LANE], T[x + T_STEP]
    span, stride, lanes = T[x + T_SPAN], T[x + T_STRIDE], T[x + T_LANES]
    simd, nl, x0 = T[C_SIMD], T[C_NL], T[C_X0]
    row = S0 + s * S_COLS
    nb, kind = T[row + S_NBYTES], T[row + S_KIND]
    is_global = T[row + S_SPACE] == SPACE_GLOBAL
    T[row + S_AFFINE] = 1
    for q in range(T[C_NSG]):
        lo, hi = q * simd, min(q * simd + simd, nl)
        most, least = _strided_runs(lo, span, stride, lanes), _strided_runs(
            hi - 1, span, stride, lanes)
        if most == least:
            if most > 0:
                _strided_lanes(T, M, R, row, first, lane_b, lo, hi, step if most > 1 else 0,
                               most, nb, kind, is_global)
            continue
        for k in range(most):  # step k: the lanes that ran k + 1 runs or more
            n = 0
            for lane in range(lo, hi):
                if _strided_runs(lane, span, stride, lanes) > k:
                    T[x0 + n] = first + lane_b * lane + step * k
                    n += 1
            gathered(T, M, R, row, x0, n, nb, kind, is_global)


@_once
def _grid_slot(T, M, R, s):
    """Count slot ``s``'s loop run alike by every lane of a proven 2-D region (layout.py
    ``G_*``) as ``_staged_slot`` counts the descriptors the lanes would have staged one by
    one: per sub-group, its lanes' first addresses (written to the slot's staging rows,
    which nothing staged in this pass) and their equal runs and step (``_lanes_loop``).
    A local loop's counts are kept (``G_MEMO``) and added again when its next pass runs it
    alike (a tiled matmul's inner loop, every tile: a sixth of its traffic run)."""
    x = T[C_STRIDED0] + STRIDED_COLS * s
    origin, along_x, along_y = T[x + G_ORIGIN], T[x + G_X], T[x + G_Y]
    step, trips, lanes_per_row = T[x + G_STEP], T[x + G_TRIPS], T[x + G_ROW]
    simd, nl = T[C_SIMD], T[C_NL]
    stage = T[C_STAGE0] + 3 * s * nl
    row = S0 + s * S_COLS
    nb, kind = T[row + S_NBYTES], T[row + S_KIND]
    is_global = T[row + S_SPACE] == SPACE_GLOBAL
    T[row + S_AFFINE] = 1
    if trips <= 0:
        return
    memo = x + G_MEMO
    if not is_global:  # a local loop's counts depend on its columns alone
        same = T[memo + G_TRIPS] == trips + 1
        for c in (G_ORIGIN, G_X, G_Y, G_STEP, G_ROW):
            same = same and T[memo + c] == T[x + c]
        if same:
            T[row + S_EXECS] += T[memo + G_EXECS]
            T[row + S_STEPS] += T[memo + G_STEPS]
            T[row + S_REPLAYS] += T[memo + G_REPLAYS]
            return
        execs, steps, replays = T[row + S_EXECS], T[row + S_STEPS], T[row + S_REPLAYS]
    for q in range(T[C_NSG]):
        lo, hi = q * simd, min(q * simd + simd, nl)
        # The lanes' positions in their rows stepped along, not divided out per lane.
        lx, v = lo % lanes_per_row, origin + along_x * (lo % lanes_per_row) + along_y * (
            lo // lanes_per_row)
        for lane in range(lo, hi):
            T[stage + 3 * lane] = v
            lx += 1
            v += along_x
            if lx == lanes_per_row:
                lx = 0
                v += along_y - along_x * lanes_per_row
        _lanes_loop(T, M, R, row, T, stage, 3, 0, lo, hi, step, trips, nb, kind, is_global)
    if not is_global:
        for c in (G_ORIGIN, G_X, G_Y, G_STEP, G_ROW):
            T[memo + c] = T[x + c]
        T[memo + G_TRIPS] = trips + 1
        T[memo + G_EXECS] = T[row + S_EXECS] - execs
        T[memo + G_STEPS] = T[row + S_STEPS] - steps
        T[memo + G_REPLAYS] = T[row + S_REPLAYS] - replays


@inline
def _strided_runs(lane, span, stride, lanes):
    """The runs of ``lane`` in a strided loop (layout.py ``STRIDED``)."""
    return 0 if lane >= lanes else max((span - lane + stride - 1) // stride, 0)


@inline
def _strided_lanes(T, M, R, row, first, lane_b, lo, hi, step, runs, nb, kind, is_global):
    """``_lanes_loop`` of lanes ``lo..hi - 1`` whose first addresses are
    ``first + lane_b * lane``: its closed forms (``_closed_lanes``) decided from ``lane_b``,
    else the addresses written where ``_walk`` keeps its cursors (free here). Writing them
    was a tenth of softmax's step counting: the possibly negative index made LLVM scatter
    them."""
    n = hi - lo
    a, z = first + lane_b * lo, first + lane_b * (hi - 1)
    if _closed_lanes(T, M, R, row, a, min(a, z), max(a, z), lane_b == nb or n == 1, n, step,
                     runs, nb, kind, is_global):
        return
    xc = T[C_CNT0] - 2 * T[C_SIMD]
    for lane in range(lo, hi):
        T[xc + lane - lo] = first + lane_b * lane
    _lanes_loop(T, M, R, row, T, xc - lo, 1, 0, lo, hi, step, runs, nb, kind, is_global)


@_once
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
            gathered(T, M, R, row, x0, n, nb, kind, is_global)


# The C entry point: arrays travel as (pointer, length) pairs; ``g >= 0`` starts group g,
# ``g == -1`` ends a pass, ``g <= -2`` moves the staged descriptor ``-2 - g`` (slot * lanes +
# lane) into its log: a lane that runs a loop again before the pass ends.
_I64P = types.CPointer(types.int64)
_SIGNATURE = types.void(_I64P, types.int64, _I64P, types.int64, _I64P, types.int64,
                        types.CPointer(types.uint8), types.int64, types.int64)


@numba.cfunc(_SIGNATURE, cache=True, error_model="numpy", nogil=True)
def native(tp, tn, lp, ln, rp, rn, mp, mn, g):
    T = numba.carray(tp, (tn,))
    L = numba.carray(lp, (ln,))
    R = numba.carray(rp, (rn,))
    M = numba.carray(mp, (mn,))
    if g >= -1:  # a group's start counts what an early return left pending
        end(T, L, R, M)
    else:
        unstage(T, L, -2 - g)
    if g >= 0:  # and marks the group's start on the sector stream
        T[C_SP] = 0
        n = T[C_R_LEN]
        if n < T[C_R_CAP]:
            R[n] = -(g + 1)
            T[C_R_LEN] = n + 1


@intrinsic
def _call_address(typingctx, address, T, L, R, M, g):
    """Call the C function at ``address`` (``native``'s signature) on the arrays' data and
    sizes. An address is an int64 to the dispatcher: a cfunc object as the launcher's
    argument cost 11 us of typing per call (a parallel launch makes dozens)."""
    sig = types.void(address, T, L, R, M, g)

    def codegen(context, builder, signature, args):
        address_v, *arrays, g_v = args
        params = []
        for ty, value in zip(signature.args[1:5], arrays, strict=True):
            array = cgutils.create_struct_proxy(ty)(context, builder, value=value)
            params += [array.data, array.nitems]
        fnty = ir.FunctionType(ir.VoidType(), [p.type for p in params] + [g_v.type])
        builder.call(builder.inttoptr(address_v, fnty.as_pointer()), [*params, g_v])
        return context.get_dummy_value()

    return sig, codegen


@jit
def call(fn, T, L, R, M, g):
    """Call ``native`` (its address passed in as ``fn``, ``address()``) on the arrays:
    ``group`` when ``g >= 0``, ``end`` when ``g == -1``, else ``unstage``. Small, so it
    costs nothing to link into the kernel's functions."""
    _call_address(fn, T, L, R, M, g)


def address() -> np.int64:
    """``native``'s address, the launch's argument for ``call``."""
    return np.int64(native.address)
