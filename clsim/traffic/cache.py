"""The cache model: replays a launch's sector stream through per-unit L1s and a shared L2.

The traffic instrument records, per Numba thread, the sectors each global step touches
(``clsim.traffic.layout``: the stream ``R``). After the launch ``simulate`` puts the groups in
order, assigns group g to compute unit ``g % compute_units`` (round-robin) and replays every
step through that unit's L1 and the device-wide L2 (set-associative, LRU, lines of
``line_bytes`` holding ``line_bytes / sector_bytes`` sectors; a miss fetches only the missing
sectors). Approximations, stated in docs/traffic-model.md: groups run one after another, so
the L2 sees the units' misses in group order, not interleaved in time; loads allocate in L1 and
L2; stores write through the L1 (updating a line already there) and allocate in the L2 without
a fetch (whole sectors written), dirty sectors going to DRAM when evicted or at the end;
atomics are done in the L2 (a fetch on a miss, then dirty; an atomic_load only fetches); the
set index is the line address xor-folded (GPUs hash their L2 sets; plain modulo would make
every buffer collide). Each unit's L1 replays in parallel (units are independent), keeping
only the lookups that ask the L2 something (its misses, stores and atomics); then the L2 over
those, in group order, its sets split into ranges replayed in parallel (sets are independent
too). ``tests/unit/test_traffic_cache_replay.py`` holds a one-lookup-at-a-time reference.

Importing this module imports Numba (the replay is compiled once, cached on disk).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from clsim.traffic.layout import (
    BUFFER_SHIFT,
    R_ATOMIC,
    R_COUNT_SHIFT,
    R_LOAD,
    R_MAX_RUN,
    R_MAX_STEP,
    R_RUNS_SHIFT,
    R_SHIFT,
    R_STORE,
)

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)
_jitp = numba.njit(cache=True, error_model="numpy", nogil=True, parallel=True)
# Inlined by Numba where LLVM would not (loops it unrolls and widens are too big for it):
# called apart, the L1's choice of a victim was 40% of a GEMV's L1 replay, and the L2's
# lookups 6.3 ms of its 5.3 ms now.
_inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")
_AHEAD = 16  # chunks between prefetching an L2 set and looking it up


@intrinsic
def _prefetch(typingctx, array, index):
    """Ask the CPU to start loading ``array[index]`` (a hint: results never depend on it).
    The L2 lookups are cache misses on a set of several megabytes; a lookup's work leaves
    the CPU no room to overlap them by itself."""
    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0")
        address = builder.bitcast(builder.gep(data, [args[1]]), i8p)
        builder.call(fn, [address, i32(1), i32(3), i32(1)])  # write, keep, data
        return context.get_dummy_value()

    return types.void(array, types.int64), codegen


@dataclass(frozen=True)
class CacheConfig:
    """Sizes the replay needs, from a ``DeviceProfile`` (``from_profile``)."""

    compute_units: int
    l1_bytes: int
    l1_ways: int
    l2_bytes: int
    l2_ways: int
    sector_bytes: int
    line_bytes: int

    @classmethod
    def from_profile(cls, profile) -> CacheConfig | None:
        if not profile.has_caches or not _powers_of_two(profile.sector_bytes,
                                                          profile.line_bytes):
            return None
        if profile.line_bytes // profile.sector_bytes > 32:
            return None
        return cls(profile.compute_units, profile.l1_bytes, profile.l1_ways, profile.l2_bytes,
                   profile.l2_ways, profile.sector_bytes, profile.line_bytes)

    def describe(self) -> str:
        return (f"L1 {self.l1_bytes // 1024:,} KiB {self.l1_ways}-way per unit x "
                f"{self.compute_units}, L2 {self.l2_bytes // 1024:,} KiB {self.l2_ways}-way, "
                f"{self.line_bytes}-byte lines of {self.sector_bytes}-byte sectors")


def _powers_of_two(*values: int) -> bool:
    return all(v > 0 and v & (v - 1) == 0 for v in values)


@dataclass(frozen=True)
class CacheResult:
    """Per buffer (kernel argument index): sectors requested, read from and written to DRAM."""

    requested: np.ndarray
    dram_read: np.ndarray
    dram_write: np.ndarray


@_jitp
def _groups_per_row(RR, lens, out):
    """``out[t + 1]``: how many groups thread t's stream starts (its ``-(group + 1)`` marks)."""
    for t in numba.prange(RR.shape[0]):
        n = 0
        for i in range(lens[t]):
            n += RR[t, i] < 0
        out[t + 1] = n


@_jitp
def _segments(RR, lens, row_start, spl_shift, sector_shift, out, requested):
    """``out[j]``: (group, thread, first entry, end, line chunks) of every group on the
    threads' streams, thread t's from ``row_start[t]`` (rows are independent: one per
    parallel thread); a chunk is a step's sectors within one line, one L1 lookup.
    ``requested[t]``: the sectors thread t's steps ask for, per buffer."""
    for t in numba.prange(RR.shape[0]):
        # Sums in locals, stored when they change: a store per entry to one place makes each
        # entry wait for the last one's.
        j, chunks, buf, sectors = row_start[t] - 1, 0, 0, 0
        row, second = RR[t], False
        for i in range(lens[t]):  # (plain entries first: decoded as repeated ones, 40% slower)
            e = row[i]
            if second:  # a repeated entry's second word
                second = False
            elif e < 0:
                if j >= row_start[t]:
                    out[j, 3], out[j, 4] = i, chunks
                j += 1
                out[j, 0], out[j, 1], out[j, 2], chunks = -e - 1, t, i + 1, 0
            elif j >= row_start[t]:
                sector, count = e >> R_SHIFT, (e >> 2) & R_MAX_RUN
                b = (sector << sector_shift) >> BUFFER_SHIFT
                if b != buf:
                    requested[t, buf] += sectors
                    buf, sectors = b, 0
                if count != 0:
                    chunks += ((sector + count - 1) >> spl_shift) - (sector >> spl_shift) + 1
                    sectors += count
                else:  # a repeated entry (``_entry``), its runs whole lines apart
                    _, count, runs, _, _ = _entry(row, i)
                    chunks += (((sector + count - 1) >> spl_shift) - (sector >> spl_shift)
                               + 1) * runs
                    sectors += count * runs
                    second = True
        if j >= row_start[t]:
            out[j, 3], out[j, 4] = lens[t], chunks
        requested[t, buf] += sectors


@_inline
def _entry(row, i):
    """The stream entry at ``row[i]`` (not a group's start; layout.py ``R``): its first
    sector, sectors per run, runs, sectors from one run to the next and words (a plain
    entry is one run of one word; a repeated entry is two words)."""
    e = row[np.uint64(i)]
    sector, count = e >> R_SHIFT, (e >> 2) & R_MAX_RUN
    if count != 0:
        return sector, count, np.int64(1), np.int64(0), np.int64(1)
    more = row[np.uint64(i + 1)]
    return (sector, (more >> R_COUNT_SHIFT) & R_MAX_RUN, more >> R_RUNS_SHIFT,
            more & R_MAX_STEP, np.int64(2))


@_jit
def _set_of(line, sets):
    """The set of ``line``: the line address xor-folded, modulo a power-of-two set count;
    for other counts a multiplicative hash scaled to the range (no division: a 64-bit
    division per lookup costs more than the rest of the replay)."""
    h = line ^ (line >> 13) ^ (line >> 27)
    if sets & (sets - 1) == 0:
        return h & (sets - 1)
    return ((((h * -7046029254386353131) >> 32) & 0xFFFFFFFF) * sets) >> 32


@_inline
def _find(c, row, ways, key, kshift):
    """The position of the way holding ``key`` among the ``ways`` of the set at ``c[row:]``,
    or -1. Without an early exit: the compares vectorise, and which way hits is random (a
    branch on it mispredicts). Indices are unsigned: Numba fixes up every signed index for
    negative values, which made the replays 1.6x slower."""
    found = np.int64(-1)
    for k in range(np.uint64(0), np.uint64(ways)):
        found = np.int64(k) if c[np.uint64(row) + k] >> kshift == key else found
    return found


@_inline
def _to_front(c, row, p, ways, words):
    """Make way ``p`` of the set at ``c[row:]`` its most recent (position 0), the ways before
    it one on: the L2's sets keep their ways in the order they were last used, so the least
    recent is the last (``_Layout``)."""
    for r in range(words):
        base = row + r * ways
        moved = c[np.uint64(base + p)]
        for k in range(p, 0, -1):
            c[np.uint64(base + k)] = c[np.uint64(base + k - 1)]
        c[np.uint64(base)] = moved


@_inline
def _oldest(c, row, ways, stamps, gshift, generation):
    """The least recently used way of the set at ``c[row:]`` (its stamps ``stamps`` words
    on), a way of an earlier ``generation`` (its key's bits from ``gshift`` on) first.
    Without branches: which is older is random, a branch on it mispredicts."""
    victim, oldest = 0, np.int64(1 << 62)
    for k in range(ways):
        ours = c[np.uint64(row + k)] >> gshift == generation
        s = c[np.uint64(row + stamps + k)] if ours else -1
        victim = k if s < oldest else victim
        oldest = min(s, oldest)
    return victim


@_jit
def _popcount(x):
    n = 0
    while x:
        x &= x - 1
        n += 1
    return n


# A miss entry: (line | buffer << M_BUF | kind << M_KIND, sectors | L2 row << 32). Lines fit
# below M_BUF: a stream entry holds ``sector << R_SHIFT`` in an int64, so sectors (and lines)
# are below 2 ** 47 and buffers below 2 ** 12.
M_BUF, M_KIND = 48, 60
_M_LINE = (1 << M_BUF) - 1
ADDRESS_BITS = BUFFER_SHIFT + 12  # byte addresses lie below 2 ** 52


@_jitp
def _l1_pass(RR, seg, by_unit, unit_start, blocks, unit_base, miss, rows, span, c1, sets1,
             ways1, spl_shift, sets2, ways2, sector_shift, lay1, lay2):
    """Every unit's L1 over its groups, in group order; units are independent, so blocks of
    them run in parallel. Each chunk that asks anything of the L2 (loads: the sectors the L1
    lacked; stores and atomics: all of them) goes on ``miss`` (a miss entry, above), block
    b's one after another from ``unit_base[blocks[b]]`` (so only as much memory as there are
    misses is touched); ``span[j]``: where segment j's entries lie in ``miss``, and how
    many. A GEMV's L1 hits, most of its lookups, leave nothing for the L2 to read.
    ``rows[c]``: entry c's L2 row again, for the L2 parts' scans (``_l2_sets``).

    ``c1[lay1[L_ROW] * (unit * sets1 + set):]`` holds the set's ways, then their LRU stamps
    (``_Layout``; ``lay1``, ``lay2``: the L1s' and the L2's as arrays, ``L_*``). A unit's
    clock starts at 0: the ways of earlier launches are told by their generation. Indices
    are unsigned (see ``_find``)."""
    row1, row2 = lay1[L_ROW], lay2[L_ROW]
    for b in numba.prange(blocks.shape[0] - 1):
        c = unit_base[blocks[b]]
        for u in range(blocks[b], blocks[b + 1]):
            base_u = u * sets1 * row1
            clock = 0
            for o in range(unit_start[u], unit_start[u + 1]):
                j = by_unit[o]
                row = RR[seg[j, 1]]
                span[j, 0] = c
                second = False
                for i in range(np.uint64(seg[j, 2]), np.uint64(seg[j, 3])):
                    if second:  # a repeated entry's second word
                        second = False
                        continue
                    e = row[i]
                    kind, sector, count = e & 3, e >> R_SHIFT, (e >> 2) & R_MAX_RUN
                    tag = ((sector << sector_shift) >> BUFFER_SHIFT) << M_BUF | kind << M_KIND
                    if count != 0:
                        c, clock = _l1_run(sector, count, kind, tag, c, clock, c1, base_u, lay1,
                                           sets1, ways1, spl_shift, miss, rows, sets2, row2)
                        continue
                    # A repeated entry: its runs in a loop of their own (around every entry,
                    # or a check for the next run in the chunks' loop, the replay of plain
                    # entries was 10% slower).
                    _, count, runs, step, _ = _entry(row, i)
                    second = True
                    for r in range(runs):
                        c, clock = _l1_run(sector + step * r, count, kind, tag, c, clock, c1,
                                           base_u, lay1, sets1, ways1, spl_shift, miss, rows,
                                           sets2, row2)
                span[j, 1] = c - span[j, 0]


@_inline
def _l1_run(sector, count, kind, tag, c, clock, c1, base_u, lay1, sets1, ways1, spl_shift, miss,
            rows, sets2, row2):
    """``_l1_pass``' lookups of one run of ``count`` sectors from ``sector`` in a unit's L1
    (its sets from ``c1[base_u:]``): one per line it spans, each line's sectors that ask
    something of the L2 written to ``miss[c]``. Returns the next ``c`` and the clock."""
    spl = 1 << spl_shift
    row1, words1, kshift1, low1, now1 = (lay1[L_ROW], lay1[L_WORDS], lay1[L_KSHIFT],
                                         lay1[L_LOW], lay1[L_NOW])
    masks1 = (words1 - 1) * ways1  # from a way's key word to its masks
    stamps1 = words1 * ways1
    line_bits = lay1[L_LINE_BITS]
    last = sector + count - 1
    while sector <= last:
        line = sector >> spl_shift
        top = min(last, line * spl + spl - 1)
        mask = ((1 << (top - sector + 1)) - 1) << (sector - line * spl)
        sector = top + 1
        if kind == R_LOAD or kind == R_STORE:  # atomics are done in the L2
            base = base_u + _set_of(line, sets1) * row1
            p = _find(c1, base, ways1, now1 | line, kshift1)
            clock += 1
            if kind == R_STORE:  # write-through, no allocation
                if p >= 0:
                    c1[np.uint64(base + stamps1 + p)] = clock
                    c1[np.uint64(base + masks1 + p)] |= mask
            else:
                if p < 0:
                    p = _oldest(c1, base, ways1, stamps1, kshift1 + line_bits,
                                now1 >> line_bits)
                    c1[np.uint64(base + p)] = (now1 | line) << kshift1
                    c1[np.uint64(base + masks1 + p)] &= ~low1
                c1[np.uint64(base + stamps1 + p)] = clock
                valid = c1[np.uint64(base + masks1 + p)]
                c1[np.uint64(base + masks1 + p)] = valid | mask
                mask &= ~valid
        if mask != 0:
            at = _set_of(line, sets2) * row2
            miss[c, 0] = line | tag
            miss[c, 1] = mask | at << 32
            rows[c] = at
            c += 1
    return c, clock


@_jit
def _l2_sets(miss, rows, span, c2, ways2, line_shift, spl_shift, lo, hi, out, lay2, order):
    """The L2 over the L1s' misses (``_l1_pass``' entries, segment by segment in group
    order) for the sets whose rows lie in ``[lo, hi)`` of ``c2``; see the module docstring.
    Sets are independent and each keeps its lookups' order, so any split of the sets gives
    the same counts (``out``: read and written sectors per buffer).

    The entries of these sets are listed first, in order (``order``: room for all), without
    a branch: skipping the others one by one mispredicted half of them, and the skipping
    was as long as the lookups (a GEMV's 530K). They are told from ``rows`` (4 bytes an
    entry; from the miss entries' 16 bytes, a GEMV's L2 took 0.2 ms more of its 4).
    ``c2[lay2[L_ROW] * set:]`` holds the set's ways, most recent first (``_Layout``). A
    lookup touches those words only (prefetched ``_AHEAD`` lookups earlier): on a GEMV the
    L2's lookups are cache misses of the host, and their time goes with the bytes a set
    spans. The set lookups are small functions Numba inlines; anything passing arrays per
    call would cost reference counting.
    """
    read, write = out[0], out[1]
    low32 = (1 << 32) - 1
    spl = 1 << spl_shift
    valid_bits = (1 << spl) - 1
    row2, words2, kshift2, low2, now2 = (lay2[L_ROW], lay2[L_WORDS], lay2[L_KSHIFT],
                                         lay2[L_LOW], lay2[L_NOW])
    line_bits = lay2[L_LINE_BITS]
    line_low = (1 << line_bits) - 1
    masks2 = (words2 - 1) * ways2
    n = 0
    for j in range(span.shape[0]):
        for c in range(span[j, 0], span[j, 0] + span[j, 1]):
            row = rows[np.uint64(c)]
            order[np.uint64(n)] = c
            n += (row >= lo) & (row < hi)
    for k in range(n):
        if k + _AHEAD < n:
            ahead = np.int64(rows[np.uint64(order[np.uint64(k + _AHEAD)])])
            for at in range(ahead, ahead + row2, 8):  # each 64-byte line
                _prefetch(c2, at)
        c = order[np.uint64(k)]
        packed = miss[np.uint64(c), 1]
        mask, row = packed & low32, packed >> 32
        entry = miss[np.uint64(c), 0]
        line, buf, kind = entry & _M_LINE, (entry >> M_BUF) & 4095, entry >> M_KIND
        p = _find(c2, row, ways2, now2 | line, kshift2)
        if p < 0:
            p = ways2 - 1
            old = c2[np.uint64(row + p)] >> kshift2
            dirty = (c2[np.uint64(row + masks2 + p)] >> spl) & valid_bits
            if old >> line_bits == now2 >> line_bits and dirty != 0:
                write[((old & line_low) << line_shift) >> BUFFER_SHIFT] += _popcount(dirty)
            _to_front(c2, row, p, ways2, words2)
            c2[np.uint64(row)] = (now2 | line) << kshift2
            c2[np.uint64(row + masks2)] &= ~low2
        else:
            _to_front(c2, row, p, ways2, words2)
        word = c2[np.uint64(row + masks2)]
        state = word & low2
        # Loads and atomics fetch what is missing, stores and atomics dirty.
        if kind != R_STORE:
            read[buf] += _popcount(mask & ~state & valid_bits)
        state |= mask
        if kind == R_STORE or kind == R_ATOMIC:
            state |= mask << spl
        c2[np.uint64(row + masks2)] = (word & ~low2) | state
    for set_row in range(lo, hi, row2):  # write back what is still dirty
        for k in range(ways2):
            key = c2[set_row + k] >> kshift2
            if key >> line_bits != now2 >> line_bits:
                break  # the ways of this launch come first: the rest are older
            dirty = (c2[set_row + masks2 + k] >> spl) & valid_bits
            if dirty != 0:
                write[((key & line_low) << line_shift) >> BUFFER_SHIFT] += _popcount(dirty)


def _l2_pass(miss, rows, span, c2, sets2, ways2, line_shift, spl_shift, nbuf, lay2, parts):
    """The L2 replay with its sets split into ``parts`` ranges replayed in parallel: every
    part reads the whole miss stream, but only its own sets' lookups (the cache misses that
    dominate) are done, so a GEMV's replay no longer runs on one core. Returns each part's
    counts (parts, 2: read and written, buffers)."""
    out = np.zeros((parts, 2, nbuf), np.int64)
    size = parts * (miss.shape[0] + 1)
    order = _kept.pop(("order",), (np.empty(0, np.int64), 0))[0]
    if order.size < size:
        order = np.empty(size, np.int64)
    _l2_parts(miss, rows, span, c2, sets2, ways2, line_shift, spl_shift, out, lay2,
              order[:size].reshape(parts, -1))
    if order.nbytes <= KEEP_MISS_BYTES:
        _kept[("order",)] = (order, 0)
    return out


@_jitp
def _l2_parts(miss, rows, span, c2, sets2, ways2, line_shift, spl_shift, out, lay2, order):
    """``_l2_pass``' parallel loop. Its arrays are allocated and summed outside: array
    expressions here made Numba's once-per-machine compile of it 5 s instead of 2."""
    parts = out.shape[0]
    per = (sets2 + parts - 1) // parts
    row2 = lay2[L_ROW]
    for p in numba.prange(parts):
        lo = min(p * per, sets2) * row2
        hi = min((p + 1) * per, sets2) * row2
        _l2_sets(miss, rows, span, c2, ways2, line_shift, spl_shift, lo, hi, out[p], lay2,
                 order[p])


# A layout as the replay reads it (``_Layout.array``, int64): words per set and per way, the
# key's shift in its word, the masks' bits, this launch's generation above the line bits,
# the line bits.
L_ROW, L_WORDS, L_KSHIFT, L_LOW, L_NOW, L_LINE_BITS = range(6)
GENERATION_BITS = 8  # the fewest a one-word way may leave; fewer, and a way takes two words
generation_bits_max = 62  # tests lower it, to make the generations run out often


@dataclass(frozen=True)
class _Layout:
    """How a cache's sets are stored. A way is a *key* (this launch's generation above the
    line address, so a line of an earlier launch is never found) and its sector masks
    (valid in the low ``spl`` bits, dirty in the next ``spl``): one int64 word, the key above
    the masks, where they fit in 63 bits (every shipped profile: 45 line bits, 8 of masks,
    10 of generation); else a row of keys, then a row of masks.

    The L2 keeps each set's ways most recent first (``_to_front``): its least recent way is
    its last, and a 16-way set is 128 bytes, two of the host's cache lines. With tags, LRU
    stamps and masks in three rows it was 384 bytes, and a GEMV's L2 replay, its lookups
    cache misses of the host, took 9 ms instead of 6. The ways of this launch stay ahead of
    the older ones, so those are evicted first and never written back. The L1s' 4-way sets
    keep LRU stamps in a row after the words (``_oldest``, 64 bytes a set, in the host's
    cache while a unit replays): moving their ways cost more than the stamps' bytes (the
    GEMV's L1 replay 5.6 ms, stamped 4.6 ms, three rows 5.1 ms)."""

    words: int
    kshift: int
    line_bits: int
    generation_bits: int
    low: int

    @classmethod
    def of(cls, spl_shift: int, line_shift: int) -> _Layout:
        masks = 2 << spl_shift
        # Lines are below 2 ** 47 (sectors, in a stream entry) and 2 ** 52 (byte addresses).
        line_bits = min(ADDRESS_BITS - line_shift, 47 - spl_shift)
        words = 1 if masks + line_bits + GENERATION_BITS <= 63 else 2
        kshift = masks if words == 1 else 0
        low = -1 if masks == 64 else (1 << masks) - 1
        return cls(words, kshift, line_bits, min(63 - kshift - line_bits,
                                                   generation_bits_max), low)

    def array(self, ways: int, generation: int, stamped: bool) -> np.ndarray:
        """The layout for the replay (``L_*``) of a cache of ``ways`` ways, LRU stamps after
        each set's words if ``stamped``."""
        return np.array([(self.words + stamped) * ways, self.words, self.kshift, self.low,
                         generation << self.line_bits, self.line_bits], np.int64)


# The last launch's cache states, miss buffer and L2 order lists, kept for the next launch:
# an h200's L1s and L2 take 7.5 MB, whose page faults (fresh) or clearing (kept) cost
# 0.7-2 ms a launch, a fifth of vector_add's replay. A launch running beside another finds
# them taken and makes its own.
_kept: dict[tuple, tuple[np.ndarray, int]] = {}
KEEP_MISS_BYTES = 64 << 20  # a larger miss buffer is not kept


def _sets(key: tuple, layout: _Layout, row: int) -> tuple[np.ndarray, int]:
    """The cache ``key`` = (name, sets, ways) stored as ``layout``, ``row`` words a set: its
    sets' words, flat, and this launch's generation. A kept state needs no clearing: its
    ways are of earlier generations. When the generations run out it is cleared, and they
    start again at 1."""
    size = key[1] * row
    array, generation = _kept.pop((*key, layout), (None, 0))
    if array is None or array.size != size:
        return np.zeros(max(size, 1), np.int64), 1
    if generation >> layout.generation_bits:
        array.fill(0)
        generation = 1
    return array, generation


def simulate(RR: np.ndarray, lens: np.ndarray, cfg: CacheConfig, nbuf: int) -> CacheResult:
    """Replay the threads' streams ``RR[t, :lens[t]]`` through the caches of ``cfg``.

    ``nbuf`` is the number of buffer indices (kernel arguments and the dummy row). Returns
    sector counts per buffer; multiply by ``cfg.sector_bytes`` for bytes.
    """
    sector_shift = cfg.sector_bytes.bit_length() - 1
    line_shift = cfg.line_bytes.bit_length() - 1
    spl_shift = line_shift - sector_shift
    row_start = np.zeros(RR.shape[0] + 1, np.int64)
    _groups_per_row(RR, lens, row_start)
    row_start = np.cumsum(row_start)
    seg = np.empty((row_start[-1], 5), np.int64)
    requested = np.zeros((RR.shape[0], nbuf), np.int64)
    _segments(RR, lens, row_start, spl_shift, sector_shift, seg, requested)
    seg = seg[np.argsort(seg[:, 0], kind="stable")]
    sets1, ways1 = max(1, cfg.l1_bytes // cfg.line_bytes // cfg.l1_ways), cfg.l1_ways
    sets2, ways2 = max(1, cfg.l2_bytes // cfg.line_bytes // cfg.l2_ways), cfg.l2_ways
    layout = _Layout.of(spl_shift, line_shift)
    key1, key2 = ("L1", cfg.compute_units * sets1, ways1), ("L2", sets2, ways2)
    (c1, generation1), (c2, generation2) = (_sets(key1, layout, (layout.words + 1) * ways1),
                                            _sets(key2, layout, layout.words * ways2))
    units = seg[:, 0] % cfg.compute_units
    by_unit = np.argsort(units, kind="stable")  # each unit's segments, in group order
    unit_start = np.searchsorted(units[by_unit], np.arange(cfg.compute_units + 1))
    # Block b of units (one per thread) writes its misses from unit_base[blocks[b]]: room for
    # every chunk of their segments.
    chunks = np.concatenate(([0], np.cumsum(seg[by_unit, 4])))
    unit_base = chunks[unit_start]
    threads = max(1, min(numba.get_num_threads(), cfg.compute_units))
    blocks = np.arange(threads + 1) * cfg.compute_units // threads
    # The miss entries, then their L2 rows as int32 (``_l1_pass``).
    most = int(chunks[-1])
    size = 2 * most + (most + 1) // 2
    miss_buffer = _kept.pop(("miss",), (np.empty(0, np.int64), 0))[0]
    if miss_buffer.size < size:
        miss_buffer = np.empty(size, np.int64)
    miss = miss_buffer[:2 * most].reshape(-1, 2)
    rows = miss_buffer[2 * most:size].view(np.int32)[:most]
    span = np.empty((seg.shape[0], 2), np.int64)
    lay1, lay2 = layout.array(ways1, generation1, True), layout.array(ways2, generation2, False)
    _l1_pass(RR, seg, by_unit, unit_start, blocks, unit_base, miss, rows, span, c1, sets1,
             ways1, spl_shift, sets2, ways2, sector_shift, lay1, lay2)
    parts = min(numba.get_num_threads(), sets2)
    read, write = _l2_pass(miss, rows, span, c2, sets2, ways2, line_shift, spl_shift, nbuf,
                           lay2, parts).sum(axis=0)
    _kept[(*key1, layout)] = (c1, generation1 + 1)
    _kept[(*key2, layout)] = (c2, generation2 + 1)
    if miss_buffer.nbytes <= KEEP_MISS_BYTES:
        _kept[("miss",)] = (miss_buffer, 0)
    return CacheResult(requested.sum(axis=0), read, write)
