"""Control flow around sub-group collectives, the errors clsim raises for misuse, the reduction
order option and the instrument hooks.

Contracts: control flow that is uniform within each sub-group but differs between sub-groups
(ifs, for/while loops, break/continue, whole sub-groups returning) runs each sub-group as a
device would; a condition that differs *within* a sub-group, a collective reached by only some
lanes, a bad broadcast lane or shuffle index is an error naming the sub-group, the counts and the
line; a work-group barrier or collective in sub-group-varying control flow is divergence.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    BarrierDivergenceError,
    KernelCompileError,
    SubGroupError,
    barrier,
    convert_int,
    get_global_id,
    get_local_id,
    get_local_size,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_all,
    sub_group_any,
    sub_group_barrier,
    sub_group_broadcast,
    sub_group_clustered_reduce_add,
    sub_group_reduce_add,
    sub_group_reduce_max,
    sub_group_scan_inclusive_add,
    sub_group_shuffle,
    sub_group_shuffle_xor,
    work_group_broadcast,
    work_group_reduce_add,
)
from clsim.instruments import registry
from clsim.instruments.base import Instrument


def _run(k, n, local, size, *args, jit=False, **kw):
    return clsim.run(k, (n,), (local,), args, subgroup_size=size, jit=jit, **kw)


# -- control flow uniform per sub-group ---------------------------------------------------------
@kernel
def k_if_else(x, out):
    i = get_global_id(0)
    total = -1.0
    if get_sub_group_id() % 2 == 0:
        total = sub_group_reduce_add(x[i])
    else:
        total = sub_group_reduce_max(x[i]) * 10.0
    out[i] = total


@pytest.mark.parametrize("jit", [False, True])
def test_if_else_uniform_per_sub_group(jit):
    """An if/else whose condition depends on the sub-group id runs each sub-group down its own
    branch (a work-group-wide check would call this divergence)."""
    x = np.arange(20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    _run(k_if_else, 20, 20, 4, x, out, jit=jit)
    for sg in range(5):
        v = x[sg * 4:sg * 4 + 4]
        want = v.sum() if sg % 2 == 0 else v.max() * 10
        assert (out[sg * 4:sg * 4 + 4] == want).all()


@kernel
def k_loops(x, out):
    i = get_global_id(0)
    sg = get_sub_group_id()
    acc = 0.0
    for k in range(sg + 1):
        acc += sub_group_reduce_add(x[i] * k)
    t = 0
    while sub_group_any(t < sg * 2):
        t += 1
        if t > 5:
            break
    hits = 0
    for k in range(10):
        if k % 3 == sg % 3:
            continue
        hits += sub_group_reduce_add(1)
        if k >= 6 + sg:
            break
    out[i * 3] = acc
    out[i * 3 + 1] = t
    out[i * 3 + 2] = hits


@pytest.mark.parametrize("jit", [False, True])
def test_loops_with_trip_counts_that_differ_by_sub_group(jit):
    """for/while loops around collectives may run a different number of times in each sub-group
    (masked execution), including continue and break under sub-group-uniform conditions."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(48, np.float32)
    _run(k_loops, 16, 16, 4, x, out, jit=jit)
    out = out.reshape(16, 3)
    for sg in range(4):
        v = x[sg * 4:sg * 4 + 4]
        acc = sum(np.float32(v * k).sum() for k in range(sg + 1))
        t = min(sg * 2, 6) if sg * 2 <= 5 else 6
        hits = 0
        for k in range(10):
            if k % 3 == sg % 3:
                continue
            hits += 4
            if k >= 6 + sg:
                break
        assert (out[sg * 4:sg * 4 + 4] == [acc, t, hits]).all(), sg


@kernel
def k_second_stage(x, out):
    lid = get_local_id(0)
    scratch = clsim.local_array(64, np.float32)
    s = sub_group_reduce_add(x[get_global_id(0)])
    if get_sub_group_local_id() == 0:
        scratch[get_sub_group_id()] = s
    barrier(CLK_LOCAL_MEM_FENCE)
    if get_sub_group_id() == 0:
        v = 0.0
        for k in range(get_sub_group_local_id(), (get_local_size(0) + 3) // 4, 4):
            v += scratch[k]
        total = sub_group_reduce_add(v)
        if lid == 0:
            out[0] = total


def test_reduction_second_stage_by_sub_group_zero():
    """The reduce_sum pattern: sub-group 0 alone runs a collective after a barrier."""
    x = np.arange(50, dtype=np.float32)
    out = np.zeros(1, np.float32)
    _run(k_second_stage, 50, 50, 4, x, out)
    assert out[0] == x.sum()


@kernel
def k_whole_subgroup_returns(x, out, n):
    i = get_global_id(0)
    if get_sub_group_id() * get_sub_group_size() >= n:
        return
    out[i] = sub_group_reduce_add(x[i])


def test_whole_sub_groups_may_return_before_a_collective():
    """An early return taken by every lane of a sub-group is fine: the others still meet."""
    x = np.ones(16, np.float32)
    out = np.zeros(16, np.float32)
    _run(k_whole_subgroup_returns, 16, 16, 4, x, out, np.int32(8))
    assert (out[:8] == 4).all() and (out[8:] == 0).all()


@clsim.func
def sg_total(v):
    s = sub_group_reduce_add(v)
    return s * 2.0


@kernel
def k_helper(x, out):
    i = get_global_id(0)
    out[i] = sg_total(x[i])


def test_helper_returning_a_collective_value():
    """A @clsim.func whose last statement returns a collective's value is inlined at
    ``y = helper(...)``."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    _run(k_helper, 8, 8, 4, x, out)
    assert (out == np.repeat([12.0, 44.0], 4)).all()


# -- errors -------------------------------------------------------------------------------------
@kernel
def k_lane_divergent(x, out):
    i = get_global_id(0)
    if get_sub_group_local_id() < 2:
        out[i] = sub_group_reduce_add(x[i])


@pytest.mark.parametrize("jit", [False, True])
def test_collective_under_a_lane_dependent_condition(jit):
    """A condition that differs within a sub-group around a collective is
    BarrierDivergenceError naming the sub-group, the counts and the line."""
    with pytest.raises(BarrierDivergenceError) as info:
        _run(k_lane_divergent, 8, 8, 4, np.ones(8, np.float32), np.zeros(8, np.float32),
             jit=jit)
    err = info.value
    assert err.subgroup == 0 and err.taken == 2 and err.not_taken == 2
    assert "sub-group 0" in str(err) and "get_sub_group_local_id() < 2" in str(err)
    assert err.line == k_lane_divergent.fn.__code__.co_firstlineno + 3


@kernel
def k_partial_return(x, out):
    i = get_global_id(0)
    if get_sub_group_local_id() == 3:
        return
    out[i] = sub_group_scan_inclusive_add(x[i])


def test_collective_after_some_lanes_returned():
    """A collective reached by only some lanes (the others returned) is an error with counts."""
    with pytest.raises(BarrierDivergenceError) as info:
        _run(k_partial_return, 8, 8, 4, np.ones(8, np.float32), np.zeros(8, np.float32))
    err = info.value
    assert err.taken == 3 and err.not_taken == 1 and err.subgroup == 0
    assert "sub_group_scan_inclusive_add() reached by 3 of 4 lanes of sub-group 0" in str(err)


@kernel
def k_sg_barrier_divergent(x, out):
    i = get_global_id(0)
    if x[i] > 0.0:
        sub_group_barrier(CLK_LOCAL_MEM_FENCE)
    out[i] = x[i]


def test_sub_group_barrier_divergence():
    """sub_group_barrier reached by some lanes of a sub-group is divergence."""
    x = np.array([1, 1, 1, 1, 1, -1, 1, 1], np.float32)
    with pytest.raises(BarrierDivergenceError, match="sub-group 1"):
        _run(k_sg_barrier_divergent, 8, 8, 4, x, np.zeros(8, np.float32))
    x[5] = 1
    out = np.zeros(8, np.float32)
    _run(k_sg_barrier_divergent, 8, 8, 4, x, out)
    assert (out == x).all()


@kernel
def k_broadcast_lane(x, out, lane_base):
    i = get_global_id(0)
    out[i] = sub_group_broadcast(x[i], lane_base + get_sub_group_local_id() // 3)


def test_broadcast_lane_must_be_uniform_and_in_range():
    """sub_group_broadcast's lane must be the same in every lane (SubGroupError naming both
    values) and below the sub-group size (SubGroupError with index and size)."""
    x = np.ones(8, np.float32)
    with pytest.raises(SubGroupError) as info:
        _run(k_broadcast_lane, 8, 8, 4, x, np.zeros(8, np.float32), np.int32(0))
    assert "differs within sub-group 0" in str(info.value)
    assert info.value.expected == 0 and info.value.value == 1

    @kernel
    def k_far(x, out, lane):
        i = get_global_id(0)
        out[i] = sub_group_broadcast(x[i], lane)

    with pytest.raises(SubGroupError) as info:
        _run(k_far, 6, 6, 4, x[:6], np.zeros(6, np.float32), np.int32(3))
    err = info.value
    assert err.index == 3 and err.length == 2 and err.subgroup == 1  # last sub-group has 2 lanes
    assert "lane 3 is out of range for sub-group 1 (sub-group size 2)" in str(err)


@kernel
def k_shuffle_bad(x, out, k):
    i = get_global_id(0)
    out[i] = sub_group_shuffle(x[i], get_sub_group_local_id() + k)


@kernel
def k_xor_bad(x, out):
    i = get_global_id(0)
    out[i] = sub_group_shuffle_xor(x[i], 4)


@pytest.mark.parametrize("jit", [False, True])
def test_shuffle_index_out_of_range_is_an_error(jit):
    """A shuffle source lane outside the sub-group stops the run (no garbage value)."""
    x = np.ones(8, np.float32)
    out = np.zeros(8, np.float32)
    _run(k_shuffle_bad, 8, 8, 4, x, out, np.int32(0), jit=jit)
    with pytest.raises(SubGroupError) as info:
        _run(k_shuffle_bad, 8, 8, 4, x, out, np.int32(1), jit=jit)
    assert info.value.index == 4 and info.value.lid == (3,)
    with pytest.raises(SubGroupError, match=r"lane \^ mask"):
        _run(k_xor_bad, 8, 8, 4, x, out, jit=jit)


@kernel
def k_wg_in_sg_branch(x, out):
    i = get_global_id(0)
    if get_sub_group_id() == 0:
        out[i] = work_group_reduce_add(x[i])


@kernel
def k_barrier_in_sg_branch(x, out):
    i = get_global_id(0)
    if get_sub_group_id() == 0:
        out[i] = sub_group_reduce_add(x[i])
        barrier(CLK_LOCAL_MEM_FENCE)


def test_work_group_sync_in_sub_group_control_flow_is_divergence():
    """A work-group collective or barrier inside a branch taken by some sub-groups only is
    BarrierDivergenceError (the whole group must agree there)."""
    x = np.ones(8, np.float32)
    for k in (k_wg_in_sg_branch, k_barrier_in_sg_branch):
        with pytest.raises(BarrierDivergenceError, match="true for 4 work-items and false for 4"):
            _run(k, 8, 8, 4, x, np.zeros(8, np.float32))


@kernel
def k_wg_partial(x, out):
    i = get_global_id(0)
    if i == 5:
        return
    out[i] = work_group_reduce_add(x[i])


@kernel
def k_wg_broadcast_bad(x, out):
    i = get_global_id(0)
    out[i] = work_group_broadcast(x[i], get_local_id(0) % 2)


def test_work_group_collective_errors():
    """A work-group collective after some work-items returned is divergence; its broadcast id
    must be uniform and below the local size."""
    x = np.ones(8, np.float32)
    with pytest.raises(BarrierDivergenceError, match="reached by 7 of 8 work-items"):
        _run(k_wg_partial, 8, 8, 4, x, np.zeros(8, np.float32))
    with pytest.raises(SubGroupError, match="differs within the work-group"):
        _run(k_wg_broadcast_bad, 8, 8, 4, x, np.zeros(8, np.float32))


def test_compile_time_misuse():
    """Clear compile errors: a cluster size that is not a power of two (or exceeds the
    sub-group size), a collective under 'and', a wrong argument type."""

    @kernel
    def k_cluster(x, out):
        i = get_global_id(0)
        out[i] = sub_group_clustered_reduce_add(x[i], 3)

    @kernel
    def k_cond(x, out):
        i = get_global_id(0)
        if x[i] > 0.0 and sub_group_all(x[i] > 1.0):
            out[i] = 1.0

    @kernel
    def k_float_lane(x, out):
        i = get_global_id(0)
        out[i] = sub_group_broadcast(x[i], 1.5)

    x, out = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(KernelCompileError, match="power of two"):
        _run(k_cluster, 8, 8, 4, x, out)
    with pytest.raises(KernelCompileError, match="under 'and'"):
        _run(k_cond, 8, 8, 4, x, out)
    with pytest.raises(KernelCompileError, match="must be an integer"):
        _run(k_float_lane, 8, 8, 4, x, out)


# -- reduction order ----------------------------------------------------------------------------
def test_shuffled_reduction_order_is_seeded_and_shows_order_dependence():
    """reduction_order="shuffled" folds float sums in a seeded permutation of the lanes: the
    same seed gives the same bits (JIT and no-JIT alike), other seeds can give other sums where
    the order matters, integer sums never change, and the default order is the lane order."""
    x = np.tile(np.array([1e8, 1.0, -1e8, 1.0], np.float32), 8)

    @kernel
    def k(x, out, iout):
        i = get_global_id(0)
        out[i] = sub_group_reduce_add(x[i])
        iout[i] = sub_group_reduce_add(convert_int(x[i] != 0.0))

    def run(**kw):
        out, iout = np.zeros(32, np.float32), np.zeros(32, np.int32)
        _run(k, 32, 32, 32, x, out, iout, **kw)
        assert (iout == 32).all()
        return out[0]

    assert run() == np.float32(1.0)  # lane order: ((1e8 + 1) - 1e8) + 1 ... = 1
    shuffled = {float(run(reduction_order="shuffled", reduction_seed=s)) for s in range(12)}
    assert len(shuffled) > 1
    assert run(reduction_order="shuffled", reduction_seed=7) == run(
        reduction_order="shuffled", reduction_seed=7, jit=True)
    with pytest.raises(clsim.InvalidArgumentError, match="reduction_order"):
        run(reduction_order="random")


# -- instrument hooks ---------------------------------------------------------------------------
class _Recorder(Instrument):
    name = "test_recorder"
    events: ClassVar[list] = []

    def key(self):
        return (self.name, id(self))

    def subgroup_barrier(self, gen, stmt, site):
        self.events.append(("subgroup_barrier", site))

    def barrier(self, gen, stmt, site, flags):
        self.events.append(("barrier", site))

    @classmethod
    def create(cls, config):
        return cls()


def test_instruments_see_sub_group_barriers_and_collectives(monkeypatch):
    """Every sub-group collective and sub_group_barrier calls the instruments'
    subgroup_barrier hook; work-group collectives call no barrier hook."""

    @kernel
    def k(x, out):
        i = get_global_id(0)
        s = sub_group_reduce_add(x[i])
        sub_group_barrier(CLK_LOCAL_MEM_FENCE)
        out[i] = s + work_group_reduce_add(x[i])

    _Recorder.events = []
    monkeypatch.setattr(registry, "INSTRUMENTS", (*registry.INSTRUMENTS, _Recorder))
    _run(k, 8, 8, 4, np.ones(8, np.float32), np.zeros(8, np.float32))
    assert [e[0] for e in _Recorder.events] == ["subgroup_barrier", "subgroup_barrier"]


def test_sub_group_barrier_orders_lanes_of_a_sub_group():
    """Values written to local memory before sub_group_barrier are seen by the other lanes of
    the sub-group after it (the barrier is a cut of the work-item loop)."""

    @kernel
    def k(out):
        lid = get_local_id(0)
        buf = clsim.local_array(16, np.int32)
        buf[lid] = lid * 10
        sub_group_barrier(CLK_LOCAL_MEM_FENCE)
        base = get_sub_group_id() * get_sub_group_size()
        out[lid] = buf[base + (get_sub_group_local_id() + 1) % get_sub_group_size()]

    out = np.zeros(16, np.int32)
    _run(k, 16, 16, 4, out)
    assert (out == [((i // 4) * 4 + (i % 4 + 1) % 4) * 10 for i in range(16)]).all()


def test_helper_kernel_compiles_twice():
    """Inlining and normalising never edit the cached parse tree: a second compile (another
    sub-group size) of the same kernel gives the right answer too."""
    x = np.arange(8, dtype=np.float32)
    for size in (4, 2):
        out = np.zeros(8, np.float32)
        _run(k_helper, 8, 8, size, x, out)
        want = [2 * x[(i // size) * size:(i // size + 1) * size].sum() for i in range(8)]
        assert (out == want).all()


@kernel
def k_nested(x, out):
    i = get_global_id(0)
    sg = get_sub_group_id()
    r = 0.0
    if sg < 2:
        if sg == 0:
            r = sub_group_reduce_add(x[i])
        else:
            r = sub_group_reduce_max(x[i])
    else:
        s = sub_group_reduce_add(x[i])
        if s > 50.0:
            r = sub_group_broadcast(x[i], 1) + s
        else:
            r = -1.0
    out[i] = r


@kernel
def k_in_barrier_loop(x, out):
    lid = get_local_id(0)
    buf = clsim.local_array(64, np.float32)
    acc = 0.0
    for t in range(3):
        buf[lid] = x[get_global_id(0)] * t
        barrier(CLK_LOCAL_MEM_FENCE)
        if get_sub_group_id() == t % 2:
            acc += sub_group_reduce_add(buf[(lid + 1) % get_local_size(0)])
        barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = acc


@kernel
def k_loop_var_after_break(x, out):
    i = get_global_id(0)
    k = 0
    for k in range(10):
        v = sub_group_reduce_add(x[i] + k)
        if v > 20.0 + get_sub_group_id() * 10.0:
            break
    out[i] = k


@pytest.mark.parametrize("jit", [False, True])
def test_nested_and_mixed_control_flow(jit):
    """Nested sub-group-uniform ifs (conditions on collective results too), a sub-group branch
    inside a loop with work-group barriers, and a for loop left by break at a different
    iteration in each sub-group (its variable keeps that sub-group's value)."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    _run(k_nested, 16, 16, 4, x, out, jit=jit)
    assert (out == np.repeat([6, 7, -1, 67], 4)).all()
    _run(k_in_barrier_loop, 16, 16, 4, x, out, jit=jit)
    assert (out == np.repeat([20, 26, 0, 0], 4)).all()
    iout = np.zeros(16, np.int32)
    _run(k_loop_var_after_break, 16, 16, 4, x, iout, jit=jit)
    assert (iout == np.repeat([4, 3, 1, 0], 4)).all()


@kernel
def k_return_in_loop(x, out):
    i = get_global_id(0)
    t = 0
    while t < 3:
        if get_sub_group_local_id() == 1 and t == 1:
            return
        out[i] = sub_group_reduce_add(x[i])
        t += 1


def test_return_inside_a_masked_loop_before_a_collective():
    """A lane returning inside a loop makes the next collective of its sub-group partial."""
    with pytest.raises(BarrierDivergenceError, match="reached by 3 of 4 lanes of sub-group 0"):
        _run(k_return_in_loop, 16, 16, 4, np.ones(16, np.float32), np.zeros(16, np.float32))


@kernel
def k_lane_trip_count(x, out):
    i = get_global_id(0)
    acc = 0.0
    for _k in range(get_sub_group_local_id() // 2):
        acc += sub_group_reduce_add(x[i])
    out[i] = acc


@kernel
def k_wg_broadcast_far(x, out, k):
    i = get_global_id(0)
    out[i] = work_group_broadcast(x[i], k)


def test_loop_trip_count_differing_within_a_sub_group_and_far_work_group_broadcast():
    """A loop around a collective whose trip count differs within a sub-group is divergence
    (the 'for' line, the sub-group and the counts); work_group_broadcast from a local id past
    the group's size is a SubGroupError naming the id and the local size."""
    x = np.ones(8, np.float32)
    with pytest.raises(BarrierDivergenceError) as info:
        _run(k_lane_trip_count, 8, 8, 4, x, np.zeros(8, np.float32))
    assert info.value.subgroup == 0 and "this 'for'" in str(info.value)
    assert (info.value.taken, info.value.not_taken) == (2, 2)
    with pytest.raises(SubGroupError) as info:
        _run(k_wg_broadcast_far, 6, 6, 4, x[:6], np.zeros(6, np.float32), np.int32(6))
    assert info.value.index == 6 and info.value.length == 6
    assert "local id (dimension 0) 6 is out of range" in str(info.value)
