"""Helpers shared by the library's kernels: reductions written once, used by several kernels."""

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier


@clsim.func
def tree_reduce_max(scratch, lid, wg):
    """fmax over scratch[0:wg] into scratch[0]; works for any wg, not only powers of two."""
    active = wg
    while active > 1:
        half = (active + 1) // 2
        if lid < active - half:
            scratch[lid] = clsim.fmax(scratch[lid], scratch[lid + half])
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half


@clsim.func
def tree_reduce_sum(scratch, lid, wg):
    """Sum scratch[0:wg] into scratch[0] in a fixed pairwise order (the .cl twin uses the same)."""
    active = wg
    while active > 1:
        half = (active + 1) // 2
        if lid < active - half:
            scratch[lid] = scratch[lid] + scratch[lid + half]
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half
