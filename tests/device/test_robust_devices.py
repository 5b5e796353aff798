"""Robust devices: the health probe (an unusable device is reported and skipped with its reason),
isolated launches (a crashing or hanging .cl kernel is a finding with its case saved, and the
worker process is reused across launches).

Faults are injected: ``CLSIM_PROBE_FAULT`` makes a device's probe build a broken source (as the
wheel's PoCL fails on AMD family 26), ``CLSIM_TEST_DEVICE_CRASH`` makes the worker SIGSEGV, and
a ``.cl`` kernel spins on a volatile flag for the time-out.
"""

from __future__ import annotations

import dataclasses
import importlib
import json

import numpy as np
import pytest
from hypothesis import strategies as st

import clsim
import verify
from clsim import get_global_id
from clsim.errors import DeviceError
from clsim.spec import Launch, get_spec
from verify import probe, worker
from verify.clrun import run_cl
from verify.devices import format_devices, get_device, list_devices
from verify.errors import DeviceTimedOut
from verify.fuzz import fuzz_spec
from verify.testing import device_params

FILL_CL = """
__kernel void fill(__global float* x, __global volatile int* flag)
{
    x[get_global_id(0)] = 1.0f;
}
"""
SPIN_CL = """
__kernel void fill(__global float* x, __global volatile int* flag)
{
    while (flag[0] == 0) { }
    x[get_global_id(0)] = 1.0f;
}
"""


@clsim.kernel
def fill(x, flag):
    x[get_global_id(0)] = np.float32(1.0)


def _fill_launches():
    return st.just(Launch((8,), (8,), (np.zeros(8, np.float32), np.zeros(1, np.int32))))


@pytest.fixture
def fresh_probe(tmp_path, monkeypatch):
    """A private probe cache, and no verdicts in memory before or after the test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    probe.reset()
    yield tmp_path
    probe.reset()


def _first_usable() -> str:
    return next(d.short_name for d in list_devices() if probe.health(d).usable)


# --- health probe -------------------------------------------------------------------------------


def test_probe_verdict_cached_on_disk_by_identity(fresh_probe, monkeypatch):
    """A probe's verdict is written to the cache and read back without a new probe; a device
    whose driver version differs does not reuse it."""
    info = get_device(_first_usable())
    verdict = probe.health(info)
    assert verdict.usable and verdict.reason == ""
    probe.reset()

    def no_probe(_info):
        raise AssertionError("probed again despite the cache")

    monkeypatch.setattr(probe, "_start", no_probe)
    assert probe.health(info) == verdict
    other = dataclasses.replace(info, driver_version=info.driver_version + "-other")
    assert probe._read_cache(other) is None


@pytest.mark.fuzz_skip_expected
def test_unusable_device_reported_skipped_and_named(fresh_probe, monkeypatch):
    """A device that cannot build the probe is NO in 'clsim devices' with the build log's
    error as the reason, is skipped by the device parametrization and by fuzzing with that
    reason, is never the default device, and its build errors name the device as the cause."""
    pocl = get_device("pocl")
    real = probe.health(pocl)  # the wheel's PoCL is unusable on some CPUs by itself
    monkeypatch.setenv(probe.FAULT_ENV, "pocl")
    verdict = probe.health(pocl)
    # The fault is probed afresh. A PoCL that builds reports the broken source's error; one
    # that cannot build anything (the wheel's on some CPUs) may report its own error first.
    seen = ("not_declared",) if real.usable else ("not_declared", real.reason)
    assert not verdict.usable and any(error in verdict.reason for error in seen)

    table = format_devices(list_devices())
    row = next(line for line in table.splitlines() if line.startswith("pocl "))
    assert row.split()[1] == "NO"
    assert f"pocl: unusable: {verdict.reason}" in table and "pocl-opencl-icd" in table

    (param,) = device_params(only=("pocl",))
    assert param.marks[0].kwargs["reason"] == f"device pocl is unusable: {verdict.reason}"
    assert get_device(None).short_name != "pocl"
    report = fuzz_spec(get_spec("vector_add"), "pocl", examples=3, failures_dir=fresh_probe)
    assert report.skipped == f"pocl is unusable: {verdict.reason}" and report.examples == 0

    with pytest.raises(DeviceError) as info:
        run_cl(pocl, "__kernel void k(__global int* x) { x[0] = nope; }", "k", 1, 1,
               [np.zeros(1, np.int32)])
    message = str(info.value)
    assert "The device is the cause, not the source" in message
    assert "Fix the OpenCL C source" not in message and info.value.device_unusable


def test_usable_device_build_error_blames_the_source():
    """On a device that passes its probe, a build error still says to fix the source."""
    with pytest.raises(DeviceError, match="Fix the OpenCL C source"):
        run_cl(_first_usable(), "__kernel void k(__global int* x) { x[0] = nope; }", "k", 1,
               1, [np.zeros(1, np.int32)])


# --- isolation ----------------------------------------------------------------------------------


def test_worker_reused_across_launches():
    """Launches on one device reuse one worker process (start-up paid once)."""
    device = _first_usable()
    args = [np.zeros(8, np.float32), np.zeros(1, np.int32)]
    for _ in range(3):
        result = verify.compare(fill, FILL_CL, global_size=8, local_size=8, args=args,
                                device=device)
        assert result.equal
    item = worker.worker(device)
    pid, starts = item.proc.pid, item.starts
    verify.compare(fill, FILL_CL, global_size=8, local_size=8, args=args, device=device)
    assert item.proc.pid == pid and item.starts == starts


def test_hanging_kernel_times_out_and_is_saved(tmp_path):
    """A .cl kernel that never returns is killed after timeout_s: verify.compare raises
    DeviceTimedOut; verify.fuzz reports 'device timed out' with the case saved (stage
    'timeout'), after one launch (no shrinking); the next launch gets a fresh worker."""
    device = _first_usable()
    args = [np.zeros(8, np.float32), np.zeros(1, np.int32)]
    with pytest.raises(DeviceTimedOut, match="device timed out: no result after 2 s"):
        verify.compare(fill, SPIN_CL, global_size=8, local_size=8, args=args, device=device,
                       timeout_s=2)
    report = verify.fuzz(fill, SPIN_CL, launches=_fill_launches(), device=device,
                         examples=5, timeout_s=2, failures_dir=tmp_path, seed=1)
    found = report.found
    assert found is not None and "device timed out" in found.error and report.examples == 1
    assert found.outcome == "timed out"  # clsim verify prints TIMEOUT, not DIFFER
    meta = json.loads((found.path / "meta.json").read_text())
    assert meta["extra"]["stage"] == "timeout" and "device timed out" in meta["extra"]["error"]
    assert verify.compare(fill, FILL_CL, global_size=8, local_size=8, args=args,
                          device=device).equal


def test_crashing_worker_is_a_saved_finding(tmp_path, monkeypatch):
    """A worker that dies from SIGSEGV mid-launch is reported as 'device crashed' naming the
    signal, with the case saved and the simulator's checks="all" verdict in the meta; the
    verifier survives and the next launch runs in a new worker."""
    device = _first_usable()
    monkeypatch.setenv(worker.CRASH_ENV, "fill")
    report = verify.fuzz(fill, FILL_CL, launches=_fill_launches(), device=device,
                         examples=5, failures_dir=tmp_path, seed=1)
    found = report.found
    assert found is not None and report.examples == 1
    assert "device crashed" in found.error and "SIGSEGV" in found.error
    assert found.outcome == "crashed"  # clsim verify prints CRASHED, not DIFFER
    meta = json.loads((found.path / "meta.json").read_text())
    assert meta["extra"]["stage"] == "crash" and "SIGSEGV" in meta["extra"]["error"]
    assert "no data race or uninitialised read" in meta["extra"]["checks_all"]
    assert found.checks == meta["extra"]["checks_all"]
    monkeypatch.delenv(worker.CRASH_ENV)
    args = [np.zeros(8, np.float32), np.zeros(1, np.int32)]
    assert verify.compare(fill, FILL_CL, global_size=8, local_size=8, args=args,
                          device=device).equal


def test_ctrl_c_saves_the_case_in_flight(tmp_path, monkeypatch):
    """Ctrl-C during an example (e.g. at a launch that hangs) saves that case (stage
    'interrupted') and the KeyboardInterrupt that propagates names the folder."""
    fuzz_module = importlib.import_module("verify.fuzz")  # verify.fuzz is also the function

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(fuzz_module, "run_pair", interrupted)
    with pytest.raises(KeyboardInterrupt, match="the case in flight is saved: ") as info:
        verify.fuzz(fill, FILL_CL, launches=_fill_launches(), device=_first_usable(),
                    examples=5, failures_dir=tmp_path, seed=1)
    folder = str(info.value).split("saved: ")[1]
    meta = json.loads((tmp_path / folder.split("/")[-1] / "meta.json").read_text())
    assert meta["extra"]["stage"] == "interrupted" and meta["launch"]["global_size"] == [8]
