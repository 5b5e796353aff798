"""The atomics part of ``clsim conformance``: legacy atomic_* and C11 atomic_fetch_* /
exchange / compare_exchange_strong / store on int, uint, long, ulong and float, one work-item
per address, with INT_MIN/INT_MAX wraps, unsigned min/max and inc/dec wraps: the simulator in
both modes gives C's old value and memory bit for bit; so does every device that runs them."""

import numpy as np
import pytest

from verify.conformance_atomics import C11, LEGACY, atomic_groups, atomic_suite
from verify.testing import device_params


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_atomics_give_c_results(mode):
    report = atomic_suite((), draws=40, simulator_modes=(mode,))
    rows = {(r.builtin, r.dtype) for r in report.rows}
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
