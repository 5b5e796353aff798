"""Locks built from atomics: what the race checks say about them (docs/checks.md, "Atomics and
locks").

The checks do not model the order a lock's acquire (a compare-exchange or test-and-set that
succeeds) and release give the plain accesses between them. A correctly locked update is
therefore reported as a race; the message says a lock was seen and that the report may be a
false alarm, and ``checks="bounds"`` runs the kernel. Kernels without such atomics keep their
messages (the other test_checks_* files).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    atomic_cmpxchg,
    atomic_compare_exchange_strong_explicit,
    atomic_store_explicit,
    atomic_xchg,
    get_group_id,
    get_local_id,
    kernel,
    memory_order_acquire,
    memory_order_relaxed,
    memory_order_release,
    memory_scope_device,
    private_array,
)


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


def _line_of(text: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _args(groups=4):
    return (np.zeros(1, np.int32), np.zeros(1, np.float32),
            np.arange(1, groups + 1, dtype=np.float32))


@pytest.mark.parametrize("kern", [locked_sum_cl12, locked_sum_cl20], ids=["cl12", "cl20"])
def test_lock_ordered_update_is_reported_with_the_lock_note(kern):
    """The limitation, shown: the locked read-modify-write of ``total`` by two groups is
    reported, naming the lock's line and saying it may be a false alarm."""
    taking = "while atomic_cmpxchg(" if kern is locked_sum_cl12 else \
        "while not atomic_compare_exchange_strong_explicit("
    lock_line = _line_of(taking)
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(kern, (16,), (4,), _args(), checks="all")
    err = info.value
    assert "data race on global total[0]" in str(err)
    assert "run in different work-groups" in str(err)
    assert f"If the lock taken at test_checks_locks.py:{lock_line} in {kern.name} " \
           "orders these two accesses, this report is a false alarm" in str(err)
    assert "checks='bounds'" in str(err)


@pytest.mark.parametrize("kern", [locked_sum_cl12, locked_sum_cl20], ids=["cl12", "cl20"])
def test_locked_kernel_runs_with_bounds_checks(kern):
    """What the note suggests works: the lock serialises the groups' updates."""
    lock, total, x = args = _args()
    clsim.run(kern, (16,), (4,), args, checks="bounds")
    assert total[0] == x.sum() and lock[0] == 0


def test_no_lock_no_note():
    """A cross-group race in a kernel whose atomics take no lock has no lock note."""

    @kernel
    def counted(count, total, x):
        if get_local_id(0) == 0:
            atomic_xchg(count[0], 1)
            total[0] = total[0] + x[get_group_id(0)]

    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(counted, (16,), (4,), _args(), checks="all")
    assert "run in different work-groups" in str(info.value)
    assert "lock taken" not in str(info.value) and "false alarm" not in str(info.value)
