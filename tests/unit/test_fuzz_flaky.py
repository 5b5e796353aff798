"""A device that fails a case once and agrees when the same case runs again is reported as
flaky, with the failing run shown and the case saved; Hypothesis' own FlakyFailure
("Inconsistent results from replaying a test case!") never reaches the user. The device side
is replaced by a stand-in that differs on its first launch only (no OpenCL needed)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import strategies as st

from clsim.spec import EXACT
from kernels_py.vector_add import vector_add
import importlib
from verify.cli import format_found
from verify.pairs import Pair, make_case, make_pair
from verify.policy import compare_outputs
from verify.runner import LaunchComparison

fuzz_module = importlib.import_module("verify.fuzz")  # the module; verify.fuzz is the function
CL = "__kernel void vector_add(__global const float *a, __global const float *b, " \
     "__global float *c, int n) { size_t i = get_global_id(0); if (i < n) c[i] = a[i] + b[i]; }"


def test_flaky_device_is_reported_as_such(monkeypatch, tmp_path):
    pair = make_pair(vector_add, CL, outputs=["c"])
    n = 4
    case = make_case(pair, 4, 4, [np.ones(n, np.float32), np.ones(n, np.float32),
                                  np.zeros(n, np.float32), np.int32(n)])
    launches = []

    def device_once_wrong(pair, case, info, **options):
        launches.append(1)
        right = np.full(n, 2.0, np.float32)
        got = right.copy()
        if len(launches) == 1:
            got[3] = 0.0  # the first launch leaves one element unwritten
        outputs = compare_outputs({"c": right}, {"c": got}, {"c": EXACT}, case.args,
                                  sides=("simulator", "device fake"))
        return LaunchComparison("fake", outputs, {"c": right}, {"c": got})

    monkeypatch.setattr(fuzz_module, "run_pair", device_once_wrong)
    monkeypatch.setattr(fuzz_module, "build_isolated", lambda *a, **k: None)
    monkeypatch.setattr(fuzz_module, "diagnose", lambda *a, **k: "checks: (stand-in)")
    monkeypatch.setattr(fuzz_module, "get_device", lambda name: SimpleNamespace(
        short_name="fake", max_work_group_size=1024, correctly_rounded_divide_sqrt=False))
    monkeypatch.setattr(Pair, "skip_reason", lambda self, *a: None)

    report = fuzz_module.search(pair, st.just(case), "fake", examples=5, seed_value=1,
                                failures_dir=tmp_path)
    found = report.found
    assert found is not None and found.flaky and found.outcome == "flaky"
    text = format_found(found)
    assert "flaky: it failed once and agreed when run again" in text
    assert "device fake: 0.0" in text  # the failing run is shown, sides named
    assert "FlakyFailure" not in text and "Inconsistent results" not in text
    assert found.path is not None and (found.path / "meta.json").is_file()
    assert '"stage": "flaky"' in (found.path / "meta.json").read_text()
