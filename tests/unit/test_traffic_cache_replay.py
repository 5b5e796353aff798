"""The cache replay (clsim.traffic.cache.simulate) against a plain-Python reference.

Contract: ``simulate`` gives, per buffer, exactly the requested, DRAM-read and DRAM-written
sectors of the model its module docstring states (groups in order, round-robin units, LRU L1s
and L2, loads allocating, stores writing through the L1, atomics done in the L2, dirty
sectors written back when evicted and at the end), however its passes split and order the
work. The reference below replays random sector streams the obvious way, one lookup at a
time; the caches are small so that evictions, dirty write-backs, steps spanning lines and
set counts that are not powers of two all occur.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import clsim
from clsim.traffic import cache
from clsim.traffic.layout import (
    BUFFER_SHIFT,
    R_ATOMIC,
    R_COUNT_SHIFT,
    R_LOAD,
    R_MAX_STEP,
    R_RUNS_SHIFT,
    R_SHIFT,
    R_STORE,
)


def _streams(rng, threads=2, groups=40, buffers=3, sector_bytes=32, line_sectors=4):
    """Sector streams as the step counter writes them: per thread a row of group marks
    ``-(g + 1)``, each followed by that group's entries ``sector << R_SHIFT | count << 2 |
    kind``, and repeated entries (two words: runs whole lines apart, layout.py ``R``)."""
    rows = [[] for _ in range(threads)]
    for g in rng.permutation(groups):
        row = rows[rng.integers(threads)]
        row.append(-(int(g) + 1))
        for _ in range(rng.integers(0, 30)):
            buf = int(rng.integers(buffers))
            sector = (buf << BUFFER_SHIFT) // sector_bytes + int(rng.integers(0, 400))
            count = int(rng.choice([1, 1, 1, 2, 4, 5, 9]))
            kind = int(rng.choice([R_LOAD, R_LOAD, R_LOAD, R_STORE, R_ATOMIC, 3]))
            if rng.random() < 0.8:
                row.append(sector << R_SHIFT | count << 2 | kind)
                continue
            runs, step = int(rng.integers(1, 9)), line_sectors * int(rng.integers(0, 5))
            row += [sector << R_SHIFT | kind,
                    runs << R_RUNS_SHIFT | count << R_COUNT_SHIFT | step]
    lens = np.array([len(r) for r in rows], np.int64)
    RR = np.zeros((threads, int(lens.max()) + 5), np.int64)  # room past the ends, unread
    for t, row in enumerate(rows):
        RR[t, :len(row)] = row
    return RR, lens


def _lookup(sets, line, ways):
    """The line's state in its set (an LRU-ordered dict), made most recent; a new line
    evicts the least recent one when the set is full. Returns (state, evicted line, its
    state); states are [valid, dirty] sector masks."""
    if line in sets:
        sets.move_to_end(line)
        return sets[line], None, None
    old = sets.popitem(last=False) if len(sets) == ways else (None, None)
    sets[line] = [0, 0]
    return sets[line], old[0], old[1]


_COUNT_MASK = (1 << (R_SHIFT - 2)) - 1


def _groups(row: list) -> list:
    """(group, its entries) of one thread's stream, a repeated entry written out as its
    runs' plain entries (layout.py ``R``)."""
    groups, i = [], 0
    while i < len(row):
        e = row[i]
        if e < 0:
            groups.append((-e - 1, []))
        elif e >> 2 & _COUNT_MASK == 0:
            more = row[i + 1]
            count, step = (more >> R_COUNT_SHIFT) & _COUNT_MASK, more & R_MAX_STEP
            groups[-1][1].extend(e + ((step * j) << R_SHIFT | count << 2)
                                 for j in range(more >> R_RUNS_SHIFT))
            i += 1
        else:
            groups[-1][1].append(e)
        i += 1
    return groups


def _reference(RR, lens, cfg, nbuf):
    sector_shift = cfg.sector_bytes.bit_length() - 1
    line_shift = cfg.line_bytes.bit_length() - 1
    spl = cfg.line_bytes // cfg.sector_bytes
    sets1 = max(1, cfg.l1_bytes // cfg.line_bytes // cfg.l1_ways)
    sets2 = max(1, cfg.l2_bytes // cfg.line_bytes // cfg.l2_ways)
    segments = []
    for t in range(RR.shape[0]):
        segments += _groups(RR[t, :lens[t]].tolist())
    segments.sort(key=lambda s: s[0])
    requested, read, write = (np.zeros(nbuf, np.int64) for _ in range(3))
    l1 = {}
    l2 = {}
    for group, entries in segments:
        unit = group % cfg.compute_units
        for e in entries:
            kind, sector, count = e & 3, e >> R_SHIFT, (e >> 2) & _COUNT_MASK
            buf = (sector << sector_shift) >> BUFFER_SHIFT
            requested[buf] += count
            for s in range(sector, sector + count):  # one sector at a time
                line, bit = s // spl, 1 << (s % spl)
                if kind in (R_LOAD, R_STORE):
                    ways = l1.setdefault((unit, cache._set_of(line, sets1)), OrderedDict())
                    if kind == R_LOAD:
                        state, _, _ = _lookup(ways, line, cfg.l1_ways)
                        if state[0] & bit:
                            continue  # an L1 hit asks nothing of the L2
                        state[0] |= bit
                    elif line in ways:
                        ways.move_to_end(line)
                        ways[line][0] |= bit
                ways = l2.setdefault(cache._set_of(line, sets2), OrderedDict())
                state, evicted, old = _lookup(ways, line, cfg.l2_ways)
                if evicted is not None:
                    write[(evicted << line_shift) >> BUFFER_SHIFT] += bin(old[1]).count("1")
                if kind != R_STORE and not state[0] & bit:
                    read[buf] += 1
                state[0] |= bit
                if kind in (R_STORE, R_ATOMIC):
                    state[1] |= bit
    for ways in l2.values():
        for line, (_valid, dirty) in ways.items():
            write[(line << line_shift) >> BUFFER_SHIFT] += bin(dirty).count("1")
    return requested, read, write


@pytest.mark.parametrize("l2_bytes", [16384, 24576])  # 32 sets, 48 sets (hashed)
@pytest.mark.parametrize("seed", range(4))
def test_replay_matches_one_lookup_at_a_time(seed, l2_bytes):
    """Random streams of loads, stores and atomics over three buffers, 2 KiB 2-way L1s on
    three units and a 4-way L2: every figure equals the reference's; and some lines were
    evicted dirty, so the write-backs were exercised."""
    _check(seed, cache.CacheConfig(compute_units=3, l1_bytes=2048, l1_ways=2,
                                   l2_bytes=l2_bytes, l2_ways=4, sector_bytes=32,
                                   line_bytes=128))


@pytest.mark.parametrize(("sector_bytes", "line_bytes", "words"),
                         [(64, 64, 1), (32, 512, 2), (32, 1024, 2)])
@pytest.mark.parametrize("seed", range(2))
def test_replay_of_other_line_shapes(seed, sector_bytes, line_bytes, words):
    """Lines of one sector, and of 16 and 32: their masks no longer fit beside the line
    address in one word, so a way takes two (``cache._Layout``), and the dirty mask of 32
    sectors reaches the word's sign bit."""
    assert cache._Layout.of((line_bytes // sector_bytes).bit_length() - 1,
                            line_bytes.bit_length() - 1).words == words
    _check(seed, cache.CacheConfig(compute_units=3, l1_bytes=4 * line_bytes, l1_ways=2,
                                   l2_bytes=24 * line_bytes, l2_ways=4,
                                   sector_bytes=sector_bytes, line_bytes=line_bytes),
           sector_bytes)


def _check(seed, cfg, sector_bytes=32):
    RR, lens = _streams(np.random.default_rng(seed), sector_bytes=sector_bytes,
                        line_sectors=cfg.line_bytes // cfg.sector_bytes)
    got = cache.simulate(RR, lens, cfg, 4)
    requested, read, write = _reference(RR, lens, cfg, 4)
    assert got.requested.tolist() == requested.tolist()
    assert got.dram_read.tolist() == read.tolist()
    assert got.dram_write.tolist() == write.tolist()
    assert write.sum() > 0 and read.sum() < requested.sum()  # write-backs, and some hits


def test_a_gemv_stream_holds_each_step_once_in_order():
    """The step counter's stream of a GEMV (tests/bench/traffic_kernels.py, 64 lanes a row,
    sub-groups of 32): per group its row of the matrix, then the vector, each sub-group's
    16 runs of 4 sectors in loop order (one repeated entry), then lane 0's store."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import traffic_kernels as tk

    from clsim.traffic import arena

    kernel, global_size, local_size, args, _ = tk.gemv_case(4, 1024)
    arena._kept_streams.clear()  # fresh zeros: a kept stream holds older entries past ours
    clsim.run(kernel, global_size, local_size, args, traffic=True, parallel=False)
    RR = arena._kept_streams[0]
    length = int(np.flatnonzero(RR[0])[-1]) + 1
    base = [(p << BUFFER_SHIFT) >> 5 for p in range(3)]  # the buffers' first sectors

    def runs(first):
        return [(first + 8 * t) << R_SHIFT | 4 << 2 | R_LOAD for t in range(16)]

    want = [(g, [*runs(base[0] + 128 * g), *runs(base[0] + 128 * g + 4), *runs(base[1]),
                 *runs(base[1] + 4), (base[2] + (4 * g >> 5)) << R_SHIFT | 1 << 2 | R_STORE])
            for g in range(4)]
    assert _groups(RR[0, :length].tolist()) == want
    assert length == 4 * 10  # a group's mark, four repeated entries and the store
