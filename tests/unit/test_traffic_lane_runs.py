"""Accesses recorded as one lane run per pass give exactly the per-lane figures.

What it proves: with ``TrafficInstrument.lane_runs`` (the default) an access every work-item
runs at most once per pass is kept as a run of consecutive lanes at equally spaced elements,
and the report (sites, sectors, bank replays, footprint, DRAM through the caches) equals the
one with a record per lane, for runs that hold (``scratch[lid]``, a broadcast, a reversed or
strided index, partial sub-groups, a tree reduction's shrinking prefix of lanes) and for runs
the lanes break (every third lane, an index that is not affine, lanes that returned early),
which go to the lane logs as they would have.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
)
from clsim.traffic import instrument as tr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import traffic_kernels as tk


@kernel
def patterns(x, y, n):
    """Local and global accesses of many lane patterns, each once per pass."""
    lid = get_local_id(0)
    i = get_global_id(0)
    wg = get_local_size(0)
    t = local_array(256, np.float32)
    t[lid] = x[i]  # consecutive lanes
    barrier(CLK_LOCAL_MEM_FENCE)
    v = t[0] + t[wg - 1 - lid] + t[(lid * 2) % wg]  # broadcast, reversed, bank conflicts
    if lid % 3 != 0:
        v += t[lid]  # every third lane missing: the run breaks
    v += t[(lid * lid) % wg]  # not affine
    barrier(CLK_LOCAL_MEM_FENCE)
    active = wg
    while active > 1:  # a tree reduction over a shrinking prefix of lanes
        half_ = (active + 1) // 2
        if lid < active - half_:
            t[lid] = t[lid] + t[lid + half_]
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_
    y[i] = v + t[0]
    y[n + 2 * i] = v  # strided global stores
    if i < n - 5:
        y[3 * n + i] += x[(i * 7) % n]  # a partial last group, a gather


@kernel
def early_exit(x, y, n):
    """Lanes that returned are skipped by the rest of the pass: their runs break."""
    i = get_global_id(0)
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    t[lid] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    if i % 5 == 4:
        return
    y[i] = t[lid] + t[(lid + 1) % 8]


@kernel
def two_d(a, out):
    """A 2-D group: lanes are linear local ids, row after row."""
    lx = get_local_id(0)
    ly = get_local_id(1)
    g = get_group_id(0)
    t = local_array((8, 8), np.float32)
    t[ly, lx] = a[ly * 8 + lx]
    barrier(CLK_LOCAL_MEM_FENCE)
    out[g * 64 + ly * 8 + lx] = t[lx, ly]


@kernel
def tile_copy(a, out, w):
    """A 2-D copy through a local tile; with a width that is no multiple of the group's,
    the last groups are narrower: their rows are shorter than the compiled group's."""
    x = get_global_id(0)
    y = get_global_id(1)
    lx = get_local_id(0)
    ly = get_local_id(1)
    t = local_array((8, 8), np.float32)
    t[ly, lx] = a[y * w + x]
    barrier(CLK_LOCAL_MEM_FENCE)
    out[y * w + x] = t[ly, lx] * 2.0


@kernel
def guarded_tile(a, out):
    """A region proven in range whose lanes skip one access (``if``) and run the others."""
    g = get_group_id(0)
    t = local_array((8, 8), np.float32)
    t[get_local_id(1), get_local_id(0)] = a[get_local_id(1) * 8 + get_local_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    v = t[get_local_id(0), get_local_id(1)]
    if get_local_id(0) < 3:
        v += a[64 + get_local_id(1) * 8 + get_local_id(0)]
    out[g * 64 + get_local_id(1) * 8 + get_local_id(0)] = v


@kernel
def grid_loops(a, b, out, lo, hi):
    """Loops every lane of a proven 2-D region runs alike, at indices affine in the lane
    ids and the loop's variable: from a start past 0 by 3 (four trips, not a whole number),
    in a tile's rows, its columns, a global row and a global column (of a buffer no other
    access reads: its footprint tells each lane's elements); and a loop of no trips."""
    t = local_array((16, 16), np.float32)
    t[get_local_id(1), get_local_id(0)] = a[get_global_id(1) * 16 + get_global_id(0)]
    t[get_local_id(1), get_local_id(0) + 8] = 2.0
    t[get_local_id(1) + 8, get_local_id(0)] = 1.0
    t[get_local_id(1) + 8, get_local_id(0) + 8] = 3.0
    barrier(CLK_LOCAL_MEM_FENCE)
    lx = get_local_id(0)
    ly = get_local_id(1)
    row = get_global_id(1)
    acc = np.float32(0)
    for k in range(lo, hi, 3):
        acc += t[ly, k] * t[k, lx] + a[row * 16 + k] + b[k * 16 + lx]
    for k in range(hi, lo):
        acc += t[lx, k]
    out[row * 8 + get_global_id(0)] = acc


@kernel
def grid_passes(a, out, n):
    """Loops over a local tile in every pass of an outer loop: one alike in every pass (each
    adds the counts the last kept, ``steps._grid_slot``), one whose trips and first element
    change from pass to pass (the kept counts must not be reused); an access of each has
    its lanes in one bank (replays)."""
    t = local_array((16, 16), np.float32)
    ly = get_local_id(1)
    lx = get_local_id(0)
    t[ly, lx] = a[get_global_id(1) * 16 + get_global_id(0)]
    t[ly + 8, lx] = 1.0
    t[ly, lx + 8] = 2.0
    t[ly + 8, lx + 8] = 3.0
    barrier(CLK_LOCAL_MEM_FENCE)
    acc = np.float32(0)
    for j in range(n):
        for k in range(3):
            acc += t[ly, k] * t[lx * 2, k]
        barrier(CLK_LOCAL_MEM_FENCE)
        for k in range(j + 1):
            acc += t[ly, k + j] * t[lx * 2, k]
        barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(1) * 16 + get_global_id(0)] = acc


@kernel
def row_steps(a, out):
    """Global runs across rows of a 2-D group: rows that overlap, descend, touch, and lie
    apart (the whole rows of a sub-group are counted as segments only when they ascend
    without overlapping)."""
    lx = get_local_id(0)
    ly = get_local_id(1)
    g = get_group_id(0)
    v = a[ly * 4 + lx]
    v += a[(7 - ly) * 8 + lx]
    v += a[ly * 8 + lx]
    out[g * 128 + ly * 16 + lx] = v


@kernel
def local_strides(x, out):
    """Local lane runs whose sub-groups do and do not share banks: two lanes per bank
    (every second float), two lanes per word (int16), two words per lane (float64)."""
    lid = get_local_id(0)
    i = get_global_id(0)
    t = local_array(128, np.float32)
    h = local_array(64, np.int16)
    d = local_array(64, np.float64)
    t[lid * 2] = x[i]
    t[lid * 2 + 1] = 1.0
    h[lid] = lid
    d[lid] = 2.0
    barrier(CLK_LOCAL_MEM_FENCE)
    out[i] = t[lid * 2] + t[lid * 2 + 1] + h[lid] + d[lid]


@kernel
def late_lanes(x, y):
    """Runs that start past lane 0 and end before the group's last lane, in global memory
    and (past the first sub-group) in local memory."""
    lid = get_local_id(0)
    i = get_global_id(0)
    t = local_array(64, np.float32)
    t[lid] = 0.0
    if lid >= 3 and lid < 45:
        y[i] = x[i] * 2.0
    if lid >= 35:
        t[lid] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[i] += t[lid]


@kernel
def odd_halves(out):
    """int16 lanes 42 bytes apart from byte 2: at a sub-group of 4 their words span 32
    banks from the first lane's offset in its word, 31 from a word's start."""
    lid = get_local_id(0)
    h = local_array(256, np.int16)
    h[lid * 21 + 1] = lid
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = h[lid * 21 + 1]


def _patterns_args(n=200):
    rng = np.random.default_rng(3)
    return (rng.standard_normal(n, dtype=np.float32), np.zeros(4 * n, np.float32), np.int32(n))


CASES = {
    "patterns": lambda: (patterns, (200,), (40,), _patterns_args()),
    "patterns_80": lambda: (patterns, (240,), (80,), _patterns_args(240)),
    "patterns_partial": lambda: (patterns, (220,), (40,), _patterns_args(220)),
    "early_exit": lambda: (early_exit, (32,), (8,),
                           (np.arange(32, dtype=np.float32), np.zeros(32, np.float32),
                            np.int32(32))),
    "two_d": lambda: (two_d, (16, 8), (8, 8), (np.arange(64, dtype=np.float32),
                                                np.zeros(128, np.float32))),
    "tile_partial": lambda: (tile_copy, (12, 16), (8, 8), (np.arange(192, dtype=np.float32),
                                                           np.zeros(192, np.float32),
                                                           np.int32(12))),
    "row_steps": lambda: (row_steps, (16, 8), (8, 8), (np.arange(64, dtype=np.float32),
                                                        np.zeros(256, np.float32))),
    "local_strides": lambda: (local_strides, (128,), (64,),
                              (np.arange(128, dtype=np.float32), np.zeros(128, np.float32))),
    "late_lanes": lambda: (late_lanes, (128,), (64,),
                           (np.arange(128, dtype=np.float32), np.zeros(128, np.float32))),
    # groups one lane wide and one lane high at the ends (a 9 x 9 range of 8 x 8 groups)
    "tile_thin": lambda: (tile_copy, (9, 9), (8, 8), (np.arange(81, dtype=np.float32),
                                                       np.zeros(81, np.float32), np.int32(9))),
    "guarded": lambda: (guarded_tile, (16, 8), (8, 8), (np.arange(128, dtype=np.float32),
                                                         np.zeros(128, np.float32))),
    "grid_loops": lambda: (grid_loops, (8, 16), (8, 8), (np.arange(256, dtype=np.float32),
                                                          np.ones(256, np.float32),
                                                          np.zeros(128, np.float32),
                                                          np.int64(2), np.int64(13))),
    "grid_passes": lambda: (grid_passes, (16, 16), (8, 8), (np.arange(256, dtype=np.float32),
                                                            np.zeros(256, np.float32),
                                                            np.int64(7))),
    "gemv": lambda: tk.gemv_case(8, 256)[:4],
    "matmul": lambda: tk.matmul_case(48)[:4],
    "copy": lambda: tk.copy_case(1000, 64)[:4],
}
# How many accesses each case records as lane runs (the rest by lane); of those, how many
# a 2-D region proven in range writes at once after its lane loops (``on_lane_grid``).
RUNS = {"patterns": 13, "patterns_80": 13, "patterns_partial": 13, "early_exit": 4, "two_d": 4,
        "tile_partial": 4, "tile_thin": 4, "guarded": 5, "grid_loops": 6, "row_steps": 4,
        "local_strides": 10, "late_lanes": 8, "gemv": 6, "copy": 2, "matmul": 5,
        "grid_passes": 6}
GRID = {"grid_loops": 1, "guarded": 2, "two_d": 2, "tile_partial": 2, "tile_thin": 2,
        "row_steps": 4, "matmul": 5, "grid_passes": 1}
# and how many accesses of loops in such regions it stages for the group (``_grid_loop``)
GRID_LOOPS = {"grid_loops": 5, "matmul": 2, "grid_passes": 4}


@pytest.fixture
def fresh(monkeypatch, request):
    """Compile afresh (the hooks run) and list the accesses recorded as lane runs. The key
    names the test: two cases of one kernel at one group size share a compiled module."""
    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, "lanes", os.getpid(), request.node.name))
    seen = []
    record = tr.TrafficInstrument._record_lanes

    def spy(self, out, event, *args):
        codes = record(self, out, event, *args)
        if codes is not None:
            # a region run lane-major keeps its usual form beside it: two emissions
            seen.append((event.buffer, event.kind, event.site.line, event.site.id))
        return codes

    monkeypatch.setattr(tr.TrafficInstrument, "_record_lanes", spy)
    grid_run = tr.TrafficInstrument._grid_run

    def grid_spy(self, out, event, *args):
        run = grid_run(self, out, event, *args)
        if run is not None:
            seen.append(("grid", event.site.id))
        return run

    monkeypatch.setattr(tr.TrafficInstrument, "_grid_run", grid_spy)
    grid_loop = tr.TrafficInstrument._grid_loop

    def grid_loop_spy(self, out, event, *args):
        seen.append(("grid loop", event.site.id))
        return grid_loop(self, out, event, *args)

    monkeypatch.setattr(tr.TrafficInstrument, "_grid_loop", grid_loop_spy)
    return seen


def _report(case: str, lane_runs: bool, jit: bool, monkeypatch, **options):
    monkeypatch.setattr(tr.TrafficInstrument, "lane_runs", lane_runs)
    kern, global_size, local_size, args = CASES[case]()
    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    result = clsim.run(kern, global_size, local_size, arrays, traffic=True, jit=jit, **options)
    return result.traffic, [a for a in arrays if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_lane_runs_give_the_per_lane_report(case, fresh, monkeypatch):
    """Same report, same outputs; the eligible accesses were recorded as lane runs. The
    per-lane reference runs as plain Python (the same generated code, less than a second where
    a compile costs seconds): the compiled lane runs are checked against it."""
    by_lane, out_a = _report(case, False, False, monkeypatch)
    assert fresh == []
    by_run, out_b = _report(case, True, True, monkeypatch)
    assert by_run == by_lane
    grid = {entry for entry in fresh if entry[0] == "grid"}
    grid_loops = {entry for entry in fresh if entry[0] == "grid loop"}
    assert len(set(fresh) - grid - grid_loops) == RUNS[case], fresh
    assert len(grid) == GRID.get(case, 0)
    assert len(grid_loops) == GRID_LOOPS.get(case, 0)
    for a, b in zip(out_a, out_b, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("simd", [4, 16])
def test_lane_runs_at_other_simd_widths(simd, fresh, monkeypatch):
    """Runs cross sub-group edges anywhere: the split per sub-group matches at any width."""
    by_lane, _ = _report("patterns", False, False, monkeypatch, simd_width=simd)
    by_run, _ = _report("patterns", True, True, monkeypatch, simd_width=simd)
    assert by_run == by_lane


@pytest.mark.parametrize("case", ["grid_loops", "matmul"])
def test_grid_loops_at_a_simd_width_across_rows(case, fresh, monkeypatch):
    """Sub-groups of 4 lanes start mid-row of an 8-wide group: a loop staged for the group
    gives each sub-group's lanes from its first lane's place in its row."""
    by_lane, _ = _report(case, False, False, monkeypatch, simd_width=4)
    by_run, _ = _report(case, True, True, monkeypatch, simd_width=4)
    assert by_run == by_lane
    assert any(entry[0] == "grid loop" for entry in fresh)


def test_lane_runs_of_lanes_between_words(fresh, monkeypatch):
    """Lanes apart by no whole number of words: their sub-groups' offsets in a word differ,
    so a run is counted at once only when any offset keeps it within the banks."""
    CASES["odd_halves"] = lambda: (odd_halves, (16,), (8,), (np.zeros(16, np.float32),))
    try:
        by_lane, _ = _report("odd_halves", False, False, monkeypatch, simd_width=4)
        by_run, _ = _report("odd_halves", True, True, monkeypatch, simd_width=4)
    finally:
        del CASES["odd_halves"]
    assert by_run == by_lane
    assert by_lane.totals["local_bank_conflicts"] > 0


def test_lane_runs_without_jit(fresh, monkeypatch):
    """The no-JIT mode runs the same generated code as Python: same report."""
    by_lane, _ = _report("early_exit", False, False, monkeypatch)
    by_run, _ = _report("early_exit", True, False, monkeypatch)
    assert len(set(fresh)) == RUNS["early_exit"]
    assert by_run == by_lane


def test_lane_runs_beside_the_checks(fresh, monkeypatch):
    """With the race checks wrapping the indices first, the report is the one traffic alone
    gives, and no finding."""
    kern, global_size, local_size, args = CASES["patterns"]()
    alone = clsim.run(kern, global_size, local_size, [a.copy() if isinstance(a, np.ndarray)
                                                      else a for a in args],
                      traffic=True).traffic
    checked = clsim.run(kern, global_size, local_size, list(args), traffic=True, checks="all")
    assert checked.traffic == alone and checked.findings == []


def _feed(indices, row):
    """``recorders.lane`` (then ``record`` or ``lanes``) over lanes 0..n-1 at ``indices``
    (rows of ``row`` lanes; None: the lane does not run the access), then the run staged as
    after the pass and a run given up moved to the logs by the step counter. Returns the run
    (first, end, origin, stride, row stride: bytes once staged, 4-byte elements) and each
    lane's entries in the logs."""

    from clsim.traffic import layout as lay
    from clsim.traffic import recorders, steps

    nl, cap, x = len(indices), 8, 64
    T = np.zeros(x + lay.LANE_COLS + 2 * nl + 1, np.int64)
    c0, p0, flag = x + lay.LANE_COLS, x + lay.LANE_COLS + nl, x + lay.LANE_COLS + 2 * nl
    T[lay.C_NL], T[lay.C_NSLOTS], T[lay.C_CAP], T[lay.C_LANES0] = nl, 1, cap, x
    T[lay.C_CNT0], T[lay.C_PEND0], T[x + lay.L_END] = c0, p0, -1
    L = np.zeros(2 * cap * nl * 8, np.int64)
    for lid, index in enumerate(indices):
        if index is not None:
            placed = recorders.lane(T, x, lid, lid % row, lid // row, index)
            if placed == 0:
                recorders.record(T, L, c0, p0, cap, nl, 0, lid, index * 4)
            elif placed < 0:
                recorders.lanes(T, L, c0, p0, cap, nl, 0, x, lid, lid % row, lid // row, row,
                                index, 0, 4)
    recorders.stage_lanes(T, x, flag)
    if T[flag] == lay.STAGED_GIVEN_UP:
        steps._given_up(T, L, 0)
    return tuple(T[x:x + 5]), T[c0:c0 + nl]


def test_a_2d_tile_stays_one_run():
    """A 4 x 4 group reading a tile of a 10-wide matrix (``100 + 2 * lx + 10 * ly``) is one
    run: the second lane sets the stride, the first lane of row 1 the row stride, and no lane
    reaches its log."""
    tile = [100 + 2 * (i % 4) + 10 * (i // 4) for i in range(16)]
    run, logged = _feed(tile, 4)
    assert run == (0, 16, 400, 8, 40) and not logged.any()
    run, logged = _feed([None, None, *tile[2:]], 4)  # starting mid-row (a guard lid >= 2)
    assert run == (2, 16, 416, 8, 40) and not logged.any()
    run, logged = _feed([3 * i + 5 for i in range(16)], 16)  # 1-D: one row of all the lanes
    assert run == (0, 16, 20, 12, 0) and not logged.any()


def test_a_broken_run_moves_its_lanes_to_the_logs():
    """A lane off the run gives it up: every lane that ran the access has its one entry."""
    tile = [100 + 2 * (i % 4) + 10 * (i // 4) for i in range(16)]
    tile[6] = 7
    _, logged = _feed(tile, 4)
    assert logged.tolist() == [1] * 16  # lanes 0-5 moved by the step counter, 6.. recorded
    _, logged = _feed([*tile[:4], None, *tile[5:]], 4)  # lane 4 skipped: lanes 0-3 moved
    assert logged.tolist() == [1] * 4 + [0] + [1] * 11
    _, logged = _feed([100 + 2 * (i % 4) + 10 * (i // 4) for i in range(16)], 16)
    assert logged.tolist() == [1] * 16  # rows of 16 lanes: lane 4 breaks the 1-D run
