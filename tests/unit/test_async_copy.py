"""async_work_group_copy, wait_group_events and prefetch.

Contracts: the copy moves n elements global->local or local->global (pointer offsets
included), the data is there for every work-item after wait_group_events; reading another
work-item's share before the wait is a race under checks="races"; a copy reached by only some
work-items, or with differing arguments, is a BarrierDivergenceError naming it; a range outside
the buffer is an OutOfBoundsError; other address spaces and mixed types are compile errors;
prefetch does nothing.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    KernelCompileError,
    async_work_group_copy,
    async_work_group_strided_copy,
    barrier,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
    prefetch,
    wait_group_events,
)

F32 = np.float32


@kernel
def tile_roundtrip(x, out, n_tiles):
    lid = get_local_id(0)
    g = get_group_id(0)
    t = local_array(64, np.float32)
    for k in range(n_tiles):
        ev = async_work_group_copy(t, x + (g * n_tiles + k) * 64, 64, 0)
        wait_group_events(1, ev)
        v = t[lid] * 2.0 + t[63 - lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        t[lid] = v
        barrier(CLK_LOCAL_MEM_FENCE)
        ev = async_work_group_copy(out + (g * n_tiles + k) * 64, t, 64, ev)
        wait_group_events(1, ev)
    prefetch(x, 64)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("checks", ["default", "all"])
def test_roundtrip_through_local_memory(jit, checks):
    """Tiles copied in, transformed by every work-item (reading others' shares after the
    wait), copied out: equals numpy; no race or uninitialised read under checks="all"."""
    x = np.random.default_rng(0).standard_normal(4 * 3 * 64).astype(F32)
    out = np.zeros_like(x)
    clsim.run(tile_roundtrip, (256,), (64,), (x, out, np.int32(3)), jit=jit, checks=checks)
    tiles = x.reshape(-1, 64)
    want = (tiles * F32(2.0) + tiles[:, ::-1]).astype(F32).ravel()
    np.testing.assert_array_equal(out, want)


@kernel
def read_before_wait(x, out):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    ev = async_work_group_copy(t, x, 64, 0)
    out[lid] = t[63 - lid]
    wait_group_events(1, ev)


def test_read_before_wait_is_a_race():
    """The copy is complete only at the wait: another work-item's element read before it."""
    with pytest.raises(clsim.DataRaceError):
        clsim.run(read_before_wait, (64,), (64,), (np.ones(64, F32), np.zeros(64, F32)),
                  checks="races", jit=False)


@kernel
def partial_copy(x, out):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    if lid < 32:
        async_work_group_copy(t, x, 64, 0)
    wait_group_events(1, 0)
    out[lid] = t[lid]


@kernel
def differing_count(x, out):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    ev = async_work_group_copy(t, x, 32 if lid == 5 else 64, 0)
    wait_group_events(1, ev)
    out[lid] = t[lid]


@pytest.mark.parametrize("kern, taken, not_taken", [(partial_copy, 32, 32),
                                                    (differing_count, 63, 1)])
def test_copy_must_be_reached_by_all_with_the_same_arguments(kern, taken, not_taken):
    match = r"async_work_group_copy\(t <- x\) with the same dst, src, n reached by"
    with pytest.raises(clsim.BarrierDivergenceError, match=match) as info:
        clsim.run(kern, (64,), (64,), (np.ones(64, F32), np.zeros(64, F32)), jit=False)
    assert (info.value.taken, info.value.not_taken) == (taken, not_taken)


@kernel
def copy_past_end(x, out):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    ev = async_work_group_copy(t, x + 16, 64, 0)
    wait_group_events(1, ev)
    out[lid] = t[lid]


def test_copy_range_outside_the_buffer():
    with pytest.raises(clsim.OutOfBoundsError, match="x"):
        clsim.run(copy_past_end, (64,), (64,), (np.ones(64, F32), np.zeros(64, F32)),
                  jit=False)


@kernel
def global_to_global(x, out):
    async_work_group_copy(out, x, 64, 0)


@kernel
def mixed_types(x, out):
    t = local_array(64, np.int32)
    async_work_group_copy(t, x, 64, 0)


@pytest.mark.parametrize("kern, match", [(global_to_global, "global to local or local to"),
                                         (mixed_types, "dst holds int but src holds float")])
def test_bad_copies_are_compile_errors(kern, match):
    with pytest.raises(KernelCompileError, match=match):
        clsim.run(kern, (64,), (64,), (np.ones(64, F32), np.zeros(64, F32)), jit=False)


@kernel
def transpose_columns(x, out, ncols):
    lid = get_local_id(0)
    g = get_group_id(0)
    col = local_array(64, np.float32)
    ev = async_work_group_strided_copy(col, x + g, 64, ncols, 0)
    wait_group_events(1, ev)
    col[lid] = col[lid] + np.float32(1.0)
    barrier(CLK_LOCAL_MEM_FENCE)
    ev = async_work_group_strided_copy(out + g, col, 64, ncols, ev)
    wait_group_events(1, ev)


@pytest.mark.parametrize("jit", [False, True])
def test_strided_copy_gathers_and_scatters_columns(jit):
    """Group g gathers column g (stride ncols on the global side), adds 1, scatters it back:
    out == x + 1 element for element, under checks="all"."""
    x = np.random.default_rng(5).standard_normal((64, 4)).astype(F32)
    out = np.zeros_like(x)
    clsim.run(transpose_columns, (256,), (64,), (x.ravel(), out.reshape(-1), np.int32(4)),
              jit=jit, checks="all")
    np.testing.assert_array_equal(out, x + F32(1.0))


def test_strided_copy_range_is_checked_with_the_stride():
    """The last element read is x[g + 63 * ncols]: with ncols=5 it is past the end."""
    x = np.zeros(256, F32)
    with pytest.raises(clsim.OutOfBoundsError, match=r"x\[315\]"):
        clsim.run(transpose_columns, (64,), (64,), (x, np.zeros(256, F32), np.int32(5)),
                  jit=False)


@kernel
def overlapping_destinations(x, out):
    lid = get_local_id(0)
    t = local_array(64, np.float32)
    t[lid] = x[lid]
    barrier(CLK_LOCAL_MEM_FENCE)
    ev = async_work_group_copy(out + get_group_id(0) * 32, t, 64, 0)
    wait_group_events(1, ev)


def test_copies_to_overlapping_global_ranges_race():
    """Two groups copying into overlapping parts of out (a pointer expression, out + k) is a
    race between groups: the checker must track out although no plain store names it."""
    with pytest.raises(clsim.DataRaceError, match="out"):
        clsim.run(overlapping_destinations, (128,), (64,),
                  (np.ones(128, F32), np.zeros(128, F32)), checks="races", jit=False)
