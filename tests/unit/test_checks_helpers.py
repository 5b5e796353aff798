"""The checks follow arrays into ``@clsim.func`` helpers only where they can matter.

Contract: an access inside a helper is recorded when some call (directly, or through another
helper) binds that parameter to a tracked array (a buffer the kernel writes, a local or
private array); reads through a parameter only ever bound to read-only buffers compile no
recorder at all (they were what made checks="all" 96x slower on such kernels). A race reached
through nested helpers is still found.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import get_global_id, get_local_id, kernel, local_array

F32 = np.float32


@clsim.func
def fetch(buf, i):
    return buf[i]


@clsim.func
def fetch_twice(buf, i):
    return fetch(buf, i) + fetch(buf, i)


@kernel
def read_only_through_helper(x, y):
    i = get_global_id(0)
    y[i] = fetch(x, i)


@kernel
def neighbour_through_nested_helpers(y):
    i = get_global_id(0)
    y[i] = 1.0
    v = fetch_twice(y, (i + 1) % 64)
    y[i] = v


@kernel
def local_through_helper(x, y):
    lid = get_local_id(0)
    s = local_array(64, np.float32)
    s[lid] = x[get_global_id(0)]
    y[get_global_id(0)] = fetch(s, (lid + 1) % 64)


def run(kern, args, **kw):
    return clsim.run(kern, (64,), (64,), args, checks="all", **kw)


def test_reads_of_read_only_buffers_in_helpers_compile_no_recorder():
    x, y = np.arange(64, dtype=F32), np.zeros(64, F32)
    result = run(read_only_through_helper, (x, y), report_all=True)
    assert result.findings == []
    np.testing.assert_array_equal(y, x)
    source = Path(result.module_path).read_text()
    helper = source[source.index("def _f_fetch"):source.index("def _group")]
    assert "_cs_ldp(" not in helper and "_cs_ld(" not in helper


@pytest.mark.parametrize("kern", [neighbour_through_nested_helpers, local_through_helper])
def test_races_through_helpers_on_tracked_arrays_are_found(kern):
    """A written buffer reached through two helper levels, and a local array through one."""
    args = (np.zeros(64, F32),) if kern is neighbour_through_nested_helpers else (
        np.arange(64, dtype=F32), np.zeros(64, F32))
    result = run(kern, args, report_all=True, jit=False)
    assert any(f.category in ("race", "uninit") for f in result.findings)
    assert any("return buf[i]" in s.text for f in result.findings for s in f.sites)
