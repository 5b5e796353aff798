"""Regions run lane-major (clsim/compiler/lane_major.py, lane_emit.py): the work-items'
loop innermost, no checks inside, the same bytes as the usual form and the same first error
when an index would fail (the usual form then runs and reports it)."""

import warnings

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    exp,
    fmax,
    get_global_id,
    get_group_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
)
from clsim.runtime import launch


@kernel
def strided_softmax(x, y, ncols):
    lid = get_local_id(0)
    wg = get_local_size(0)
    base = get_group_id(0) * ncols
    scratch = local_array(256, np.float32)
    m = -np.inf
    for c in range(lid, ncols, wg):
        m = fmax(m, x[base + c])
    scratch[lid] = m
    barrier(CLK_LOCAL_MEM_FENCE)
    active = wg
    while active > 1:
        half_ = (active + 1) // 2
        if lid < active - half_:
            scratch[lid] = fmax(scratch[lid], scratch[lid + half_])
        barrier(CLK_LOCAL_MEM_FENCE)
        active = half_
    m = scratch[0]
    barrier(CLK_LOCAL_MEM_FENCE)
    total = 0.0
    for c in range(lid, ncols, wg):
        total += exp(x[base + c] - m)
    scratch[lid] = total
    barrier(CLK_LOCAL_MEM_FENCE)
    if lid == 0:
        for k in range(1, wg):
            scratch[0] += scratch[k]
    barrier(CLK_LOCAL_MEM_FENCE)
    total = scratch[0]
    for c in range(lid + 1, ncols + 1, wg):
        y[base + c - 1] = exp(x[base + c - 1] - m) / total


def _run(rows, cols, local, **options):
    x = (np.random.default_rng(rows * 1000 + cols).standard_normal(rows * cols) * 4
         ).astype(np.float32)
    y = np.full(rows * cols, -1.0, np.float32)
    result = clsim.run(strided_softmax, (rows * local,), (local,), (x, y, np.int32(cols)),
                       **options)
    return y, result


@pytest.mark.parametrize(("rows", "cols", "local"), [(3, 100, 32), (2, 5, 32), (1, 256, 32)])
def test_lane_major_regions_give_the_usual_forms_bytes(rows, cols, local):
    """Default checks (lane-major regions) against checks="all" (instruments keep the usual
    form) and against plain Python: identical bytes, row lengths not multiples of the group."""
    fast, result = _run(rows, cols, local)
    usual, _ = _run(rows, cols, local, checks="all")
    plain, _ = _run(rows, cols, local, jit=False)
    assert fast.tobytes() == usual.tobytes() == plain.tobytes()
    source = open(result.module_path).read()
    assert "_lmok" in source and "_lpok" in source  # both shapes of lane-major region


@pytest.mark.parametrize("jit", [True, False])
def test_an_index_that_would_fail_runs_the_usual_form_and_reports_it(jit):
    """ncols larger than the rows passed: the range check before the first loop region
    fails, the usual form runs and reports the first failing load in work-item order: work-item
    0 reads x[128] (its fifth column) before work-item 4 reads x[100]."""
    x = np.zeros(100, np.float32)
    y = np.zeros(100, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(strided_softmax, (32,), (32,), (x, y, np.int32(130)), jit=jit)
    assert (info.value.buffer, info.value.index, info.value.gid) == ("x", 128, (0,))
    assert info.value.access == "load"


def test_lane_major_loops_index_unsigned_and_the_usual_form_keeps_its_checks():
    """Inside a lane-major loop every index was proven in range before it, so it is indexed
    as uint64 (Numba then adds no wrap-around of negative indices, which kept LLVM from
    loading contiguous vectors); the usual form beside it keeps _ck on every load."""
    _, result = _run(2, 100, 32)
    source = open(result.module_path).read()
    lane_loads = [line for line in source.splitlines() if "v_x[" in line and "_ck(" not in line]
    assert lane_loads and all("v_x[np.uint64(" in line for line in lane_loads)
    assert any("v_x[_ck(" in line for line in source.splitlines())
    assert "v_scratch[np.uint64(" in source  # the tree steps (stores and loads)


@pytest.mark.parametrize("parallel", [True, False])
def test_a_failing_group_runs_again_as_plain_python_and_reports_the_same_error(parallel):
    """The JIT module holds no usual form for a loop region nothing before it in the group
    can have written outside the group (RERUN_GROUP): the group whose range check fails is
    run again as plain Python, which reports the first failing work-item; here the eighth
    group (its row is 5 elements short), in threads and serially, as the no-JIT module does."""
    from clsim.runtime import record as rec

    _, result = _run(2, 106, 32)
    assert f"_err[0] = {rec.RERUN_GROUP}" in open(result.module_path).read()
    x = np.zeros(100 * 8 - 5, np.float32)
    errors = []
    for jit in (True, False):
        y = np.zeros_like(x)
        with pytest.raises(clsim.OutOfBoundsError) as info:
            clsim.run(strided_softmax, (8 * 32,), (32,), (x, y, np.int32(100)), jit=jit,
                      parallel=parallel)
        errors.append((info.value.buffer, info.value.index, info.value.gid,
                       info.value.access, y.tobytes()))
    assert errors[0][:4] == ("x", 796, (224,), "load")
    assert errors[0] == errors[1]


@kernel
def stepped(x, y, ncols, step):
    lid = get_local_id(0)
    base = get_group_id(0) * ncols
    acc = 0.0
    for c in range(get_local_id(0), ncols, step):
        acc += x[base + c]
    y[get_group_id(0) * get_local_size(0) + lid] = acc


@pytest.mark.parametrize("parallel", [True, False])
def test_a_group_run_again_without_error_lets_the_launch_go_on(parallel):
    """A step below 1 fails the lane-major check although no access fails: each group runs
    again as plain Python and the launch goes on with the next group (serially, and on
    threads); the bytes are the no-JIT module's, and every group ran."""
    x = np.random.default_rng(5).standard_normal(6 * 40).astype(np.float32)
    outs = []
    launch.forget_plain_python_notes()
    for jit in (True, False):
        for step in (8, -1):
            y = np.full(6 * 8, -1.0, np.float32)
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                result = clsim.run(stepped, (6 * 8,), (8,),
                                   (x, y, np.int32(40), np.int32(step)), jit=jit,
                                   parallel=parallel)
            outs.append(y.tobytes())
            slow = [w for w in said if issubclass(w.category, clsim.SlowPathWarning)]
            # every group ran again as plain Python with step -1, and the user is told once
            assert result.plain_python_groups == (6 if jit and step < 0 else 0)
            assert len(slow) == (1 if jit and step < 0 else 0)
            if slow:
                assert str(slow[0].message).startswith("stepped: 6 of 6 work-groups ran again")
                assert slow[0].filename == __file__  # points at the clsim.run call
            if jit:
                assert "_err[0] = -1" in open(result.module_path).read()
    assert outs[0] == outs[2] and outs[1] == outs[3]
    assert np.frombuffer(outs[1], np.float32).tolist() == [0.0] * 48  # range(lid, 40, -1)
    assert -1.0 not in np.frombuffer(outs[0], np.float32)


@kernel
def twice(x, y, ncols):
    base = get_group_id(0) * ncols
    for c in range(get_local_id(0), ncols, get_local_size(0)):
        y[base + c] = x[base + c] * 2.0


@pytest.mark.parametrize("parallel", [True, False])
def test_a_storing_region_whose_check_fails_runs_the_group_again(parallel):
    """A loop that stores gets no usual form in the JIT module either when nothing before
    it in the group writes outside the group. y is 5 elements short: the eighth group's
    check fails, the group runs again as plain Python and work-item 0's fourth store
    (y[796]) is reported, with the bytes the no-JIT module leaves."""
    x = np.random.default_rng(3).standard_normal(800).astype(np.float32)
    errors = []
    for jit in (True, False):
        y = np.zeros(795, np.float32)
        with pytest.raises(clsim.OutOfBoundsError) as info:
            clsim.run(twice, (8 * 32,), (32,), (x, y, np.int32(100)), jit=jit,
                      parallel=parallel)
        errors.append((info.value.buffer, info.value.index, info.value.gid,
                       info.value.access, y.tobytes()))
    assert errors[0][:4] == ("y", 796, (224,), "store")
    assert errors[0] == errors[1]
    result = clsim.run(twice, (32,), (32,), (x, np.zeros(800, np.float32), np.int32(100)))
    source = open(result.module_path).read()
    assert "_lmok" in source and "_err[0] = -1" in source and "_oob(" not in source


@kernel
def halving(x, y):
    lid = get_local_id(0)
    scratch = local_array(64, np.float32)
    scratch[lid] = 1.0
    barrier(CLK_LOCAL_MEM_FENCE)
    active = get_local_size(0)
    off = 0
    while active > 1:
        half_ = active // 2
        if lid < half_:
            scratch[lid] = scratch[lid] + x[lid + off]
        barrier(CLK_LOCAL_MEM_FENCE)
        off += half_
        active = half_
    y[get_global_id(0)] = scratch[lid]


@kernel
def halving_storing(x, y):
    lid = get_local_id(0)
    scratch = local_array(64, np.float32)
    scratch[lid] = 1.0
    barrier(CLK_LOCAL_MEM_FENCE)
    active = get_local_size(0)
    off = 0
    while active > 1:
        half_ = active // 2
        if lid < half_:
            scratch[lid] = scratch[lid] + x[lid + off]
        barrier(CLK_LOCAL_MEM_FENCE)
        y[get_global_id(0)] = scratch[lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        off += half_
        active = half_


@pytest.mark.parametrize("kern", [halving, halving_storing])
def test_a_tree_step_whose_check_fails_runs_again_only_if_its_loop_stays_in_the_group(kern):
    """x holds 26 values where the tree steps read 31 (16 + 8 + 4 + 2 + 1 lanes): the check
    of the third step (x[24 + lid], 4 lanes) fails. With nothing in the barrier loop writing
    outside the group, the JIT module has no usual form for the step and the group runs
    again as plain Python; with a store to y later in the loop, the first trips have
    already written y, so the usual form stays. Both report lane 2's x[26], as the no-JIT
    module does, with its bytes."""
    errors = []
    for jit in (True, False):
        x = np.ones(26, np.float32)
        y = np.zeros(32, np.float32)
        with pytest.raises(clsim.OutOfBoundsError) as info:
            clsim.run(kern, (32,), (32,), (x, y), jit=jit)
        errors.append((info.value.buffer, info.value.index, info.value.gid, y.tobytes()))
    assert errors[0][:3] == ("x", 26, (2,))
    assert errors[0] == errors[1]
    result = clsim.run(kern, (32,), (32,), (np.ones(64, np.float32), np.zeros(32, np.float32)))
    loop = open(result.module_path).read().split("while True:")[1].split("def _launch")[0]
    assert "_lpok" in loop
    assert ("_err[0] = -1" in loop) == (kern is halving)


@kernel
def row_sums(x, y, ncols):
    acc = 0.0
    for c in range(get_local_id(0), ncols, get_local_size(0)):
        acc += x[get_group_id(0) * ncols + c]
    y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc


def test_work_item_builtins_in_a_region_keep_it_lane_major():
    """get_group_id in an index (no failure possible) leaves the region lane-major, with the
    bytes of plain Python."""
    x = np.random.default_rng(4).standard_normal(2 * 40).astype(np.float32)
    outs = []
    for jit in (True, False):
        y = np.zeros(16, np.float32)
        result = clsim.run(row_sums, (16,), (8,), (x, y, np.int32(40)), jit=jit)
        outs.append(y.tobytes())
    assert outs[0] == outs[1]
    assert "_lmok" in open(result.module_path).read()


@kernel
def partial_sums(x, partial, ncols):
    lid = get_local_id(0)
    wg = get_local_size(0)
    acc = 0.0
    for c in range(lid, ncols, wg):
        acc += x[get_group_id(0) * ncols + c]
    partial[get_group_id(0) * wg + lid] = acc


def test_a_private_copy_of_the_local_id_starts_a_lane_major_loop_without_barriers():
    """The first pass of a two-kernel reduction: no barrier, so ``lid`` is a plain local,
    not a context variable; it is still read as the id again (remat), and its strided loop
    runs lane-major with plain Python's bytes."""
    x = np.random.default_rng(6).standard_normal(3 * 45).astype(np.float32)
    outs = []
    for jit in (True, False):
        partial = np.zeros(24, np.float32)
        result = clsim.run(partial_sums, (24,), (8,), (x, partial, np.int32(45)), jit=jit)
        outs.append(partial.tobytes())
    assert outs[0] == outs[1]
    assert np.allclose(np.frombuffer(outs[0], np.float32).reshape(3, 8).sum(axis=1),
                       x.reshape(3, 45).sum(axis=1), rtol=1e-5)
    assert "_lmok" in open(result.module_path).read()
