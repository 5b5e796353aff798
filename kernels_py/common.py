"""Helpers shared by the library's kernels: reductions written once, used by several kernels."""

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_sub_group_size, sub_group_shuffle_xor


@clsim.func
def tree_reduce_max(scratch, lid, wg):
    """fmax over scratch[0:wg] into scratch[0]; works for any wg, not only powers of two."""
    active = wg
    while active > 1:
        half_ = (active + 1) // 2
        if lid < active - half_:
            scratch[lid] = clsim.fmax(scratch[lid], scratch[lid + half_])
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_


@clsim.func
def tree_reduce_sum(scratch, lid, wg):
    """Sum scratch[0:wg] into scratch[0] in a fixed pairwise order (the .cl twin uses the same)."""
    active = wg
    while active > 1:
        half_ = (active + 1) // 2
        if lid < active - half_:
            scratch[lid] = scratch[lid] + scratch[lid + half_]
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_


@clsim.func
def subgroup_sum_butterfly(v):
    """The sub-group's sum of v in every lane, in a fixed order: log2(width) rounds of
    v + shuffle_xor(v, mask). Both lanes of a pair add the same two numbers (commutative, so
    equal bits), hence the order is the kernel's and a device gives the same bits, unlike
    sub_group_reduce_add, whose order is the device's. Needs a power-of-two, full sub-group
    (the launch plans of its users make the local size a multiple of it)."""
    mask = get_sub_group_size() // 2
    while mask > 0:
        v = v + sub_group_shuffle_xor(v, mask)
        mask = mask // 2
    return v
