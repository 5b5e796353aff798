"""Which wrappers Numba compiles for a generated module's functions.

Each wrapper is compiled, and linked into (and optimised again with) every compiled caller, so
a generated module asks only for those something uses: the group function and the launcher are
called from Python (the launcher's Python loop, clsim.runtime.launcher_tier, calls the group
function), so they keep their CPython wrapper; nothing takes a function's address, so no C
wrapper is compiled; the module's own helper functions are called only by compiled code, so they
have neither. The runs below also show that the module works with these flags.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import clsim
from clsim import get_global_id, kernel


@clsim.func
def _scaled_sum(a, b):
    return a * np.float32(2.0) + b


@kernel
def scaled_sums(x, y, out):
    i = get_global_id(0)
    out[i] = _scaled_sum(x[i], y[i])


def _module(result):
    return sys.modules[Path(result.module_path).stem]


def _run(groups: int):
    x = np.arange(groups * 8, dtype=np.float32)
    y = np.ones_like(x)
    out = np.zeros_like(x)
    result = clsim.run(scaled_sums, (x.size,), (8,), (x, y, out), jit=True)
    np.testing.assert_array_equal(out, x * 2 + 1)
    return _module(result)


def test_helper_functions_have_no_wrappers_and_the_entry_points_no_c_wrapper():
    module = _run(groups=2)  # a small launch: the launcher's loop runs as Python
    helpers = [value for name, value in vars(module).items()
               if name not in ("_group", "_launch") and hasattr(value, "targetoptions")
               and getattr(value, "__module__", None) == module.__name__]
    assert helpers, "the kernel's @clsim.func helper is a function of the generated module"
    for helper in helpers:
        assert helper.targetoptions.get("no_cpython_wrapper") is True, helper
        assert helper.targetoptions.get("no_cfunc_wrapper") is True, helper
    for entry in (module._group, module._launch):
        assert not entry.targetoptions.get("no_cpython_wrapper"), entry
        assert entry.targetoptions.get("no_cfunc_wrapper") is True, entry


def test_a_large_launch_compiles_the_launcher_with_these_flags():
    module = _run(groups=1024)  # past the Python loop's size: the launcher is compiled
    assert module._launch.signatures and module._group.signatures
