"""verify.pytest_plugin reports a test as skipped, with the reason, when every FuzzReport it
made was skipped (the device lacks a feature); a test with one report that ran, a test with
no report and a failing test keep their outcome. Run as a separate pytest process over a
user's test file, as a user's suite would load the plugin."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verify import probe
from verify.devices import list_devices

REPO = Path(__file__).resolve().parents[2]

USER_TESTS = '''
from verify.fuzz import FuzzReport


def test_all_skipped():
    report = FuzzReport("half_add", "pocl", 1, skipped="pocl lacks cl_khr_fp16")
    assert report.equal


def test_one_report_ran():
    FuzzReport("half_add", "pocl", 1, skipped="pocl lacks cl_khr_fp16")
    assert FuzzReport("half_add", "intel-cpu", 1, examples=3).equal


def test_no_report():
    assert True


def test_failure_stays_failed():
    FuzzReport("half_add", "pocl", 1, skipped="pocl lacks cl_khr_fp16")
    assert False


import pytest


@pytest.mark.fuzz_skip_expected
def test_skip_expected():
    report = FuzzReport("vector_add", "pocl", 1, skipped="pocl is unusable")
    assert report.skipped == "pocl is unusable"
'''

FP16_ON_POCL = '''
import numpy as np
from hypothesis import strategies as st

import verify
from clsim import get_global_id, kernel
from clsim.spec import Launch

CL = """#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void half_add(__global const half *a, __global half *b) {
    size_t i = get_global_id(0);
    b[i] = a[i] + a[i];
}
"""


@kernel
def half_add(a, b):
    i = get_global_id(0)
    b[i] = a[i] + a[i]


def test_half_kernel_on_pocl():
    launches = st.just(Launch((8,), None, (np.ones(8, np.float16), np.zeros(8, np.float16))))
    report = verify.fuzz(half_add, CL, launches=launches, device="pocl", outputs=["b"],
                         examples=2, seed=1)
    assert report.equal
'''


def _run(tmp_path: Path, source: str) -> str:
    (tmp_path / "test_user.py").write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "verify.pytest_plugin", "-p",
         "no:cacheprovider", "-rs", "-q", "test_user.py"], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=300, check=False)
    return done.stdout + done.stderr


def test_all_skipped_reports_make_a_skipped_test(tmp_path):
    """Five user tests: all reports skipped -> skipped with each reason; one report ran ->
    passed; no report -> passed; an assertion failure -> failed; all reports skipped in a
    test marked ``fuzz_skip_expected`` (it asserts the skip) -> passed."""
    out = _run(tmp_path, USER_TESTS)
    assert re.search(r"1 failed, 3 passed, 1 skipped", out), out
    assert re.search(r"SKIPPED \[1\] .*nothing was compared: half_add on pocl: pocl lacks "
                     r"cl_khr_fp16", out), out


def _pocl_without_fp16() -> str | None:
    pocl = [d for d in list_devices() if d.short_name == "pocl"]
    if not pocl:
        return "no pocl device here (the plugin part is covered without devices above)"
    if pocl[0].fp16:
        return "this pocl has cl_khr_fp16: its fuzz report is not skipped"
    return None


@pytest.mark.skipif(_pocl_without_fp16() is not None, reason=str(_pocl_without_fp16()))
def test_fp16_kernel_fuzzed_on_pocl_is_skipped(tmp_path):
    """The reported case: a user test asserting only ``report.equal`` for an fp16 kernel on
    pocl (no cl_khr_fp16) shows as skipped with the reason, not as passed."""
    out = _run(tmp_path, FP16_ON_POCL)
    assert re.search(r"\b1 skipped\b", out) and "passed" not in out, out
    health = probe.health(next(d for d in list_devices() if d.short_name == "pocl"))
    # the wheel's PoCL cannot build anything on some CPUs: then that is the reason given
    reason = "pocl lacks cl_khr_fp16" if health.usable else "pocl is unusable"
    assert reason in out, out


RACE_TESTS = '''
import numpy as np
import pytest

import verify
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel

CL = """__kernel void swap(__global const float *x, __global float *s, __global float *y) {
    size_t i = get_global_id(0);
    s[i] = x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    y[i] = s[i ^ 1];
}
"""


@kernel
def swap(x, s, y):
    i = get_global_id(0)
    s[i] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)  # s is global: CLK_GLOBAL_MEM_FENCE was needed
    y[i] = s[i ^ 1]


def _compare():
    x = np.arange(8, dtype=np.float32)
    return verify.compare(swap, CL, global_size=8, local_size=8,
                          args=[x, np.zeros(8, np.float32), np.zeros(8, np.float32)],
                          outputs=["y"])


def test_default_finds_the_race():
    result = _compare()
    assert not result.equal and result.findings[0].category == "race"


@pytest.mark.verify_checks("default")
def test_marker_turns_checks_off():
    assert _compare().findings == ()
'''


def test_checks_by_default_marker_and_option(tmp_path):
    """Tests get checks="all" in verify calls by default; the verify_checks marker turns them
    off for one test, --clsim-checks for the run (the first test then fails)."""
    if not [d for d in list_devices() if probe.health(d).usable]:
        pytest.skip("no usable OpenCL device here: verify.compare needs one")
    assert re.search(r"\b2 passed\b", _run(tmp_path, RACE_TESTS))
    (tmp_path / "test_user.py").write_text(textwrap.dedent(RACE_TESTS))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "verify.pytest_plugin", "-p", "no:cacheprovider",
         "-q", "--clsim-checks", "default", "test_user.py"], cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=300, check=False)
    assert re.search(r"1 failed, 1 passed", done.stdout), done.stdout + done.stderr
