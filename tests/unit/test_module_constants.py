"""Module-level constants a kernel reads (a __constant table, a number, also inside a helper)
are read at each launch: a table changed in place, a table or number rebound, gives the new
value on the next run in the same process, in JIT and no-JIT mode, and an unchanged table
reuses the compiled kernel."""

import sys

import numpy as np
import pytest

import clsim
from clsim import get_global_id
from clsim.runtime import launch

TABLE = np.array([1, 2, 3, 4], np.float32)
SCALE = np.float32(2.0)
OFFSET = np.float32(0.0)


@clsim.func
def shifted(v):
    return v + OFFSET


@clsim.kernel
def lookup(out):
    i = get_global_id(0)
    out[i] = shifted(TABLE[i] * SCALE)


def _run(jit: bool) -> list[float]:
    out = np.zeros(4, np.float32)
    clsim.run(lookup, (4,), (4,), (out,), jit=jit)
    return out.tolist()


@pytest.mark.parametrize("jit", [True, False])
def test_changed_constants_are_seen_by_the_next_launch(jit, monkeypatch):
    here = sys.modules[__name__]
    monkeypatch.setattr(here, "TABLE", np.array([1, 2, 3, 4], np.float32))
    monkeypatch.setattr(here, "SCALE", np.float32(2.0))
    assert _run(jit) == [2, 4, 6, 8]
    compiled = len(launch._COMPILED)
    assert _run(jit) == [2, 4, 6, 8]
    assert len(launch._COMPILED) == compiled  # nothing changed: the compiled kernel again
    here.TABLE[1] = 7  # in place
    assert _run(jit) == [2, 14, 6, 8]
    monkeypatch.setattr(here, "TABLE", np.array([5, 5, 5, 5], np.float32))  # rebound
    assert _run(jit) == [10, 10, 10, 10]
    monkeypatch.setattr(here, "SCALE", np.float32(3.0))
    assert _run(jit) == [15, 15, 15, 15]
    monkeypatch.setattr(here, "OFFSET", np.float32(1.0))  # read by the helper
    assert _run(jit) == [16, 16, 16, 16]


def test_the_verifiers_memoised_simulation_sees_a_changed_table(monkeypatch):
    """verify memoises simulator results on the argument bytes; a changed table is part of the
    key, so the second simulation is not the first one's result."""
    from verify.runner import simulate

    here = sys.modules[__name__]
    monkeypatch.setattr(here, "TABLE", np.array([1, 2, 3, 4], np.float32))
    monkeypatch.setattr(here, "SCALE", np.float32(1.0))
    out = np.zeros(4, np.float32)
    assert simulate(lookup, (4,), (4,), [out], jit=False)[0].tolist() == [1, 2, 3, 4]
    here.TABLE[0] = 9
    assert simulate(lookup, (4,), (4,), [out], jit=False)[0].tolist() == [9, 2, 3, 4]
