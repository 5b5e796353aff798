"""The memory part of ``clsim conformance``: async_work_group_copy (full and partial counts),
async_work_group_strided_copy (gather and scatter), wait_group_events and prefetch on char,
int, long, float, double copy exactly the spec's elements (NaN payloads included), touch
nothing else, in both simulator modes and on every device."""

import numpy as np
import pytest

from verify import conformance_memory as mem
from verify.testing import device_params


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_copies_exactly_the_spec_elements(mode):
    report = mem.memory_suite((), simulator_modes=(mode,))
    assert {(r.builtin, r.dtype) for r in report.rows} == {
        (n, t) for n in mem.NAMES for t in mem.TYPES}
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []


def test_judge_catches_a_shifted_scatter_and_a_copy_past_the_count():
    """A scatter one element off and a partial copy of one element too many are deviations
    (the sentinels and the NaN-payload source make both visible bit for bit)."""
    t = "float32"
    outs = mem.run_simulator(t, 0, jit=False)
    x0 = mem.source_column(t, 0)
    assert all(r.deviations == 0 for r in mem.judge(t, "sim", x0, outs))
    shifted = [o.copy() for o in outs]
    shifted[3] = np.roll(shifted[3], 1)
    shifted[2][mem.PART] = x0[mem.PART]
    rows = {r.builtin: r.deviations for r in mem.judge(t, "sim", x0, shifted)}
    assert rows["async_work_group_copy"] == 1
    assert rows["async_work_group_strided_copy"] > mem.GROUPS * mem.M // 2
    assert rows["prefetch"] == 0


@pytest.mark.parametrize("device", device_params())
def test_device_copies_exactly_the_spec_elements(device):
    report = mem.memory_suite((device,), simulator_modes=())
    assert len(report.rows) >= 4 * len(mem.NAMES)
    assert all("cl_khr_fp64" in s for s in report.skipped), report.skipped
    assert [(r.builtin, r.dtype, r.examples[:1]) for r in report.rows if r.deviations] == []
