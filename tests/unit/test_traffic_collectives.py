"""Flops inside collectives: a reduction or scan of n lanes is n - 1 operations, a clustered
reduction n - 1 per cluster, counted once per sub-group (docs/traffic-model.md, Arithmetic)."""

from __future__ import annotations

import numpy as np

import clsim
from clsim import (
    get_global_id,
    kernel,
    sub_group_clustered_reduce_add,
    sub_group_reduce_add,
    sub_group_scan_inclusive_max,
    work_group_reduce_add,
)


@kernel
def sg_sum(x, y):
    i = get_global_id(0)
    y[i] = sub_group_reduce_add(x[i])


@kernel
def sg_scan_max(x, y):
    i = get_global_id(0)
    y[i] = sub_group_scan_inclusive_max(x[i])


@kernel
def sg_clustered(x, y):
    i = get_global_id(0)
    y[i] = sub_group_clustered_reduce_add(x[i], 8)


@kernel
def wg_sum(x, y):
    i = get_global_id(0)
    y[i] = work_group_reduce_add(x[i])


def _flops(k, n=256, local=64, dtype=np.float32):
    x = np.arange(n).astype(dtype)
    y = np.zeros(n, dtype)
    r = clsim.run(k, (n,), (local,), (x, y), traffic=True, subgroup_size=32)
    return r.traffic.flop_counts, y


def test_sub_group_reduce_counts_n_minus_one_adds_per_sub_group():
    """256 work-items in sub-groups of 32: 8 reductions of 31 adds."""
    counts, y = _flops(sg_sum)
    assert counts["add"] == 8 * 31
    assert y[0] == sum(range(32))


def test_scan_and_integer_reductions():
    """A max scan is 31 operations per sub-group (max counts as add); on int32 data the
    same operations are integer ops, not flops."""
    assert _flops(sg_scan_max)[0]["add"] == 8 * 31
    counts, _ = _flops(sg_sum, dtype=np.int32)
    assert counts["add"] == 0 and counts["int"] == 8 * 31


def test_clustered_reduce_counts_per_cluster():
    """Clusters of 8: 7 adds per cluster, 32 clusters over 256 work-items."""
    assert _flops(sg_clustered)[0]["add"] == 32 * 7


def test_work_group_reduce_counts_once_per_group():
    """Groups of 64: 63 adds per group, 4 groups."""
    assert _flops(wg_sum)[0]["add"] == 4 * 63
