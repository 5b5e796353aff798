"""clsim against the Intel CPU OpenCL runtime on the same kernels, side by side in one run.

Three cases (issue 25's targets): softmax 1024x1024 (work-group 256 per row), tiled matmul
512^3 (16x16 tiles in local memory) and Q4_0 GEMV 4096x4096. Each runs on the Intel CPU runtime
with the library's ``.cl`` twin (kernels_cl/, through pyopencl; the kernel's profiling-event
time, best of N), then in clsim with default checks, with checks="all" and with traffic
counting; softmax also as numpy and as a plain hand-written ``@njit`` loop. The Intel time is
kernel time only (no buffer copies), clsim's is the wall time of ``clsim.run``, launch overhead
included. Every system is timed round-robin in the same run, so background load hits all
alike; the ratios to the Intel runtime are what to read.

Run: python tests/bench/bench_vs_native.py [--rounds N] [--no-record] [--case NAME]
(appends a section to docs/performance.md unless --no-record).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import append_section, best_interleaved, best_of  # noqa: E402

# (spec name, shape, local size or None for the spec's own, label)
CASES = {
    "softmax": ("softmax", {"rows": 1024, "cols": 1024}, (256,), "softmax 1024x1024, wg 256"),
    "matmul": ("matmul_tiled", {"M": 512, "N": 512, "K": 512}, None,
               "tiled matmul 512^3, 16x16 tiles"),
    "gemv": ("gemv_q4_0", {"rows": 4096, "blocks": 128}, None, "Q4_0 GEMV 4096x4096"),
}
TRAFFIC_REPEATS = 2  # traffic runs are the slowest; two runs, after the round-robin


def _intel_or_reason():
    """None when the Intel CPU runtime is usable, else why not (the benchmark then says so)."""
    from clsim.errors import SimulationError
    from verify.devices import get_device, import_pyopencl

    try:
        import_pyopencl()
        get_device("intel-cpu")
    except (SimulationError, ImportError) as exc:
        return f"Intel CPU runtime absent ({exc})"
    return None


def _systems(case: str) -> tuple[dict, dict, str]:
    """(callables timed round-robin, callables timed after, label) for one case."""
    import clsim
    from clsim.spec import get_spec
    from verify.clrun import run_cl

    name, shape, local, label = CASES[case]
    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, local)

    def sim(**extra):
        return clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                         subgroup_size=spec.subgroup_size, **extra)

    source = spec.cl_path.read_text()
    args = list(launch.args)
    kernel_ns: list[int] = []

    def intel():
        ran = run_cl("intel-cpu", source, spec.cl_kernel_name, launch.global_size,
                     launch.local_size, args)
        kernel_ns.append(ran.time_ns)

    intel.kernel_ns = kernel_ns
    timed = {"Intel CPU runtime (kernel events)": intel,
             "clsim default": sim,
             'clsim checks="all"': lambda: sim(checks="all")}
    if case == "softmax":
        from bench_engine import njit_softmax

        x, y = inputs["x"], np.zeros_like(inputs["x"])
        timed["numpy (float64)"] = lambda: spec.reference(inputs)
        timed["plain @njit loop"] = lambda: njit_softmax(x, y)
    after = {"clsim traffic": lambda: sim(traffic=True)}
    return timed, after, label


def measure(case: str, rounds: int) -> tuple[str, dict]:
    timed, after, label = _systems(case)
    for fn in (*timed.values(), *after.values()):
        fn()  # compile and warm every system first
    intel = timed["Intel CPU runtime (kernel events)"]
    intel.kernel_ns.clear()
    best = best_interleaved(timed, rounds=rounds)
    best["Intel CPU runtime (kernel events)"] = min(intel.kernel_ns) * 1e-9
    for name, fn in after.items():
        best[name] = best_of(fn, repeats=TRAFFIC_REPEATS)
    return label, best


def table(results: list[tuple[str, dict]]) -> list[str]:
    lines = ["| case | system | best time | vs Intel CPU runtime |", "| --- | --- | --- | --- |"]
    for label, best in results:
        base = best["Intel CPU runtime (kernel events)"]
        for system, seconds in best.items():
            lines.append(f"| {label} | {system} | {seconds * 1e3:.2f} ms | "
                         f"{seconds / base:.1f}x |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="round-robin rounds (best of)")
    parser.add_argument("--case", choices=tuple(CASES), action="append",
                        help="run only this case (repeatable; default all)")
    parser.add_argument("--no-record", action="store_true",
                        help="print only, do not append to docs/performance.md")
    opts = parser.parse_args(argv)
    reason = _intel_or_reason()
    if reason is not None:
        print(f"bench_vs_native: skipped: {reason}")
        return 0
    load_before = os.getloadavg()[0]
    results = [measure(case, opts.rounds) for case in (opts.case or CASES)]
    # The load is measured, not assumed: the Intel runtime's threads suffer from it far more
    # than clsim does, so a loaded run understates the gap (docs/performance.md).
    lines = ["Warm runs, best of round-robin repeats within one run (traffic: best of "
             f"{TRAFFIC_REPEATS} after the round-robin). The Intel figure is its kernel's "
             "profiling-event time; clsim's is the wall time of clsim.run. Load average "
             f"{load_before:.1f} before the run and {os.getloadavg()[0]:.1f} at its end on "
             f"{os.cpu_count()} CPUs: under load, read only the ratios.", "",
             *table(results)]
    print("\n".join(lines))
    if not opts.no_record:
        append_section("clsim vs the Intel CPU runtime (tests/bench/bench_vs_native.py)", lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
