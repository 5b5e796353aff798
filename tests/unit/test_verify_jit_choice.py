"""Plain Python or Numba for the verifier's simulations (verify.jit_choice, issues 21 and 23).

Contract: small launches run as plain Python; with the race and uninitialised-read checks on,
a compile key (kernel, local size, argument types, checks) switches to Numba once the plain
Python spent on it (CPU seconds) plus this launch's predicted cost reaches a compile's price,
and stays there. The prediction comes from the kernel's earlier plain-Python launches under
any key (a fixed part, the cheapest launch, plus seconds per work-item and buffer element);
with none measured the key rents launch by launch. The price is the CPU seconds of the last
compile measured for the kernel, before one ``COMPILE_S_PER_NODE`` times the kernel's syntax
tree (helpers included). Unchecked launches never switch; large launches always JIT; both
ways give the same findings. No test here times anything: ``record`` is fed chosen seconds.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace

import numpy as np
import pytest

import clsim
from clsim import get_global_id, get_local_id, kernel, local_array
from clsim.compiler.frontend import parse
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


PRICE = 8.0  # the compile's price these tests set (CPU s)


@pytest.fixture
def priced(monkeypatch):
    """unfenced_shift's first compile priced at about PRICE through the per-node figure."""
    monkeypatch.setattr(jit_choice, "COMPILE_S_PER_NODE",
                        PRICE / jit_choice.syntax_nodes(unfenced_shift))


def _record(choice, seconds: float, jit: bool = False) -> None:
    jit_choice.record(choice, SimpleNamespace(jit=jit), seconds)


def test_a_key_buys_the_compile_when_its_rent_and_this_launch_reach_the_price(priced):
    jit, choice = _choose("all")
    assert jit is False  # nothing measured: rent
    _record(choice, 2.1)
    _record(_choose("all")[1], 2.1)
    assert _choose("all")[0] is False  # 4.2 spent + 2.1 predicted < 8
    _record(_choose("all")[1], 2.1)
    # 6.3 spent: plain ski rental would rent again; the next launch's 2.1 reaches the price
    assert _choose("all")[0] is None  # clsim.run's default: Numba
    assert _choose("all", local=(8,))[0] is False  # another local size: another compile
    _record(_choose("all")[1], 3.0, jit=True)  # CPU s of the compile: now the price
    assert _choose("all")[0] is None  # compiled: stays
    assert jit_choice.compile_estimate(unfenced_shift) == 3.0
    other = _choose("all", local=(8,))[1]
    assert _choose("all", local=(8,))[0] is False  # 0 spent + 2.1 predicted < 3
    _record(other, 1.5)
    # 1.5 spent + 1.95 predicted (the mean of the same-sized launches) >= 3
    assert _choose("all", local=(8,))[0] is None
    _record(_choose("all", local=(8,))[1], 20.0, jit=True)  # a dearer compile: the new price
    assert _choose("all")[0] is None  # compiled before: stays, whatever the price now


def test_a_large_launch_compiles_at_once_when_the_kernels_rate_predicts_it(priced):
    _record(_choose("all", n=32)[1], 0.5)  # 96 work-items and elements
    _record(_choose("all", n=320)[1], 2.0)  # 960: 1.5 s more over 1,056 units, beyond 0.5 each
    assert _choose("all", local=(8,), n=32)[0] is False  # predicted about 0.64 s
    # a new key's first launch: 0.5 + 1.5 * 9600 / 1056 = 14.1 s predicted, over the price
    assert _choose("all", local=(8,), n=3200)[0] is None


def test_a_tiny_launch_does_not_predict_its_set_up_cost_per_unit(priced):
    """A launch of 3 units costing 0.5 s is mostly set-up: a launch of 60,000 units is
    predicted at 0.5 s, not 10,000 s."""
    _record(_choose("all", local=(1,), n=1)[1], 0.5)
    assert _choose("all", n=20000)[0] is False


def test_the_first_price_follows_the_syntax_tree_with_its_helpers_once():
    @clsim.func
    def twice(v):
        return v + v

    @kernel
    def plain(x):
        i = get_global_id(0)
        x[i] = x[i] + x[i]

    @kernel
    def helped(x):
        i = get_global_id(0)
        x[i] = twice(x[i]) + twice(x[i])  # one helper, counted once

    @kernel
    def helped_once(x):
        i = get_global_id(0)
        x[i] = twice(x[i]) + x[i]

    def own(fn):
        return sum(1 for _ in ast.walk(parse(fn).tree))

    nodes = jit_choice.syntax_nodes
    assert nodes(plain) == own(plain)
    assert nodes(helped) == own(helped) + own(twice)
    assert nodes(helped_once) == own(helped_once) + own(twice)
    assert jit_choice.compile_estimate(helped) == jit_choice.COMPILE_S_PER_NODE * nodes(helped)


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
    monkeypatch.setattr(jit_choice, "COMPILE_S_PER_NODE", 1e-12)  # switch after one plain run
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
