"""Traffic-counting benchmark: what ``run(..., traffic=True)`` costs over the same run without.

softmax 1024x1024 float32 (256 work-items per row, as in bench_engine.py), a tiled matmul 256^3
and a GEMV 4096x4096 (tests/bench/traffic_kernels.py) and vector_add over 2^22 floats, warm,
default checks, groups in parallel as run() chooses by default, traffic with the cache model
(h200); traffic off and on are timed round-robin (best of 15 each), so background load hits both
alike. Also: the outputs are bit-identical with counting on and off, and the first run of an
instrumented kernel in a fresh kernel cache (compile time).

Targets (issue 13): traffic at most 3x the default run on softmax, at most 5x on the matmul and
the GEMV.

Run: python tests/bench/bench_traffic.py   (appends a section to docs/performance.md;
``BENCH_NO_APPEND=1`` only prints it)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import append_section  # noqa: E402

TARGETS = {"softmax 1024x1024": 3.0, "matmul 256^3 (16x16 tiles)": 5.0,
           "gemv 4096x4096": 5.0}


def _library(name: str, shape: dict, local):
    """(kernel, global size, local size, args) of one library kernel."""
    from clsim.spec import get_spec

    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, local)
    return spec.kernel, launch.global_size, launch.local_size, launch.args


def _case(kernel, global_size, local_size, args):
    """Run callables (traffic off / on, default and serial) of one launch, warmed."""
    import clsim

    def run(**extra):
        return clsim.run(kernel, global_size, local_size, args, **extra)

    arrays = [a for a in args if isinstance(a, np.ndarray)]
    outputs = {}
    for traffic in (False, True):
        first = run(traffic=traffic)
        run(traffic=traffic, parallel=False)
        outputs[traffic] = [a.copy() for a in arrays]
    same = all(np.array_equal(a, b) for a, b in zip(outputs[False], outputs[True], strict=True))
    fns = {
        "off": lambda: run(),
        "on": lambda: run(traffic=True),
        "off_serial": lambda: run(parallel=False),
        "on_serial": lambda: run(traffic=True, parallel=False),
    }
    return fns, same, first



def _timed(fns: dict, rounds: int = 15) -> tuple[dict, dict]:
    """Best wall time and best CPU time (all threads of this process) of each callable,
    round-robin so background load hits all alike. On a shared machine the CPU time is the
    steadier figure: a parallel run waits for cores other processes hold."""
    wall = dict.fromkeys(fns, float("inf"))
    cpu = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            wall[name] = min(wall[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    return wall, cpu


_COMPILE_CHILD = """
import time, numpy as np, clsim
from kernels_py.softmax import SPEC as spec
shape = {"rows": 64, "cols": 1024}
inputs = spec.make_inputs(np.random.default_rng(0), shape)
launch = spec.launch(inputs, shape, (128,))
for traffic in (False, True):
    c0 = time.process_time()
    r = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                  traffic=traffic)
    print(r.compile_s, time.process_time() - c0)
"""


def _compile_s() -> list[tuple[float, float]]:
    """First default run and first instrumented run of softmax in a fresh process with an
    empty kernel cache: (compile seconds, CPU seconds of the run) each. What every kernel
    shares (the step counter, the cache replay) stays in Numba's cache of clsim/traffic/."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CLSIM_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, "-c", _COMPILE_CHILD], env=env, check=True,
                             capture_output=True, text=True, cwd=ROOT).stdout.split()
    values = [float(v) for v in out[-4:]]
    return [(values[0], values[1]), (values[2], values[3])]


def main() -> int:
    import traffic_kernels as tk

    cases = {
        "softmax 1024x1024": _library("softmax", {"rows": 1024, "cols": 1024}, (256,)),
        "matmul 256^3 (16x16 tiles)": tk.matmul_case(256)[:4],
        "gemv 4096x4096": tk.gemv_case(4096, 4096)[:4],
        "vector_add 2^22": _library("vector_add", {"n": 1 << 22}, (256,)),
    }
    rows, firsts = [], {}
    for name, launch in cases.items():
        fns, same, firsts[name] = _case(*launch)
        rows.append((name, *_timed(fns), same))
    compile_s = _compile_s()
    lines = [
        "Warm, default checks, traffic with the cache model (h200); off/on timed round-robin, "
        "best of 15 each. `run()` runs groups in parallel by default, with traffic on as well "
        "(each thread counts in its own rows of the arena). CPU: the process's CPU time over all "
        "threads, the steadier figure on a shared machine.",
        "",
        "| kernel | off (default) | traffic (default) | ratio | CPU ratio | target "
        "| off (serial) | traffic (serial) | ratio | outputs identical |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    met = True
    for name, best, cpu, same in rows:
        ratio = best["on"] / best["off"]
        target = TARGETS.get(name)
        met &= same and (target is None or ratio <= target)
        verdict = "-" if target is None else f"{target:g}x {'met' if ratio <= target else 'MISSED'}"
        lines.append(
            f"| {name} | {best['off'] * 1e3:.2f} ms | {best['on'] * 1e3:.2f} ms | {ratio:.2f}x "
            f"| {cpu['on'] / cpu['off']:.2f}x | {verdict} | {best['off_serial'] * 1e3:.2f} ms "
            f"| {best['on_serial'] * 1e3:.2f} ms | {best['on_serial'] / best['off_serial']:.2f}x "
            f"| {'yes' if same else 'NO'} |")
    for name in ("gemv 4096x4096", "matmul 256^3 (16x16 tiles)"):
        t = firsts[name].traffic.totals
        lines.append("")
        lines.append(f"{name}: unique {t['unique_bytes']:,} B, DRAM (cache model) "
                     f"{t['dram_bytes']:,} B, uncached {t['global_sector_bytes']:,} B.")
    lines += [
        "",
        "First runs of softmax (64x1024) in a fresh process with an empty kernel cache: "
        f"default {compile_s[0][0]:.2f} s compile ({compile_s[0][1]:.2f} s CPU), then with "
        f"traffic {compile_s[1][0]:.2f} s compile ({compile_s[1][1]:.2f} s CPU).",
        f"Load average at the end of the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
        "cores (the machine is shared: ratios are what to read).",
    ]
    if os.environ.get("BENCH_NO_APPEND") != "1":
        append_section("Traffic counting with the cache model (tests/bench/bench_traffic.py)",
                       lines)
    print("\n".join(lines))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
