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
    B_READ_BLOCKS,
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
    FOOTPRINT_BLOCK,
    FOOTPRINT_BLOCK_SHIFT,
    R_ATOMIC,
    R_COUNT_SHIFT,
    R_MAX_RUN,
    R_MAX_RUNS,
    R_MAX_STEP,
    R_RUNS_SHIFT,
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
def _mark_range(M, blocks, first, count):
    """Flag the elements whose flags are ``M[first:first + count]``: the whole blocks among
    them by their block flags (``M[blocks + first // FOOTPRINT_BLOCK]``, layout.py), the rest
    one by one. A GEMV's sub-group step is two block flags, not 32 element flags (its
    matrix 1 MB of flags a launch to set, count and clear, not 16 MB). Returns the
    ``B_FLAGGED`` bits of a read of what it set (a write's are these shifted by one)."""
    end = first + count
    lo, hi = (first + FOOTPRINT_BLOCK - 1) >> FOOTPRINT_BLOCK_SHIFT, end >> FOOTPRINT_BLOCK_SHIFT
    if hi <= lo:  # no whole block
        _mark(M, first, count)
        return B_READ
    _mark(M, blocks + lo, hi - lo)
    head, tail = (lo << FOOTPRINT_BLOCK_SHIFT) - first, end - (hi << FOOTPRINT_BLOCK_SHIFT)
    if head == 0 and tail == 0:
        return B_READ_BLOCKS
    _mark(M, first, head)
    _mark(M, hi << FOOTPRINT_BLOCK_SHIFT, tail)
    return B_READ | B_READ_BLOCKS


@inline
def _mark_strided(M, first, count, step, runs):
    """Set the flags ``M[first + step * j:][:count]`` for j below ``runs`` (a GEMV's sub-group
    through its loop: two block flags a step), each read first (see ``_mark``). Written
    out, not ``_mark`` per run: LLVM made its store loop a call of ``memset``."""
    u, v = np.uint64(first), np.uint64(step)
    for j in range(np.uint64(runs)):
        for i in range(np.uint64(count)):
            k = u + v * j + i
            if M[k] == 0:
                M[k] = 1


@inline
def _flag(M, blocks, first, count):
    """``_mark_range`` of a scattered lane's elements: one element (the usual case) is
    flagged without setting up ``_mark``'s loops, which took a fifth of a GEMV's scattered
    steps (6.9 -> 5.8-6.1 ns per lane). A ``return`` inside ``_mark`` for it made them
    slower."""
    if count == 1:
        u = np.uint64(first)
        if M[u] == 0:
            M[u] = 1
        return B_READ
    return _mark_range(M, blocks, first, count)


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
    m_write = T[C_M_WRITE]
    used = 0
    if kind != R_STORE:  # loads and atomics read
        used |= _mark_range(M, 2 * m_write, T[b] + e0, e1 - e0 + 1)
    if kind == R_STORE or kind == R_ATOMIC:
        used |= _mark_range(M, 2 * m_write, m_write + T[b] + e0, e1 - e0 + 1) << 1
    T[b + B_FLAGGED] |= used


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
    ``merged``'s written out again: in shared helpers the GEMV's traffic run was 9% slower.
    Steps a whole number of lines apart within one buffer are counted in closed form
    (``_line_strided_runs``)."""
    if _line_strided_runs(T, M, R, row, first, length, step, runs, kind):
        return
    ss, ls = T[C_SHIFTS], T[C_SHIFTS + 1]
    sb, lb = T[C_SECTOR], T[C_LINE]
    r, r_cap, lost = T[C_R_LEN], T[C_R_CAP], 0
    b0, x0, m_write = T[C_B0], T[C_X0], T[C_M_WRITE]
    isz, shift = T[row + S_ISZ], T[row + S_ISZ_SHIFT]
    p, base, flags, size = np.int64(-1), np.int64(0), np.int64(-1), np.int64(0)
    b, used = np.int64(0), np.int64(0)  # the buffer's row, the flags set there (B_FLAGGED)
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
            if used:
                T[b + B_FLAGGED] |= used
            p, base, used = q, q << BUFFER_SHIFT, 0
            b = b0 + q * B_COLS
            flags, size = (T[b], T[b + 2]) if q >= 0 and b < x0 else (-1, 0)
        if flags >= 0:
            e0 = min(max(unit(a - base, isz, shift), 0), size - 1)
            e1 = min(max(unit(last - base, isz, shift), 0), size - 1)
            if kind != R_STORE:  # loads and atomics read
                used |= _mark_range(M, 2 * m_write, flags + e0, e1 - e0 + 1)
            if kind == R_STORE or kind == R_ATOMIC:
                used |= _mark_range(M, 2 * m_write, m_write + flags + e0, e1 - e0 + 1) << 1
    if used:
        T[b + B_FLAGGED] |= used
    T[C_R_LEN] = r
    T[C_R_LOST] += lost
    T[row + S_SECTORS] += sectors
    T[row + S_LINES] += lines


@inline
def _one_buffer(T, lowest, highest, isz_shift):
    """(the kernel argument's row, its buffer's base address) of the buffer holding bytes
    [lowest, highest] whole and within its elements (``isz_shift``: log2 of the element
    size); (-1, 0) when they reach past it or lie in no argument's buffer. The closed forms
    need it: the general rules clamp such indices element by element."""
    q = (lowest + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT
    b = T[C_B0] + q * B_COLS
    if q < 0 or b >= T[C_X0] or q != (highest + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT:
        return np.int64(-1), np.int64(0)
    base = q << BUFFER_SHIFT
    if lowest < base or (highest - base) >> isz_shift >= T[b + 2]:
        return np.int64(-1), np.int64(0)
    return b, base


@inline
def _line_strided_runs(T, M, R, row, first, length, step, runs, kind):
    """``coalesced_runs`` when its steps lie a whole number of lines apart (so each covers
    as many sectors and lines as the first), in one buffer, within its elements (no
    clamping), each one stream entry with room for all: the counts multiplied out, the
    entries written in a loop of their own, the elements' flags one range when the steps
    leave no gap between them; the stream gets one repeated entry (layout.py ``R``). True
    when it counted them, else nothing is counted. The general loop's lookups and clamps
    per step were half of a GEMV's step counting."""
    ss, ls, isz_shift = T[C_SHIFTS], T[C_SHIFTS + 1], T[row + S_ISZ_SHIFT]
    if runs < 2 or ss < 0 or ls < 0 or isz_shift < 0 or step & (T[C_LINE] - 1) != 0 or (
            step & ((1 << isz_shift) - 1) != 0):  # an element wider than a line
        return False
    s0 = first >> ss
    count = ((first + length - 1) >> ss) - s0 + 1
    r = T[C_R_LEN]
    if count > R_MAX_RUN or r + runs > T[C_R_CAP]:
        return False
    lowest, highest = min(first, first + step * (runs - 1)), max(first, first + step * (
        runs - 1)) + length - 1
    b, base = _one_buffer(T, lowest, highest, isz_shift)
    if b < 0:
        return False
    flags = T[b]
    e0, e_last = (lowest - base) >> isz_shift, (highest - base) >> isz_shift
    T[row + S_SECTORS] += count * runs
    T[row + S_LINES] += (((first + length - 1) >> ls) - (first >> ls) + 1) * runs
    sector_step = step >> ss
    if 0 <= sector_step <= R_MAX_STEP and runs <= R_MAX_RUNS:  # one repeated entry
        R[np.uint64(r)] = (s0 << R_SHIFT) | kind
        R[np.uint64(r + 1)] = (runs << R_RUNS_SHIFT) | (count << R_COUNT_SHIFT) | sector_step
        T[C_R_LEN] = r + 2
    else:
        entry = (s0 << R_SHIFT) | (count << 2) | kind
        for j in range(runs):
            R[np.uint64(r + j)] = entry + ((sector_step * j) << R_SHIFT)
        T[C_R_LEN] = r + runs
    m_write, used = T[C_M_WRITE], 0
    n = ((first + length - 1 - base) >> isz_shift) - ((first - base) >> isz_shift) + 1
    e_step = abs(step) >> isz_shift
    for write in range(2):  # loads and atomics read, stores and atomics write
        if (kind != R_STORE) if write == 0 else (kind == R_STORE or kind == R_ATOMIC):
            at = flags + e0 + write * m_write
            if e_step <= n:  # no gaps: one range
                used |= _mark_range(M, 2 * m_write, at, e_last - e0 + 1) << write
            elif (at | n | e_step) & (FOOTPRINT_BLOCK - 1) == 0:  # whole blocks each
                _mark_strided(M, 2 * m_write + (at >> FOOTPRINT_BLOCK_SHIFT),
                              n >> FOOTPRINT_BLOCK_SHIFT, e_step >> FOOTPRINT_BLOCK_SHIFT, runs)
                used |= B_READ_BLOCKS << write
            else:
                for j in range(runs):
                    used |= _mark_range(M, 2 * m_write, at + e_step * j, n) << write
    T[b + B_FLAGGED] |= used
    return True


@inline
def spaced_runs(T, M, R, row, first, n, spacing, step, runs, nb, kind):
    """``runs`` global steps of ``n`` lanes ``spacing`` bytes apart, lane i of step j at
    ``first + step * j + spacing * i``, when each lane's access lies in a sector and a line
    of its own, no two sectors adjacent (so ``merged`` would give each lane a run of one
    sector), all in one buffer within its elements, with room on the stream: each step one
    repeated entry (layout.py ``R``), its lanes' flags set in one strided loop. True when
    it counted them, else nothing is counted. A Q4_0 GEMV's lanes read x a block (128
    bytes) apart: merged lane by lane, those steps were a quarter of its traffic run."""
    ss, sb, isz_shift = T[C_SHIFTS], T[C_SECTOR], T[row + S_ISZ_SHIFT]
    if n < 2 or runs < 1 or ss < 0 or isz_shift < 0 or nb > sb or nb & (nb - 1) != 0:
        return False
    if spacing < T[C_LINE] or spacing < 2 * sb or (first | step | spacing) & (nb - 1) != 0:
        return False  # (aligned to its width, an access stays within its sector)
    lane_step = spacing >> ss
    r = T[C_R_LEN]
    if spacing & (sb - 1) != 0 or lane_step > R_MAX_STEP or n > R_MAX_RUNS or (
            r + 2 * runs > T[C_R_CAP]):
        return False
    lowest = first + min(0, step * (runs - 1))
    highest = first + max(0, step * (runs - 1)) + spacing * (n - 1) + nb - 1
    b, base = _one_buffer(T, lowest, highest, isz_shift)
    if b < 0:
        return False
    flags = T[b]
    T[row + S_EXECS] += n * runs
    T[row + S_STEPS] += runs
    T[row + S_SECTORS] += n * runs
    T[row + S_LINES] += n * runs
    more = (n << R_RUNS_SHIFT) | (1 << R_COUNT_SHIFT) | lane_step
    m_write, used = T[C_M_WRITE], 0
    elements, e_spacing = nb >> isz_shift, spacing >> isz_shift
    for j in range(runs):
        a = first + step * j
        R[np.uint64(r + 2 * j)] = ((a >> ss) << R_SHIFT) | kind
        R[np.uint64(r + 2 * j + 1)] = more
        e = flags + ((a - base) >> isz_shift)
        if kind != R_STORE:  # loads and atomics read
            _mark_strided(M, e, elements, e_spacing, n)
            used |= B_READ
        if kind == R_STORE or kind == R_ATOMIC:
            _mark_strided(M, m_write + e, elements, e_spacing, n)
            used |= B_READ << 1
    T[C_R_LEN] = r + 2 * runs
    T[b + B_FLAGGED] |= used
    return True


@inline
def near_lanes(T, M, R, row, first, n, spacing, nb, kind):
    """One global step of ``n`` lanes ``spacing`` bytes apart from ``first``, each reading or
    writing ``nb`` bytes, whole elements, with gaps between them shorter than a sector
    (``nb < spacing <= sector``), all in one buffer within its elements: its sectors and
    lines are one run from the first lane's to the last's, as ``merged`` finds them, one
    stream entry; the lanes' elements flagged in a strided loop. True when it counted them
    (with the step's executions and steps), else nothing is counted. A Q4_0 block's fields
    read by consecutive blocks (18 bytes apart) were merged lane by lane."""
    ss, ls, isz_shift = T[C_SHIFTS], T[C_SHIFTS + 1], T[row + S_ISZ_SHIFT]
    if n < 2 or ss < 0 or ls < 0 or isz_shift < 0 or spacing <= nb or spacing > T[C_SECTOR]:
        return False
    if ((first | spacing | nb) & ((1 << isz_shift) - 1)) != 0:  # whole elements
        return False
    last = first + spacing * (n - 1) + nb - 1
    b, base = _one_buffer(T, first, last, isz_shift)
    if b < 0:
        return False
    flags = T[b]
    T[row + S_EXECS] += n
    T[row + S_STEPS] += 1
    s0 = first >> ss
    count = (last >> ss) - s0 + 1
    T[row + S_SECTORS] += count
    T[row + S_LINES] += (last >> ls) - (first >> ls) + 1
    r, lost = _emit_at(R, T[C_R_LEN], T[C_R_CAP], 0, s0, count, kind)
    T[C_R_LEN] = r
    T[C_R_LOST] += lost
    e, elements, e_spacing = flags + ((first - base) >> isz_shift), nb >> isz_shift, (
        spacing >> isz_shift)
    used = 0
    if kind != R_STORE:  # loads and atomics read
        _mark_strided(M, e, elements, e_spacing, n)
        used |= B_READ
    if kind == R_STORE or kind == R_ATOMIC:
        _mark_strided(M, T[C_M_WRITE] + e, elements, e_spacing, n)
        used |= B_READ << 1
    T[b + B_FLAGGED] |= used
    return True


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
    b, used = np.int64(0), np.int64(0)  # the buffer's row, the flags set there (B_FLAGGED)
    run0, run_end, prev_line = np.int64(-1), np.int64(-2), np.int64(-1)
    sectors, lines, prev = 0, 0, np.int64(0)
    for j in range(n):
        a = A[np.uint64(first + j * step)]  # unsigned: see lane_gaps
        if j == 0 or a != prev:  # _footprint's flags, the buffer's figures kept
            q = (a + (1 << (BUFFER_SHIFT - 1))) >> BUFFER_SHIFT
            if q != p:
                if used:
                    T[b + B_FLAGGED] |= used
                p, base, used = q, q << BUFFER_SHIFT, 0
                b = b0 + q * B_COLS
                flags, size = (T[b], T[b + 2]) if q >= 0 and b < x0 else (-1, 0)
            if flags >= 0:
                e0 = min(max(unit(a - base, isz, shift), 0), size - 1)
                e1 = min(max(unit(a + nb - 1 - base, isz, shift), 0), size - 1)
                if kind != R_STORE:  # loads and atomics read
                    used |= _flag(M, 2 * m_write, flags + e0, e1 - e0 + 1)
                if kind == R_STORE or kind == R_ATOMIC:
                    used |= _flag(M, 2 * m_write, m_write + flags + e0, e1 - e0 + 1) << 1
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
    if used:
        T[b + B_FLAGGED] |= used
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
