"""``checks="none"`` checks nothing (docs/checks.md): no race or uninitialised-read tracking is
compiled in (whatever else is asked), no bounds checks, no barrier or collective divergence
checks. Each case is shown to be caught under the default checks first, so the test would
fail if "none" kept any of them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_local_id,
    kernel,
    local_array,
    sub_group_reduce_add,
)

F32 = np.float32


@kernel
def racy(x, out):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    out[get_global_id(0)] = s[63 - lid]


@kernel
def reads_one_past(x, out):
    i = get_global_id(0)
    out[i] = x[i + 1]


@kernel
def divergent_collective(x, out):
    lid = get_local_id(0)
    if lid < 8:
        out[lid] = sub_group_reduce_add(x[lid])
    barrier(CLK_LOCAL_MEM_FENCE)


def test_racy_kernel_compiles_no_tracking_under_none():
    """Under "all" the race is found; under "none" with report_all the module has no checks
    code at all and there are no findings."""
    x, out = np.arange(64, dtype=F32), np.zeros(64, F32)
    found = clsim.run(racy, (64,), (64,), (x, out), checks="all", report_all=True)
    assert found.findings
    plain = clsim.run(racy, (64,), (64,), (x, out), checks="none", report_all=True)
    assert plain.findings == []
    assert "_cs_" in Path(found.module_path).read_text()
    assert "_cs_" not in Path(plain.module_path).read_text()


def test_none_does_not_check_bounds():
    """x is a view of a larger array, so reading one past its end is safe memory here: the
    default checks raise OutOfBoundsError, "none" reads the next element."""
    base = np.arange(65, dtype=F32)
    out = np.zeros(64, F32)
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(reads_one_past, (64,), (64,), (base[:64], out))
    clsim.run(reads_one_past, (64,), (64,), (base[:64], out), checks="none")
    np.testing.assert_array_equal(out, base[1:])


@pytest.mark.parametrize("jit", [True, False])
def test_none_does_not_check_collective_divergence(jit):
    """A sub-group collective reached by part of a sub-group is an error by default and
    runs unchecked under "none"."""
    x, out = np.ones(32, F32), np.zeros(32, F32)
    args = (x, out)
    with pytest.raises(clsim.SimulationError):
        clsim.run(divergent_collective, (32,), (32,), args, jit=jit, subgroup_size=16)
    clsim.run(divergent_collective, (32,), (32,), args, jit=jit, subgroup_size=16,
              checks="none")
