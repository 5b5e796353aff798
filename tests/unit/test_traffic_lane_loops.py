"""Strided loops run lane-major under the traffic counter give exactly the usual form's report.

What it proves: with ``TrafficInstrument.lane_loops`` (the default) a region
``for c in range(lid + U, stop, step)`` with a straight-line body, and a region
``if lid < X``, run lane-major as in the default build (clsim/compiler/lane_emit.py), and
with ``lane_blocks`` 1-D lane runs are made after each pass from the lanes' indices
(``recorders.block``); the report (sites, executions, sectors, bank replays, flops,
footprint, DRAM through the caches) and the outputs equal those of the usual forms, with
lanes that run one iteration fewer (a partial last trip), none, or a loop that starts
past ``lid`` (``lid + U``: one more integer operation per work-item), a store loop, a local
array read in the loop, a last group narrower than the others, and lanes that skip an
access or break a run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_GLOBAL_MEM_FENCE,
    CLK_LOCAL_MEM_FENCE,
    barrier,
    fmax,
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
def rows(x, y, ncols, skip):
    """Strided loops over a row: loads, a local array filled and read in loops, a start
    past ``lid``, a store loop; a tree reduction; lanes that skip a store."""
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    base = row * ncols
    t = local_array(1024, np.float32)
    top = -1e30
    for c in range(lid, ncols, wg):
        top = fmax(top, x[base + c])
    t[lid] = top
    barrier(CLK_LOCAL_MEM_FENCE)
    active = wg
    while active > 1:
        half_ = (active + 1) // 2
        if lid < active - half_:
            t[lid] = fmax(t[lid], t[lid + half_])
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_
    top = t[0]
    barrier(CLK_LOCAL_MEM_FENCE)
    for c in range(lid, 1024, wg):
        t[c] = x[c] * 0.5
    barrier(CLK_LOCAL_MEM_FENCE)
    acc = 0.0
    for c in range(lid + skip, ncols, wg):  # starts past lid: U + lid counted per item
        acc += (x[row * ncols + c] - top) * t[c]  # the range check's row * ncols: no flop
    if lid % 3 != 0:
        y[base + lid % ncols] = acc  # lanes skip it: the run is made lane by lane
    barrier(CLK_GLOBAL_MEM_FENCE)
    for c in range(lid, ncols, wg):
        y[base + c] = y[base + c] + acc


def _rows_case(nrows, ncols, wg, skip, short=0):
    """``short``: the last group has that many work-items fewer (a non-uniform range)."""
    x = np.random.default_rng(1).standard_normal(max(nrows * ncols, 1024)).astype(np.float32)
    y = np.zeros(nrows * ncols, np.float32)
    return rows, (nrows * wg - short,), (wg,), (x, y, np.int32(ncols), np.int32(skip))


def _softmax_case(nrows, ncols, wg):
    from kernels_py.softmax import SPEC

    shape = {"rows": nrows, "cols": ncols}
    inputs = SPEC.make_inputs(np.random.default_rng(0), shape)
    launch = SPEC.launch(inputs, shape, (wg,))
    return SPEC.kernel, launch.global_size, launch.local_size, launch.args


CASES = {
    "partial_trip": lambda: _rows_case(3, 1000, 256, 3),  # lanes 232..255 one trip fewer
    "one_trip": lambda: _rows_case(2, 40, 64, 1),  # lanes 40..63 run none
    "no_trip": lambda: _rows_case(2, 5, 64, 7),  # the skipped loop runs for no lane
    "whole_trips": lambda: _rows_case(2, 512, 128, 0),
    "narrow_last_group": lambda: _rows_case(3, 1000, 256, 0, short=56),
    "softmax": lambda: _softmax_case(3, 300, 128),
    "softmax_partial": lambda: _softmax_case(2, 77, 64),
}


@pytest.fixture
def fresh(monkeypatch, request):
    """Compile afresh (the hooks run) and count the strided loops run lane-major."""
    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, request.node.name, os.getpid()))
    seen = []
    hook = tr.TrafficInstrument.on_lane_loop

    def spy(self, event, out):
        if event.start:
            seen.append(event.node.lineno)
        return hook(self, event, out)

    monkeypatch.setattr(tr.TrafficInstrument, "on_lane_loop", spy)
    return seen


def _report(case: str, lanes: bool, monkeypatch, simd=None):
    monkeypatch.setattr(tr.TrafficInstrument, "lane_loops", lanes)
    monkeypatch.setattr(tr.TrafficInstrument, "lane_blocks", lanes)
    kern, global_size, local_size, args = CASES[case]()
    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    options = {} if simd is None else {"simd_width": simd}
    result = clsim.run(kern, global_size, local_size, arrays, traffic=True, **options)
    return result.traffic, [a for a in arrays if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_lane_major_loops_give_the_usual_report(case, fresh, monkeypatch):
    """Same report, same outputs; the strided loops ran lane-major."""
    usual, out_a = _report(case, False, monkeypatch)
    assert fresh == []
    lane_major, out_b = _report(case, True, monkeypatch)
    assert len(fresh) >= (3 if case.startswith("softmax") else 4), fresh
    assert lane_major == usual
    for a, b in zip(out_a, out_b, strict=True):
        np.testing.assert_array_equal(a, b)


@kernel
def prefixes(x, y, n):
    """``if lid < X`` run lane-major: global loads and stores at ``lid + P``, X below the
    group's size and past it."""
    lid = get_local_id(0)
    base = get_group_id(0) * 64
    past = base + 3
    barrier(CLK_GLOBAL_MEM_FENCE)
    if lid < n:
        y[lid + base] = x[lid + past] * 2.0
    barrier(CLK_GLOBAL_MEM_FENCE)
    if lid < 1000:
        y[lid + base] = y[lid + base] + 1.0


def test_lane_major_prefixes_give_the_usual_report(monkeypatch, request):
    """The lanes of ``if lid < X`` make the pass's lane runs at once (``on_lane_prefix``):
    the usual form's report, partial sub-groups and offsets included, at two simd widths."""
    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, request.node.name, os.getpid()))
    seen = []
    hook = tr.TrafficInstrument.on_lane_prefix

    def spy(self, event, out):
        seen.extend(event.offsets.values() if event.start else ())
        return hook(self, event, out)

    monkeypatch.setattr(tr.TrafficInstrument, "on_lane_prefix", spy)
    x = np.arange(140, dtype=np.float32)
    CASES["prefixes"] = lambda: (prefixes, (128,), (64,),
                                 (x, np.zeros(128, np.float32), np.int32(40)))
    try:
        for simd in (None, 16):
            usual, out_a = _report("prefixes", False, monkeypatch, simd)
            assert seen == []
            lane_major, out_b = _report("prefixes", True, monkeypatch, simd)
            assert len(seen) == 4, seen  # the y store and x load, the y load and store
            seen.clear()
            assert lane_major == usual
            for a, b in zip(out_a, out_b, strict=True):
                np.testing.assert_array_equal(a, b)
    finally:
        del CASES["prefixes"]


@kernel
def local_prefixes(x, y, n):
    """``if lid < X`` over local arrays at offsets: float32, float64 (two banks a lane) and
    int16 (two lanes a word)."""
    lid = get_local_id(0)
    i = get_global_id(0)
    f = local_array(80, np.float32)
    d = local_array(80, np.float64)
    h = local_array(80, np.int16)
    f[lid] = x[i]
    d[lid] = 1.0
    h[lid] = 2
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid < n:
        f[lid] = f[lid + 3] + f[lid + 16] + d[lid + 1] + h[lid + 5]
        d[lid] = d[lid] * 2.0
        h[lid] = h[lid + 1]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[i] = f[lid] + d[lid] + h[lid]


@pytest.mark.parametrize("simd", [None, 16, 64])
def test_local_prefixes_counted_at_once(simd, monkeypatch, request):
    """A local access of ``if lid < X`` run lane-major whose sub-groups cannot share a bank
    is counted where it runs (``_prefix_counted``): the usual form's report. float32 and
    int16 at simd 16 and 32 and float64 at 16 are; float64 at 32 and all at 64 (a
    sub-group past the banks) keep their lane runs."""
    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, request.node.name, os.getpid()))
    counted = []
    hook = tr.TrafficInstrument._prefix_counted

    def spy(self, out, event, slot):
        code = hook(self, out, event, slot)
        counted.extend([(event.buffer, event.kind)] if code is not None else [])
        return code

    monkeypatch.setattr(tr.TrafficInstrument, "_prefix_counted", spy)
    CASES["local_prefixes"] = lambda: (local_prefixes, (128,), (64,),
                                       (np.arange(128, dtype=np.float32),
                                        np.zeros(128, np.float32), np.int32(40)))
    try:
        usual, out_a = _report("local_prefixes", False, monkeypatch, simd)
        lane_major, out_b = _report("local_prefixes", True, monkeypatch, simd)
    finally:
        del CASES["local_prefixes"]
    assert lane_major == usual
    assert (usual.totals["local_bank_conflicts"] > 0) == (simd != 16)  # float64 at 32, 64
    np.testing.assert_array_equal(out_a[-1], out_b[-1])
    expected = {None: {("f", "load"), ("f", "store"), ("h", "load"), ("h", "store")},
                16: {("f", "load"), ("f", "store"), ("d", "load"), ("d", "store"),
                     ("h", "load"), ("h", "store")}, 64: set()}[simd]
    assert set(counted) == expected


def test_lane_major_loops_at_another_simd_width(fresh, monkeypatch):
    """Steps of 16 lanes: a partial trip's edge falls inside other sub-groups."""
    usual, _ = _report("partial_trip", False, monkeypatch, simd=16)
    lane_major, _ = _report("partial_trip", True, monkeypatch, simd=16)
    assert lane_major == usual


def test_a_failed_range_check_runs_the_usual_form(fresh, monkeypatch):
    """An index past the end fails the region's range check: the usual form runs, records
    as it always does, and reports the first failing work-item."""
    monkeypatch.setattr(tr.TrafficInstrument, "lane_loops", True)
    kern, global_size, local_size, args = CASES["whole_trips"]()
    x, y, ncols, skip = args
    with pytest.raises(clsim.SimulationError, match=r"x\[1000\]"):
        clsim.run(kern, global_size, local_size, (x[:1000], y, ncols, skip), traffic=True)


@kernel
def bump(y, n, narrow):
    """Groups from ``narrow`` on step 1 through their row: lanes share elements, which a
    lane-major store loop refuses at run time."""
    row = get_group_id(0)
    lid = get_local_id(0)
    step = get_local_size(0) if row < narrow else 1
    base = row * n
    for c in range(lid, n, step):
        y[base + c] = y[base + c] + 1.0


def test_a_refused_region_runs_the_launch_again_from_the_buffers_before_it(fresh,
                                                                            monkeypatch):
    """The third group's store loop fails its step check after two groups stored lane-major:
    the launch runs again with the usual forms, from ``y`` as it was (``undo_copies``: the
    kernel reads ``y``), and reports what the usual forms alone report."""
    results = []
    for lanes in (False, True):
        monkeypatch.setattr(tr.TrafficInstrument, "lane_loops", lanes)
        y = np.zeros(4 * 40, np.float32)
        result = clsim.run(bump, (4 * 32,), (32,), (y, np.int32(40), np.int32(2)),
                           traffic=True)
        results.append((result.traffic, y))
    assert len(fresh) >= 1
    (usual, y_usual), (replayed, y_replayed) = results
    np.testing.assert_array_equal(y_replayed, y_usual)
    assert y_usual[:80].tolist() == [1.0] * 80 and y_usual[80] == 1.0 and y_usual[119] == 32.0
    assert replayed == usual


@kernel
def scaled_rows(a, b, k):
    """A 2-D region whose proof bounds ``gy * (k * 2)``: the proof's ``k * 2`` is the
    simulator's arithmetic, not the kernel's."""
    gx = get_global_id(0)
    gy = get_global_id(1)
    b[gy * (k * 2) + gx] = a[gy * (k * 2) + gx] * 2.0


def _two_d_case(name):
    if name == "matmul":
        return tk.matmul_case(48)[:4]
    a = np.arange(8 * 32, dtype=np.float32)
    return scaled_rows, (16, 8), (8, 4), (a, np.zeros_like(a), np.int32(16))


@pytest.mark.parametrize("name", ["matmul", "scaled_rows"])
def test_proven_two_d_regions_give_the_usual_report(name, monkeypatch, request):
    """2-D regions whose indices are proven in range run unchecked under the traffic
    counter too (clsim/compiler/proven_emit.py), in work-item order: same report and
    outputs as the usual form's."""
    from clsim.compiler import proven_emit

    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, request.node.name, os.getpid()))
    proven = []
    region = proven_emit.ProvenFlow.proven_region

    def spy(self, *args):
        proven.append(1)
        return region(self, *args)

    monkeypatch.setattr(proven_emit.ProvenFlow, "proven_region", spy)
    reports = []
    for lanes in (False, True):
        monkeypatch.setattr(tr.TrafficInstrument, "lane_loops", lanes)
        kern, global_size, local_size, args = _two_d_case(name)
        arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        result = clsim.run(kern, global_size, local_size, arrays, traffic=True)
        reports.append((result.traffic, [a for a in arrays if isinstance(a, np.ndarray)]))
        assert bool(proven) == lanes
    (usual, out_a), (unchecked, out_b) = reports
    assert unchecked == usual
    for a, b in zip(out_a, out_b, strict=True):
        np.testing.assert_array_equal(a, b)
