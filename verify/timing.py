"""Measured kernel times and measured device peaks: the real side of a roofline.

``variant_time_s`` times a KernelSpec's ``.cl`` twin on a device (profiling events, the fastest
of a few launches after a warm-up, in the device's worker process: ``verify.runner``). A
roofline needs the device's roofs too: ``device_profile`` gives the shipped profile of a known
GPU (matched by name: H200, A100, Arc, Adreno) and, for any other device (CPUs above all), a
profile whose peak bandwidth and FP32 rate are measured on that OpenCL device by two probe
kernels, a streaming triad (``c = a + s*b``, 12 bytes per element) and an FMA-heavy kernel
(independent float8 multiply-add chains, 16 flops each; the default FP_CONTRACT lets the
runtime fuse them), once per device: the figures are cached (JSON,
keyed by the device's platform, name and OpenCL version) in clsim's cache folder, like the
reduction orders of ``verify.orders``. The rest of the profile (sectors, caches) is the
shipped template's (``cpu`` for CPUs, ``h200`` otherwise).

Measured peaks are what these kernels reach on this runtime, on a machine that may be busy:
a lower bound of the hardware's, and the honest roof for that runtime's kernels. This module
counts no traffic (``clsim.traffic``) and prints nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from clsim.profiles import DeviceProfile, load_profile
from clsim.runtime.cache import cache_dir
from verify.devices import DeviceInfo
from verify.pairs import spec_case, spec_pair
from verify.runner import time_on_device, usable_device
from verify.worker import run_isolated

STREAM_N = 1 << 24  # 3 x 64 MiB: far past any CPU's last-level cache
FMA_ITEMS = 1 << 14
FMA_ITERATIONS = 1024
FMA_CHAINS = 4  # independent float8 chains: explicit vectors, which every CPU runtime keeps
_REPEATS = 2
PEAKS_CL = f"""
__kernel void peak_stream(__global const float *a, __global const float *b,
                          __global float *c, float s) {{
    size_t i = get_global_id(0);
    c[i] = a[i] + s * b[i];
}}

__kernel void peak_fma(__global float *out, float a, float b) {{
    size_t i = get_global_id(0);
    float8 x0 = (float8)((float)i * 1e-7f);
    {"".join(f"float8 x{k + 1} = x{k} + 1.0f; " for k in range(FMA_CHAINS - 1))}
    for (int k = 0; k < {FMA_ITERATIONS}; k++) {{
        {"".join(f"x{k} = x{k} * a + b; " for k in range(FMA_CHAINS))}
    }}
    float8 s = {" + ".join(f"x{k}" for k in range(FMA_CHAINS))};
    out[i] = s.s0 + s.s1 + s.s2 + s.s3 + s.s4 + s.s5 + s.s6 + s.s7;
}}
"""
FMA_FLOPS = FMA_ITEMS * FMA_ITERATIONS * FMA_CHAINS * 8 * 2  # 8 lanes, multiply + add
# Shipped profiles of devices an OpenCL name identifies: (needle in the name, profile).
KNOWN_DEVICES = (("h200", "h200"), ("a100", "a100"), ("arc", "arc"), ("adreno", "adreno750"))
_PEAKS_VERSION = 1  # bump when the probe kernels change: old figures are re-measured


@dataclass(frozen=True)
class Peaks:
    """What the probe kernels reached on one device."""

    bandwidth_gbs: float
    fp32_gflops: float


def _best_ns(info: DeviceInfo, kernel: str, global_size: int, args: list) -> int:
    times = []
    for _ in range(_REPEATS + 1):  # the first launch builds and warms: not counted
        run = run_isolated(info, PEAKS_CL, kernel, (global_size,), None, args)
        times.append(run.time_ns)
    measured = [t for t in times[1:] if t]
    if not measured:
        raise ValueError(f"{info.short_name} gave no profiling times for {kernel}")
    return min(measured)


def measure_peaks(info: DeviceInfo) -> Peaks:
    """Run both probe kernels on ``info`` (no cache)."""
    a = np.ones(STREAM_N, np.float32)
    stream_ns = _best_ns(info, "peak_stream", STREAM_N,
                         [a, a.copy(), np.zeros_like(a), np.float32(0.5)])
    fma_ns = _best_ns(info, "peak_fma", FMA_ITEMS,
                      [np.zeros(FMA_ITEMS, np.float32), np.float32(0.999), np.float32(1e-3)])
    return Peaks(bandwidth_gbs=12 * STREAM_N / stream_ns, fp32_gflops=FMA_FLOPS / fma_ns)


def _cache_file() -> Path:
    return Path(os.environ.get("CLSIM_PEAKS_CACHE", cache_dir().parent / "peaks.json"))


def _identity(info: DeviceInfo) -> str:
    return f"{info.platform} | {info.full_name} | {info.opencl_version} | peaks {_PEAKS_VERSION}"


def measured_peaks(info: DeviceInfo, refresh: bool = False) -> Peaks:
    """``measure_peaks(info)``, cached by the device's identity."""
    path = _cache_file()
    try:
        cache = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        cache = {}
    key = _identity(info)
    if refresh or key not in cache:
        peaks = measure_peaks(info)
        cache[key] = {"bandwidth_gbs": peaks.bandwidth_gbs, "fp32_gflops": peaks.fp32_gflops}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cache, indent=1, sort_keys=True))
        except OSError:
            pass  # an unwritable cache only costs a re-measurement
    return Peaks(float(cache[key]["bandwidth_gbs"]), float(cache[key]["fp32_gflops"]))


def is_cached(info: DeviceInfo) -> bool:
    """Whether ``measured_peaks`` will answer without running the probe kernels."""
    try:
        return _identity(info) in json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return False


def device_profile(info: DeviceInfo, refresh: bool = False) -> DeviceProfile:
    """The profile to draw ``info``'s measured points against (see the module docstring)."""
    name = info.full_name.lower()
    for needle, profile in KNOWN_DEVICES:
        if needle in name and info.device_type != "cpu":
            return load_profile(profile)
    peaks = measured_peaks(info, refresh)
    template = load_profile("cpu" if info.device_type == "cpu" else "h200")
    how = f"measured by verify.timing's probe kernels on {info.short_name}"
    return replace(
        template, name=f"{info.short_name} (measured)",
        description=f"{info.full_name}: {peaks.bandwidth_gbs:.3g} GB/s, "
                    f"{peaks.fp32_gflops:.3g} GFLOP/s measured",
        dram_bandwidth_gbs=peaks.bandwidth_gbs, fp32_gflops=peaks.fp32_gflops,
        fp16_gflops=peaks.fp32_gflops, compute_units=info.compute_units, aliases=(),
        sources={**template.sources, "dram_bandwidth_gbs": how, "fp32_gflops": how,
                 "fp16_gflops": "the measured fp32 rate (no fp16 probe)"})


def variant_time_s(spec, shape: dict, seed: int, local_size: tuple[int, ...] | None,
                   device: str | DeviceInfo, folder: Path | None = None) -> float | None:
    """The ``.cl`` twin's kernel time (seconds) for the spec's launch on these inputs (its
    generator, seeded), fastest of a few after a warm-up; None without profiling times.
    ``folder``: where a user spec's ``.cl`` file is (a library spec's is in kernels_cl/).
    Raises the verifier's errors (DeviceLacksFeature, DeviceError...) when it cannot run."""
    info = usable_device(device)
    inputs = spec.make_inputs(np.random.default_rng(seed), shape)
    pair = spec_pair(spec, base_dir=folder)
    ns = time_on_device(pair, spec_case(spec, inputs, shape, local_size, seed), info)
    return None if ns is None else ns / 1e9
