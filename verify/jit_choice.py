"""Whether the verifier simulates a drawn launch as plain Python or with Numba.

Small launches (up to ``PYTHON_LIMIT`` work-items plus buffer elements) run as plain Python:
the fuzzer draws many local sizes, and Numba compiles one module per local size, seconds each.
With the race and uninitialised-read checks on (the verifier's default), plain Python costs
1.1-2.3x the unchecked simulation per launch (a shadow-memory call per access, and work-item
loops that run in the usual order where the unchecked ones run lane-major), while compiled
code runs the checks in milliseconds. So for checked launches the verifier rents plain Python per compile
key (kernel, local size, argument types, checks) until the seconds spent there reach what a
compile costs, then buys the compile (ski rental: never more than about twice the better of
the two choices, whichever it turns out to be). A compile found in Numba's disk cache costs a
fraction of a second, and the estimate follows the compiles measured in this process, so a
kernel verified before switches almost at once. Both ways give identical results and findings.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

PYTHON_LIMIT = 1 << 17
# The CPU seconds of a compile until this process has measured one: a checked softmax
# compiles in about 4-8 s CPU (Numba's cache of clsim's shared helpers warm); high on purpose,
# as a wrong guess costs a compile that plain Python would not have paid back.
FIRST_COMPILE_S = 10.0
_PLAIN_CHECKS = ("default", "none", "bounds")  # no shadow memory: plain Python stays cheap

_spent: dict[tuple, float] = {}  # compile key -> plain-Python seconds spent on it
_compiled: set[tuple] = set()
_compile_s: dict[Any, float] = {}  # kernel -> the last compile measured for it


def _key(kernel: Any, local_size: Sequence[int] | None, args: Sequence[Any],
         subgroup_size: int | None, reduction_order: str | None, checks: str) -> tuple:
    types = tuple(np.asarray(a).dtype.str if isinstance(a, (np.ndarray, np.generic))
                  else type(a).__name__ for a in args)
    return (kernel, None if local_size is None else tuple(local_size), types, subgroup_size,
            reduction_order, checks)


def choose(kernel: Any, global_size: Sequence[int], local_size: Sequence[int] | None,
           args: Sequence[Any], subgroup_size: int | None, reduction_order: str | None,
           checks: str) -> tuple[bool | None, tuple]:
    """``clsim.run``'s ``jit`` for this launch (False: plain Python, None: its default) and
    the key to pass to ``record`` afterwards."""
    key = _key(kernel, local_size, args, subgroup_size, reduction_order, checks)
    size = math.prod(global_size) + sum(v.size for v in args if isinstance(v, np.ndarray))
    if size > PYTHON_LIMIT or key in _compiled:
        return None, key
    if checks in _PLAIN_CHECKS:
        return False, key
    if _spent.get(key, 0.0) >= _compile_s.get(kernel, FIRST_COMPILE_S):
        return None, key
    return False, key


def record(key: tuple, result: Any, seconds: float) -> None:
    """Account one simulation of ``key`` that took ``seconds`` of this process's CPU time
    (``result``: its RunResult). CPU seconds, not wall: a compile and a plain-Python run slow
    down alike on a loaded machine only in wall time's eyes (a compile took 28-49 s wall at
    load 15, about 8 s CPU), so the comparison holds at any load."""
    if getattr(result, "jit", False):
        if key not in _compiled:  # what a new key cost: a compile, a load from disk or memory
            _compile_s[key[0]] = seconds
        _compiled.add(key)
    else:
        _spent[key] = _spent.get(key, 0.0) + seconds


def reset() -> None:
    """Forget what was spent and compiled (benchmarks, tests)."""
    _spent.clear()
    _compiled.clear()
    _compile_s.clear()
