"""A read of `__local` memory before any write (undefined in OpenCL; checks="uninit" reports it)
gives the same bytes in every run of the same launch.

Contract (clsim.compiler.launcher): the launcher zeroes its local and private arrays once per
call (a chunk of groups), and every group of that call reuses them, as a CPU runtime reuses a
thread's memory. So a group reads zeros or what the group before it left, whether the
launcher's loop runs as Python (small launches, launcher_tier) or compiled, and without JIT.
Before, a fresh array held whatever numpy's or Numba's allocator handed back.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel, local_array


@kernel
def read_before_write(x, y):
    lid = get_local_id(0)
    tile = local_array(8, np.float32)
    y[get_global_id(0)] = tile[lid]  # undefined: nothing wrote tile yet in this group
    barrier(CLK_LOCAL_MEM_FENCE)
    tile[lid] = x[get_global_id(0)]


def _dirty_the_allocator() -> None:
    """Free arrays full of non-zero bytes, the sizes a launch allocates, so that a launch that
    took memory as it came would read them."""
    for _ in range(64):
        np.full(8, 1234.5, np.float32)
        np.full(64, -7.25, np.float32)


def _run(groups: int, jit: bool) -> np.ndarray:
    x = np.arange(1, groups * 8 + 1, dtype=np.float32)
    y = np.full_like(x, np.nan)
    _dirty_the_allocator()
    clsim.run(read_before_write, (x.size,), (8,), (x, y), jit=jit, parallel=False)
    return y


# JIT: 2 groups run the launcher's loop as Python, 1,024 the compiled launcher
@pytest.mark.parametrize("groups", [2, 1024], ids=["small", "large"])
@pytest.mark.parametrize("jit", [True, False], ids=["jit", "no-jit"])
def test_an_undefined_local_read_gives_the_same_bytes_every_run(groups, jit):
    if not jit and groups > 2:
        groups = 64  # plain Python: the same code path, fewer groups
    first, second = _run(groups, jit), _run(groups, jit)
    np.testing.assert_array_equal(first, second)
    # each group reads the zeroes of a new launcher call (the first group, and the first of
    # each chunk of groups) or what the group before it left: never the allocator's bytes
    x = np.arange(1, groups * 8 + 1, dtype=np.float32).reshape(groups, 8)
    read = first.reshape(groups, 8)
    np.testing.assert_array_equal(read[0], 0)
    for g in range(1, groups):
        assert (read[g] == 0).all() or (read[g] == x[g - 1]).all(), (g, read[g])
