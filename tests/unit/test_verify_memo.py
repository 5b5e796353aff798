"""The verifier's memoised simulations (verify.runner.simulate_checked), which let one drawn
example or default shape be simulated once for every device it is compared on.

Contract: a simulation under checks="all" that found nothing answers a later request for the
same launch under a weaker mode ("default") without running the simulator again; one that
found a race does not (its buffers may hold the race's outcome), and a weaker mode never
answers a stronger one. Every JIT simulation of a kernel at one local size shares one compiled
module, whether the launch has one work-group or many.
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import barrier, CLK_LOCAL_MEM_FENCE, get_global_id, get_local_id, kernel, local_array
from clsim.runtime import launch
from verify import runner


@kernel
def fenced_shift(x, y):
    lid = get_local_id(0)
    i = get_global_id(0)
    tile = local_array(16, np.float32)
    tile[lid] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    y[i] = tile[(lid + 1) % 16]


@kernel
def unfenced_shift(x, y):
    lid = get_local_id(0)
    i = get_global_id(0)
    tile = local_array(16, np.float32)
    tile[lid] = x[i]
    y[i] = tile[(lid + 1) % 16]  # no barrier: a race the checks find


@pytest.fixture
def runs(monkeypatch):
    """The simulator's runs, as the checks mode each was asked for."""
    seen: list[str] = []
    real = clsim.run

    def spy(*args, **kwargs):
        seen.append(kwargs["checks"])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner.clsim, "run", spy)
    runner._memo.clear()
    yield seen
    runner._memo.clear()


def _simulate(kern, checks: str, n: int = 32):
    x = np.arange(n, dtype=np.float32)
    return runner.simulate_checked(kern, (n,), (16,), [x, np.zeros(n, np.float32)], jit=False,
                                   checks=checks)


def test_a_checked_simulation_that_found_nothing_serves_the_unchecked_one(runs):
    checked, findings = _simulate(fenced_shift, "all")
    assert findings == ()
    unchecked, findings = _simulate(fenced_shift, "default")
    assert runs == ["all"]  # the second came from the memo
    assert findings == ()
    assert unchecked[1].tobytes() == checked[1].tobytes()
    assert unchecked[1][0] == 1.0 and unchecked[1][15] == 0.0


def test_a_checked_simulation_with_findings_serves_only_its_own_mode(runs):
    _after, findings = _simulate(unfenced_shift, "all")
    assert findings  # the missing barrier
    _simulate(unfenced_shift, "default")
    assert runs == ["all", "default"]
    assert _simulate(unfenced_shift, "all")[1] == findings
    assert runs == ["all", "default"]  # its own mode: from the memo, findings and all


def test_an_unchecked_simulation_never_answers_a_checked_request(runs):
    _simulate(fenced_shift, "default")
    _simulate(fenced_shift, "all")
    assert runs == ["default", "all"]


def test_the_memo_keeps_to_its_byte_budget(runs, monkeypatch):
    monkeypatch.setattr(runner, "_MEMO_BYTES", 2 * 4 * (96 + 112))  # two float32 buffers each
    for n in (64, 80, 96, 112):
        _simulate(fenced_shift, "default", n)
    assert len(runner._memo) == 2  # the two latest; the last entry always stays
    _simulate(fenced_shift, "default", 112)
    assert len(runs) == 4


def test_one_group_and_many_groups_share_one_compiled_module():
    """clsim.run takes a one-group launch serially by default (another module); the verifier
    asks for parallel groups whenever it JITs, so the second launch compiles nothing."""
    runner._memo.clear()
    before = len(launch._COMPILED)
    for n in (64, 16):
        x = np.arange(n, dtype=np.float32)
        after = runner.simulate(fenced_shift, (n,), (16,), [x, np.zeros(n, np.float32)],
                                jit=True)
        assert after[1][0] == 1.0
    assert len(launch._COMPILED) == before + 1
