"""Quantized GEMV benchmark: each variant at its default shape (4096 x 4096), default checks,
the simulator's warm wall time against the Intel CPU runtime's kernel time (profiling events)
for its ``.cl`` twin, round-robin in one run (best of 7), outputs compared bit for bit. The
issue's target is ``gemv_q4_0``: at most 10x. Sub-group variants run at their spec's
sub-group size (16). Skipped with the reason when the Intel CPU runtime is absent. Records
the load average.

Run: python tests/bench/bench_gemv_quant.py [VARIANT ...]   (appends to docs/performance.md)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import append_section, best_interleaved  # noqa: E402

TARGET = {"gemv_q4_0": 10.0}
DEFAULT_VARIANTS = ("gemv_q4_0", "gemv_q4_0_nrows", "gemv_q8_0_nrows", "gemv_q4_k",
                    "gemv_q4_k_split", "gemv_q4_k_split_lanes", "gemv_q4_k_split_subgroup")


def measure(name: str):
    """(simulator best s, device best s, bit-identical?) of one variant at 4096 x 4096."""
    import clsim
    from clsim.spec import get_spec
    from verify.clrun import run_cl
    from verify.pairs import kernel_params

    spec = get_spec(name)
    shape = dict(spec.default_shape)  # 4096 x 4096 for every gemv_quant variant
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, None)
    out = kernel_params(spec.kernel).index("y")

    def simulate():
        clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                  subgroup_size=spec.subgroup_size)
    simulate()
    source = spec.cl_path.read_text()
    args = list(launch.args)
    device_ns = []

    def on_device():
        ran = run_cl("intel-cpu", source, spec.cl_kernel_name, launch.global_size,
                     launch.local_size, args, subgroup_size=spec.subgroup_size)
        device_ns.append(ran.time_ns)
        on_device.y = ran.buffers[out]
    best = best_interleaved({"sim": simulate, "device": on_device}, rounds=7)
    return best["sim"], min(device_ns) * 1e-9, inputs["y"].tobytes() == on_device.y.tobytes()


def main(argv: list[str]) -> int:
    from clsim.errors import SimulationError
    from verify.devices import get_device, import_pyopencl

    import_pyopencl()
    import kernels_py  # noqa: F401  (registers the specs)
    try:
        get_device("intel-cpu")
    except SimulationError as exc:
        print(f"skipped: Intel CPU runtime absent ({exc})")
        return 0
    load_before = os.getloadavg()[0]
    lines = ["| variant | simulator | Intel CPU runtime | ratio | target | outputs |",
             "| --- | --- | --- | --- | --- | --- |"]
    ok = True
    for name in argv or DEFAULT_VARIANTS:
        sim_s, dev_s, same = measure(name)
        ratio = sim_s / dev_s
        target = TARGET.get(name)
        met = target is None or ratio <= target
        ok &= met and same
        verdict = f"<= {target:.0f}x: {'met' if met else 'MISSED'}" if target else "(none)"
        lines.append(f"| {name} 4096x4096 | {sim_s * 1e3:.1f} ms | {dev_s * 1e3:.2f} ms | "
                     f"{ratio:.1f}x | {verdict} | {'bit-identical' if same else 'DIFFER'} |")
        print(lines[-1], flush=True)
    load_after = os.getloadavg()[0]
    lines = [f"Warm runs, default checks, best of 7 round-robin rounds; load average "
             f"{load_before:.1f} at the start, {load_after:.1f} at the end (2 cores shared with "
             "other sessions: absolute times are pessimistic, the ratios are within one run).",
             "", *lines]
    append_section("Quantized GEMV variants (tests/bench/bench_gemv_quant.py)", lines)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
