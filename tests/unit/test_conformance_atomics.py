"""The atomics part of ``clsim conformance``: legacy atomic_* and C11 atomic_fetch_* /
exchange / compare_exchange_strong / store on int, uint, long, ulong and float, one work-item
per address, with INT_MIN/INT_MAX wraps, unsigned min/max and inc/dec wraps: the simulator in
both modes gives C's old value and memory bit for bit; so does every device that runs them."""

import numpy as np
import pytest

from verify import conformance_atomics_local as loc
from verify.conformance_atomics import C11, LEGACY, atomic_groups, atomic_suite
from verify.testing import device_params


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_atomics_give_c_results(mode):
    report = atomic_suite((), draws=40, simulator_modes=(mode,))
    rows = {(r.builtin, r.dtype) for r in report.rows}
    for t in ("local int32", "local uint32"):
        assert {(n, t) for n in (*loc.LEGACY, *loc.C11)} <= rows
    assert {(n, "local float32") for n in (*loc.FLOAT["legacy"], *loc.FLOAT["c11"])} <= rows
    for t in ("int32", "uint32", "int64", "uint64"):
        assert {(n, t) for n in (*LEGACY, *C11)} <= rows
    assert {("atomic_xchg", "float32"), ("atomic_fetch_add", "float32"),
            ("atomic_compare_exchange_strong", "float32")} <= rows
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []


def test_references_wrap_and_compare_by_signedness():
    """The edge values are there and the references are C's: INT_MAX + 1 wraps to INT_MIN,
    atomic_max on uint keeps 0xFFFFFFFF over 1, atomic_dec of 0 wraps to UINT_MAX."""
    groups = {g.key: g for g in atomic_groups(0, 10)}
    legacy = groups["atomics legacy int32"]
    a, b = legacy.cols[0], legacy.cols[1]
    add = next(c for c in legacy.calls if c.name == "atomic_add").wants[0]
    k = np.flatnonzero((a == 2**31 - 1) & (b > 0))[0]
    assert add[k] < 0
    unsigned = groups["atomics legacy uint32"]
    a = unsigned.cols[0]
    dec = next(c for c in unsigned.calls if c.name == "atomic_dec").wants[0]
    assert dec[np.flatnonzero(a == 0)[0]] == 2**32 - 1
    mx = next(c for c in unsigned.calls if c.name == "atomic_max").wants[0]
    top = np.flatnonzero(a == 2**32 - 1)[0]
    assert mx[top] == 2**32 - 1


@pytest.mark.parametrize("device", device_params())
def test_device_atomics_agree_with_c(device):
    """Legacy atomics on every device; C11 ones where the device runs OpenCL C 2.0 (the
    others are skipped with 'lacks OpenCL C 2.0'). Measured here: no deviation anywhere."""
    report = atomic_suite((device,), draws=40, simulator_modes=())
    legacy = [r for r in report.rows if r.builtin in LEGACY]
    assert len(legacy) >= 4 * len(LEGACY)
    assert all("OpenCL C 2.0" in s or "fp" in s for s in report.skipped), report.skipped
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []


def test_cli_part_selects_the_atomics_rows(capsys):
    """`clsim conformance --part atomics --builtin atomic_add --json` prints only those rows
    (both simulator modes) and exits 0: no simulator deviation."""
    import json

    from clsim.cli import main

    code = main(["conformance", "--simulator-only", "--part", "atomics", "--builtin",
                 "atomic_add", "--draws", "20", "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert code == 0
    assert {(r["builtin"], r["backend"]) for r in rows} == {
        ("atomic_add", b) for b in ("sim-jit", "sim-nojit")}
    assert {r["dtype"] for r in rows} == {"int32", "uint32", "int64", "uint64", "local int32",
                                          "local uint32"}


def test_local_replay_accepts_serial_orders_only():
    """The judge of the __local forms: histories some serial order gives pass, others fail
    (two adds that both saw 0; two compare-exchange winners; a min that saw a value the
    element never held; a final value off by one)."""
    assert loc.replay("atomic_add", "int32", 0, 3, [(1, 2, 0), (0, 1, 0)])
    assert not loc.replay("atomic_add", "int32", 0, 3, [(0, 2, 0), (0, 1, 0)])
    assert not loc.replay("atomic_add", "int32", 0, 4, [(1, 2, 0), (0, 1, 0)])
    assert loc.replay("atomic_cmpxchg", "int32", 5, 7, [(5, 7, 5), (7, 8, 5), (7, 9, 1)])
    assert not loc.replay("atomic_cmpxchg", "int32", 5, 8, [(5, 7, 5), (5, 8, 5)])
    assert loc.replay("atomic_min", "int32", 9, 2, [(9, 4, 0), (4, 6, 0), (4, 2, 0)])
    assert not loc.replay("atomic_min", "int32", 9, 2, [(9, 4, 0), (3, 6, 0), (4, 2, 0)])
    assert loc.replay("atomic_inc", "uint32", 2**32 - 1, 1, [(2**32 - 1, 0, 0), (0, 0, 0)])


def test_local_judge_flags_a_backend_returning_the_new_value():
    """Every element's history is rejected when the old values are the values after the
    operation (a classic wrong implementation) or when the final values are lost."""
    cases = loc.local_cases(0)[("int32", "legacy")]
    outs = loc.run_simulator(cases, jit=False)
    for case, got in zip(cases, outs, strict=True):
        assert loc.judge(case, "sim", got).deviations == 0
        if case.name in ("atomic_add", "atomic_or", "atomic_inc"):
            new = np.array([loc.apply(case.name, "int32", o, v, c) for o, v, c in zip(
                got[1].tolist(), case.operand.tolist(), case.cmp.tolist(), strict=True)],
                np.int32)
            assert loc.judge(case, "sim", [got[0], new]).deviations == loc.GROUPS * loc.ELEMS
        lost = got[0].copy()
        lost[0] = case.init[0]
        assert loc.judge(case, "sim", [lost, got[1]]).deviations >= 1, case.name


def test_local_atomics_jit_gives_valid_histories():
    """Numba-compiled (one int and the float C11 kernel): a serial order, every element."""
    for key in (("uint32", "legacy"), ("float32", "c11")):
        cases = loc.local_cases(1)[key]
        for case, got in zip(cases, loc.run_simulator(cases, jit=True), strict=True):
            assert loc.judge(case, "sim-jit", got).deviations == 0, case.name


@pytest.mark.parametrize("device", device_params())
def test_device_local_atomics_give_serial_histories(device):
    """Legacy __local atomics on every device, C11 and float C11 where the device has OpenCL
    C 2.0 (skipped with that reason elsewhere). Measured here: no deviation anywhere."""
    report = loc.local_atomic_suite((device,), simulator_modes=())
    assert len([r for r in report.rows if r.builtin in loc.LEGACY]) >= 2 * len(loc.LEGACY)
    assert all("OpenCL C 2.0" in s for s in report.skipped), report.skipped
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []
