"""The checks' kernel zoo: for every kind of bug, a minimal buggy kernel and its corrected twin.

Contract: with ``checks="all"`` each buggy kernel raises the right ``clsim`` error naming the
right source line(s), buffer, index and work-items, and its twin runs clean (no exception,
no finding, correct output). Races, uninitialised reads and the sub-group case come from
``clsim.checks``; barrier divergence and out-of-bounds accesses from the engine, whose checks
stay on under ``checks="all"``. Lines are found by the ``# zoo:`` markers in this file.
"""

from __future__ import annotations

from pathlib import Path

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
    sub_group_barrier,
)

_SOURCE = Path(__file__).read_text().splitlines()


def line(marker: str) -> int:
    """The line of this file that carries ``# zoo: <marker>``."""
    hits = [n for n, text in enumerate(_SOURCE, 1) if text.rstrip().endswith(f"# zoo: {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


# -- 1. missing barrier in a tree reduction ---------------------------------------------------
@kernel
def tree_missing_barrier(x, out):
    lid = get_local_id(0)
    scratch = local_array(64, np.float32)
    scratch[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    half_ = 32
    while half_ > 0:
        if lid < half_:
            scratch[lid] = scratch[lid] + scratch[lid + half_]  # zoo: tree
        half_ = half_ // 2
    if lid == 0:
        out[get_group_id(0)] = scratch[0]


@kernel
def tree_with_barrier(x, out):
    lid = get_local_id(0)
    scratch = local_array(64, np.float32)
    scratch[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    half_ = 32
    while half_ > 0:
        if lid < half_:
            scratch[lid] = scratch[lid] + scratch[lid + half_]
        barrier(CLK_LOCAL_MEM_FENCE)
        half_ = half_ // 2
    if lid == 0:
        out[get_group_id(0)] = scratch[0]


# -- 2. barrier in a divergent branch (the engine's BarrierDivergenceError) -------------------
@kernel
def barrier_in_branch(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    if lid < 32:  # zoo: divergent
        barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[63 - lid]


@kernel
def barrier_outside_branch(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[63 - lid]


# -- 3. write-write across work-groups --------------------------------------------------------
@kernel
def write_write_across_groups(out):
    out[get_local_id(0)] = get_group_id(0)  # zoo: ww


@kernel
def write_own_element(out):
    out[get_global_id(0)] = get_group_id(0)


# -- 4. read-after-write across work-groups ---------------------------------------------------
@kernel
def read_after_write_across_groups(buf, out):
    g = get_global_id(0)
    buf[g] = g * 2  # zoo: raw-write
    barrier(CLK_GLOBAL_MEM_FENCE)
    if g >= 64:
        out[g] = buf[g - 64]  # zoo: raw-read


@kernel
def read_after_write_in_group(buf, out):
    g = get_global_id(0)
    buf[g] = g * 2
    barrier(CLK_GLOBAL_MEM_FENCE)
    out[g] = buf[get_group_id(0) * 64 + (get_local_id(0) + 1) % 64]


# -- 5. atomic vs plain access ----------------------------------------------------------------
@kernel
def atomic_vs_plain(counter):
    if get_global_id(0) == 0:
        counter[0] = 0  # zoo: plain
    atomic_add(counter[0], 1)  # zoo: atomic


@kernel
def atomics_only(counter):
    atomic_add(counter[0], 1)


# -- 6. read of uninitialised local memory ----------------------------------------------------
@kernel
def uninitialised_local(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    if lid < 32:
        s[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[63 - lid]  # zoo: uninit


@kernel
def initialised_local(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[63 - lid]


# -- 7. off-by-one at the end of the last work-group (the engine's OutOfBoundsError) ----------
@kernel
def off_by_one(a, out, n):
    i = get_global_id(0)
    if i <= n:
        out[i] = a[i]  # zoo: off-by-one


@kernel
def guarded_tail(a, out, n):
    i = get_global_id(0)
    if i < n:
        out[i] = a[i]


# -- 8. negative index (the engine's OutOfBoundsError) ----------------------------------------
@kernel
def negative_index(a, out):
    i = get_global_id(0)
    out[i] = a[i - 1]  # zoo: negative


@kernel
def clamped_index(a, out):
    i = get_global_id(0)
    out[i] = a[max(i - 1, 0)]


# -- 9. a sub-group barrier where a work-group barrier was needed -----------------------------
@kernel
def subgroup_barrier_too_weak(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]  # zoo: sg-write
    sub_group_barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[63 - lid]  # zoo: sg-read


@kernel
def subgroup_barrier_within_subgroup(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    sub_group_barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = s[lid ^ 1]


F32, I32 = np.float32, np.int32


def _x():
    return np.arange(128, dtype=F32)


def _launch(kern, args, jit=False, **kw):
    return clsim.run(kern, (128,), (64,), args, checks="all", jit=jit, subgroup_size=16, **kw)


# buggy kernel, args factory, expected error, expected fields, corrected twin
ZOO = {
    "tree-missing-barrier": (
        tree_missing_barrier, lambda: (_x(), np.zeros(2, F32)), clsim.DataRaceError,
        dict(line="tree", other_line="tree", buffer="scratch", index=1, access="store",
             other_access="load", lid=(1,), other_lid=(0,), group=(0,)),
        tree_with_barrier),
    "barrier-in-branch": (
        barrier_in_branch, lambda: (_x(), np.zeros(128, F32)), clsim.BarrierDivergenceError,
        dict(line="divergent", group=(0,)), barrier_outside_branch),
    "write-write-across-groups": (
        write_write_across_groups, lambda: (np.zeros(128, I32),), clsim.DataRaceError,
        dict(line="ww", other_line="ww", buffer="out", index=0, access="store",
             other_access="store", group=(1,), other_group=(0,), gid=(64,), other_gid=(0,)),
        write_own_element),
    "read-after-write-across-groups": (
        read_after_write_across_groups, lambda: (np.zeros(128, I32), np.zeros(128, I32)),
        clsim.DataRaceError,
        dict(line="raw-read", other_line="raw-write", buffer="buf", index=0, access="load",
             other_access="store", gid=(64,), other_gid=(0,)),
        read_after_write_in_group),
    "atomic-vs-plain": (
        atomic_vs_plain, lambda: (np.zeros(1, I32),), clsim.DataRaceError,
        dict(line="atomic", other_line="plain", buffer="counter", index=0, access="atomic",
             other_access="store", lid=(1,), other_lid=(0,)),
        atomics_only),
    "uninitialised-local": (
        uninitialised_local, lambda: (_x(), np.zeros(128, F32)), clsim.UninitializedReadError,
        dict(line="uninit", buffer="s", index=63, access="load",
             lid=(0,), group=(0,)),
        initialised_local),
    "off-by-one-last-group": (
        off_by_one, lambda: (np.arange(120, dtype=F32), np.zeros(120, F32), I32(120)),
        clsim.OutOfBoundsError, dict(line="off-by-one", buffer="a", index=120, gid=(120,)),
        guarded_tail),
    "negative-index": (
        negative_index, lambda: (_x(), np.zeros(128, F32)), clsim.OutOfBoundsError,
        dict(line="negative", buffer="a", index=-1, gid=(0,)), clamped_index),
    "subgroup-barrier-too-weak": (
        subgroup_barrier_too_weak, lambda: (_x(), np.zeros(128, F32)), clsim.DataRaceError,
        dict(line="sg-read", other_line="sg-write", buffer="s", index=63, access="load",
             other_access="store", lid=(0,), other_lid=(63,)),
        subgroup_barrier_within_subgroup),
}


CASES = [pytest.param(name, id=name) for name in ZOO]


@pytest.mark.parametrize("name", CASES)
def test_buggy_kernel_is_reported_with_category_and_line(name):
    """The buggy kernel raises the expected error class; its fields name the line (and, for
    races, the other access's line), buffer, index, access kinds and work-items."""
    kern, args, error, expected, _fixed = ZOO[name]
    with pytest.raises(error) as info:
        _launch(kern, args())
    err = info.value
    for field, want in expected.items():
        if field in ("line", "other_line"):
            want = line(want)
        assert getattr(err, field) == want, (field, getattr(err, field), str(err))
    assert f"{Path(__file__).name}:{line(expected['line'])}" in str(err)


@pytest.mark.parametrize("name", CASES)
def test_corrected_kernel_runs_clean(name):
    """The corrected twin raises nothing and leaves no finding, even with report_all."""
    *_, fixed = ZOO[name]
    _bug, args, *_ = ZOO[name]
    result = _launch(fixed, args(), report_all=True)
    assert result.findings == []


@pytest.mark.parametrize("name", [n for n in ZOO if ZOO[n][2] in (clsim.DataRaceError,
                                                                  clsim.UninitializedReadError)])
def test_report_all_lists_the_same_finding(name):
    """With report_all=True the same bug is not raised but listed in result.findings, with the
    category and line(s) the exception names, deduplicated to one entry per site pair."""
    kern, args, error, expected, _fixed = ZOO[name]
    result = _launch(kern, args(), report_all=True)
    category = "race" if error is clsim.DataRaceError else "uninit"
    want = (line(expected["line"]),) + ((line(expected["other_line"]),)
                                        if "other_line" in expected else ())
    assert any(f.category == category and f.lines == want for f in result.findings), \
        [str(f) for f in result.findings]
    pairs = [(f.category, f.lines) for f in result.findings]
    assert len(pairs) == len(set(pairs))


@pytest.mark.parametrize("name", ["tree-missing-barrier", "write-write-across-groups"])
def test_compiled_mode_reports_the_same(name):
    """The Numba-compiled kernels (jit=True) report exactly what the plain-Python mode does."""
    kern, args, error, _expected, fixed = ZOO[name]
    with pytest.raises(error) as compiled:
        _launch(kern, args(), jit=True)
    with pytest.raises(error) as plain:
        _launch(kern, args(), jit=False)
    assert str(compiled.value) == str(plain.value)
    assert _launch(fixed, args(), jit=True).findings == []
