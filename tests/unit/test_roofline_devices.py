"""The measured side of a roofline (verify/timing.py): a device's roofs (shipped profile of a
known GPU, else peaks measured once by probe kernels and cached by the device identity) and
a variant's .cl twin timed on a device."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from verify import timing
from verify.devices import DeviceInfo


def _info(full_name: str, device_type: str, short: str = "dev") -> DeviceInfo:
    return DeviceInfo(short, full_name, "Some Platform", "vendor", "3.0", 4, 1024, (), False,
                      False, True, 65536, frozenset(), device_type=device_type)


def test_a_known_gpu_gets_its_shipped_profile_without_measuring(monkeypatch):
    """An H200 is drawn against h200.toml; nothing runs on it."""
    monkeypatch.setattr(timing, "measure_peaks", lambda info: pytest.fail("measured"))
    assert timing.device_profile(_info("NVIDIA H200", "gpu")).name == "h200"


def test_cpu_peaks_are_measured_once_and_cached_by_identity(monkeypatch, tmp_path):
    """The first call measures, the second reads the cache file; another device identity
    (another OpenCL version) measures again. The profile carries the measured roofs and the
    device's compute units, the rest of the cpu template."""
    monkeypatch.setenv("CLSIM_PEAKS_CACHE", str(tmp_path / "peaks.json"))
    calls = []

    def fake(info):
        calls.append(info.opencl_version)
        return timing.Peaks(bandwidth_gbs=12.5, fp32_gflops=300.0)

    monkeypatch.setattr(timing, "measure_peaks", fake)
    cpu = _info("Intel(R) Xeon(R)", "cpu", "intel-cpu")
    assert not timing.is_cached(cpu)
    first = timing.device_profile(cpu)
    assert timing.is_cached(cpu)
    second = timing.device_profile(cpu)
    assert calls == ["3.0"] and first == second
    assert (first.dram_bandwidth_gbs, first.fp32_gflops) == (12.5, 300.0)
    assert first.compute_units == 4 and first.name == "intel-cpu (measured)"
    assert first.sector_bytes == 64  # the cpu template's
    assert "probe kernels on intel-cpu" in first.sources["fp32_gflops"]
    timing.device_profile(replace(cpu, opencl_version="3.1"))
    assert calls == ["3.0", "3.1"]
    assert len(json.loads((tmp_path / "peaks.json").read_text())) == 2


def _first_usable():
    try:
        from verify.devices import list_devices
        from verify.probe import health

        usable = [d for d in list_devices() if d.short_name != "oclgrind" and health(d).usable]
    except Exception as err:  # no pyopencl, no ICD: nothing to time
        pytest.skip(f"no OpenCL device: {err}")
    if not usable:
        pytest.skip("no usable OpenCL device (clsim devices) besides the oclgrind interpreter")
    return usable[0]


def test_the_probe_kernels_measure_a_device(monkeypatch, tmp_path):
    """On a real device (small probe sizes): both rates come out positive and finite, the
    streaming one from 12 bytes per element, and are cached."""
    info = _first_usable()
    monkeypatch.setenv("CLSIM_PEAKS_CACHE", str(tmp_path / "peaks.json"))
    monkeypatch.setattr(timing, "STREAM_N", 1 << 18)
    peaks = timing.measured_peaks(info)
    assert 0 < peaks.bandwidth_gbs < 1e5 and 0 < peaks.fp32_gflops < 1e6
    assert timing.is_cached(info)


def test_a_variant_twin_is_timed_on_a_device():
    """vector_add's .cl twin on the first usable device: a positive kernel time, well under a
    second for 64k elements."""
    import kernels_py  # noqa: F401  (registers the library's specs)
    from clsim.spec import get_spec

    info = _first_usable()
    seconds = timing.variant_time_s(get_spec("vector_add"), {"n": 1 << 16}, 0, (64,), info)
    assert seconds is not None and 0 < seconds < 1.0
    assert np.isfinite(seconds)
