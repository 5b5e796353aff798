"""The collectives part of ``clsim conformance``: sub-group and work-group reduce, scans and
broadcast on int, uint, long, ulong and float. Integers exact (wrapping sums, exclusive-scan
identities, unsigned min/max); float sums in a left fold on the simulator and, on a device,
in the device's measured order, bit for bit."""

import numpy as np
import pytest

import clsim
from verify.conformance_collectives import (
    LOCAL,
    SUBGROUP,
    TYPES,
    CollectiveForms,
    collective_group,
    collective_suite,
    names,
)
from verify.conformance_exact import _simulator_kernel
from verify.devices import get_device
from verify.testing import device_params


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_collectives_give_c_results(mode):
    report = collective_suite((), simulator_modes=(mode,))
    assert {(r.builtin, r.dtype) for r in report.rows} == {(n, t) for n in names()
                                                           for t in TYPES}
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []


def test_references_wrap_and_start_scans_at_the_identity():
    group = collective_group("int32")
    x = group.cols[0]
    refs = {c.name: c.wants[0] for c in group.calls}
    sums = x.astype(np.int64).reshape(-1, SUBGROUP).sum(axis=1)
    got = refs["sub_group_reduce_add"][::SUBGROUP]
    assert (got == sums.astype(np.int32)).all()
    assert (got != sums).any()  # some sub-group's sum wrapped
    assert refs["sub_group_scan_exclusive_min"][0] == 2**31 - 1
    assert refs["work_group_scan_exclusive_max"][LOCAL] == -(2**31)


def test_float_sums_depend_on_the_order():
    """The float data makes the order visible: a halving tree gives other bits than the left
    fold the simulator's rows are judged against (so a wrong order would be a deviation)."""
    group = collective_group("float32")
    call = next(c for c in group.calls if c.name == "sub_group_reduce_add")
    kern = _simulator_kernel(CollectiveForms.python(group, [call]))
    out = np.zeros_like(group.cols[0])
    clsim.run(kern, (group.cols[0].size,), (LOCAL,), (group.cols[0], out), jit=False,
              subgroup_size=SUBGROUP, reduction_order="tree", checks="none")
    assert out.tobytes() != call.wants[0].tobytes()


@pytest.mark.parametrize("device", device_params())
def test_device_collectives_agree(device):
    """A device with sub-groups of 16 gives C's integers and, in its measured order, the
    simulator's float sums (measured: intel-cpu, 0 deviations); others skip with the reason."""
    report = collective_suite((device,), simulator_modes=())
    info = get_device(device)
    if not info.has_subgroups or SUBGROUP not in info.subgroup_sizes:
        assert not report.rows and len(report.skipped) == len(TYPES)
        return
    assert len(report.rows) == len(names()) * len(TYPES)
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []
