"""Small JIT launches run the launcher's loop as Python around the compiled group function.

Contract (clsim.runtime.launcher_tier): a JIT launch of at most PYTHON_LOOP_GROUPS groups, on a
module whose launcher is not compiled, compiles only ``_group`` (counted in compile_s, before
the launch runs) and runs the launcher's loop as Python; a larger launch, or the first one past
the module's PYTHON_LOOP_BUDGET, compiles the launcher, which then serves every launch. Both
forms give the same bytes and the same error, naming the same work-item and group.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel, local_array
from clsim.errors import OutOfBoundsError
from clsim.runtime import launcher_tier


@kernel
def reversed_in_group(x, y):
    lid = get_local_id(0)
    tile = local_array(32, np.float32)  # a scratch array: the launcher allocates it
    tile[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[get_global_id(0)] = tile[31 - lid] * 2.0


@kernel
def rotated_in_group(x, y):
    lid = get_local_id(0)
    tile = local_array(32, np.float32)
    tile[lid] = x[get_global_id(0)]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[get_global_id(0)] = tile[(lid + 1) % 32]


@kernel
def tripled(x, y):
    y[get_global_id(0)] = x[get_global_id(0)] * 3.0


@kernel
def overrun_at(x, y, bad):
    i = get_global_id(0)
    if i == bad:
        y[i + 100000] = x[i]
    else:
        y[i] = x[i] + 1.0


def _module(result):
    return sys.modules[Path(result.module_path).stem]


def _want(x):
    return (x.reshape(-1, 32)[:, ::-1] * 2.0).ravel()


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "threads"])
def test_a_small_launch_compiles_only_the_group_function(parallel):
    x = np.arange(32 * 6, dtype=np.float32) + 0.5
    y = np.zeros_like(x)
    first = clsim.run(reversed_in_group, x.shape, (32,), (x, y), parallel=parallel)
    module = _module(first)
    np.testing.assert_array_equal(y, _want(x))
    assert module._launch.signatures == [] and len(module._group.signatures) == 1
    # the group function's compile (or its load from Numba's cache) is counted before the
    # launch, never in it; not compared with the launch's time, which load can stretch
    assert first.compile_s > 0.0 and first.parallel == parallel
    again = clsim.run(reversed_in_group, x.shape, (32,), (x, np.zeros_like(x)), parallel=parallel)
    assert again.compile_s == 0.0 and module._launch.signatures == []


def test_a_large_launch_compiles_the_launcher_with_the_same_bytes():
    """(Each test launches kernels of its own: a module's compiled launcher serves every later
    launch of it in the process, so a shared kernel would make the forms depend on order.)"""
    groups = launcher_tier.PYTHON_LOOP_GROUPS + 1
    x = np.random.default_rng(1).standard_normal(32 * groups).astype(np.float32)
    small, large = np.zeros_like(x), np.zeros_like(x)
    first = clsim.run(rotated_in_group, (32 * 4,), (32,), (x, small), parallel=False)
    assert _module(first)._launch.signatures == []
    result = clsim.run(rotated_in_group, x.shape, (32,), (x, large), parallel=False)
    assert len(_module(result)._launch.signatures) == 1
    np.testing.assert_array_equal(large, np.roll(x.reshape(-1, 32), -1, axis=1).ravel())
    np.testing.assert_array_equal(small[:128], large[:128])


def test_the_launcher_is_compiled_once_the_python_loops_spent_their_budget(monkeypatch):
    monkeypatch.setattr(launcher_tier, "PYTHON_LOOP_BUDGET", 10)
    x = np.arange(32 * 4, dtype=np.float32)
    kinds = []
    for _ in range(3):  # 4 + 4 groups fit the budget, the third launch's 4 do not
        y = np.zeros_like(x)
        result = clsim.run(tripled, x.shape, (32,), (x, y), parallel=False)
        kinds.append(bool(_module(result)._launch.signatures))
        np.testing.assert_array_equal(y, x * 3.0)
    assert kinds == [False, False, True]


@kernel
def halved(x, y):
    y[get_global_id(0)] = x[get_global_id(0)] * 0.5


def test_the_launcher_is_compiled_once_the_python_loops_spent_their_seconds(monkeypatch):
    """The group function alone can run slower than inside the launcher (LLVM may not
    vectorise it alone), so time spent in Python loops also buys the compiled launcher."""
    monkeypatch.setattr(launcher_tier, "PYTHON_LOOP_SECONDS", 1e-9)  # one launch spends it
    x = np.arange(32 * 4, dtype=np.float32)
    kinds = []
    for _ in range(2):
        y = np.zeros_like(x)
        result = clsim.run(halved, x.shape, (32,), (x, y), parallel=False)
        kinds.append(bool(_module(result)._launch.signatures))
        np.testing.assert_array_equal(y, x * 0.5)
    assert kinds == [False, True]


def test_both_forms_raise_the_same_error():
    """The Python loop first (the module's launcher not compiled yet), then the launcher."""
    line = Path(__file__).read_text().splitlines().index("        y[i + 100000] = x[i]") + 1
    forms = []
    for groups in (4, launcher_tier.PYTHON_LOOP_GROUPS + 1):
        x = np.arange(32 * groups, dtype=np.float32)
        with pytest.raises(OutOfBoundsError) as caught:
            clsim.run(overrun_at, x.shape, (32,), (x, np.zeros_like(x), np.int64(71)),
                      parallel=False)
        assert str(caught.value).startswith(
            f"test_launcher_tier.py:{line} in overrun_at, gid=(71,), lid=(7,): store to "
            f"y[100071] out of bounds (len {32 * groups})")
        forms += [m._launch.signatures != [] for name, m in sys.modules.items()
                  if name.startswith("clsim_gen_overrun_at_")]
    assert forms == [False, True]
