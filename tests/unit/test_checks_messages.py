"""A race finding suggests the fix that fits the race (docs/checks.md, "Messages").

Contracts: two sub-groups storing one element from one statement need a guard (not a
barrier); so do two work-items storing one element from one statement; a conflict across
work-groups can never be fixed by a barrier; a load racing with a store of the same
work-group is fixed by a barrier with the right fence.
"""

from __future__ import annotations

import numpy as np

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    get_sub_group_local_id,
    kernel,
    local_array,
    sub_group_reduce_add,
)

F32 = np.float32


@kernel
def subgroup_sums_to_one_element(x, out):
    total = sub_group_reduce_add(x[get_global_id(0)])
    if get_sub_group_local_id() == 0:
        out[get_group_id(0)] = total


@kernel
def every_item_stores_one_element(x, out):
    out[get_group_id(0)] = x[get_global_id(0)]


@kernel
def groups_store_one_element(x, out):
    if get_local_id(0) == 0:
        out[0] = x[get_global_id(0)]


@kernel
def neighbour_without_barrier(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    out[get_global_id(0)] = s[(lid + 1) % 64]
    barrier(CLK_LOCAL_MEM_FENCE)


def findings(kern, size=64):
    args = (np.arange(size, dtype=F32), np.zeros(size, F32))
    result = clsim.run(kern, (size,), (64,), args, checks="races", subgroup_size=16,
                       report_all=True)
    assert result.findings, kern
    return result.findings


def test_two_subgroups_storing_one_element_need_a_guard():
    race = findings(subgroup_sums_to_one_element)[0]
    assert race.kinds == ("store", "store")
    assert "two sub-groups" in race.message
    assert "get_sub_group_id() == 0" in race.message
    assert "Put barrier" not in race.message


def test_work_items_storing_one_element_from_one_statement_need_a_guard():
    race = findings(every_item_stores_one_element)[0]
    assert "get_local_id(0) == 0" in race.message
    assert "Put barrier" not in race.message


def test_stores_from_two_work_groups_cannot_be_fixed_by_a_barrier():
    race = findings(groups_store_one_element, size=128)[0]
    assert "different work-groups" in race.message and "no barrier can order" in race.message
    assert "single work-group store each element" in race.message


def test_a_load_racing_with_a_store_in_one_group_is_fixed_by_a_barrier():
    race = findings(neighbour_without_barrier)[0]
    assert sorted(race.kinds) == ["load", "store"]
    assert "Put barrier(CLK_LOCAL_MEM_FENCE) between the two accesses." in race.message
