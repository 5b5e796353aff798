"""Locks built from atomics: what the race checks say about them (docs/checks.md, "Atomics and
locks").

Lockset style: a work-item holds the lock at L from an acquiring atomic that succeeds (a
compare-exchange, a test-and-set returning false) until it releases L (an exchange, a store,
a flag clear); plain accesses made while holding L carry L, and two conflicting accesses that
both carry the same L are not a race. A lock taken or released with memory_order_relaxed
orders nothing (the race is reported, naming that line); accesses outside the critical section
and accesses under different locks stay races. Kernels without acquiring atomics get no lock
tracking at all (the other test_checks_* files keep their messages).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    atomic_cmpxchg,
    atomic_compare_exchange_strong_explicit,
    atomic_flag_clear,
    atomic_flag_test_and_set,
    atomic_store_explicit,
    atomic_xchg,
    barrier,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
    memory_order_acquire,
    memory_order_relaxed,
    memory_order_release,
    memory_scope_device,
    private_array,
)
from clsim.checks import locks
from clsim.compiler.frontend import parse


@kernel
def locked_sum_cl12(lock, total, x):
    if get_local_id(0) == 0:
        while atomic_cmpxchg(lock[0], 0, 1) != 0:
            pass
        total[0] = total[0] + x[get_group_id(0)]
        atomic_xchg(lock[0], 0)


@kernel
def locked_sum_cl20(lock, total, x):
    if get_local_id(0) == 0:
        expected = private_array(1, np.int32)
        expected[0] = 0
        while not atomic_compare_exchange_strong_explicit(
                lock[0], expected[0], 1, memory_order_acquire, memory_order_relaxed,
                memory_scope_device):
            expected[0] = 0
        total[0] = total[0] + x[get_group_id(0)]
        atomic_store_explicit(lock[0], 0, memory_order_release, memory_scope_device)


@kernel
def locked_sum_flag(lock, total, x):
    if get_local_id(0) == 0:
        while atomic_flag_test_and_set(lock[0]):
            pass
        total[0] = total[0] + x[get_group_id(0)]
        atomic_flag_clear(lock[0])


@kernel
def relaxed_acquire(lock, total, x):
    if get_local_id(0) == 0:
        expected = private_array(1, np.int32)
        expected[0] = 0
        while not atomic_compare_exchange_strong_explicit(
                lock[0], expected[0], 1, memory_order_relaxed, memory_order_relaxed,
                memory_scope_device):
            expected[0] = 0
        total[0] = total[0] + x[get_group_id(0)]
        atomic_store_explicit(lock[0], 0, memory_order_release, memory_scope_device)


@kernel
def relaxed_release(lock, total, x):
    if get_local_id(0) == 0:
        while atomic_cmpxchg(lock[0], 0, 1) != 0:
            pass
        total[0] = total[0] + x[get_group_id(0)]
        atomic_store_explicit(lock[0], 0, memory_order_relaxed, memory_scope_device)


@kernel
def write_after_release(lock, total, x):
    if get_local_id(0) == 0:
        while atomic_cmpxchg(lock[0], 0, 1) != 0:
            pass
        total[0] = total[0] + x[get_group_id(0)]
        atomic_xchg(lock[0], 0)
        total[0] = x[get_group_id(0)]


@kernel
def two_locks(lock, total, x):
    if get_local_id(0) == 0:
        mine = get_group_id(0) % 2  # even groups take lock[0], odd groups lock[1]
        while atomic_cmpxchg(lock[mine], 0, 1) != 0:
            pass
        total[0] = total[0] + x[get_group_id(0)]
        atomic_xchg(lock[mine], 0)


@kernel
def local_lock_count(out, total):
    lock = local_array(1, np.int32)
    count = local_array(1, np.int32)
    if get_local_id(0) == 0:
        lock[0] = 0
        count[0] = 0
    barrier(CLK_LOCAL_MEM_FENCE)
    while atomic_cmpxchg(lock[0], 0, 1) != 0:
        pass
    count[0] = count[0] + 1
    total[0] = total[0] + 1.0
    atomic_xchg(lock[0], 0)
    barrier(CLK_LOCAL_MEM_FENCE)
    if get_local_id(0) == 0:
        out[get_group_id(0)] = count[0]


@clsim.func
def take_lock(lock):
    while atomic_cmpxchg(lock[0], 0, 1) != 0:
        pass


@clsim.func
def give_lock(lock):
    atomic_xchg(lock[0], 0)


@clsim.func
def add_to(total, v):
    total[0] = total[0] + v


@kernel
def locked_by_helpers(lock, total, x):
    if get_local_id(0) == 0:
        take_lock(lock)
        add_to(total, x[get_group_id(0)])
        give_lock(lock)


@kernel
def released_too_early_by_helpers(lock, total, x):
    if get_local_id(0) == 0:
        take_lock(lock)
        give_lock(lock)
        add_to(total, x[get_group_id(0)])


def _line_of(text: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _args(groups=4):
    return (np.zeros(2, np.int32), np.zeros(1, np.float32),
            np.arange(1, groups + 1, dtype=np.float32))


@pytest.mark.parametrize(("kern", "jit"), [
    (locked_sum_cl12, True), (locked_sum_cl20, True), (locked_sum_flag, True),
    (locked_by_helpers, True), (locked_sum_cl12, False), (locked_sum_cl20, False)],
    ids=["cl12", "cl20", "flag", "helpers", "cl12-nojit", "cl20-nojit"])
def test_locked_update_is_not_a_race(kern, jit):
    """The lock orders the groups' read-modify-writes of ``total`` (taken, used and
    released in the kernel or in helpers, with or without JIT): no finding, and the lock
    serialises them (the sum is exact, the lock is free at the end)."""
    lock, total, x = args = _args()
    result = clsim.run(kern, (16,), (4,), args, checks="all", jit=jit)
    assert total[0] == x.sum() and lock[0] == 0
    assert result.findings == []


@pytest.mark.parametrize(("kern", "text"), [
    (relaxed_acquire, "lock[0], expected[0], 1, memory_order_relaxed, memory_order_relaxed,"),
    (relaxed_release, "atomic_store_explicit(lock[0], 0, memory_order_relaxed,")],
    ids=["acquire", "release"])
def test_relaxed_lock_is_reported_with_the_reason(kern, text):
    """A lock taken or released with memory_order_relaxed orders nothing: the race is
    reported, and the message names the relaxed atomic's line as the reason."""
    # the site is the call's first line (the compare-exchange spans three)
    line = _line_of(text) - (1 if kern is relaxed_acquire else 0)
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(kern, (16,), (4,), _args(), checks="all")
    err = str(info.value)
    assert "data race on global total[0]" in err and "run in different work-groups" in err
    assert (f"both hold the same lock, but the lock atomic at test_checks_locks.py:{line} in "
            f"{kern.name} uses memory_order_relaxed, which orders no other access") in err
    assert "take the lock with memory_order_acquire and release it with " \
           "memory_order_release" in err


def test_access_after_the_release_is_a_race():
    """The store after the release holds no lock: a race with the next group's locked
    read, reported with both lines."""
    store = _line_of("total[0] = x[get_group_id(0)]")
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(write_after_release, (16,), (4,), _args(), checks="all")
    err = info.value
    assert store in err.lines and "data race on global total[0]" in str(err)
    assert "no lock is held by both" in str(err)
    assert "make both accesses while holding the same lock" in str(err)


def test_access_after_a_helper_released_the_lock_is_a_race():
    """The update made after the helper released the lock holds none: reported."""
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(released_too_early_by_helpers, (16,), (4,), _args(), checks="all")
    assert "data race on global total[0]" in str(info.value)
    assert "run in different work-groups" in str(info.value)


def test_two_different_locks_do_not_order():
    """Even groups hold lock[0], odd groups lock[1]: the same element under two locks is a
    race between an even and an odd group."""
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(two_locks, (16,), (4,), _args(), checks="all")
    err = info.value
    assert "data race on global total[0]" in str(err) and "no lock is held by both" in str(err)
    assert {err.group[0] % 2, err.other_group[0] % 2} == {0, 1}


def test_findings_with_report_all():
    """report_all lists the finding instead of raising; the locked kernel lists none."""
    found = clsim.run(write_after_release, (16,), (4,), _args(), checks="all",
                      report_all=True).findings
    assert found and all(f.category == "race" and f.buffer == "total" for f in found)
    assert clsim.run(locked_sum_cl12, (16,), (4,), _args(), checks="all",
                     report_all=True).findings == []


def test_no_acquiring_atomic_no_lock_tracking():
    """A kernel whose atomics take no lock is compiled without lock tracking, and its race
    is reported as before, with no lock reason."""

    @kernel
    def counted(count, total, x):
        if get_local_id(0) == 0:
            atomic_xchg(count[0], 1)
            total[0] = total[0] + x[get_group_id(0)]

    assert not locks.has_acquire(parse(counted))
    assert locks.has_acquire(parse(locked_sum_cl12)) and locks.has_acquire(
        parse(locked_sum_flag))
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(counted, (16,), (4,), _args(), checks="all")
    assert "run in different work-groups" in str(info.value)
    assert "no lock is held" not in str(info.value) and "lock atomic" not in str(info.value)


def test_local_lock_orders_its_work_group_only():
    """A lock in local memory orders the work-items of its work-group (the local count is
    not a race) but not two work-groups: their updates of the global ``total`` are."""
    out, total = np.zeros(4, np.int32), np.zeros(1, np.float32)
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(local_lock_count, (16,), (4,), (out, total), checks="all")
    err = info.value
    assert "data race on global total[0]" in str(err) and err.group != err.other_group
    assert "no lock is held by both" in str(err)
    found = clsim.run(local_lock_count, (16,), (4,), (out, total), checks="all",
                      report_all=True).findings
    assert {f.buffer for f in found} == {"total"}
    assert list(out) == [4, 4, 4, 4]
