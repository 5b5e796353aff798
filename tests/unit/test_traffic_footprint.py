"""The unique footprint and the closed-form steps of strided loops, against plain Python.

A step covering whole blocks of 16 elements flags them by block, the rest element by element
(``clsim.traffic.layout``, ``M``); a buffer read both ways must count each element once. A
sub-group's steps through a loop whose stride is a whole number of lines are counted in closed
form (``step_rules._line_strided_runs``): executions, steps, sectors and lines must be those
of the rules applied run by run (docs/traffic-model.md).
"""

from __future__ import annotations

import inspect

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

import clsim
from clsim import get_global_id, get_global_size, get_local_id, get_local_size, kernel

F32 = np.float32
SECTOR, LINE = 32, 128  # the default profile's


@kernel
def strided_sums(a, idx, out, off, n):
    gid = get_global_id(0)
    lid = get_local_id(0)
    acc = F32(0.0)
    for c in range(lid, n, get_local_size(0)):
        acc += a[off + c]  # LOOP_LOAD
    acc += a[idx[gid]]
    out[off + gid] = acc


def _line_of(marker: str) -> int:
    """The line of this file holding ``marker`` (sites are reported by file and line)."""
    source = inspect.getsource(inspect.getmodule(_line_of)).splitlines()
    return 1 + next(i for i, text in enumerate(source) if marker in text and "#" in text)


def _loop_model(off: int, n: int, local: int, groups: int, simd: int) -> tuple:
    """Executions, steps, sectors and lines of the loop's load, run by run: step t of a
    sub-group is its lanes' trip t, the lanes below ``n`` in it."""
    execs = steps = sectors = lines = 0
    for _ in range(groups):
        for sg0 in range(0, local, simd):
            for trip in range(-(-n // local)):
                elements = [off + c for c in range(trip * local + sg0,
                                                   trip * local + min(sg0 + simd, local))
                            if c < n]
                if not elements:
                    continue
                execs += len(elements)
                steps += 1
                sectors += len({4 * e // SECTOR for e in elements})
                lines += len({4 * e // LINE for e in elements})
    return execs, steps, sectors, lines


@settings(max_examples=40, deadline=None)
@given(local=st.sampled_from([32, 64, 96]), simd=st.sampled_from([8, 16, 32]),
       groups=st.integers(1, 3), off=st.one_of(st.sampled_from([0, 16, 32]),
                                               st.integers(0, 40)),
       n=st.integers(0, 300), extra=st.integers(0, 20), seed=st.integers(0, 2 ** 32 - 1))
@example(local=64, simd=32, groups=2, off=0, n=300, extra=5, seed=0)  # whole blocks, strided
@example(local=64, simd=32, groups=1, off=0, n=256, extra=3, seed=3)  # those alone
@example(local=96, simd=32, groups=1, off=16, n=290, extra=0, seed=1)
@example(local=32, simd=32, groups=3, off=3, n=100, extra=13, seed=2)  # one range, mid-block
def test_footprint_and_strided_steps_match_the_rules(local, simd, groups, off, n, extra, seed):
    """Block flags beside element flags in one buffer (a strided loop's whole blocks, a
    gather's single elements, inside and outside them), a buffer ending mid-block, runs
    starting mid-block: each element read or written counts once, and the loop's steps are
    those of the rules."""
    size = max(off + n, off + local * groups) + extra
    gathered = local * groups
    idx = np.random.default_rng(seed).integers(0, size, gathered, dtype=np.int32)
    a = np.arange(size, dtype=F32)
    out = np.zeros(size, F32)
    r = clsim.run(strided_sums, (gathered,), (local,), (a, idx, out, np.int32(off),
                                                        np.int32(n)),
                  traffic=True, simd_width=simd).traffic
    read = {off + c for c in range(n)} | {int(i) for i in idx}
    assert r.unique_read_bytes["a"] == 4 * len(read)
    assert r.unique_read_bytes["idx"] == 4 * gathered
    assert r.unique_write_bytes["out"] == 4 * gathered
    assert r.unique_write_bytes["a"] == r.unique_read_bytes["out"] == 0
    loop = [s for s in r.sites if s["buffer"] == "a" and s["line"] == _line_of("LOOP_LOAD")]
    assert loop or n == 0
    want = _loop_model(off, n, local, groups, simd)
    got = (sum(s["executions"] for s in loop), sum(s["steps"] for s in loop),
           sum(s["sectors"] for s in loop), sum(s["lines"] for s in loop))
    assert got == want


@kernel
def guarded_tile(a, out, pitch, limit, jitter):
    gx = get_global_id(0)
    gy = get_global_id(1)
    i = gy * pitch + gx + jitter * (gy % 2) * (gx % 2)
    v = a[i] if gx < limit else F32(0.0)  # GUARDED_LOAD
    out[gy * get_global_size(0) + gx] = v


@settings(max_examples=40, deadline=None)
@given(local=st.sampled_from([(16, 16), (8, 4), (4, 8), (16, 2), (12, 4)]),
       groups=st.sampled_from([(1, 1), (2, 1), (1, 2), (2, 3)]),
       simd=st.sampled_from([8, 16, 32]), extra=st.integers(-6, 9),
       cut=st.integers(0, 6), jitter=st.sampled_from([0, 0, 1]))
@example(local=(16, 16), groups=(2, 2), simd=32, extra=3, cut=0, jitter=0)  # two rows
@example(local=(16, 16), groups=(1, 1), simd=32, extra=-4, cut=0, jitter=0)  # overlapping
@example(local=(16, 16), groups=(1, 1), simd=32, extra=2, cut=0, jitter=1)  # a row not
@example(local=(12, 4), groups=(1, 1), simd=32, extra=2, cut=0, jitter=0)  # a part row
def test_guarded_loads_of_a_tile_count_as_their_lanes(local, groups, simd, extra, cut,
                                                      jitter):
    """A 2-D group's guarded loads (``a[i] if c else 0``, logged lane by lane): a sub-group
    over several rows of consecutive lanes is counted by its rows (``steps._row_segments``),
    rows overlapping, a row of lanes not consecutive or lanes missing the usual way;
    steps, sectors, lines and the footprint are the rules' applied lane by lane."""
    width, height = local[0] * groups[0], local[1] * groups[1]
    pitch = max(width + extra, 1)
    limit = width - cut
    size = pitch * (height - 1) + width + 1
    a = np.arange(size, dtype=F32)
    out = np.zeros(width * height, F32)
    r = clsim.run(guarded_tile, (width, height), local,
                  (a, out, np.int32(pitch), np.int32(limit), np.int32(jitter)),
                  traffic=True, simd_width=simd).traffic
    execs = steps = sectors = lines = 0
    read = set()
    for gy0 in range(0, height, local[1]):
        for gx0 in range(0, width, local[0]):
            lanes = [(gx0 + lid % local[0], gy0 + lid // local[0])
                     for lid in range(local[0] * local[1])]
            for q in range(0, len(lanes), simd):
                elements = [y * pitch + x + jitter * (y % 2) * (x % 2)
                            for x, y in lanes[q:q + simd] if x < limit]
                if elements:
                    execs, steps = execs + len(elements), steps + 1
                    sectors += len({4 * e // SECTOR for e in elements})
                    lines += len({4 * e // LINE for e in elements})
                    read |= set(elements)
    load = [s for s in r.sites if s["buffer"] == "a" and s["line"] == _line_of("GUARDED_LOAD")]
    assert (sum(s["executions"] for s in load), sum(s["steps"] for s in load),
            sum(s["sectors"] for s in load), sum(s["lines"] for s in load)) == (
        execs, steps, sectors, lines)
    assert r.unique_read_bytes["a"] == 4 * len(read)


@kernel
def spaced_lanes(a, out, stride, reps, limit):
    gid = get_global_id(0)
    acc = a[gid * stride] if gid < limit else F32(0.0)  # SPACED_GUARDED
    for k in range(reps):
        acc += a[gid * stride + k + 1]  # SPACED_LOOP
        out[gid * stride + k] = acc  # SPACED_STORE


def _site_figures(report, marker: str) -> tuple:
    found = [s for s in report.sites if s["line"] == _line_of(marker)]
    return tuple(sum(s[f] for s in found) for f in ("executions", "steps", "sectors", "lines"))


def _step_figures(steps: list) -> tuple:
    """Executions, steps, sectors and lines of sub-group steps given as their elements."""
    steps = [s for s in steps if s]
    return (sum(len(s) for s in steps), len(steps),
            sum(len({4 * e // SECTOR for e in s}) for s in steps),
            sum(len({4 * e // LINE for e in s}) for s in steps))


@settings(max_examples=40, deadline=None)
@given(stride=st.sampled_from([1, 2, 3, 8, 16, 32, 33, 64]), reps=st.integers(0, 12),
       local=st.sampled_from([32, 64]), groups=st.integers(1, 3),
       simd=st.sampled_from([8, 16, 32]), cut=st.integers(0, 40))
@example(stride=32, reps=10, local=64, groups=2, simd=32, cut=0)  # a block apart: closed form
@example(stride=16, reps=2, local=32, groups=1, simd=32, cut=0)  # two lanes a line
def test_lanes_a_line_or_more_apart_count_as_their_lanes(stride, reps, local, groups, simd,
                                                         cut):
    """Lanes reading and writing elements ``stride`` apart, logged one run at a time (a
    guarded load) and as loop descriptors: 32 and 64 elements apart (a line or more, whole
    sectors) their steps are counted in closed form (``step_rules.spaced_runs``), 2, 3 and 8
    apart (gaps shorter than a sector) the guarded load's too (``near_lanes``), else as
    before; steps, sectors, lines and the footprint are the rules' lane by lane."""
    n = local * groups
    limit = n - cut
    a = np.arange(n * stride + reps + 2, dtype=F32)
    out = np.zeros(n * stride + reps + 2, F32)
    r = clsim.run(spaced_lanes, (n,), (local,), (a, out, np.int32(stride), np.int32(reps),
                                                 np.int32(limit)),
                  traffic=True, simd_width=simd).traffic
    sub_groups = [range(g + q, min(g + q + simd, g + local))
                  for g in range(0, n, local) for q in range(0, local, simd)]
    guarded = [[i * stride for i in lanes if i < limit] for lanes in sub_groups]
    loop = [[i * stride + k + 1 for i in lanes] for lanes in sub_groups for k in range(reps)]
    store = [[i * stride + k for i in lanes] for lanes in sub_groups for k in range(reps)]
    assert _site_figures(r, "SPACED_GUARDED") == _step_figures(guarded)
    assert _site_figures(r, "SPACED_LOOP") == _step_figures(loop)
    assert _site_figures(r, "SPACED_STORE") == _step_figures(store)
    assert r.unique_read_bytes["a"] == 4 * len({e for s in guarded + loop for e in s})
    assert r.unique_write_bytes["out"] == 4 * len({e for s in store for e in s})
    # The cache model was handed every sector (the stream's entries, repeated or not), and
    # the right ones: the buffers fit in its caches, so DRAM sees each sector once.
    for buffer, steps in (("a", guarded + loop), ("out", store)):
        assert r.buffers[buffer]["uncached"] == SECTOR * sum(
            s["sectors"] for s in r.sites if s["buffer"] == buffer)
        assert r.buffers[buffer]["dram"] == SECTOR * len({4 * e // SECTOR for s in steps
                                                          for e in s})


@kernel
def bytes_apart(q, out, stride, limit):
    gid = get_global_id(0)
    out[gid] = F32(q[gid * stride + 2]) if gid < limit else F32(0.0)  # BYTES_APART


@settings(max_examples=30, deadline=None)
@given(stride=st.integers(1, 40), local=st.sampled_from([32, 64]), groups=st.integers(1, 2),
       simd=st.sampled_from([8, 32]), cut=st.integers(0, 20))
@example(stride=18, local=32, groups=2, simd=32, cut=0)  # a Q4_0 block's quant bytes
def test_bytes_read_by_lanes_apart_count_as_their_lanes(stride, local, groups, simd, cut):
    """Single bytes read by lanes ``stride`` bytes apart (a field of consecutive 18-byte
    blocks): gaps shorter than a sector make one run of sectors a step with each lane's byte
    flagged (``step_rules.near_lanes``), longer ones as before."""
    n = local * groups
    limit = n - cut
    q = np.arange(n * stride + 3, dtype=np.uint8)
    out = np.zeros(n, F32)
    r = clsim.run(bytes_apart, (n,), (local,), (q, out, np.int32(stride), np.int32(limit)),
                  traffic=True, simd_width=simd).traffic
    steps = [[i * stride + 2 for i in range(g + s, min(g + s + simd, g + local)) if i < limit]
             for g in range(0, n, local) for s in range(0, local, simd)]
    steps = [s for s in steps if s]
    found = [s for s in r.sites if s["line"] == _line_of("BYTES_APART") and s["buffer"] == "q"]
    assert tuple(sum(s[f] for s in found) for f in ("executions", "steps", "sectors", "lines")) \
        == (sum(len(s) for s in steps), len(steps),
            sum(len({e // SECTOR for e in s}) for s in steps),
            sum(len({e // LINE for e in s}) for s in steps))
    assert r.unique_read_bytes["q"] == len({e for s in steps for e in s})
    assert r.buffers["q"]["dram"] == SECTOR * len({e // SECTOR for s in steps for e in s})
