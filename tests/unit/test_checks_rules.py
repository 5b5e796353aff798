"""What the race and uninitialised-read checks consider ordered, racy or uninitialised.

Contracts (docs/checks.md): a barrier orders only the address spaces its flags name; groups
are never ordered with each other; atomics never race with atomics, but do with plain
accesses; reads never race with reads; a work-item never races with itself; a
``sub_group_barrier`` (or a sub-group collective) orders the lanes of one sub-group only;
private and local arrays start uninitialised in every work-group; the checks follow arrays
into helper functions, through vector loads/stores, multi-dimensional local arrays and
buffers passed twice. Kernels run in plain-Python mode (same generated code as the JIT).
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_GLOBAL_MEM_FENCE,
    CLK_LOCAL_MEM_FENCE,
    atomic_add,
    barrier,
    get_global_id,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
    private_array,
    sub_group_reduce_add,
    vload4,
    vstore4,
)

F32 = np.float32


def run(kern, args, global_size=(128,), local_size=(64,), **kw):
    kw.setdefault("checks", "all")
    return clsim.run(kern, global_size, local_size, args, jit=False, subgroup_size=16, **kw)


@kernel
def local_with_fence(x, out, flags):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    if flags == 1:
        barrier(CLK_LOCAL_MEM_FENCE)
    elif flags == 2:
        barrier(CLK_GLOBAL_MEM_FENCE)
    else:
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
    out[get_global_id(0)] = s[63 - lid]


@kernel
def global_with_fence(tmp, out, flags):
    g = get_global_id(0)
    tmp[g] = g * 1.0
    if flags == 1:
        barrier(CLK_LOCAL_MEM_FENCE)
    elif flags == 2:
        barrier(CLK_GLOBAL_MEM_FENCE)
    else:
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
    out[g] = tmp[get_group_id(0) * 64 + 63 - get_local_id(0)]


@pytest.mark.parametrize(("flags", "racy"), [(1, False), (2, True), (3, False)])
def test_barrier_orders_local_memory_only_with_the_local_fence(flags, racy):
    """barrier(CLK_GLOBAL_MEM_FENCE) does not order local memory; the local fence (alone or
    or-ed with the global one) does. The message names the wrong fence."""
    args = (np.arange(128, dtype=F32), np.zeros(128, F32), np.int32(flags))
    if not racy:
        assert run(local_with_fence, args).findings == []
        return
    wrong = r"only by a barrier\(CLK_GLOBAL_MEM_FENCE\)"
    with pytest.raises(clsim.DataRaceError, match=wrong) as e:
        run(local_with_fence, args)
    assert e.value.space == "local" and e.value.buffer == "s"


@pytest.mark.parametrize(("flags", "racy"), [(1, True), (2, False), (3, False)])
def test_barrier_orders_global_memory_only_with_the_global_fence(flags, racy):
    """barrier(CLK_LOCAL_MEM_FENCE) does not order global memory between work-items of a
    group; the global fence does."""
    args = (np.zeros(128, F32), np.zeros(128, F32), np.int32(flags))
    if not racy:
        assert run(global_with_fence, args).findings == []
        return
    with pytest.raises(clsim.DataRaceError, match="does not order global memory") as e:
        run(global_with_fence, args)
    assert e.value.space == "global" and e.value.buffer == "tmp"


@kernel
def group_counter(counts, out):
    lid = get_local_id(0)
    c = local_array(1, np.int32)
    if lid == 0:
        c[0] = 0
    barrier(CLK_LOCAL_MEM_FENCE)
    atomic_add(c[0], 1)
    atomic_add(counts[0], 1)
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid == 0:
        out[get_group_id(0)] = c[0]


@kernel
def plain_read_of_atomic_counter(counts, out):
    atomic_add(counts[0], 1)
    out[get_global_id(0)] = counts[0]


def test_atomics_do_not_race_with_atomics():
    """Atomic updates of one local and one global element from every work-item of every group
    are not races; the results are exact."""
    counts, out = np.zeros(1, np.int32), np.zeros(2, np.int32)
    assert run(group_counter, (counts, out)).findings == []
    assert counts[0] == 128 and (out == 64).all()


def test_plain_read_of_an_atomic_counter_races():
    """A plain load of an element other work-items update atomically is a race (one atomic,
    one not); the message says so."""
    with pytest.raises(clsim.DataRaceError, match="one of them is atomic") as e:
        run(plain_read_of_atomic_counter, (np.zeros(1, np.int32), np.zeros(128, np.int32)))
    assert {e.value.access, e.value.other_access} == {"load", "atomic"}


@kernel
def shared_reads_and_own_writes(table, buf, out):
    g = get_global_id(0)
    buf[g] = table[0] + table[g % 4]
    buf[g] = buf[g] * 2.0
    out[g] = buf[g] + table[3]


def test_reads_never_race_and_a_work_item_never_races_with_itself():
    """Every work-item of every group reads the same elements (no race), and re-reads and
    re-writes its own element without barriers (no race)."""
    table, buf, out = np.arange(4, dtype=F32), np.zeros(128, F32), np.zeros(128, F32)
    assert run(shared_reads_and_own_writes, (table, buf, out)).findings == []
    assert np.allclose(out, (table[0] + table[np.arange(128) % 4]) * 2 + table[3])


@kernel
def private_scratch(out, n):
    p = private_array(4, np.float32)
    for k in range(n):
        p[k] = k * 1.0
    out[get_global_id(0)] = p[3]


def test_private_arrays_start_uninitialised():
    """Reading a private element this work-item has not written is an uninitialised read
    (index and address space named); writing all of them first is clean."""
    out = np.zeros(128, F32)
    assert run(private_scratch, (out, np.int32(4))).findings == []
    with pytest.raises(clsim.UninitializedReadError, match="private p") as e:
        run(private_scratch, (out, np.int32(3)))
    assert e.value.index == 3 and e.value.space == "private" and e.value.lid == (0,)


@kernel
def transpose_tile(x, out, sync):
    lx = get_local_id(0)
    ly = get_local_id(1)
    t = local_array((8, 8), np.float32)
    t[ly, lx] = x[get_global_id(1) * 16 + get_global_id(0)]
    if sync == 1:
        barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(1) * 16 + get_global_id(0)] = t[lx, ly]


def test_multidimensional_local_arrays_report_tuple_indices():
    """A 2-D local tile read before the barrier: the race names the element as (row, col)
    and both work-items as 2-D ids; with the barrier the transpose is clean."""
    x, out = np.arange(256, dtype=F32), np.zeros(256, F32)
    assert run(transpose_tile, (x, out, np.int32(1)), (16, 16), (8, 8)).findings == []
    with pytest.raises(clsim.DataRaceError) as e:
        run(transpose_tile, (x, out, np.int32(0)), (16, 16), (8, 8))
    err = e.value
    assert err.index == (1, 0) and len(err.lid) == 2 and len(err.other_lid) == 2


@clsim.func
def put(buf, i, v):
    buf[i] = v


@kernel
def store_through_helper(out, sync):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    put(s, lid, lid * 1.0)
    if sync == 1:
        barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[(lid + 1) % 64]


def test_helper_functions_are_followed_to_the_callers_array():
    """A store inside a helper function counts against the caller's local array: the race
    names the array 's' and the helper's line as the other access."""
    out = np.zeros(128, F32)
    assert run(store_through_helper, (out, np.int32(1))).findings == []
    with pytest.raises(clsim.DataRaceError) as e:
        run(store_through_helper, (out, np.int32(0)))
    assert e.value.buffer == "s" and e.value.other_source == "buf[i] = v"
    assert e.value.other_access == "store" and e.value.other_lid == (1,)


@kernel
def vector_copy(x, out, overlap):
    i = get_global_id(0)
    vstore4(vload4(i, x), i // overlap, out)


def test_vector_accesses_cover_every_element():
    """vstore4 writes four elements: overlapping vector stores race, disjoint ones do not."""
    x, out = np.arange(128, dtype=F32), np.zeros(128, F32)
    assert run(vector_copy, (x, out, np.int32(1)), (32,), (16,)).findings == []
    with pytest.raises(clsim.DataRaceError) as e:
        run(vector_copy, (x, out, np.int32(2)), (32,), (16,))
    assert e.value.access == e.value.other_access == "store"


@kernel
def two_outputs(a, b):
    g = get_global_id(0)
    a[g] = 1.0
    b[(g + 1) % 64] = 2.0


def test_a_buffer_passed_twice_is_one_buffer():
    """The same array passed as two parameters shares one shadow: writes through both names
    race; two distinct arrays do not."""
    a, b = np.zeros(64, F32), np.zeros(64, F32)
    assert run(two_outputs, (a, b), (64,), (64,)).findings == []
    with pytest.raises(clsim.DataRaceError):
        run(two_outputs, (a, a), (64,), (64,))


@kernel
def exchange_in_subgroup(x, out, across):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    total = sub_group_reduce_add(s[lid])
    out[get_global_id(0)] = s[(lid + across) % 64] + total


@pytest.mark.parametrize(("across", "racy"), [(1, True), (16, True), (0, False)])
def test_subgroup_collectives_order_lanes_of_one_subgroup_only(across, racy):
    """A sub-group collective orders the lanes of its sub-group: reading a neighbour's element
    inside the sub-group after it is clean... except at the sub-group's edge, where lane 15
    reads lane 16 of the next sub-group (racy), and reading across sub-groups is racy."""
    args = (np.arange(128, dtype=F32), np.zeros(128, F32), np.int32(across))
    if not racy:
        assert run(exchange_in_subgroup, args).findings == []
        return
    result = run(exchange_in_subgroup, args, report_all=True)
    assert result.findings and all(f.category == "race" for f in result.findings)
    assert any("different sub-groups (size 16)" in f.message for f in result.findings)
