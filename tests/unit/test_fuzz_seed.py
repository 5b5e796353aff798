"""One seed draws one sequence of cases: ``clsim verify --seed S`` replays in any process and
mode. Hypothesis also draws literals from the source of whatever local modules are loaded
(verify.seeding), and a verify with checks loads other modules than one without; here a module
full of such literals is imported between two searches, which changed the draws before
``verify.seeding.fixed_constants``. The device side is a stand-in that records each case (no
OpenCL needed); tests/device/test_verifier.py runs the same check on a real device."""

from __future__ import annotations

import hashlib
import importlib
import sys
from types import SimpleNamespace

import numpy as np

from clsim.spec import get_spec
from verify.pairs import Pair
from verify.runner import LaunchComparison
from verify.policy import compare_outputs

fuzz_module = importlib.import_module("verify.fuzz")  # the module; verify.fuzz is the function


def _drawn(case) -> tuple:
    data = b"".join(np.ascontiguousarray(case.args[name]).tobytes() for name in sorted(case.args))
    return case.global_size, case.local_size, hashlib.sha1(data).hexdigest()


def _search(monkeypatch, tmp_path, seed: int) -> list[tuple]:
    drawn: list[tuple] = []

    def device_agrees(pair, case, info, **options):
        drawn.append(_drawn(case))
        return LaunchComparison("fake", compare_outputs({}, {}, {}, case.args), {}, {})

    monkeypatch.setattr(fuzz_module, "run_pair", device_agrees)
    monkeypatch.setattr(fuzz_module, "build_isolated", lambda *a, **k: None)
    monkeypatch.setattr(fuzz_module, "get_device", lambda name: SimpleNamespace(
        short_name="fake", max_work_group_size=1024, correctly_rounded_divide_sqrt=False))
    monkeypatch.setattr(Pair, "skip_reason", lambda self, *a: None)
    report = fuzz_module.fuzz_spec(get_spec("softmax"), "fake", examples=40, seed=seed,
                                   failures_dir=tmp_path / "failures")
    assert report.equal and report.examples == len(drawn) == 40
    return drawn


def test_one_seed_draws_the_same_cases_whatever_modules_are_loaded(monkeypatch, tmp_path):
    first = _search(monkeypatch, tmp_path, 23)
    # a local module with literals that fit the draws (sizes, seeds, floats), as a generated
    # kernel module or clsim's checks would add them
    literals = [str(v) for v in range(100, 4100, 8)] + ["0.125", "-3.75", "1e-3", "65504.0"]
    (tmp_path / "many_literals.py").write_text(f"VALUES = ({', '.join(literals)},)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "many_literals", raising=False)
    importlib.import_module("many_literals")
    second = _search(monkeypatch, tmp_path, 23)
    assert second == first
    # and the seed matters: another one draws other cases
    assert _search(monkeypatch, tmp_path, 24) != first
