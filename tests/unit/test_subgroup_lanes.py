"""Regions whose strided loop starts at the sub-group local id run sub-group by sub-group,
the lanes of one sub-group innermost (clsim/compiler/lane_major.py ``subgroup_plan``,
lane_emit.py ``_subgroup_region``): the bytes of the usual form (checks="all" and plain
Python keep it), the usual first error when an index would fail, and the usual form, not a
run again, when a value differs within a sub-group."""

import warnings

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_GLOBAL_MEM_FENCE,
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_sub_groups,
    get_sub_group_id,
    get_sub_group_local_id,
    get_sub_group_size,
    kernel,
    sub_group_barrier,
    sub_group_reduce_add,
)
from clsim.spec import get_spec


def _launch_spec(name, shape, local):
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(7), shape)
    return spec, spec.launch(inputs, shape, local)


def _bytes(spec, launch, kernel=None, **options):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in launch.args]
    result = clsim.run(kernel or spec.kernel, launch.global_size, launch.local_size, args,
                       subgroup_size=spec.subgroup_size, **options)
    return b"".join(a.tobytes() for a in args if isinstance(a, np.ndarray)), result


@pytest.mark.parametrize(("name", "shape", "local"), [
    ("softmax_subgroup", {"rows": 7, "cols": 45}, (80,)),  # sub-groups of 32, 32 and 16
    ("softmax_subgroup", {"rows": 5, "cols": 3}, None),  # fewer columns than lanes
    ("gemv_subgroup", {"rows": 9, "cols": 70}, None),
    ("gemv_half_subgroup", {"rows": 9, "cols": 70}, None),
    ("gemv_q4_0_subgroup", {"rows": 13, "blocks": 5}, None),  # a helper with a loop inlined
    ("gemv_q4_0_split_subgroup", {"rows": 13, "blocks": 5}, None),  # (row * nb + b) * 16
])
def test_library_sub_group_kernels_run_lane_major_with_the_usual_bytes(name, shape, local):
    """Rows past the matrix leave whole sub-groups inactive; none of it leaves the fast
    path (no group runs again as plain Python, no warning)."""
    spec, launch = _launch_spec(name, shape, local)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast, result = _bytes(spec, launch)
    usual, _ = _bytes(spec, launch, checks="all")
    plain, _ = _bytes(spec, launch, jit=False)
    assert fast == usual == plain
    assert result.plain_python_groups == 0
    assert "_sgok" in open(result.module_path).read()


@kernel
def offset_rows(x, offsets, y, ncols):
    """Each lane's offset is loaded before the collective and read after it, so it is a
    private whose value may differ within a sub-group."""
    lane = get_sub_group_local_id()
    width = get_sub_group_size()
    off = offsets[get_local_id(0)]
    first = sub_group_reduce_add(np.float32(off))
    acc = 0.0
    for c in range(lane, ncols, width):
        acc += x[off + c]
    y[get_local_id(0)] = acc + first


def _offset_rows(offsets, **options):
    x = np.arange(200, dtype=np.float32) * np.float32(0.37)
    y = np.zeros(64, np.float32)
    result = clsim.run(offset_rows, (64,), (64,), (x, offsets, y, np.int32(50)),
                       subgroup_size=32, **options)
    return y.tobytes(), result


@pytest.mark.parametrize("uniform", [True, False])
def test_offsets_that_differ_within_a_sub_group_run_the_usual_form(uniform):
    """Each sub-group's offset is checked to agree in every lane: when it does not, the
    region runs its usual form (the same bytes), not the group again as plain Python."""
    offsets = np.repeat(np.array([0, 100], np.int32), 32)
    if not uniform:
        offsets[5] = 17
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast, result = _offset_rows(offsets)
    assert fast == _offset_rows(offsets, checks="all")[0] == _offset_rows(offsets, jit=False)[0]
    assert result.plain_python_groups == 0
    assert "_sgok" in open(result.module_path).read()
    # every mode runs the same plan: the bytes are checked against the work-items' own sums
    x = np.arange(200, dtype=np.float32) * np.float32(0.37)
    expected = np.zeros(64, np.float32)
    for lid in range(64):
        acc = np.float32(0.0)
        for c in range(lid % 32, 50, 32):
            acc = np.float32(acc + x[offsets[lid] + c])
        first = np.float32(offsets[lid // 32 * 32:lid // 32 * 32 + 32].sum())  # exact
        expected[lid] = np.float32(acc + first)
    assert fast == expected.tobytes()


@kernel
def one_lane_moves(x, y, ncols, moved):
    """``off`` is assigned at the top level (the same in a sub-group) and again in one
    lane's branch: it is compared lane by lane, not taken from the first lane."""
    lane = get_sub_group_local_id()
    off = get_sub_group_id() * 64
    if lane == moved:
        off = off + 7
    total = sub_group_reduce_add(np.float32(lane))
    acc = 0.0
    for c in range(lane, ncols, get_sub_group_size()):
        acc += x[off + c]
    y[get_local_id(0)] = acc + total


def test_a_private_one_lane_assigns_again_is_compared_lane_by_lane():
    x = np.random.default_rng(5).standard_normal(200).astype(np.float32)
    expected = np.zeros(64, np.float32)
    for lid in range(64):
        lane = lid % 32
        off = lid // 32 * 64 + (7 if lane == 3 else 0)
        acc = np.float32(0.0)
        for c in range(lane, 40, 32):
            acc = np.float32(acc + x[off + c])
        expected[lid] = np.float32(acc + np.float32(sum(range(32))))
    for jit in (True, False):
        y = np.zeros(64, np.float32)
        result = clsim.run(one_lane_moves, (64,), (64,), (x, y, np.int32(40), np.int32(3)),
                           subgroup_size=32, jit=jit)
        assert y.tobytes() == expected.tobytes()
        assert "_sgok" in open(result.module_path).read()


@kernel
def sub_group_rows(x, y, nrows, ncols):
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    if row < nrows:
        acc = 0.0
        for c in range(lane, ncols, get_sub_group_size()):
            acc += x[row * ncols + c]
        total = sub_group_reduce_add(acc)
        for c in range(lane, ncols, get_sub_group_size()):
            y[row * ncols + c] = x[row * ncols + c] / total


@pytest.mark.parametrize("jit", [True, False])
def test_an_index_past_the_end_runs_the_usual_form_and_reports_it(jit):
    """ncols larger than the rows passed: the per-sub-group range check fails and the usual
    form reports the first failing load in work-item order, work-item 32's second column
    (x[70 + 32]); run trip by trip, work-item 62 would reach x[100] first."""
    x = np.ones(100, np.float32)
    y = np.zeros(100, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(sub_group_rows, (64,), (64,), (x, y, np.int32(2), np.int32(70)),
                  subgroup_size=32, jit=jit)
    with pytest.raises(clsim.OutOfBoundsError) as usual:
        clsim.run(sub_group_rows, (64,), (64,), (x, y, np.int32(2), np.int32(70)),
                  subgroup_size=32, checks="all")
    assert (info.value.buffer, info.value.index, info.value.gid) == (
        usual.value.buffer, usual.value.index, usual.value.gid) == ("x", 102, (32,))


@kernel
def short_step_store(y, ncols):
    """Lanes stride by 4 while a sub-group has 8: neighbouring lanes store the same
    elements, in work-item order on the usual form."""
    lane = get_sub_group_local_id()
    base = get_sub_group_id() * ncols
    for c in range(lane, ncols, 4):
        y[base + c] = np.float32(get_local_id(0))


@pytest.mark.parametrize("jit", [True, False])
def test_a_store_whose_step_is_below_the_sub_group_runs_the_usual_form(jit):
    """Run trip by trip, lane 0's second store to y[4] would come after lane 4's first. The
    offsets are the same in a sub-group by construction, so a failed check is a short step
    or an index outside, as for a group's loop: JIT runs the group again as plain Python,
    and says so once."""
    expected = np.zeros(40, np.float32)
    for lid in range(16):
        for c in range(lid % 8, 20, 4):
            expected[lid // 8 * 20 + c] = lid
    y = np.zeros(40, np.float32)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        result = clsim.run(short_step_store, (16,), (16,), (y, np.int32(20)), subgroup_size=8,
                           jit=jit)
    assert y.tobytes() == expected.tobytes()
    assert result.plain_python_groups == (1 if jit else 0)
    assert any("below the lanes of a group or sub-group" in str(w.message) for w in said) == jit


@kernel
def context_offset(x, y, n, step):
    """``off`` is assigned again right before the strided loop, whose inner loop's index
    reads it: the proof must take its range after that assignment."""
    lid = get_local_id(0)
    wg = get_local_size(0)
    off = get_group_id(0) * step + lid * 0
    barrier(CLK_LOCAL_MEM_FENCE)
    off = off + step
    acc = 0.0
    for b in range(lid, n, wg):
        for j in range(4):
            acc += x[off + b * 4 + j]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[get_group_id(0) * wg + lid] = acc + off


@pytest.mark.parametrize("jit", [True, False])
def test_an_index_through_a_private_assigned_before_the_loop_is_checked(jit):
    """Before the fix the range of ``off`` came from before its assignment (0, in range),
    and the JIT run read x[1000000] unchecked."""
    x = np.ones(64, np.float32)
    y = np.zeros(32, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(context_offset, (32,), (32,), (x, y, np.int32(16), np.int32(1_000_000)),
                  jit=jit)
    assert (info.value.buffer, info.value.index) == ("x", 1_000_000)
    fine = []
    for options in ({"jit": jit}, {"checks": "all"}):
        y = np.zeros(32, np.float32)
        clsim.run(context_offset, (32,), (32,), (x, y, np.int32(8), np.int32(0)), **options)
        fine.append(y.tobytes())
    assert fine[0] == fine[1] and np.frombuffer(fine[0], np.float32)[0] == 4.0


@kernel
def keep_outside_rows(x, y, nrows, ncols):
    """Work-items of rows past the end keep ``acc = -1``: S1 and the loop must skip them."""
    row = get_group_id(0) * get_num_sub_groups() + get_sub_group_id()
    lane = get_sub_group_local_id()
    acc = -1.0
    if row < nrows:
        acc = 0.0
        for c in range(lane, ncols, get_sub_group_size()):
            acc += x[row * ncols + c]
        acc += sub_group_reduce_add(acc)
    y[get_group_id(0) * get_local_size(0) + get_local_id(0)] = acc


def test_inactive_sub_groups_keep_their_privates():
    x = np.random.default_rng(3).standard_normal(3 * 40).astype(np.float32)
    runs, results = [], []
    for options in ({}, {"checks": "all"}, {"jit": False}):
        y = np.zeros(64, np.float32)
        results.append(clsim.run(keep_outside_rows, (64,), (32,),
                                 (x, y, np.int32(3), np.int32(40)), subgroup_size=8, **options))
        runs.append(y.tobytes())
    assert runs[0] == runs[1] == runs[2]
    assert (np.frombuffer(runs[0], np.float32)[24:] == -1.0).all()
    assert "_sgok" in open(results[0].module_path).read()


@kernel
def overlapping_rows(x, y, ncols, overlap):
    """With ``overlap`` 1, each sub-group's last element is the next one's first: a race
    between two work-items of one group."""
    lane = get_sub_group_local_id()
    base = get_sub_group_id() * (ncols - overlap)
    for c in range(lane, ncols, get_sub_group_size()):
        y[base + c] = x[base + c] * 2.0


def _checked(kfn, args, global_size, local_size, lanes, monkeypatch, **options):
    from clsim.checks.instrument import ChecksInstrument

    monkeypatch.setattr(ChecksInstrument, "lane_regions", lanes)
    args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    result = clsim.run(kfn, global_size, local_size, args, checks="all", report_all=True,
                       **options)
    findings = [(f.message, f.count) for f in result.findings]
    return findings, [a.tobytes() for a in args], open(result.module_path).read()


@pytest.mark.parametrize("overlap", [0, 1])
def test_checks_run_sub_group_plans_and_report_the_usual_forms_findings(overlap,
                                                                        monkeypatch):
    """Under checks="all" a sub-group plan records in sub-group order; a finding runs the
    launch again with the usual forms (clsim/checks, ``lane_regions``), so findings and
    bytes are theirs; a clean launch keeps the faster module."""
    x = np.random.default_rng(4).standard_normal(200).astype(np.float32)
    args = (x, np.zeros(200, np.float32), np.int32(37), np.int32(overlap))
    lane = _checked(overlapping_rows, args, (64,), (64,), True, monkeypatch,
                    subgroup_size=16)
    usual = _checked(overlapping_rows, args, (64,), (64,), False, monkeypatch,
                     subgroup_size=16)
    assert lane[:2] == usual[:2]
    assert "_sgok" not in usual[2]
    if overlap:
        assert any("race" in message for message, _count in lane[0])
        assert "_sgok" not in lane[2]  # the launch that reported ran the usual forms
    else:
        assert lane[0] == [] and "_sgok" in lane[2]
        assert "_cs_stspan(" in lane[2]  # y is only stored: a trip's records at once


@kernel
def neighbour_stores(y, ncols):
    """Sub-group 1's trip stores y[16 + j] by work-item 16 + j; after a sub-group barrier
    (which orders nothing across sub-groups) work-item j of sub-group 0 stores it again: a
    race only if the trip's records name work-item 16 + j, not lane j of the trip."""
    lane = get_sub_group_local_id()
    base = get_sub_group_id() * ncols
    for c in range(lane, ncols, get_sub_group_size()):
        y[base + c] = 1.0
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE)
    if get_sub_group_id() == 0:
        y[ncols + lane] = 2.0


@kernel
def neighbour_stores_first(y, ncols):
    """The same two stores the other way round: the trip's records must be checked against
    work-item 16 + j too, or work-item j's earlier store looks like its own."""
    lane = get_sub_group_local_id()
    if get_sub_group_id() == 0:
        y[ncols + lane] = 2.0
    sub_group_barrier(CLK_GLOBAL_MEM_FENCE)
    base = get_sub_group_id() * ncols
    for c in range(lane, ncols, get_sub_group_size()):
        y[base + c] = 1.0


@pytest.mark.parametrize("kfn", [neighbour_stores, neighbour_stores_first])
def test_a_sub_group_trips_store_records_name_its_work_items(kfn, monkeypatch):
    args = (np.zeros(32, np.float32), np.int32(16))
    lane = _checked(kfn, args, (32,), (32,), True, monkeypatch, subgroup_size=16)
    usual = _checked(kfn, args, (32,), (32,), False, monkeypatch, subgroup_size=16)
    assert lane[:2] == usual[:2]
    assert any("race" in message for message, _count in usual[0])


@pytest.mark.parametrize(("name", "shape"), [
    ("softmax_subgroup", {"rows": 7, "cols": 45}),
    ("gemv_q4_0_subgroup", {"rows": 13, "blocks": 5}),
])
def test_library_sub_group_kernels_keep_the_sub_group_module_under_checks(name, shape,
                                                                          monkeypatch):
    spec, launch = _launch_spec(name, shape, None)
    fast = _checked(spec.kernel, launch.args, launch.global_size, launch.local_size, True,
                    monkeypatch, subgroup_size=spec.subgroup_size)
    usual = _checked(spec.kernel, launch.args, launch.global_size, launch.local_size, False,
                     monkeypatch, subgroup_size=spec.subgroup_size)
    assert fast[:2] == usual[:2] and fast[0] == []
    assert "_sgok" in fast[2] and "_sgok" not in usual[2]


@pytest.mark.parametrize(("name", "cl_file"), [
    ("softmax_subgroup", "softmax_subgroup.cl"),
    ("gemv_q4_0_subgroup", "gemv_quant_subgroup.cl"),
])
def test_the_kernels_translated_from_opencl_c_run_sub_group_plans_too(name, cl_file):
    """The shipped .cl form, through the OpenCL C front end, reaches the same plan and
    bytes as the Python kernel."""
    from pathlib import Path

    from clsim.frontends.opencl_c.load import translate, translated_kernels

    spec, launch = _launch_spec(name, {k: max(3, v // 40) for k, v in
                                       get_spec(name).default_shape.items()}, None)
    cl = Path(__file__).resolve().parents[2] / "kernels_cl" / cl_file
    translated = translated_kernels(translate(str(cl), ""))[name]
    from_c, result = _bytes(spec, launch, translated)
    assert from_c == _bytes(spec, launch)[0]
    assert "_sgok" in open(result.module_path).read()
