"""Accesses recorded once per work-item loop give exactly the per-access figures.

What it proves: for loops whose accesses are affine in the loop variable (strided, reversed,
nested, empty, run once, 2-D local arrays, ``+=`` into a buffer) the traffic report with
per-loop recording (``TrafficInstrument.per_loop``, the default) equals the report with one
record per access, and those accesses really were recorded per loop; loops it must not
touch (a ``break``, an index that is not affine, a conditional access) are recorded per
access and still agree.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel, local_array
from clsim.traffic import instrument as tr

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import traffic_kernels as tk


@kernel
def strided(x, y, n, step):
    i = get_global_id(0)
    acc = 0.0
    for c in range(i, n, step):  # strided, like a GEMV's rows
        acc += x[c]
    for c in range(n - 1 - i, -1, -step):  # reversed
        acc += x[c] * 2.0
    for c in range(i, i):  # never runs
        acc += x[c]
    for c in range(i, i + 1):  # runs once
        acc += x[c + 1]
    for r in range(i, i + 3):  # nested: the inner loop's records go after each of its runs
        for c in range(r, r + 4):
            acc += x[c * 2 + r]
        y[64 + i * 2 + r] += acc  # a load and a store of the outer loop
    for r in range(3):
        acc += x[r * 8 + i]  # 32-bit arithmetic on the variable (might wrap): per access
    y[i + 200] = acc


@kernel
def tiles(a, out):
    lx = get_local_id(0)
    ly = get_local_id(1)
    t = local_array((8, 8), np.float32)
    t[ly, lx] = a[ly * 8 + lx]
    barrier(CLK_LOCAL_MEM_FENCE)
    acc = 0.0
    for k in range(8):
        acc += t[ly, k] * t[k, lx]  # broadcast rows, conflict-free columns
        t[k, lx] = acc  # a store with a varying value
    out[ly * 8 + lx] = acc


@kernel
def not_affine(x, y, n):
    i = get_global_id(0)
    acc = 0.0
    for c in range(n):
        acc += x[(c * c) % n]  # not affine
        acc += x[c * 2 - c]  # 32-bit arithmetic on the variable
        if c > i:
            acc += x[c]  # conditional
    for c in range(n):
        if acc > 1e30:
            break
        acc += x[c]  # a loop with a break
    y[i] = acc


def _strided_args():
    rng = np.random.default_rng(1)
    return (rng.standard_normal(256, dtype=np.float32), np.zeros(300, np.float32),
            np.int32(64), np.int32(5))


def _tiles_args():
    return (np.arange(64, dtype=np.float32), np.zeros(64, np.float32))


CASES = {
    "strided": lambda: (strided, (32,), (16,), _strided_args()),
    "tiles": lambda: (tiles, (8, 8), (8, 8), _tiles_args()),
    "not_affine": lambda: (not_affine, (32,), (8,),
                           (np.ones(16, np.float32), np.zeros(32, np.float32), np.int32(16))),
    "gemv": lambda: tk.gemv_case(8, 256)[:4],
    "matmul": lambda: tk.matmul_case(32)[:4],
}
# How many accesses each case records once per loop.
DEFERRED = {"strided": 7, "tiles": 3, "not_affine": 0, "gemv": 2, "matmul": 2}


@pytest.fixture
def fresh(monkeypatch):
    """Compile afresh (the hooks run) and count the accesses recorded per loop."""
    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, "test", os.getpid()))
    seen = []
    defer = tr.TrafficInstrument._defer

    def spy(self, event, out, slot):
        codes = defer(self, event, out, slot)
        if codes is not None:
            # a region run lane-major keeps its usual form beside it: two emissions
            seen.append((event.buffer, event.kind, event.site.line, event.site.id))
        return codes

    monkeypatch.setattr(tr.TrafficInstrument, "_defer", spy)
    return seen


def _report(case: str, per_loop: bool, jit: bool, monkeypatch):
    monkeypatch.setattr(tr.TrafficInstrument, "per_loop", per_loop)
    kern, global_size, local_size, args = CASES[case]()
    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    result = clsim.run(kern, global_size, local_size, arrays, traffic=True, jit=jit)
    return result.traffic, [a for a in arrays if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_loop_recording_gives_the_per_access_report(case, fresh, monkeypatch):
    """Same report, same outputs; the eligible accesses were recorded per loop. The
    per-access reference runs as plain Python (the same generated code, less than a second
    where a compile costs seconds): the compiled per-loop records are checked against it."""
    per_access, out_a = _report(case, False, False, monkeypatch)
    assert fresh == []
    per_loop, out_b = _report(case, True, True, monkeypatch)
    assert len(set(fresh)) == DEFERRED[case], fresh
    assert per_loop == per_access
    for a, b in zip(out_a, out_b, strict=True):
        np.testing.assert_array_equal(a, b)


def test_per_loop_recording_without_jit(fresh, monkeypatch):
    """The no-JIT mode runs the same generated code as Python: same report."""
    per_access, _ = _report("strided", False, False, monkeypatch)
    per_loop, _ = _report("strided", True, False, monkeypatch)
    assert len(set(fresh)) == DEFERRED["strided"]
    assert per_loop == per_access


def test_per_loop_recording_beside_the_checks(fresh):
    """With the race checks wrapping the same indices first, the loop's accesses are still
    recorded once per loop and the report is the one traffic alone gives; no finding."""
    kern, global_size, local_size, args = tk.gemv_case(16, 512)[:4]
    alone = clsim.run(kern, global_size, local_size, args, traffic=True).traffic
    fresh.clear()
    checked = clsim.run(kern, global_size, local_size, args, traffic=True, checks="all")
    assert len(set(fresh)) == DEFERRED["gemv"]
    assert checked.traffic == alone and checked.findings == []


@kernel
def guarded_locals(x, y, n):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    t[lid] = x[lid]
    barrier(CLK_LOCAL_MEM_FENCE)
    v = t[lid + 1] if lid < 15 else t[0]  # conditional operands: recorded by call
    active = 16
    while active > 1:  # a tree reduction: accesses under if, recorded without a call
        half_ = active // 2
        if lid < half_:
            t[lid] = t[lid] + t[(lid + half_) % n]  # in range: no uninitialised local read
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_
    y[lid] = t[0] + v + t[(lid * 3) % 16]


def _inline_report(case, inline: bool, monkeypatch, jit=True):
    monkeypatch.setattr(tr.TrafficInstrument, "inline_local", inline)
    monkeypatch.setattr(tr.TrafficInstrument, "lane_runs", False)  # they come first
    kern, global_size, local_size, args = case
    arrays = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    result = clsim.run(kern, global_size, local_size, arrays, traffic=True, jit=jit)
    return result.traffic, [a for a in arrays if isinstance(a, np.ndarray)]


@pytest.mark.parametrize("case", ["guarded_locals", "softmax"])
def test_local_recording_without_a_call_gives_the_recorder_report(case, monkeypatch):
    """Local accesses recorded by stores in the kernel body (``_record_inline``) give the
    report and outputs of the recorder call ``_tr_l``, and some were recorded that way."""
    from kernels_py.softmax import SPEC

    if case == "softmax":
        shape = {"rows": 4, "cols": 256}
        inputs = SPEC.make_inputs(np.random.default_rng(0), shape)
        launch = SPEC.launch(inputs, shape, (64,))
        launch_case = (SPEC.kernel, launch.global_size, launch.local_size, launch.args)
    else:
        launch_case = (guarded_locals, (32,), (16,),
                       (np.arange(32, dtype=np.float32), np.zeros(32, np.float32),
                        np.int32(16)))
    monkeypatch.setattr(tr, "VERSION", (tr.VERSION, "inline", os.getpid()))
    inlined = []
    record = tr.TrafficInstrument._record_inline

    def spy(self, *args):
        codes = record(self, *args)
        inlined.append(codes is not None)
        return codes

    monkeypatch.setattr(tr.TrafficInstrument, "_record_inline", spy)
    by_call, out_a = _inline_report(launch_case, False, monkeypatch, jit=False)  # reference
    by_stores, out_b = _inline_report(launch_case, True, monkeypatch)
    assert any(inlined) and not all(inlined), inlined
    assert by_stores == by_call
    for a, b in zip(out_a, out_b, strict=True):
        np.testing.assert_array_equal(a, b)
