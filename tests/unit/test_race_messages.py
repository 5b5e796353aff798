"""The race message names the synchronisation that is there (docs/checks.md): a work-group
barrier with the other fence is named as such even when a sub-group collective sits beside it
(a work-group barrier also synchronises each sub-group, so both reasons apply and the barrier
is the one the user wrote); with only a sub-group collective, the message says sub-group
synchronisation, not a sub_group_barrier the kernel does not have."""

from __future__ import annotations

import numpy as np

import clsim
from clsim import (CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, get_local_size,
                   kernel, sub_group_reduce_add)


@kernel
def fence_and_collective(x, scratch, y):
    i = get_global_id(0)
    lid = get_local_id(0)
    scratch[i] = x[i] * 2.0
    t = sub_group_reduce_add(x[i])
    barrier(CLK_LOCAL_MEM_FENCE)  # scratch is global: CLK_GLOBAL_MEM_FENCE was needed
    y[i] = scratch[(lid + 16) % get_local_size(0)] + t


@kernel
def collective_only(x, scratch, y):
    i = get_global_id(0)
    lid = get_local_id(0)
    scratch[i] = x[i] * 2.0
    t = sub_group_reduce_add(x[i])
    y[i] = scratch[(lid + 16) % get_local_size(0)] + t


def _messages(kern) -> list[str]:
    n = 64
    args = [np.ones(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.float32)]
    result = clsim.run(kern, (n,), (n,), args, checks="all", report_all=True, subgroup_size=8,
                       jit=False)
    return [f.message for f in result.findings]


def test_wrong_fence_beside_a_collective_names_the_barrier():
    (message,) = _messages(fence_and_collective)
    assert "separated only by a barrier(CLK_LOCAL_MEM_FENCE), which does not order global " \
           "memory" in message
    assert "sub_group_barrier" not in message


def test_collective_only_says_sub_group_synchronisation():
    (message,) = _messages(collective_only)
    assert "separated only by sub-group synchronisation" in message
    assert "different sub-groups (size 8)" in message
    assert "Put a work-group barrier(CLK_GLOBAL_MEM_FENCE)" in message
