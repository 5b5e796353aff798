"""C evaluates one branch of ``?:`` and stops ``&&``/``||`` early: a builtin whose bounds check
or instrument record runs before its statement (vloadN, vload_half) must not run for a branch
or operand C would skip. A guarded load past the end was a false OutOfBoundsError, and the
traffic model counted loads that never ran."""

import numpy as np
import pytest

import clsim
from clsim import float4, get_global_id, kernel, vload4, vload_half


@kernel
def guarded_loads(x, h, y, n):
    i = get_global_id(0)
    v = vload4(i, x) if i < n else float4(0.0)
    y[i] = v.x + (vload_half(i, h) if i < n else 0.0)
    if i < n and vload4(i, x).y > 0.5:
        y[i] += 10.0
    if i >= n or vload_half(i, h) > 0.5:
        y[i] += 100.0


def _run(**options):
    x, h = np.ones(16, np.float32), np.ones(4, np.float16)
    y = np.zeros(8, np.float32)
    result = clsim.run(guarded_loads, (8,), (8,), (x, h, y, np.int64(4)), **options)
    return y, result


@pytest.mark.parametrize("options", [{"jit": False}, {"jit": True}, {"checks": "all"}],
                         ids=["no-jit", "jit", "checks-all"])
def test_a_skipped_branch_or_operand_is_not_evaluated(options):
    y, _ = _run(**options)
    np.testing.assert_array_equal(y, [112] * 4 + [100] * 4)


def test_traffic_counts_only_the_loads_that_ran():
    _, result = _run(traffic=True)
    loads = [s.executions for s in result.traffic.site_records if s.buffer in ("x", "h")]
    assert loads == [4, 4, 4, 4]
