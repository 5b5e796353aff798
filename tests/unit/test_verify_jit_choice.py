"""Plain Python or Numba for the verifier's simulations (verify.jit_choice, issue 23).

Contract: small launches run as plain Python; with the race and uninitialised-read checks on,
a compile key (kernel, local size, argument types, checks) switches to Numba once the plain
Python spent on it (CPU seconds) reaches the CPU seconds of the last compile measured for that
kernel (the first guess before any), and stays there; unchecked launches never switch; large
launches always JIT; both ways give the same findings.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import clsim
from clsim import get_global_id, get_local_id, kernel, local_array
from verify import jit_choice, runner


@kernel
def unfenced_shift(x, y):
    lid = get_local_id(0)
    i = get_global_id(0)
    tile = local_array(16, np.float32)
    tile[lid] = x[i]
    y[i] = tile[(lid + 1) % 16]  # no barrier: found by the checks


@pytest.fixture(autouse=True)
def _fresh():
    jit_choice.reset()
    yield
    jit_choice.reset()


def _args(n: int = 32):
    return [np.arange(n, dtype=np.float32), np.zeros(n, np.float32)]


def _choose(checks: str, local=(16,), n: int = 32):
    return jit_choice.choose(unfenced_shift, (n,), local, _args(n), None, None, checks)


def test_checked_launches_switch_to_the_jit_once_plain_python_cost_a_compile():
    jit, key = _choose("all")
    assert jit is False
    jit_choice.record(key, SimpleNamespace(jit=False), jit_choice.FIRST_COMPILE_S - 0.5)
    assert _choose("all")[0] is False
    jit_choice.record(key, SimpleNamespace(jit=False), 0.5)
    assert _choose("all")[0] is None  # clsim.run's default: Numba
    assert _choose("all", local=(8,))[0] is False  # another local size: another compile
    jit_choice.record(key, SimpleNamespace(jit=True, compile_s=9.0), 7.0)  # CPU s: 7
    assert _choose("all")[0] is None  # compiled: stays
    other = _choose("all", local=(8,))[1]
    jit_choice.record(other, SimpleNamespace(jit=False), 6.0)
    assert _choose("all", local=(8,))[0] is False  # the measured compile (7 s) is the price
    jit_choice.record(other, SimpleNamespace(jit=False), 1.0)
    assert _choose("all", local=(8,))[0] is None


def test_unchecked_launches_stay_plain_python_and_large_ones_jit():
    _jit, key = _choose("default")
    jit_choice.record(key, SimpleNamespace(jit=False), 100.0)
    assert _choose("default")[0] is False
    large = jit_choice.PYTHON_LIMIT
    assert _choose("default", n=large)[0] is None
    assert _choose("all", n=large)[0] is None


def test_both_ways_give_the_same_findings(monkeypatch):
    runs = []
    real = clsim.run

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        runs.append(result.jit)
        return result

    monkeypatch.setattr(runner.clsim, "run", spy)
    monkeypatch.setattr(jit_choice, "FIRST_COMPILE_S", 1e-9)  # switch after one plain run
    outputs = []
    for _ in range(2):
        runner._memo.clear()
        after, findings = runner.simulate_checked(unfenced_shift, (32,), (16,), _args(),
                                                  checks="all")
        # (not y: it reads local memory nothing wrote, undefined in both)
        outputs.append(sorted(str(f) for f in findings))
    assert runs == [False, True]
    assert outputs[0] == outputs[1]
    assert outputs[0]  # the missing barrier was found both ways
