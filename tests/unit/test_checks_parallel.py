"""Checked work-groups run in parallel threads with the serial run's findings (docs/checks.md).

Contracts: with JIT, ``checks="all"`` runs contiguous ranges of groups in several threads,
each with its own shadow state; a clean launch is done after that (no serial pass); conflicts
between groups of different threads are found after the launch; and whenever anything was
found, the launch is replayed serially from the buffers as they were, so findings (messages,
counts, order), raised errors and the buffers' final contents equal the serial run's.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_num_groups,
    kernel,
    local_array,
)
from clsim.checks import parallel

F32 = np.float32
pytestmark = pytest.mark.skipif(
    numba.config.NUMBA_NUM_THREADS < 2,
    reason="threaded checks need at least two Numba threads (one CPU here)")


@kernel
def reverse_in_group(x, y):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[get_global_id(0)] = s[63 - lid] + 1.0


@kernel
def first_and_last_group_store(y, flag):
    i = get_global_id(0)
    y[i] = y[i] + 1.0
    g = get_group_id(0)
    if get_local_id(0) == 0 and (g == 0 or g == get_num_groups(0) - 1):
        flag[0] = g


@kernel
def neighbour_in_group(x, y):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    y[get_global_id(0)] = s[(lid + 1) % 64]
    barrier(CLK_LOCAL_MEM_FENCE)


@kernel
def reads_past_the_end(x, y, n):
    i = get_global_id(0)
    y[i] = x[i + n]


@pytest.fixture
def spy(monkeypatch):
    """Records, per launch, whether threads ran and whether a serial replay followed."""
    calls = []
    real = parallel.run

    def run(info, state, run_groups, threads, copies=None):
        replays = []

        def counted(start, count, own=None):
            if own is None:
                replays.append((start, count))
            return run_groups(start, count, own)

        entry = {"threaded": True, "replayed": False}
        calls.append(entry)
        try:
            entry["threaded"] = real(info, state, counted, threads, copies)
        finally:
            entry["replayed"] = bool(replays)
        return entry["threaded"]

    monkeypatch.setattr(parallel, "run", run)
    return calls


def launch(kern, args, size=1024, serial=False, **kw):
    if serial:  # the reference: the serial checked run
        real = parallel.run
        parallel.run = lambda *a: False
        try:
            return clsim.run(kern, (size,), (64,), args, checks="all", **kw)
        finally:
            parallel.run = real
    return clsim.run(kern, (size,), (64,), args, checks="all", **kw)


def test_clean_launch_runs_threaded_without_a_serial_pass(spy):
    x, y = np.arange(1024, dtype=F32), np.zeros(1024, F32)
    result = launch(reverse_in_group, (x, y), report_all=True)
    assert result.findings == []
    assert spy == [{"threaded": True, "replayed": False}]
    expect = x.reshape(-1, 64)[:, ::-1].reshape(-1) + 1
    np.testing.assert_array_equal(y, expect)


def test_race_between_groups_of_different_threads_is_found(spy):
    """Group 0 and the last group (different threads) store flag[0]: no thread sees both, the
    merge does; the replayed findings, and the buffers, are the serial run's."""
    y, flag = np.zeros(1024, F32), np.zeros(1, F32)
    found = launch(first_and_last_group_store, (y, flag), report_all=True)
    assert spy == [{"threaded": True, "replayed": True}]
    y_ref, flag_ref = np.zeros(1024, F32), np.zeros(1, F32)
    ref = launch(first_and_last_group_store, (y_ref, flag_ref), serial=True, report_all=True)
    assert [f.describe() for f in found.findings] == [f.describe() for f in ref.findings]
    assert found.findings and "different work-groups" in found.findings[0].message
    np.testing.assert_array_equal(y, np.ones(1024, F32))  # incremented once, not twice
    np.testing.assert_array_equal(flag, flag_ref)
    with pytest.raises(clsim.DataRaceError) as raised:
        launch(first_and_last_group_store, (y, flag))
    with pytest.raises(clsim.DataRaceError) as serial:
        launch(first_and_last_group_store, (y_ref, flag_ref), serial=True)
    assert raised.value.message == serial.value.message


def test_findings_within_threads_equal_the_serial_run(spy):
    x = np.arange(1024, dtype=F32)
    y, y_ref = np.zeros(1024, F32), np.zeros(1024, F32)
    found = launch(neighbour_in_group, (x, y), report_all=True)
    ref = launch(neighbour_in_group, (x, y_ref), serial=True, report_all=True)
    assert spy[0] == {"threaded": True, "replayed": True}
    assert [(f.describe(), f.count) for f in found.findings] == [
        (f.describe(), f.count) for f in ref.findings]
    # (y itself holds reads of undefined local memory here, so it is not compared)


def test_engine_errors_are_the_serial_runs(spy):
    """An out-of-bounds read in the last group: the same error as the serial run names."""
    x, y = np.arange(1024, dtype=F32), np.zeros(1024, F32)
    with pytest.raises(clsim.OutOfBoundsError) as raised:
        launch(reads_past_the_end, (x, y, np.int32(1)))
    with pytest.raises(clsim.OutOfBoundsError) as serial:
        launch(reads_past_the_end, (x, y, np.int32(1)), serial=True)
    assert raised.value.message == serial.value.message
    assert spy[0]["replayed"]


@pytest.mark.parametrize("kw", [dict(traffic=True), dict(jit=False)])
def test_launches_that_cannot_share_state_stay_serial(spy, kw):
    """Traffic counting's state cannot serve two threads, and without JIT threads would not
    run at once: such launches keep the serial checked run."""
    x, y = np.arange(1024, dtype=F32), np.zeros(1024, F32)
    assert launch(reverse_in_group, (x, y), report_all=True, **kw).findings == []
    assert spy == []


@kernel
def write_low_read_high(a, b, out):
    i = get_global_id(0)
    if i < 512:
        a[i] = 1.0
    else:
        out[i] = b[i - 512]


def test_cross_thread_race_through_two_views_of_one_array(spy):
    """a and b are two views of one array: the first half of the groups writes through a
    what the second half reads through b. Only groups of different threads conflict, through
    different names: found (by the merge, on the shared shadow) as in the serial run."""
    base, out = np.zeros(1024, F32), np.zeros(1024, F32)
    found = launch(write_low_read_high, (base[:], base[:], out), report_all=True)
    assert spy[0] == {"threaded": True, "replayed": True}
    ref = launch(write_low_read_high, (base[:], base[:], np.zeros(1024, F32)), serial=True,
                 report_all=True)
    assert [f.describe() for f in found.findings] == [f.describe() for f in ref.findings]
    assert found.findings and "different work-groups" in found.findings[0].message


@pytest.fixture
def snapshots(monkeypatch):
    """The buffers each threaded launch copied for a possible replay."""
    taken = []
    real = parallel.snapshot

    def snapshot(info, table):
        copies = real(info, table)
        taken.append(sorted(name for name, value in zip(info.params, info.values, strict=True)
                            if any(value is copied for copied, _saved in copies)))
        return copies

    monkeypatch.setattr(parallel, "snapshot", snapshot)
    return taken


def test_store_only_outputs_are_not_copied_and_the_replay_still_matches(spy, snapshots):
    """y is only stored (from local memory): nothing is copied for the replay, and the
    replayed launch still leaves the serial run's findings and y. A kernel that loads what it
    stores (y[i] = y[i] + 1) is copied, and its replay increments each element once."""
    x = np.arange(1024, dtype=F32)
    y, y_ref = np.full(1024, -1, F32), np.full(1024, -1, F32)
    found = launch(neighbour_in_group, (x, y), report_all=True)
    ref = launch(neighbour_in_group, (x, y_ref), serial=True, report_all=True)
    assert spy[0] == {"threaded": True, "replayed": True} and snapshots == [[]]
    assert [(f.describe(), f.count) for f in found.findings] == [
        (f.describe(), f.count) for f in ref.findings]
    np.testing.assert_array_equal(y != -1, y_ref != -1)  # every element stored, as serially
    y, flag = np.zeros(1024, F32), np.zeros(1, F32)
    launch(first_and_last_group_store, (y, flag), report_all=True)
    assert snapshots[1] == ["flag", "y"]
    np.testing.assert_array_equal(y, np.ones(1024, F32))


def test_reused_thread_state_is_cleared_where_the_last_launch_wrote(spy):
    """The second launch reuses the first one's per-thread shadows, cleared only over the
    spans the first wrote: records left anywhere would read as stores by earlier groups
    (false races, and a replay). The spans cover y's records and the local array's."""
    x, y = np.arange(1024, dtype=F32), np.zeros(1024, F32)
    for _ in range(3):
        assert launch(reverse_in_group, (x, y), report_all=True).findings == []
    assert spy == [{"threaded": True, "replayed": False}] * 3
    states, shadows = list(parallel._SPARE.values())[-1]
    for own, row in zip(states, shadows, strict=True):
        spans = parallel._written_spans(own[0], own[1])
        assert spans
        covered = np.zeros(row.size, bool)
        for start, stop in spans:
            covered[start:stop] = True
        assert not row[~covered].any()  # nothing written outside the spans


def test_launches_of_different_shapes_taking_turns_each_reuse_their_state(monkeypatch):
    """Two launches whose state differs in shape (checks="all" and checks="uninit"), taking
    turns, each find their own spare thread state: no fresh shadow after the first of each
    (a fresh one costs its page faults, a third of a short launch)."""
    fresh = []
    real = parallel.lazy_zeros

    def counted(count):
        fresh.append(count)
        return real(count)

    monkeypatch.setattr(parallel, "lazy_zeros", counted)
    parallel._SPARE.clear()
    x, y = np.arange(1024, dtype=F32), np.zeros(1024, F32)
    for _ in range(3):
        for checks in ("all", "uninit"):
            result = clsim.run(reverse_in_group, (1024,), (64,), (x, y), checks=checks)
            assert result.findings == []
    assert len(fresh) == 2
    assert len(parallel._SPARE) == 2


def test_other_threads_start_past_group_zeros_invariant_recording(monkeypatch):
    """Thread 0 records group 0's group-invariant local arrays; the other threads start as if
    they had (their meta's ``M_INVARIANT`` is group 0's size), so each launch records such an
    array in one group, not one per thread. A finding there replays the launch serially
    (test_findings_within_threads_equal_the_serial_run)."""
    from clsim.checks import layout as ly

    seen = []
    real = parallel.run

    def run(info, state, run_groups, threads, copies=None):
        def counted(start, count, own=None):
            if own is not None:
                seen.append((start, int(own[0][ly.M_INVARIANT])))
            return run_groups(start, count, own)

        return real(info, state, counted, threads, copies)

    monkeypatch.setattr(parallel, "run", run)
    x = np.arange(1024, dtype=F32)
    y = np.zeros_like(x)
    result = clsim.run(reverse_in_group, (1024,), (64,), (x, y), checks="all",
                       report_all=True)
    assert result.findings == []
    assert np.array_equal(y, x.reshape(16, 64)[:, ::-1].ravel() + 1)
    first_size = (64 | 1 << 16 | 1 << 32) + 1  # _skip_invariant's key of a 64 x 1 x 1 group
    starts = sorted(seen)
    assert starts[0] == (0, 0) and all(value == first_size for _s, value in starts[1:])
    assert len(starts) >= 2


@kernel
def doubled_in_place(y, ncols):
    base = get_group_id(0) * ncols
    for c in range(get_local_id(0), ncols, 64):
        y[base + c] = y[base + c] * 2.0


def test_a_lane_major_launch_takes_one_snapshot(snapshots):
    """A checked module with lane-major regions copies what its kernel loads and stores once
    per launch, for running it again (``undo_copies``), and the threaded run undoes its own
    serial replay from the same copies."""
    y = np.arange(16 * 100, dtype=F32)
    result = clsim.run(doubled_in_place, (16 * 64,), (64,), (y, np.int32(100)), checks="all")
    assert "_REPLAYS_LAUNCH = True" in open(result.module_path).read()
    assert snapshots == [["y"]]
    assert np.array_equal(y, np.arange(16 * 100, dtype=F32) * 2)
