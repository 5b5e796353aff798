"""Which form of a JIT module's launcher runs a launch: compiled, or its loop as Python.

The generated launcher (clsim.compiler.launcher) is a loop over work-groups that calls the
compiled group function. Compiling the launcher too costs 0.3-0.6 s of CPU per kernel (Numba
links the group function's code into it and optimises it a second time), while running its
loop as Python around the compiled group function costs 6-8 us per work-group (measured on
vector_add, docs/performance.md). A small launch, the kind tests make, therefore
runs the loop as Python and compiles only the group function. LLVM may judge the group
function's loops differently alone than inlined in the launcher: explain-speed's test kernel
(``y[i] = x[i] * 3.0 + 1.0``) vectorises inside the launcher and is "not beneficial" alone,
though tiled matmuls ran as fast either way (within 5%, best of 10 in one process). So a
module compiles its launcher at its first large launch, or once its Python loops have run
``PYTHON_LOOP_BUDGET`` groups or ``PYTHON_LOOP_SECONDS`` in all, after which no launch of it
runs the possibly slower way. Both forms run the same source with the same arguments,
so every result, error record and check is the same.
"""

from __future__ import annotations

import types

import numpy as np
from numba.core.types.function_type import WrapperAddressProtocol

from clsim.runtime import intrinsics_py

# per launch: at 8 us a group, at most ~2 ms of loop overhead
PYTHON_LOOP_GROUPS = 256
# per compiled module: ~130 ms of loop overhead, a fraction of one launcher compile
PYTHON_LOOP_BUDGET = 16_384
# per compiled module: about half a launcher's compile, spent in its Python loops
PYTHON_LOOP_SECONDS = 0.25
# Numba's parallel loop is the launcher itself: an instrument chose it, so it is always compiled
_KINDS = ("serial", "threads")


def runs_python_loop(compiled, config) -> bool:
    """Whether this launch runs ``compiled``'s launcher loop as Python: a JIT launch of at most
    ``PYTHON_LOOP_GROUPS`` groups, within the module's budgets of groups and seconds, its
    launcher not compiled yet in this process."""
    if not config.jit or "warm" in compiled.warmed:
        return False
    if getattr(compiled.module, "_LAUNCHER", None) not in _KINDS:
        return False
    if compiled.module._launch.signatures:  # a module serves every launch configuration
        return False                        # that generates its source
    groups = config.ndrange.total_groups
    return (groups <= PYTHON_LOOP_GROUPS
            and compiled.python_loop_groups + groups <= PYTHON_LOOP_BUDGET
            and compiled.python_loop_s < PYTHON_LOOP_SECONDS)


def launcher(compiled, python_loop: bool):
    """The callable that runs a chunk of groups: the compiled launcher or its Python form."""
    if not python_loop:
        return compiled.module._launch
    if compiled.python_loop is None:
        compiled.python_loop = _python_form(compiled.module)
    return compiled.python_loop


def _python_form(module, group=None):
    """The launcher's loop as a Python function calling the compiled group function (or
    ``group``). The shared helpers it calls (scratch arrays' np.empty) have no Python entry
    point (clsim.runtime.jit_helpers), so it calls their Python forms, the same numpy calls;
    so are the launcher's intrinsics (``_borrowed``: an array as it is)."""
    loop = module._launch.py_func
    names = {}
    for name in loop.__code__.co_names:
        value = getattr(module, name, None)
        if name != "_group" and hasattr(value, "py_func"):
            names[name] = value.py_func
    names["_group"] = module._group if group is None else group
    names["_borrowed"], names["_alive"] = intrinsics_py._borrowed, intrinsics_py._alive
    return types.FunctionType(loop.__code__, {**vars(module), **names}, loop.__name__)


class _Typed(Exception):
    """Raised by the stand-in group function once it has the group function's arguments."""


def compile_group_function(module, sizes, values: list, errs: np.ndarray) -> None:
    """Compile ``module._group`` for the arguments its launcher passes, without running a
    group: the launcher's Python form runs its first iteration with a stand-in for the group
    function that takes the arguments and stops (in its own copy of the module's globals, so
    a launch on another thread is untouched). Then the addresses of function arguments are
    asked for, as the compiled launcher's first call would: a lazy one (the checks' entry
    point another process still compiles, clsim.checks.native.LazyEntry) waits here, in the
    compile seconds, not in the launch's."""
    seen = []

    def stand_in(*args):
        seen.extend(args)
        raise _Typed

    try:
        _python_form(module, stand_in)(np.int64(0), np.int64(1), *sizes, *values, errs[:1])
    except _Typed:
        pass
    module._group.compile(tuple(module._group.typeof_pyval(arg) for arg in seen))
    for arg in seen:
        if isinstance(arg, WrapperAddressProtocol):
            arg.__wrapper_address__()
