"""The per-step rules of the step counter: sectors, lines, bank replays, stream, footprint.

``clsim.traffic.steps`` walks the lane logs after each pass of a work-item loop and hands
each sub-group step to these functions: one coalesced run of sectors (``coalesced``), a
scattered global step (sorted and merged as ``counting.count_sectors`` does), a local step's
bank replays (as ``counting.bank_replays``), the runs past the log's capacity
(``lost_runs``); each global step's sectors go on the thread's sector stream for the cache
model and its elements are flagged in the footprint. Each is compiled once per machine and
linked into the step counter, where LLVM inlines it.

Importing this module imports Numba.
"""

from __future__ import annotations

import numba
import numpy as np

from clsim.runtime.plain_calls import plain_calls
from clsim.traffic.layout import (
    B_COLS,
    B_FLAGGED,
    B_READ,
    B_WRITTEN,
    BUFFER_SHIFT,
    C_B0,
    C_BANK_WIDTH,
    C_BANKS,
    C_LINE,
    C_M_WRITE,
    C_R_CAP,
    C_R_LEN,
    C_R_LOST,
    C_SECTOR,
    C_SHIFTS,
    C_SIMD,
    C_X0,
    R_ATOMIC,
    R_MAX_RUN,
    R_SHIFT,
    R_STORE,
    S_EXECS,
    S_ISZ,
    S_ISZ_SHIFT,
    S_LINES,
    S_OVERFLOW,
    S_REPLAYS,
    S_SECTORS,
    S_SPACE,
    S_STEPS,
    SPACE_GLOBAL,
)

_njit = numba.njit(cache=True, error_model="numpy", nogil=True)


def jit(function):
    """Compiled once per machine; a call passing constants compiles it for their plain types
    (``clsim.runtime.plain_calls``), not once more per constant and with it all it calls."""
    return plain_calls(_njit(function))


# Left to LLVM to inline: Numba's own inline="always" typed every helper again at each call
# site, and the step counter's once-per-machine compile took 56 s instead of 19 s (warm
# traffic runs measured the same either way: softmax 2.90x, GEMV 4.38-4.59x the default run).
# Rules with a single call site are inlined by Numba all the same (``steps._once``).
inline = jit
_SMALL_SORT = 64  # insertion sort up to this many entries, heapsort beyond


@inline
def unit(addr, size, shift):
    """The unit of ``size`` bytes (a power of two when ``shift >= 0``) holding byte ``addr``."""
    if shift >= 0:
        return addr >> shift
    return addr // size


@inline
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


@inline
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


@inline
def _flag(M, first, count):
    """``_mark`` of a scattered lane's elements: one element (the usual case) is flagged
    without setting up ``_mark``'s loops, which took a fifth of a GEMV's scattered steps
    (6.9 -> 5.8-6.1 ns per lane). A ``return`` inside ``_mark`` for it made them slower."""
    if count == 1:
        u = np.uint64(first)
        if M[u] == 0:
            M[u] = 1
    else:
        _mark(M, first, count)


@inline
def _footprint(T, M, lo, hi, row, kind):
    """Flag the elements holding bytes [lo, hi] of one buffer (``lo`` carries its index) as
    read (loads), written (stores) or both (atomics); indices outside the buffer are clamped,
    as a bad index (checks off) must not flag another buffer's elements."""
    p = (lo + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT
    base = p << BUFFER_SHIFT
    b = T[C_B0] + p * B_COLS
    if p < 0 or b >= T[C_X0]:
        return
    size = T[b + 2]
    isz, shift = T[row + S_ISZ], T[row + S_ISZ_SHIFT]  # a shift, not a division, per step
    e0 = min(max(unit(lo - base, isz, shift), 0), size - 1)
    e1 = min(max(unit(hi - base, isz, shift), 0), size - 1)
    T[b + B_FLAGGED] |= _flagged(kind)
    if kind != R_STORE:  # loads and atomics read
        _mark(M, T[b] + e0, e1 - e0 + 1)
    if kind == R_STORE or kind == R_ATOMIC:
        _mark(M, T[C_M_WRITE] + T[b] + e0, e1 - e0 + 1)


@inline
def _flagged(kind):
    """The ``B_FLAGGED`` bits of a step of ``kind``: what ``_footprint`` flags."""
    return (B_READ if kind != R_STORE else 0) | (
        B_WRITTEN if kind == R_STORE or kind == R_ATOMIC else 0)


@jit
def _sort(A, first, n):
    """Sort ``A[first:first + n]`` in place (steps are a sub-group: usually 32 entries):
    insertion sort when short, else heapsort. Not ``np.sort``: its quicksort and the slice
    assignment's shape-error messages were a third of the step counter's once-per-machine
    compile, linked and optimised again into every caller."""
    if n > _SMALL_SORT:
        for top in range(n // 2 - 1, -1, -1):
            _sift(A, first, top, n)
        for last in range(n - 1, 0, -1):
            A[first], A[first + last] = A[first + last], A[first]
            _sift(A, first, 0, last)
        return
    for i in range(first + 1, first + n):
        v = A[i]
        j = i - 1
        while j >= first and A[j] > v:
            A[j + 1] = A[j]
            j -= 1
        A[j + 1] = v


@inline
def _sift(A, first, top, n):
    """Move heap entry ``top`` (of ``A[first:first + n]``, a max-heap below it) down."""
    v = A[first + top]
    while 2 * top + 1 < n:
        child = 2 * top + 1
        if child + 1 < n and A[first + child + 1] > A[first + child]:
            child += 1
        if A[first + child] <= v:
            break
        A[first + top] = A[first + child]
        top = child
    A[first + top] = v


@inline
def coalesced(T, M, R, row, first, last, kind):
    """A global step covering bytes [first, last] without a gap: one run of sectors."""
    ss, sb = T[C_SHIFTS], T[C_SECTOR]
    s0 = unit(first, sb, ss)
    count = unit(last, sb, ss) - s0 + 1
    T[row + S_SECTORS] += count
    T[row + S_LINES] += (unit(last, T[C_LINE], T[C_SHIFTS + 1])
                         - unit(first, T[C_LINE], T[C_SHIFTS + 1]) + 1)
    r = T[C_R_LEN]
    if count <= R_MAX_RUN and r < T[C_R_CAP]:
        R[r] = (s0 << R_SHIFT) | (count << 2) | kind
        T[C_R_LEN] = r + 1
    else:
        _emit(T, R, s0, count, kind)
    _footprint(T, M, first, last, row, kind)


@inline
def coalesced_runs(T, M, R, row, first, length, step, runs, kind):
    """``coalesced`` of ``runs`` steps in order, step j covering ``length`` bytes from
    ``first + step * j`` (a sub-group of consecutive lanes through a strided loop). The
    counters, the stream's length and the buffer's footprint figures stay in locals (see
    ``merged``): a GEMV's loop is 64 such steps per sub-group. The footprint's lookup is
    ``merged``'s written out again: in shared helpers the GEMV's traffic run was 9% slower."""
    ss, ls = T[C_SHIFTS], T[C_SHIFTS + 1]
    sb, lb = T[C_SECTOR], T[C_LINE]
    r, r_cap, lost = T[C_R_LEN], T[C_R_CAP], 0
    b0, x0, m_write = T[C_B0], T[C_X0], T[C_M_WRITE]
    isz, shift = T[row + S_ISZ], T[row + S_ISZ_SHIFT]
    p, base, flags, size = np.int64(-1), np.int64(0), np.int64(-1), np.int64(0)
    sectors, lines = 0, 0
    for j in range(runs):
        a = first + step * j
        last = a + length - 1
        s0 = unit(a, sb, ss)
        count = unit(last, sb, ss) - s0 + 1
        sectors += count
        lines += unit(last, lb, ls) - unit(a, lb, ls) + 1
        r, lost = _emit_at(R, r, r_cap, lost, s0, count, kind)
        q = (a + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT  # _footprint's flags
        if q != p:
            p, base = q, q << BUFFER_SHIFT
            b = b0 + q * B_COLS
            flags, size = (T[b], T[b + 2]) if q >= 0 and b < x0 else (-1, 0)
            if flags >= 0:
                T[b + B_FLAGGED] |= _flagged(kind)
        if flags >= 0:
            e0 = min(max(unit(a - base, isz, shift), 0), size - 1)
            e1 = min(max(unit(last - base, isz, shift), 0), size - 1)
            if kind != R_STORE:  # loads and atomics read
                _mark(M, flags + e0, e1 - e0 + 1)
            if kind == R_STORE or kind == R_ATOMIC:
                _mark(M, m_write + flags + e0, e1 - e0 + 1)
    T[C_R_LEN] = r
    T[C_R_LOST] += lost
    T[row + S_SECTORS] += sectors
    T[row + S_LINES] += lines


@inline
def _global_step(T, M, R, row, A, first, n, nb, kind):
    """Sectors and lines of one global step whose lanes are not consecutive
    (``A[first:first + n]``, the lanes' addresses), its sectors on the stream and its
    footprint: ``merged`` in ascending order, sorted in the scratch area unless they
    already are."""
    descents = 0
    for i in range(first + 1, first + n):  # no early exit: the loop vectorises
        descents += A[i] < A[i - 1]
    if descents:
        x0 = T[C_X0] + T[C_SIMD]  # after the gathered lanes
        for i in range(n):
            T[x0 + i] = A[first + i]
        _sort(T, x0, n)
        A, first = T, x0
    merged(T, M, R, row, A, first, 1, n, nb, kind)


@inline
def merged(T, M, R, row, A, first, step, n, nb, kind):
    """Sectors and lines of one global step of ``n`` lanes whose addresses
    ``A[first]``, ``A[first + step]``, ... ascend: merged as ``counting.count_sectors``
    does, the runs of sectors on the stream, the elements flagged in the footprint. The
    stream's length and the buffer's footprint figures are kept in locals: LLVM cannot tell
    ``T`` from ``R`` and ``M``, so it reloads every ``T`` field after each store to them (a
    GEMV's x steps store once per lane)."""
    ss, ls = T[C_SHIFTS], T[C_SHIFTS + 1]
    sb, lb = T[C_SECTOR], T[C_LINE]
    r, r_cap, lost = T[C_R_LEN], T[C_R_CAP], 0
    b0, x0, m_write = T[C_B0], T[C_X0], T[C_M_WRITE]
    isz, shift = T[row + S_ISZ], T[row + S_ISZ_SHIFT]
    p, base, flags, size = np.int64(-1), np.int64(0), np.int64(-1), np.int64(0)
    run0, run_end, prev_line = np.int64(-1), np.int64(-2), np.int64(-1)
    sectors, lines, prev = 0, 0, np.int64(0)
    for j in range(n):
        a = A[np.uint64(first + j * step)]  # unsigned: see lane_gaps
        if j == 0 or a != prev:  # _footprint's flags, the buffer's figures kept
            q = (a + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT
            if q != p:
                p, base = q, q << BUFFER_SHIFT
                b = b0 + q * B_COLS
                flags, size = (T[b], T[b + 2]) if q >= 0 and b < x0 else (-1, 0)
                if flags >= 0:
                    T[b + B_FLAGGED] |= _flagged(kind)
            if flags >= 0:
                e0 = min(max(unit(a - base, isz, shift), 0), size - 1)
                e1 = min(max(unit(a + nb - 1 - base, isz, shift), 0), size - 1)
                if kind != R_STORE:  # loads and atomics read
                    _flag(M, flags + e0, e1 - e0 + 1)
                if kind == R_STORE or kind == R_ATOMIC:
                    _flag(M, m_write + flags + e0, e1 - e0 + 1)
        prev = a
        fs, es = unit(a, sb, ss), unit(a + nb - 1, sb, ss)
        fl, el = unit(a, lb, ls), unit(a + nb - 1, lb, ls)
        if el > prev_line:
            lines += el - max(fl, prev_line + 1) + 1
            prev_line = el
        if es <= run_end:
            continue
        if fs > run_end + 1:  # a gap: the run so far is complete
            if run0 >= 0:
                r, lost = _emit_at(R, r, r_cap, lost, run0, run_end - run0 + 1, kind)
            run0 = fs
        sectors += es - max(fs, run_end + 1) + 1
        run_end = es
    if run0 >= 0:
        r, lost = _emit_at(R, r, r_cap, lost, run0, run_end - run0 + 1, kind)
    T[C_R_LEN] = r
    T[C_R_LOST] += lost
    T[row + S_SECTORS] += sectors
    T[row + S_LINES] += lines


@inline
def _emit_at(R, r, r_cap, lost, sector, count, kind):
    """``_emit`` with the stream's length ``r`` and the lost sectors in the caller's locals:
    returns them updated."""
    while count > 0:
        run = min(count, R_MAX_RUN)
        if r < r_cap:
            R[np.uint64(r)] = (sector << R_SHIFT) | (run << 2) | kind
            r += 1
        else:
            lost += run
        sector += run
        count -= run
    return r, lost


@inline
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
    if unit(hi + nb - 1, w, shift) - unit(lo, w, shift) < banks:
        return
    x0 = T[C_X0] + T[C_SIMD]  # after the gathered lanes
    m = 0
    for i in range(first, first + n):
        for word in range(unit(A[i], w, shift), unit(A[i] + nb - 1, w, shift) + 1):
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


@inline
def lost_runs(T, row, lost, nb):
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


@inline
def lane_gaps(L, first, n, spacing):
    """How many of the n lanes whose addresses are ``L[first]``, ``L[first + 8]``, ... are not
    where lanes ``spacing`` bytes apart would be (0: equally spaced; consecutive when the
    spacing is the access's width). Unsigned indices: Numba adds a negative-index fix-up to
    every signed one, which doubled the cost of this, the hottest loop here."""
    gaps = 0
    u = np.uint64(first)
    a0 = L[u]
    for i in range(n):  # against lane 0's address: one load per lane, whole vectors
        gaps += L[u + (np.uint64(i) << np.uint64(3))] != a0 + i * spacing
    return gaps


@inline
def lane_span(L, first, n):
    """The lowest and highest of ``L[first]``, ``L[first + 8]``, ... (n lanes)."""
    u = np.uint64(first)
    lo, hi = L[u], L[u]
    for i in range(np.uint64(1), np.uint64(n)):
        v = L[u + (i << np.uint64(3))]
        lo, hi = min(lo, v), max(hi, v)
    return lo, hi


@inline
def gathered(T, M, R, row, x0, n, nb, kind, is_global):
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
        coalesced(T, M, R, row, T[x0], T[x0 + n - 1] + nb - 1, kind)
    else:
        _global_step(T, M, R, row, T, x0, n, nb, kind)
