"""Whether the verifier simulates a drawn launch as plain Python or with Numba.

Small launches (up to ``PYTHON_LIMIT`` work-items plus buffer elements) run as plain Python:
the fuzzer draws many local sizes, and Numba compiles one module per local size, seconds each.
With the race and uninitialised-read checks on (the verifier's default), plain Python costs
1.1-2.3x the unchecked simulation per launch (a shadow-memory call per access, and work-item
loops that run in the usual order where the unchecked ones run lane-major), while compiled
code runs the checks in milliseconds. So for checked launches the verifier rents plain Python
per compile key (kernel, local size, argument types, checks) and buys the compile once the
plain-Python seconds spent on that key, plus what this launch is predicted to cost, reach what
a compile of the kernel costs (ski rental that buys a launch early, or at once for a launch
predicted to cost more than the compile: with right estimates, never more than about twice the
better of the two choices, whichever it turns out to be). Both prices are estimates, learned in
this process:

- the rent: a kernel's plain-Python launches under the same checks (any key) give its cost
  as a fixed part (the cheapest launch seen) plus CPU seconds per unit of work (work-items
  plus buffer elements) for the rest, so a launch ten times the size of the ones seen is
  predicted ten times their variable cost. Before the kernel has run as plain Python,
  nothing is predicted and the key pays its rent launch by launch (plain ski rental).
- the compile: the CPU seconds of the last compile measured for the kernel (a compile found
  in Numba's disk cache costs a fraction of a second, so a kernel verified before switches
  almost at once); before one, ``COMPILE_S_PER_NODE`` times the size of its syntax tree, its
  helpers' included, since a checked compile's cost grows with the code Numba types and LLVM
  optimises: measured here, a Q4_K quantizer (1,714 nodes) took 11-12 CPU s per local size
  where a tiled matmul (310) took 2.6 and softmax (392) 4.1 (docs/performance.md, issue 21).
  A fixed first guess (10 s, before) let a cheap kernel's key pay 10 s of rent and made an
  expensive one look cheap.

Both ways give identical results and findings (tests/unit/test_verify_jit_choice.py).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

import numpy as np

from clsim.compiler.frontend import parse

PYTHON_LIMIT = 1 << 17
# CPU seconds of a checked compile per syntax-tree node (kernel and helpers), until the kernel's
# own compile has been measured: 6.7-10.5 ms measured on four kernels here (Numba's cache of
# clsim's shared helpers warm); the upper half on purpose, as a compile bought too early costs
# what plain Python would not have paid back.
COMPILE_S_PER_NODE = 0.008
_PLAIN_CHECKS = ("default", "none", "bounds")  # no shadow memory: plain Python stays cheap


@dataclass
class _Rent:
    """A kernel's plain-Python launches under one checks mode, summed."""

    seconds: float = 0.0
    units: int = 0
    launches: int = 0
    cheapest_s: float = math.inf

    def predict(self, units: int) -> float | None:
        """CPU seconds a launch of ``units`` is predicted to cost (None: nothing measured).
        The cheapest launch bounds the fixed part from above: a tiny first launch (one
        element, 30 ms of set-up) must not predict seconds for a large one."""
        if not self.launches:
            return None
        per_unit = (self.seconds - self.launches * self.cheapest_s) / self.units
        return self.cheapest_s + per_unit * units


class Choice(NamedTuple):
    """What ``record`` needs to account a launch that ``choose`` decided."""

    key: tuple
    units: int


_spent: dict[tuple, float] = {}  # compile key -> plain-Python seconds spent on it
_compiled: set[tuple] = set()
_compile_s: dict[Any, float] = {}  # kernel -> the last compile measured for it
_rent: dict[tuple, _Rent] = {}  # (kernel, checks) -> its plain-Python launches
_nodes: dict[Any, int] = {}  # kernel -> syntax-tree nodes, helpers included


def _key(kernel: Any, local_size: Sequence[int] | None, args: Sequence[Any],
         subgroup_size: int | None, reduction_order: str | None, checks: str) -> tuple:
    types = tuple(np.asarray(a).dtype.str if isinstance(a, (np.ndarray, np.generic))
                  else type(a).__name__ for a in args)
    return (kernel, None if local_size is None else tuple(local_size), types, subgroup_size,
            reduction_order, checks)


def syntax_nodes(kernel: Any) -> int:
    """Nodes of ``kernel``'s parsed tree and of every helper it calls, each helper once."""
    if kernel not in _nodes:
        seen: set[int] = set()
        pending = [parse(kernel)]
        total = 0
        while pending:
            parsed = pending.pop()
            if id(parsed) in seen:
                continue
            seen.add(id(parsed))
            total += sum(1 for _ in ast.walk(parsed.tree))
            pending.extend(parsed.callees.values())
        _nodes[kernel] = total
    return _nodes[kernel]


def compile_estimate(kernel: Any) -> float:
    """CPU seconds a new compile key of ``kernel`` is expected to cost."""
    if kernel in _compile_s:
        return _compile_s[kernel]
    return COMPILE_S_PER_NODE * syntax_nodes(kernel)


def choose(kernel: Any, global_size: Sequence[int], local_size: Sequence[int] | None,
           args: Sequence[Any], subgroup_size: int | None, reduction_order: str | None,
           checks: str) -> tuple[bool | None, Choice]:
    """``clsim.run``'s ``jit`` for this launch (False: plain Python, None: its default) and
    what to pass to ``record`` afterwards."""
    key = _key(kernel, local_size, args, subgroup_size, reduction_order, checks)
    units = math.prod(global_size) + sum(v.size for v in args if isinstance(v, np.ndarray))
    choice = Choice(key, units)
    if units > PYTHON_LIMIT or key in _compiled:
        return None, choice
    if checks in _PLAIN_CHECKS:
        return False, choice
    rent = _rent.get((kernel, checks))
    predicted = (rent.predict(units) if rent else None) or 0.0
    if _spent.get(key, 0.0) + predicted >= compile_estimate(kernel):
        return None, choice
    return False, choice


def record(choice: Choice, result: Any, seconds: float) -> None:
    """Account one simulation that ``choose`` gave ``choice`` and that took ``seconds`` of
    this process's CPU time (``result``: its RunResult). CPU seconds, not wall: a compile and
    a plain-Python run slow down alike on a loaded machine only in wall time's eyes (a compile
    took 28-49 s wall at load 15, about 8 s CPU), so the comparison holds at any load."""
    key = choice.key
    if getattr(result, "jit", False):
        if key not in _compiled:  # what a new key cost: a compile, a load from disk or memory
            _compile_s[key[0]] = seconds
        _compiled.add(key)
        return
    _spent[key] = _spent.get(key, 0.0) + seconds
    rent = _rent.setdefault((key[0], key[-1]), _Rent())
    rent.seconds += seconds
    rent.units += choice.units
    rent.launches += 1
    rent.cheapest_s = min(rent.cheapest_s, seconds)


def reset() -> None:
    """Forget what was spent, measured and compiled (benchmarks, tests)."""
    _spent.clear()
    _compiled.clear()
    _compile_s.clear()
    _rent.clear()
