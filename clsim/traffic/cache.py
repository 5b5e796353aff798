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

from clsim.traffic.layout import BUFFER_SHIFT, R_ATOMIC, R_LOAD, R_SHIFT, R_STORE

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)
_jitp = numba.njit(cache=True, error_model="numpy", nogil=True, parallel=True)
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
    count_mask = (1 << (R_SHIFT - 2)) - 1
    for t in numba.prange(RR.shape[0]):
        # Sums in locals, stored when they change: a store per entry to one place makes each
        # entry wait for the last one's.
        j, chunks, buf, sectors = row_start[t] - 1, 0, 0, 0
        for i in range(lens[t]):
            e = RR[t, i]
            if e < 0:
                if j >= row_start[t]:
                    out[j, 3], out[j, 4] = i, chunks
                j += 1
                out[j, 0], out[j, 1], out[j, 2], chunks = -e - 1, t, i + 1, 0
            elif j >= row_start[t]:
                sector = e >> R_SHIFT
                count = (e >> 2) & count_mask
                chunks += ((sector + count - 1) >> spl_shift) - (sector >> spl_shift) + 1
                b = (sector << sector_shift) >> BUFFER_SHIFT
                if b != buf:
                    requested[t, buf] += sectors
                    buf, sectors = b, 0
                sectors += count
        if j >= row_start[t]:
            out[j, 3], out[j, 4] = lens[t], chunks
        requested[t, buf] += sectors


@_jit
def _set_of(line, sets):
    """The set of ``line``: the line address xor-folded, modulo a power-of-two set count;
    for other counts a multiplicative hash scaled to the range (no division: a 64-bit
    division per lookup costs more than the rest of the replay)."""
    h = line ^ (line >> 13) ^ (line >> 27)
    if sets & (sets - 1) == 0:
        return h & (sets - 1)
    return ((((h * -7046029254386353131) >> 32) & 0xFFFFFFFF) * sets) >> 32


@_jit
def _way(tags, first, ways, line, epoch):
    """The way of ``tags[first:first + ways]`` holding ``line`` in this launch (its stamp,
    ``ways`` entries on, past ``epoch``: see ``_sets``), or -1 (as an index of tags).
    Without an early exit: the compares vectorise, and which way hits is random (a branch on
    it mispredicts). Indices are unsigned: Numba fixes up every signed index for negative
    values, which made the replays 1.6x slower."""
    found = np.int64(-1)
    for k in range(np.uint64(first), np.uint64(first + ways)):
        found = np.int64(k) if tags[k] == line and tags[k + ways] > epoch else found
    return found


@_jit
def _lru(stamps, first, ways):
    """The least recently used way of ``stamps[first:first + ways]`` (as an index of stamps).
    Written without branches: which stamp is older is random, a branch on it mispredicts."""
    victim, oldest = first, stamps[first]
    for k in range(first + 1, first + ways):
        s = stamps[k]
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


@_jitp
def _l1_pass(RR, seg, by_unit, unit_start, blocks, unit_base, miss, span, c1, sets1, ways1,
             spl_shift, sets2, ways2, sector_shift, epoch):
    """Every unit's L1 over its groups, in group order; units are independent, so blocks of
    them run in parallel. Each chunk that asks anything of the L2 (loads: the sectors the L1
    lacked; stores and atomics: all of them) goes on ``miss`` (a miss entry, above), block
    b's one after another from ``unit_base[blocks[b]]`` (so only as much memory as there are
    misses is touched); ``span[j]``: where segment j's entries lie in ``miss``, and how
    many. A GEMV's L1 hits, most of its lookups, leave nothing for the L2 to read.

    ``c1[3 * ways1 * (unit * sets1 + set):]`` holds the set's tags, LRU stamps and valid
    sectors, as ``c2`` does for the L2. Indices are unsigned (see ``_way``)."""
    count_mask = (1 << (R_SHIFT - 2)) - 1
    spl = 1 << spl_shift
    row3 = 3 * ways1
    for b in numba.prange(blocks.shape[0] - 1):
        c = unit_base[blocks[b]]
        for u in range(blocks[b], blocks[b + 1]):
            base_u = u * sets1 * row3
            clock = epoch
            for o in range(unit_start[u], unit_start[u + 1]):
                j = by_unit[o]
                row = RR[seg[j, 1]]
                span[j, 0] = c
                for i in range(np.uint64(seg[j, 2]), np.uint64(seg[j, 3])):
                    e = row[i]
                    kind = e & 3
                    sector = e >> R_SHIFT
                    last = sector + ((e >> 2) & count_mask) - 1
                    tag = ((sector << sector_shift) >> BUFFER_SHIFT) << M_BUF | kind << M_KIND
                    while sector <= last:
                        line = sector >> spl_shift
                        top = min(last, line * spl + spl - 1)
                        mask = ((1 << (top - sector + 1)) - 1) << (sector - line * spl)
                        sector = top + 1
                        clock += 1
                        if kind == R_LOAD or kind == R_STORE:  # atomics are done in the L2
                            base = base_u + _set_of(line, sets1) * row3
                            w = _way(c1, base, ways1, line, epoch)
                            if kind == R_STORE:  # write-through, no allocation
                                if w >= 0:
                                    c1[np.uint64(w + ways1)] = clock
                                    c1[np.uint64(w + 2 * ways1)] |= mask
                            else:
                                if w < 0:
                                    w = _lru(c1, base + ways1, ways1) - ways1
                                    c1[np.uint64(w)], c1[np.uint64(w + 2 * ways1)] = line, 0
                                c1[np.uint64(w + ways1)] = clock
                                valid = c1[np.uint64(w + 2 * ways1)]
                                c1[np.uint64(w + 2 * ways1)] = valid | mask
                                mask &= ~valid
                        if mask != 0:
                            miss[c, 0] = line | tag
                            miss[c, 1] = mask | (_set_of(line, sets2) * 3 * ways2) << 32
                            c += 1
                span[j, 1] = c - span[j, 0]


@_jit
def _l2_sets(miss, span, c2, ways2, line_shift, lo, hi, out, epoch):
    """The L2 over the L1s' misses (``_l1_pass``' entries, segment by segment in group
    order) for the sets whose rows lie in ``[lo, hi)`` of ``c2``; see the module docstring.
    Sets are independent and each keeps its lookups' order, so any split of the sets gives
    the same counts (``out``: read and written sectors per buffer).

    ``c2[3 * ways2 * set:]`` holds the set's tags, then their LRU stamps, then their valid
    sectors (low 32 bits) and dirty sectors (high 32 bits): one lookup touches one place of
    memory (prefetched ``_AHEAD`` lookups earlier by a second cursor running ahead), where
    four arrays cost four misses. The set lookups are small functions LLVM inlines; anything
    passing arrays per call would cost reference counting.
    """
    read, write = out[0], out[1]
    low = (1 << 32) - 1
    clock = epoch
    ja, ka = 0, _AHEAD - 1  # the look-ahead cursor: segment, entry in it
    for j in range(span.shape[0]):
        for c in range(span[j, 0], span[j, 0] + span[j, 1]):
            ka += 1
            while ja < span.shape[0] and ka >= span[ja, 1]:
                ka -= span[ja, 1]
                ja += 1
            if ja < span.shape[0]:
                ahead = miss[span[ja, 0] + ka, 1] >> 32
                if lo <= ahead < hi:
                    for part in range(ahead, ahead + 3 * ways2, 8):  # each 64-byte line
                        _prefetch(c2, part)
            packed = miss[np.uint64(c), 1]
            mask, row = packed & low, packed >> 32
            if row < lo or row >= hi:
                continue
            entry = miss[np.uint64(c), 0]
            line, buf, kind = entry & _M_LINE, (entry >> M_BUF) & 4095, entry >> M_KIND
            clock += 1
            w = _way(c2, row, ways2, line, epoch)
            if w < 0:
                w = _lru(c2, row + ways2, ways2) - ways2
                old = c2[np.uint64(w + 2 * ways2)]
                if c2[np.uint64(w + ways2)] > epoch and old >> 32 != 0:
                    write[(c2[np.uint64(w)] << line_shift) >> BUFFER_SHIFT] += _popcount(
                        old >> 32)
                c2[np.uint64(w)], c2[np.uint64(w + 2 * ways2)] = line, 0
            c2[np.uint64(w + ways2)] = clock
            state = c2[np.uint64(w + 2 * ways2)]
            # Loads and atomics fetch what is missing, stores and atomics dirty.
            if kind != R_STORE:
                read[buf] += _popcount(mask & ~state & low)
            state |= mask
            if kind == R_STORE or kind == R_ATOMIC:
                state |= mask << 32
            c2[np.uint64(w + 2 * ways2)] = state
    for w0 in range(lo, hi, 3 * ways2):  # write back what is still dirty
        for w in range(w0, w0 + ways2):
            if c2[w + ways2] > epoch and c2[w + 2 * ways2] >> 32 != 0:
                write[(c2[w] << line_shift) >> BUFFER_SHIFT] += _popcount(c2[w + 2 * ways2] >> 32)


def _l2_pass(miss, span, c2, sets2, ways2, line_shift, nbuf, epoch, parts):
    """The L2 replay with its sets split into ``parts`` ranges replayed in parallel: every
    part reads the whole miss stream, but only its own sets' lookups (the cache misses that
    dominate) are done, so a GEMV's replay no longer runs on one core. Returns each part's
    counts (parts, 2: read and written, buffers)."""
    out = np.zeros((parts, 2, nbuf), np.int64)
    _l2_parts(miss, span, c2, sets2, ways2, line_shift, out, epoch)
    return out


@_jitp
def _l2_parts(miss, span, c2, sets2, ways2, line_shift, out, epoch):
    """``_l2_pass``'s parallel loop. Its arrays are allocated and summed outside: array
    expressions here made Numba's once-per-machine compile of it 5 s instead of 2."""
    parts = out.shape[0]
    per = (sets2 + parts - 1) // parts
    for p in numba.prange(parts):
        lo = min(p * per, sets2) * 3 * ways2
        hi = min((p + 1) * per, sets2) * 3 * ways2
        _l2_sets(miss, span, c2, ways2, line_shift, lo, hi, out[p], epoch)


# The last launch's cache states and miss buffer, kept for the next launch: an h200's L1s
# and L2 take 16 MB, whose page faults (fresh) or clearing (kept) cost 0.7-2 ms a launch,
# a fifth of vector_add's replay. A launch running beside another finds them taken and
# makes its own.
_kept: dict[tuple, tuple[np.ndarray, int]] = {}
KEEP_MISS_BYTES = 64 << 20  # a larger miss buffer is not kept


def _take(key: tuple, size: int) -> tuple[np.ndarray, int]:
    """A kept int64 array of ``size`` entries under ``key`` and its epoch, or fresh zeros
    (epoch 0)."""
    array, epoch = _kept.pop(key, (None, 0))
    if array is None or array.size != size:
        return np.zeros(max(size, 1), np.int64), 0
    return array, epoch


def _sets(key: tuple) -> tuple[np.ndarray, int]:
    """The cache ``key`` = (name, sets, ways): its ``sets`` rows of ``ways`` tags, LRU
    stamps and sector masks, flat, and the epoch: a way holds a line of this launch only
    while its stamp is past the epoch (the launch's clocks start there), so a kept state
    needs no clearing: the last launch's lines are never found, and are the first evicted,
    as empty ways would be; which empty way a line takes changes no count."""
    _, sets, ways = key
    return _take(key, sets * 3 * ways)


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
    key1, key2 = ("L1", cfg.compute_units * sets1, ways1), ("L2", sets2, ways2)
    (c1, epoch1), (c2, epoch2) = _sets(key1), _sets(key2)
    units = seg[:, 0] % cfg.compute_units
    by_unit = np.argsort(units, kind="stable")  # each unit's segments, in group order
    unit_start = np.searchsorted(units[by_unit], np.arange(cfg.compute_units + 1))
    # Block b of units (one per thread) writes its misses from unit_base[blocks[b]]: room for
    # every chunk of their segments.
    chunks = np.concatenate(([0], np.cumsum(seg[by_unit, 4])))
    unit_base = chunks[unit_start]
    threads = max(1, min(numba.get_num_threads(), cfg.compute_units))
    blocks = np.arange(threads + 1) * cfg.compute_units // threads
    miss_buffer = _kept.pop(("miss",), (np.empty(0, np.int64), 0))[0]
    if miss_buffer.size < 2 * int(chunks[-1]):
        miss_buffer = np.empty(2 * int(chunks[-1]), np.int64)
    miss = miss_buffer[:2 * int(chunks[-1])].reshape(-1, 2)
    span = np.empty((seg.shape[0], 2), np.int64)
    _l1_pass(RR, seg, by_unit, unit_start, blocks, unit_base, miss, span, c1, sets1, ways1,
             spl_shift, sets2, ways2, sector_shift, epoch1)
    parts = min(numba.get_num_threads(), sets2)
    read, write = _l2_pass(miss, span, c2, sets2, ways2, line_shift, nbuf, epoch2,
                           parts).sum(axis=0)
    # Every stamp of this launch is below the next epoch: a clock counts at most a lookup
    # per chunk.
    _kept[key1] = (c1, epoch1 + int(chunks[-1]) + 1)
    _kept[key2] = (c2, epoch2 + int(chunks[-1]) + 1)
    if miss_buffer.nbytes <= KEEP_MISS_BYTES:
        _kept[("miss",)] = (miss_buffer, 0)
    return CacheResult(requested.sum(axis=0), read, write)
