"""Traffic counting inside simulated launches: ``clsim.run(..., traffic=True)``.

Every expected number is computed by hand from the rules of docs/traffic-model.md: a step is
the lanes of one sub-group (default 32) running one access site together; sectors are 32
bytes, lines 128; local memory has 32 banks of 4 bytes unless a profile says otherwise.
Buffers from numpy are aligned far beyond 128 bytes, so ``a[i]`` for lanes 0..31 starts a
line.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    INFINITY,
    barrier,
    exp,
    fma,
    fmax,
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
    sqrt,
    vload4,
    vstore4,
)
from clsim.traffic import TrafficReport

F32 = np.float32


def site(report: TrafficReport, buffer: str, kind: str) -> dict:
    """The one site record of ``buffer``/``kind`` (the kernels below have one each)."""
    found = [s for s in report.sites if s["buffer"] == buffer and s["kind"] == kind]
    assert len(found) == 1, found
    return found[0]


# ---------------------------------------------------------------- coalescing


@kernel
def strided_copy(a, out, stride):
    i = get_global_id(0)
    out[i] = a[i * stride]


@pytest.mark.parametrize(("stride", "sectors", "lines"), [(1, 4, 1), (2, 8, 2), (32, 32, 32)])
def test_strided_loads_per_step(stride, sectors, lines):
    """32 lanes loading float32 a[stride*i] touch 4 sectors per step (stride 1), 8 (stride 2),
    32 (stride 32); lines 1, 2, 32. 128 work-items in groups of 64 make 4 steps."""
    n = 128
    a = np.arange(n * stride, dtype=F32)
    out = np.zeros(n, F32)
    r = clsim.run(strided_copy, (n,), (64,), (a, out, np.int32(stride)), traffic=True)
    load = site(r.traffic, "a", "load")
    assert load["steps"] == 4
    assert load["executions"] == n and load["bytes"] == 4 * n
    assert load["sectors"] == 4 * sectors and load["lines"] == 4 * lines
    assert load["efficiency"] == pytest.approx(4 / sectors)
    store = site(r.traffic, "out", "store")
    assert store["sectors"] == 4 * 4 and store["space"] == "global"
    np.testing.assert_array_equal(out, a[::stride][:n])


def test_subgroup_size_and_simd_width_shape_steps():
    """Steps follow the run's sub-group size (16 lanes: 2 sectors per contiguous step), and
    ``simd_width`` overrides it for counting only (8 lanes: 1 sector per step)."""
    n = 64
    a = np.arange(n, dtype=F32)
    out = np.zeros(n, F32)
    args = (a, out, np.int32(1))
    r16 = clsim.run(strided_copy, (n,), (64,), args, traffic=True, subgroup_size=16)
    assert r16.traffic.simd_width == 16
    assert site(r16.traffic, "a", "load")["steps"] == 4
    assert site(r16.traffic, "a", "load")["sectors"] == 8
    r8 = clsim.run(strided_copy, (n,), (64,), args, traffic=True, simd_width=8)
    assert site(r8.traffic, "a", "load")["steps"] == 8
    assert site(r8.traffic, "a", "load")["sectors"] == 8


@kernel
def guarded_copy(a, out, n):
    i = get_global_id(0)
    if i < n:
        out[i] = a[i]


def test_inactive_lanes_do_not_count():
    """n = 40 in one group of 64: lanes 40..63 skip the access. Step 1 has 32 lanes (4
    sectors), step 2 has 8 lanes (32 bytes: 1 sector); 40 executions, 160 bytes."""
    a = np.arange(64, dtype=F32)
    out = np.zeros(64, F32)
    r = clsim.run(guarded_copy, (64,), (64,), (a, out, np.int32(40)), traffic=True)
    load = site(r.traffic, "a", "load")
    assert (load["executions"], load["bytes"], load["steps"], load["sectors"]) == (40, 160, 2, 5)


# ---------------------------------------------------------------- vectors


@kernel
def copy_vload4(a, out):
    i = get_global_id(0)
    v = vload4(i, a)
    vstore4(v, i, out)


@kernel
def copy_scalar4(a, out):
    i = get_global_id(0)
    x0 = a[4 * i]
    x1 = a[4 * i + 1]
    x2 = a[4 * i + 2]
    x3 = a[4 * i + 3]
    out[4 * i] = x0 + x1 + x2 + x3


def test_vload4_is_one_wide_access():
    """32 lanes of vload4: one access of 16 bytes per lane, 512 contiguous bytes: 16 sectors,
    4 lines, 100 % efficient. The vstore4 is the same on the store side."""
    a = np.arange(128, dtype=F32)
    out = np.zeros(128, F32)
    r = clsim.run(copy_vload4, (32,), (32,), (a, out), traffic=True)
    load = site(r.traffic, "a", "load")
    assert (load["executions"], load["bytes"], load["sectors"], load["lines"]) == (32, 512, 16, 4)
    assert load["efficiency"] == 1.0
    store = site(r.traffic, "out", "store")
    assert (store["bytes"], store["sectors"]) == (512, 16)
    np.testing.assert_array_equal(out, a)


def test_scalar_loads_of_four_floats_cost_four_times_the_sectors():
    """The same 512 bytes as four scalar loads a[4i+k]: each site's step spans 512 bytes with a
    16-byte stride, so 16 sectors for 128 bytes; 64 sectors in all (efficiency 25 %)."""
    a = np.arange(128, dtype=F32)
    out = np.zeros(128, F32)
    r = clsim.run(copy_scalar4, (32,), (32,), (a, out), traffic=True)
    loads = [s for s in r.traffic.sites if s["buffer"] == "a"]
    assert len(loads) == 4
    assert all(s["bytes"] == 128 and s["sectors"] == 16 for s in loads)
    assert r.traffic.totals["global_load_sectors"] == 64
    assert r.traffic.totals["global_load_bytes"] == 512


# ---------------------------------------------------------------- local memory banks


@kernel
def transpose_tile(src, dst, width):
    lx = get_local_id(0)
    ly = get_local_id(1)
    gx = get_group_id(0) * 32
    gy = get_group_id(1) * 32
    tile = local_array((32, 32), np.float32)
    tile[ly, lx] = src[(gy + ly) * width + gx + lx]
    barrier(CLK_LOCAL_MEM_FENCE)
    dst[(gx + ly) * width + gy + lx] = tile[lx, ly]


@kernel
def transpose_tile_padded(src, dst, width):
    lx = get_local_id(0)
    ly = get_local_id(1)
    gx = get_group_id(0) * 32
    gy = get_group_id(1) * 32
    tile = local_array((32, 33), np.float32)
    tile[ly, lx] = src[(gy + ly) * width + gx + lx]
    barrier(CLK_LOCAL_MEM_FENCE)
    dst[(gx + ly) * width + gy + lx] = tile[lx, ly]


def _run_transpose(pad: int, **options):
    kern = transpose_tile_padded if pad else transpose_tile
    w = 64
    src = np.arange(w * w, dtype=F32)
    dst = np.zeros(w * w, F32)
    r = clsim.run(kern, (w, w), (32, 32), (src, dst, np.int32(w)), traffic=True, **options)
    np.testing.assert_array_equal(dst.reshape(w, w), src.reshape(w, w).T)
    return r.traffic


def test_transpose_bank_conflicts_unpadded_and_padded():
    """A 32x32 tile: one sub-group is one row ly. Reading tile[lx, ly] puts 32 distinct words in
    bank ly: 31 replays per step; with the +1 pad the words spread over all banks: 0. The
    store tile[ly, lx] is conflict-free either way. 64x64 has 4 groups x 32 steps."""
    steps = 4 * 32
    plain = _run_transpose(0)
    padded = _run_transpose(1)
    assert site(plain, "tile", "load")["steps"] == steps
    assert site(plain, "tile", "load")["bank_conflicts"] == 31 * steps
    assert site(padded, "tile", "load")["bank_conflicts"] == 0
    assert site(plain, "tile", "store")["bank_conflicts"] == 0
    assert site(padded, "tile", "store")["bank_conflicts"] == 0
    assert plain.totals["local_bank_conflicts"] == 31 * steps
    assert plain.totals["local_load_bytes"] == plain.totals["local_store_bytes"] == 4 * 64 * 64
    assert site(plain, "tile", "load")["sectors"] == 0  # local memory has no sectors


def test_profile_sets_banks_and_sector_size():
    """intel-xe has 16 banks: the padded tile read maps lanes lx and lx+16 of a row to one bank
    (words 33*lx + ly), 1 replay per step. The cpu profile is not banked (0 replays even
    unpadded) and fetches 64-byte sectors (2 per contiguous 32-float row)."""
    xe = _run_transpose(1, profile="intel-xe")
    assert site(xe, "tile", "load")["bank_conflicts"] == 4 * 32
    cpu = _run_transpose(0, profile="cpu")
    assert site(cpu, "tile", "load")["bank_conflicts"] == 0
    assert site(cpu, "src", "load")["sectors"] == 4 * 32 * 2
    assert cpu.sector_bytes == 64


@kernel
def broadcast_local(out):
    lid = get_local_id(0)
    scratch = local_array(128, np.float32)
    scratch[lid] = lid
    scratch[lid + 64] = lid
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = scratch[0] + scratch[2 * lid]


def test_broadcast_is_free_and_stride_two_conflicts():
    """All lanes reading scratch[0] is a broadcast: 0 replays. scratch[2*lid] puts two distinct
    words in each of 16 banks: 1 replay per step (2 steps for 64 lanes)."""
    out = np.zeros(64, F32)
    r = clsim.run(broadcast_local, (64,), (64,), (out,), traffic=True)
    loads = [s for s in r.traffic.sites if s["buffer"] == "scratch" and s["kind"] == "load"]
    assert len(loads) == 1  # both loads share the line: one record
    assert loads[0]["executions"] == 128 and loads[0]["steps"] == 4
    assert loads[0]["bank_conflicts"] == 2


# ---------------------------------------------------------------- footprint and flops


@kernel
def stencil3(a, out, n):
    i = get_global_id(0)
    if i < n:
        out[i] = a[(i + n - 1) % n] + a[i] + a[(i + 1) % n]


def test_unique_footprint_of_triple_reads():
    """A periodic 3-point stencil reads every float of a three times: 12n bytes requested, 4n
    unique; out is written once: 4n unique write bytes."""
    n = 200
    a = np.arange(n, dtype=F32)
    out = np.zeros(n, F32)
    r = clsim.run(stencil3, (256,), (64,), (a, out, np.int32(n)), traffic=True)
    t = r.traffic.totals
    assert t["global_load_bytes"] == 12 * n
    assert r.traffic.unique_read_bytes == {"a": 4 * n, "out": 0}
    assert t["unique_read_bytes"] == 4 * n and t["unique_write_bytes"] == 4 * n


@kernel
def vector_add(a, b, c, n):
    i = get_global_id(0)
    if i < n:
        c[i] = a[i] + b[i]


def test_vector_add_flops_and_totals():
    """vector_add over n = 1000 (16 groups of 64): n flops (one add per guarded work-item),
    no other arithmetic counted as flops; 8n bytes loaded in 2 x 125 sectors, 4n stored."""
    n = 1000
    a, b = np.ones(n, F32), np.full(n, 2, F32)
    c = np.zeros(n, F32)
    r = clsim.run(vector_add, (1024,), (64,), (a, b, c, np.int32(n)), traffic=True)
    t = r.traffic.totals
    for key in ("global_load_bytes", "global_store_bytes", "global_load_sectors",
                "global_store_sectors", "local_load_bytes", "local_store_bytes",
                "local_bank_conflicts", "unique_read_bytes", "unique_write_bytes", "flops"):
        assert key in t
    assert t["flops"] == n and r.traffic.flop_counts["add"] == n
    assert (t["global_load_bytes"], t["global_store_bytes"]) == (8 * n, 4 * n)
    assert (t["global_load_sectors"], t["global_store_sectors"]) == (250, 125)
    assert (t["unique_read_bytes"], t["unique_write_bytes"]) == (8 * n, 4 * n)
    for s in r.traffic.sites:
        for key in ("line", "buffer", "kind", "space", "executions", "bytes", "sectors",
                    "bank_conflicts"):
            assert key in s
    assert r.traffic.to_dict()["totals"] == t


@kernel
def flop_mix(a, b, out, n):
    i = get_global_id(0)
    if i < n:
        out[i] = fma(a[i], b[i], 1.0) + sqrt(a[i]) / exp(b[i])
        out[n + i] = F32(i * 3 + 1)


def test_flop_kinds():
    """Per work-item: fma (2 flops), sqrt, exp (transcendental), div, add = 6 flops; the
    integer i * 3 + 1 is 2 int ops, not flops."""
    n = 50
    a, b = np.ones(n, F32), np.ones(n, F32)
    out = np.zeros(2 * n, F32)
    r = clsim.run(flop_mix, (64,), (64,), (a, b, out, np.int32(n)), traffic=True)
    counts = r.traffic.flop_counts
    assert (counts["fma"], counts["sqrt"], counts["transcendental"], counts["div"],
            counts["add"], counts["mul"]) == (n, n, n, n, n, 0)
    assert r.traffic.totals["flops"] == 6 * n
    assert counts["int"] >= 2 * n  # the index arithmetic adds more


@clsim.func
def fetch(buf, k):
    return buf[k]


@kernel
def via_helper(x, out):
    i = get_global_id(0)
    out[i] = fetch(x, i) * 2.0


def test_access_in_helper_function_is_counted_on_the_kernel_buffer():
    """A load inside a @clsim.func helper is a site of the helper (func 'fetch') on the
    kernel argument passed in: the table names the user's buffer, not the helper's parameter."""
    x = np.arange(64, dtype=F32)
    out = np.zeros(64, F32)
    r = clsim.run(via_helper, (64,), (32,), (x, out), traffic=True)
    load = site(r.traffic, "x", "load")
    assert (load["executions"], load["sectors"], load["func"]) == (64, 8, "fetch")
    assert load["file"] == __file__
    # the table names a helper's line with its file: the line number alone would read as the
    # kernel's
    assert f"{os.path.basename(__file__)}:{load['line']}" in r.traffic.format_table()
    assert r.traffic.unique_read_bytes["x"] == 256
    assert r.traffic.flop_counts["mul"] == 64


@clsim.func
def scaled_pair_sum(a, b, k, n):
    acc = 0.0
    for j in range(n):
        acc += a[k + j] * 0.5 + b[k + j]
    return acc


@kernel
def pair_sums(a, b, out, n):
    i = get_global_id(0)
    out[i] = scaled_pair_sum(a, b, i * n, n)


def test_a_helper_binds_its_arena_row_and_buffers_once_per_call():
    """A helper function looks up its thread's arena row and its buffers' bases in its
    prologue, not at every access and operation (GEMV 4096^2's counting: 1.08 -> 0.56 s),
    and counts as before: n loads of each buffer per work-item, a multiply and two adds each
    (the accumulation's and the sum's)."""
    n = 4
    a = np.arange(64 * n, dtype=F32)
    b = np.ones(64 * n, F32)
    out = np.zeros(64, F32)
    r = clsim.run(pair_sums, (64,), (32,), (a, b, out, np.int32(n)), traffic=True)
    fn = open(r.module_path).read().split("def _f_scaled_pair_sum", 1)[1].split("\ndef ")[0]
    assert fn.count("_tr_thread()") == 2  # the prologue's row and log
    assert fn.count("_tr_param(") == 2  # a and b, once each
    for buffer in "ab":
        load = site(r.traffic, buffer, "load")
        # per step (32 lanes, one j), a stride of n floats: 32 * 16 bytes, 16 sectors
        assert (load["executions"], load["sectors"], load["func"]) == (
            64 * n, 2 * n * 16, "scaled_pair_sum")
    assert (r.traffic.flop_counts["mul"], r.traffic.flop_counts["add"]) == (64 * n, 128 * n)
    assert np.array_equal(out, (a.reshape(64, n) * 0.5 + 1).sum(axis=1, dtype=F32))


# ---------------------------------------------------------------- modes and results


@kernel
def row_softmax(x, y, ncols):
    row = get_group_id(0)
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(64, np.float32)
    m = -INFINITY
    for c in range(lid, ncols, wg):
        m = fmax(m, x[row * ncols + c])
    scratch[lid] = m
    barrier(CLK_LOCAL_MEM_FENCE)
    active = wg
    while active > 1:
        half_ = active // 2
        if lid < half_:
            scratch[lid] = fmax(scratch[lid], scratch[lid + half_])
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_
    m = scratch[0]
    for c in range(lid, ncols, wg):
        y[row * ncols + c] = exp(x[row * ncols + c] - m)


def _softmax_run(**options):
    rows, cols = 6, 100
    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(F32)
    y = np.zeros_like(x)
    r = clsim.run(row_softmax, (rows * 64,), (64,), (x, y, np.int32(cols)), **options)
    return r, y


def test_jit_and_no_jit_tables_are_identical():
    """The same launch counted by the compiled and the plain-Python code gives the same
    report, and so the same table."""
    jit, _ = _softmax_run(traffic=True, jit=True)
    plain, _ = _softmax_run(traffic=True, jit=False)
    assert jit.traffic.to_dict() == plain.traffic.to_dict()
    assert jit.traffic.format_table() == plain.traffic.format_table()


def test_counting_does_not_change_results_or_depend_on_parallelism():
    """Outputs are bit-identical with counting on and off; serial and parallel groups count
    the same. (Counting off runs as plain Python, the same generated code: the compiled
    module without counting is no other test's, a compile for nothing else.)"""
    off, y_off = _softmax_run(traffic=False, jit=False)
    on, y_on = _softmax_run(traffic=True, parallel=True)
    serial, y_serial = _softmax_run(traffic=True, parallel=False)
    np.testing.assert_array_equal(y_on, y_off)
    np.testing.assert_array_equal(y_serial, y_off)
    assert on.traffic.to_dict() == serial.traffic.to_dict()
    assert off.traffic is None


def test_loop_steps_and_tree_counts():
    """ncols = 100 over 64 lanes: the first loop's load runs 100 times per row in 4 steps
    (lanes 0-31 and 32-63 on c = lid, then lanes 0-31 (32 floats) and 32-35 on c = lid + 64).
    The tree's scratch[lid + half_] load runs 32+16+...+1 = 63 times per row."""
    r, _ = _softmax_run(traffic=True)
    loads = [s for s in r.traffic.sites if s["buffer"] == "x"]
    first = min(loads, key=lambda s: s["line"])
    assert first["executions"] == 6 * 100 and first["steps"] == 6 * 4
    tree = [s for s in r.traffic.sites if s["buffer"] == "scratch" and s["kind"] == "load"
            and "half" in s["source"]]
    assert tree[0]["executions"] == 6 * 2 * 63  # two loads on the line, one record


@kernel
def long_loop(a, out, reps):
    i = get_global_id(0)
    acc = 0.0
    for _r in range(reps):
        acc += a[i + _r % 1]  # not affine in _r: one record per access
    out[i] = acc


@kernel
def long_affine_loop(a, out, reps):
    i = get_global_id(0)
    acc = 0.0
    for _r in range(reps):
        acc += a[i]  # affine (stride 0): one record per loop
    out[i] = acc


def test_step_buffer_overflow_warns_and_keeps_executions(monkeypatch):
    """With the step buffer shrunk to its minimum (256 steps), a lane running one site 300
    times in one loop pass overflows: a RuntimeWarning says so, executions and bytes stay
    exact, and the extra 44 steps per lane are counted as single-lane steps."""
    from clsim.traffic import arena

    monkeypatch.setattr(arena, "STEP_BUFFER_BYTES", 0)
    a = np.ones(32, F32)
    out = np.zeros(32, F32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = clsim.run(long_loop, (32,), (32,), (a, out, np.int32(300)), traffic=True)
    assert any("step buffer" in str(w.message) for w in caught)
    load = site(r.traffic, "a", "load")
    assert load["executions"] == 32 * 300
    assert load["steps"] == 256 + 44 * 32
    assert load["sectors"] == 256 * 4 + 44 * 32
    np.testing.assert_array_equal(out, np.full(32, 300, F32))


def test_loop_recorded_once_does_not_overflow(monkeypatch):
    """The same 300 runs recorded once per loop (one descriptor per lane) fit the smallest
    step buffer: no warning, and every step is a whole sub-group (300 steps of 4 sectors)."""
    from clsim.traffic import arena

    monkeypatch.setattr(arena, "STEP_BUFFER_BYTES", 0)
    a = np.ones(32, F32)
    out = np.zeros(32, F32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = clsim.run(long_affine_loop, (32,), (32,), (a, out, np.int32(300)), traffic=True)
    assert not any("step buffer" in str(w.message) for w in caught)
    load = site(r.traffic, "a", "load")
    assert (load["executions"], load["steps"], load["sectors"]) == (32 * 300, 300, 300 * 4)


def test_report_round_trips_and_prints():
    """result.traffic serialises to JSON and back, and its table names the kernel and sites."""
    r, _ = _softmax_run(traffic=True)
    again = TrafficReport.from_json(r.traffic.to_json())
    assert again == r.traffic
    table = r.traffic.format_table()
    assert "row_softmax" in table and "scratch" in table and "totals" in table


# ---------------------------------------------------------------- command line


def test_report_runs_every_variant_of_a_family(tmp_path, capsys):
    """clsim report softmax runs every variant of the softmax family on the same input, prints
    them side by side, writes report.json and, with --plot, a PNG; exit code 0."""
    import json

    from clsim.cli import main
    from clsim.spec import all_specs

    family = [s.name for s in all_specs().values() if s.family_name == "softmax"]
    assert {"softmax", "softmax_subgroup", "softmax_online"} <= set(family)

    out_json, out_png = tmp_path / "report.json", tmp_path / "roof.png"
    # --no-jit: six compiled variants cost ~30 s of Numba for what the plain-Python counts
    # show as well (the same generated code); test_traffic_report_cli runs `report` compiled
    argv = ["report", "softmax", "--profile", "h200", "--shape", "rows=8,cols=64", "--no-jit",
            "--json", str(out_json), "--plot", str(out_png)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("metric"))
    assert header.split()[1:] == family
    for metric in ("global sectors", "coalescing efficiency", "bank-conflict replays", "flops",
                   "intensity", "limit", "predicted time"):
        assert metric in text
    data = json.loads(out_json.read_text())
    assert [v["label"] for v in data["variants"]] == family
    assert data["profile"]["name"] == "h200"
    assert all(v["traffic"]["totals"]["flops"] > 0 for v in data["variants"])
    assert out_png.read_bytes()[:4] == b"\x89PNG"


def test_report_unknown_name_is_one_line_error(capsys):
    """An unknown kernel or family is a one-line error naming the known ones, exit code 2."""
    from clsim.cli import main

    assert main(["report", "no_such_family"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("clsim: error: no kernel or family named 'no_such_family'")
    assert "softmax" in err and err.count("\n") == 1


def test_run_traffic_prints_the_table(capsys):
    """clsim run NAME --traffic prints the per-site table with the totals."""
    from clsim.cli import main

    assert main(["run", "vector_add", "--shape", "n=1000", "--traffic"]) == 0
    text = capsys.readouterr().out
    assert "traffic of vector_add" in text and "totals" in text and "1,000 flops" in text


# ---------------------------------------------------------------- against a model


@kernel
def gather_loop(a, idx, reps, out, width):
    i = get_global_id(0)
    acc = 0.0
    for r in range(reps[i]):
        acc += a[idx[i * width + r]]
    out[i] = acc


def _model_sectors(idx, reps, width, local, simd):
    """Sectors of the a[...] load by the rules: per group, sub-group and run k, the distinct
    32-byte sectors of the lanes that ran k."""
    n = reps.size
    total = 0
    for start in range(0, n, local):
        for sg0 in range(start, min(start + local, n), simd):
            lanes = range(sg0, min(sg0 + simd, start + local, n))
            for k in range(int(reps.max(initial=0))):
                total += len({4 * int(idx[i * width + k]) // 32 for i in lanes if reps[i] > k})
    return total


@settings(max_examples=25)
@given(data=st.data())
def test_gathers_in_loops_match_the_model(data):
    """Random gathers a[idx[...]] in loops of random per-lane length: executions, steps and
    sectors of the a load equal the rules applied by hand (plain Python), for work-group sizes
    that are and are not multiples of the SIMD width."""
    local = data.draw(st.sampled_from([8, 24, 32]), label="local")
    simd = data.draw(st.sampled_from([4, 32]), label="simd")
    groups = data.draw(st.integers(1, 3), label="groups")
    width = 3
    n = local * groups
    reps = np.asarray(data.draw(st.lists(st.integers(0, width), min_size=n, max_size=n)),
                      np.int32)
    idx = np.asarray(data.draw(st.lists(st.integers(0, 255), min_size=n * width,
                                        max_size=n * width)), np.int32)
    a = np.arange(256, dtype=F32)
    out = np.zeros(n, F32)
    r = clsim.run(gather_loop, (n,), (local,), (a, idx, reps, out, np.int32(width)),
                  traffic=True, simd_width=simd, jit=False)
    load = site(r.traffic, "a", "load")
    assert load["executions"] == int(reps.sum())
    assert load["sectors"] == _model_sectors(idx, reps, width, local, simd)
    assert r.traffic.unique_read_bytes["a"] == 4 * len({int(idx[i * width + k])
                                                       for i in range(n)
                                                       for k in range(reps[i])})
