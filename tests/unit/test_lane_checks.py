"""Lane-major regions under checks="all" (clsim/compiler/lane_emit.py, ``lane_regions`` of
clsim/checks/instrument.py). A JIT module runs its regions lane-major with the accesses
recorded in lane order; anything not clean (a deferred access, a finding, an error, a failed
range check) makes the launch run again, its buffers restored, with the usual forms. So the
findings, their order and counts, the errors and the bytes are always the usual forms' (the
instrument with ``lane_regions`` off), and a clean launch keeps the lane-major module."""

import re

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
)
from clsim.checks.instrument import ChecksInstrument


@kernel
def row_sums_racy(x, y, ncols):
    base = get_group_id(0) * ncols
    scratch = local_array(64, np.float32)
    acc = 0.0
    for c in range(get_local_id(0), ncols, get_local_size(0)):
        acc += x[base + c]
    scratch[get_local_id(0) // 2] = acc  # two work-items per element: a race
    barrier(CLK_LOCAL_MEM_FENCE)
    if get_local_id(0) == 0:
        total = 0.0
        for k in range(get_local_size(0)):
            v = scratch[k]  # the upper half was never written: an uninitialised read
            if k < get_local_size(0) // 2:  # (its values are not used: the bytes compare)
                total += v
        y[get_group_id(0)] = total


@kernel
def scaled_rows(x, y, ncols, spill):
    """A clean lane-major store loop (its records made after each trip's lanes), or, with
    ``spill`` 1, one whose last store is the next row's first element: the next group's."""
    base = get_group_id(0) * ncols
    for c in range(get_local_id(0), ncols + spill, get_local_size(0)):
        y[base + c] = x[base + c] * 2.0


@kernel
def two_stores(x, y, ncols, gap):
    """Two stores per element of the strided loop; with ``gap`` 1, lane j's second store is
    lane j + 1's first element: a race inside the group, in one lane-major trip."""
    base = get_group_id(0) * (ncols + 1)
    for c in range(get_local_id(0), ncols, get_local_size(0)):
        y[base + c] = x[base + c]
        y[base + gap + c] = x[base + c] * 2.0


@kernel
def doubled_then_racy(x, y, ncols, clash):
    """Loads what it stores (``y``), then, with ``clash``, a race in a later region: the
    launch runs again from restored buffers, so ``y`` is doubled once."""
    base = get_group_id(0) * ncols
    scratch = local_array(64, np.float32)
    for c in range(get_local_id(0), ncols, get_local_size(0)):
        y[base + c] = y[base + c] * 2.0 + x[base + c]
    barrier(CLK_LOCAL_MEM_FENCE)
    scratch[get_local_id(0) // clash] = 1.0
    barrier(CLK_LOCAL_MEM_FENCE)


def _run(kfn, args, global_size, local_size, lanes, monkeypatch, **options):
    monkeypatch.setattr(ChecksInstrument, "lane_regions", lanes)
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    try:
        result = clsim.run(kfn, global_size, local_size, args, checks="all", **options)
    except clsim.SimulationError as error:
        return f"{type(error).__name__}: {error}", [a.tobytes() for a in args], None
    findings = [(f.message, f.count) for f in getattr(result, "findings", [])]
    return findings, [a.tobytes() for a in args], open(result.module_path).read()


def _rows(rows: int, ncols: int):
    x = np.random.default_rng(2).standard_normal(rows * ncols + 1).astype(np.float32)
    return x, np.zeros(rows * ncols + 1, np.float32)


@pytest.mark.parametrize("report_all", [True, False])
def test_findings_and_bytes_are_the_usual_forms(report_all, monkeypatch):
    x, y = _rows(3, 70)
    args = (x, y, np.int32(70))
    lane = _run(row_sums_racy, args, (3 * 16,), (16,), True, monkeypatch,
                report_all=report_all)
    usual = _run(row_sums_racy, args, (3 * 16,), (16,), False, monkeypatch,
                 report_all=report_all)
    assert lane[:2] == usual[:2]
    if report_all:
        kinds = {"race" if "race" in m else "uninit" for m, _count in lane[0]}
        assert kinds == {"race", "uninit"}
        assert "_lmok" not in lane[2]  # the launch that reported ran the usual forms
    else:
        assert lane[0].startswith("DataRaceError")


@pytest.mark.parametrize("groups", [1, 5])
def test_a_clean_launch_keeps_the_lane_major_module(groups, monkeypatch):
    x, y = _rows(groups, 300)
    args = (x, y, np.int32(300), np.int32(0))
    lane = _run(scaled_rows, args, (groups * 64,), (64,), True, monkeypatch, report_all=True)
    usual = _run(scaled_rows, args, (groups * 64,), (64,), False, monkeypatch,
                 report_all=True)
    assert lane[:2] == usual[:2] and lane[0] == []
    assert "_lmok" in lane[2] and "_REPLAYS_LAUNCH = True" in lane[2]
    assert "_lmok" not in usual[2]
    # the stores' records come after each trip's lanes, all at once: the lane loop itself
    # has no call
    assert "_cs_stspan(" in lane[2]
    assert not any("v_y[" in line and "_cs_" in line for line in lane[2].splitlines())


@pytest.mark.parametrize("report_all", [True, False])
def test_a_race_between_lane_major_stores_of_two_groups(report_all, monkeypatch):
    """Each group's last store is the next group's first element: races between groups,
    found in the records the lane-major trips leave, reported as the usual forms do."""
    x, y = _rows(4, 128)
    args = (x, y, np.int32(128), np.int32(1))
    lane = _run(scaled_rows, args, (4 * 64,), (64,), True, monkeypatch, report_all=report_all)
    usual = _run(scaled_rows, args, (4 * 64,), (64,), False, monkeypatch,
                 report_all=report_all)
    assert lane[:2] == usual[:2]
    if report_all:
        assert len(lane[0]) == 1 and lane[0][0][1] == 3  # three pairs of groups
        assert "race" in lane[0][0][0]
    else:
        assert lane[0].startswith("DataRaceError")


@pytest.mark.parametrize("spans", [True, False])
@pytest.mark.parametrize("gap", [0, 1])
def test_two_stores_of_one_trip_racing(gap, spans, monkeypatch):
    """Also with the instrument declining store spans (``Instrument.store_span`` None: the
    protocol's default), when the trip's stores are recorded by a lane loop after it."""
    if not spans:  # (and a key of its own: another module, not the cached one)
        key = ChecksInstrument.key
        monkeypatch.setattr(ChecksInstrument, "store_span", lambda *_args: None)
        monkeypatch.setattr(ChecksInstrument, "key", lambda self: (*key(self), "no spans"))
    x, y = _rows(3, 41)
    args = (x, y, np.int32(40), np.int32(gap))
    lane = _run(two_stores, args, (3 * 16,), (16,), True, monkeypatch, report_all=True)
    usual = _run(two_stores, args, (3 * 16,), (16,), False, monkeypatch, report_all=True)
    assert lane[:2] == usual[:2]
    assert (lane[0] != []) == (gap == 1)
    assert ("_lmok" in lane[2]) == (gap == 0)
    if gap == 0:
        assert ("_cs_stspan(" in lane[2]) == spans


@pytest.mark.parametrize("clash", [1, 2])
def test_the_launch_runs_again_from_restored_buffers(clash, monkeypatch):
    x, y = _rows(3, 100)
    y[:] = np.arange(y.size, dtype=np.float32)
    args = (x, y, np.int32(100), np.int32(clash))
    lane = _run(doubled_then_racy, args, (3 * 32,), (32,), True, monkeypatch,
                report_all=True)
    usual = _run(doubled_then_racy, args, (3 * 32,), (32,), False, monkeypatch,
                 report_all=True)
    assert lane[:2] == usual[:2]
    expected = np.arange(y.size, dtype=np.float32)
    expected[:300] = expected[:300] * np.float32(2.0) + x[:300]
    assert lane[1][1] == expected.tobytes()
    assert (lane[0] != []) == (clash == 2)
    assert ("_lmok" in lane[2]) == (clash == 1)


def test_an_error_is_the_usual_forms(monkeypatch):
    """An access out of bounds (one row too many) in a module with lane-major regions: the
    launch runs again with the usual forms, whose message names the work-item."""
    x, y = _rows(2, 64)
    args = (x[:129], y[:128], np.int32(64), np.int32(1))
    lane = _run(scaled_rows, args, (3 * 64,), (64,), True, monkeypatch)
    usual = _run(scaled_rows, args, (3 * 64,), (64,), False, monkeypatch)
    assert lane == usual
    assert lane[0].startswith("OutOfBoundsError")


def test_plain_python_reports_the_same(monkeypatch):
    x, y = _rows(3, 70)
    args = (x, y, np.int32(70))
    jit = _run(row_sums_racy, args, (3 * 16,), (16,), True, monkeypatch, report_all=True)
    plain = _run(row_sums_racy, args, (3 * 16,), (16,), True, monkeypatch, report_all=True,
                 jit=False)
    assert jit[:2] == plain[:2]
    assert "_lmok" not in plain[2]  # plain Python under instruments: the usual forms only


TILE = 8


@kernel
def tiled_products(a, b, c, n, fence):
    """A 2-D tiled product (n a multiple of TILE). With ``fence`` 0 the barrier between the
    tile loads and the products is missing: a race in every group."""
    tx = get_local_id(0)
    ty = get_local_id(1)
    col = get_group_id(0) * TILE + tx
    row = get_group_id(1) * TILE + ty
    a_tile = local_array((TILE, TILE), np.float32)
    b_tile = local_array((TILE, TILE), np.float32)
    acc = 0.0
    for t in range(0, n, TILE):
        a_tile[ty, tx] = a[row * n + t + tx]
        b_tile[ty, tx] = b[(t + ty) * n + col]
        if fence != 0:
            barrier(CLK_LOCAL_MEM_FENCE)
        for kk in range(TILE):
            acc += a_tile[ty, kk] * b_tile[kk, tx]
        barrier(CLK_LOCAL_MEM_FENCE)
    c[row * n + col] = acc


@pytest.mark.parametrize("fence", [1, 0])
def test_group_invariant_tiles_run_a_proven_copy_without_records(fence, monkeypatch):
    """The products read only the tiles, group-invariant local arrays: a group whose size
    was already checked, with nothing found, runs them in a copy compiled without records
    (clsim/compiler/proven_emit.py). A race keeps every group recorded: the findings and
    their counts are the usual forms'."""
    n = 3 * TILE
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(n * n).astype(np.float32) for _ in range(2))
    args = (a, b, np.zeros(n * n, np.float32), np.int32(n), np.int32(fence))
    copy = _run(tiled_products, args, (n, n), (TILE, TILE), True, monkeypatch,
                report_all=True)
    usual = _run(tiled_products, args, (n, n), (TILE, TILE), False, monkeypatch,
                 report_all=True)
    assert copy[:2] == usual[:2]
    if fence:
        assert copy[0] == []
        assert np.allclose(np.frombuffer(copy[1][2], np.float32),
                           (a.reshape(n, n).astype(np.float64) @ b.reshape(n, n)).ravel(),
                           rtol=1e-4, atol=1e-4)
        assert "_cs_md3 == 0 and _cs_md4 == 0" in copy[2]
        assert "_cs_md3 == 0" not in usual[2]
    else:
        # every one of the 9 groups counted: 9 * 3 tile steps * 64 work-items * 7 others
        assert [count for _m, count in copy[0]] == [9 * 3 * 64 * 7] * 2
        assert all("data race on local" in m for m, _count in copy[0])


@kernel
def tiles_by_group(a, c, n, step):
    """A tile row chosen by the group id (``step`` 0: always the first) is recorded in every
    group: no copy without records."""
    tx = get_local_id(0)
    ty = get_local_id(1)
    tile = local_array((2 * TILE, TILE), np.float32)
    top = get_group_id(0) * step
    tile[top + ty, tx] = a[(get_group_id(1) * TILE + ty) * n + get_group_id(0) * TILE + tx]
    barrier(CLK_LOCAL_MEM_FENCE)
    acc = 0.0
    for kk in range(TILE):
        acc += tile[top + ty, kk]
    barrier(CLK_LOCAL_MEM_FENCE)  # (the products' region then reads only the tile)
    c[(get_group_id(1) * TILE + ty) * n + get_group_id(0) * TILE + tx] = acc


@kernel
def tiles_by_item(a, c, n, step):
    """``tiles_by_group`` with the tile row chosen by the local id (``step`` 0): the tile is
    group-invariant."""
    tx = get_local_id(0)
    ty = get_local_id(1)
    tile = local_array((2 * TILE, TILE), np.float32)
    top = tx * step
    tile[top + ty, tx] = a[(get_group_id(1) * TILE + ty) * n + get_group_id(0) * TILE + tx]
    barrier(CLK_LOCAL_MEM_FENCE)
    acc = 0.0
    for kk in range(TILE):
        acc += tile[top + ty, kk]
    barrier(CLK_LOCAL_MEM_FENCE)  # (the products' region then reads only the tile)
    c[(get_group_id(1) * TILE + ty) * n + get_group_id(0) * TILE + tx] = acc


@pytest.mark.parametrize("kfn", [tiles_by_group, tiles_by_item])
def test_a_tile_indexed_by_the_group_keeps_its_records(kfn, monkeypatch):
    n = 2 * TILE
    a = np.random.default_rng(5).standard_normal(n * n).astype(np.float32)
    args = (a, np.zeros(n * n, np.float32), np.int32(n), np.int32(0))
    copy = _run(kfn, args, (n, n), (TILE, TILE), True, monkeypatch, report_all=True)
    usual = _run(kfn, args, (n, n), (TILE, TILE), False, monkeypatch, report_all=True)
    assert copy[:2] == usual[:2] and copy[0] == []
    # a copy without records only where the tile is group-invariant (both run proven)
    unrecorded = re.search(r"_pok\d+ = \(_cs_md\d+ == 0\)", copy[2])
    assert (unrecorded is not None) == (kfn is tiles_by_item)


def test_a_launch_run_again_counts_both_runs(monkeypatch):
    """``elapsed_s`` and ``compile_s`` of a launch that ran again with the usual forms add
    the first attempt's: what the caller waited for."""
    from clsim.runtime import launch
    from clsim.runtime import record as rec

    seen = []
    real = launch._launch

    def spy(*args, **kwargs):
        try:
            result = real(*args, **kwargs)
        except rec.ReplayLaunch as replay:
            seen.append(("again", replay.elapsed_s, replay.compile_s))
            raise
        seen.append(("done", result.elapsed_s, result.compile_s))
        return result

    monkeypatch.setattr(launch, "_launch", spy)
    x, y = _rows(3, 70)
    result = clsim.run(row_sums_racy, (3 * 16,), (16,), (x, y, np.int32(70)), checks="all",
                       report_all=True)
    assert [kind for kind, *_ in seen] == ["again", "done"]
    assert seen[0][1] > 0
    assert result.elapsed_s == pytest.approx(seen[0][1] + seen[1][1])
    assert result.compile_s == pytest.approx(seen[0][2] + seen[1][2])


@kernel
def row_stores(a, c, n, step):
    """A 2-D proven region storing to a buffer the checks always record: it runs proven, with
    its records in the usual work-item order. With ``step`` 0 every work-item of a row stores
    one element: races, reported as the usual form reports them."""
    c[(get_group_id(1) * TILE + get_local_id(1)) * n + get_group_id(0) * TILE
      + get_local_id(0) * step] = a[(get_group_id(1) * TILE + get_local_id(1)) * n
                                    + get_group_id(0) * TILE + get_local_id(0)] + 1.0


@pytest.mark.parametrize("step", [1, 0])
@pytest.mark.parametrize("report_all", [True, False])
def test_a_proven_region_records_in_work_item_order(step, report_all, monkeypatch):
    n = 2 * TILE
    a = np.arange(n * n, dtype=np.float32)
    args = (a, np.zeros(n * n, np.float32), np.int32(n), np.int32(step))
    proven = _run(row_stores, args, (n, n), (TILE, TILE), True, monkeypatch,
                  report_all=report_all)
    usual = _run(row_stores, args, (n, n), (TILE, TILE), False, monkeypatch,
                 report_all=report_all)
    assert proven[:2] == usual[:2]
    if step == 1:
        assert proven[0] == [] and "_pok" in proven[2] and "_pok" not in usual[2]
    elif report_all:
        assert proven[0] and all("data race" in m for m, _count in proven[0])
    else:
        assert proven[0].startswith("DataRaceError")


@pytest.mark.parametrize(("name", "shape"), [
    ("softmax", {"rows": 3, "cols": 300}),
    ("gemv_q4_0", {"rows": 5, "blocks": 70}),
    ("matmul_tiled", {"M": 40, "N": 24, "K": 56}),
    ("reduce_sum", {"n": 5000, "groups": 3}),
])
def test_library_kernels_keep_the_lane_major_module_with_the_usual_bytes(name, shape,
                                                                          monkeypatch):
    """The library's kernels the lane-major (1-D) and proven (2-D) forms reach, at odd
    shapes (last trips of partial lanes, partial groups): clean, the same bytes as the usual
    forms, and the faster module kept (no launch run again)."""
    import kernels_py  # noqa: F401  (registers the library)
    from clsim.spec import get_spec

    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(6), shape)
    launch = spec.launch(inputs, shape, None)
    fast = _run(spec.kernel, launch.args, launch.global_size, launch.local_size, True,
                monkeypatch, report_all=True)
    usual = _run(spec.kernel, launch.args, launch.global_size, launch.local_size, False,
                 monkeypatch, report_all=True)
    assert fast[:2] == usual[:2] and fast[0] == []
    assert "_REPLAYS_LAUNCH = True" in fast[2] or "_pok" in fast[2]
    assert "_lmok" not in usual[2] and "_pok" not in usual[2]
