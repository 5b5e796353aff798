"""Traffic-counting benchmark: what ``run(..., traffic=True)`` costs over the same run without.

softmax 1024x1024 float32 (256 work-items per row, as in bench_engine.py) and vector_add over
2^22 floats, warm, default checks, groups in parallel as run() chooses by default; traffic off
and on are timed round-robin (best of 15 each), so background load hits both alike. Also: the
outputs are bit-identical with counting on and off, and the first run of an instrumented kernel
in a fresh kernel cache (compile time).

Target: softmax with traffic at most 4x softmax without (default run of each).

Run: python tests/bench/bench_traffic.py   (appends a section to docs/performance.md)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import append_section, best_interleaved  # noqa: E402

TARGET = 4.0


def _case(name: str, shape: dict, local):
    """Run callables (traffic off / on, default and serial) of one library kernel, warmed."""
    import clsim
    from clsim.spec import get_spec

    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, local)

    def run(**extra):
        return clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                         **extra)

    outputs = {}
    for traffic in (False, True):
        first = run(traffic=traffic)
        run(traffic=traffic, parallel=False)
        outputs[traffic] = {k: v.copy() for k, v in inputs.items() if isinstance(v, np.ndarray)}
    same = all(np.array_equal(outputs[False][k], outputs[True][k]) for k in outputs[False])
    fns = {
        "off": lambda: run(),
        "on": lambda: run(traffic=True),
        "off_serial": lambda: run(parallel=False),
        "on_serial": lambda: run(traffic=True, parallel=False),
    }
    return fns, same, first



_COMPILE_CHILD = """
import numpy as np, clsim
from kernels_py.softmax import SPEC as spec
shape = {"rows": 64, "cols": 1024}
inputs = spec.make_inputs(np.random.default_rng(0), shape)
launch = spec.launch(inputs, shape, (128,))
r = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, traffic=True)
print(r.compile_s)
"""


def _compile_s() -> float:
    """First instrumented run of softmax with an empty kernel cache (the shared step counters
    stay in Numba's cache of clsim/traffic/steps.py)."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CLSIM_CACHE_DIR": cache}
        out = subprocess.run([sys.executable, "-c", _COMPILE_CHILD], env=env, check=True,
                             capture_output=True, text=True, cwd=ROOT).stdout.split()
    return float(out[-1])


def main() -> int:
    soft_fns, soft_same, first = _case("softmax", {"rows": 1024, "cols": 1024}, (256,))
    soft = best_interleaved(soft_fns)
    vadd_fns, vadd_same, _ = _case("vector_add", {"n": 1 << 22}, (256,))
    vadd = best_interleaved(vadd_fns)
    compile_s = _compile_s()
    ratio = soft["on"] / soft["off"]
    t = first.traffic.totals
    rows = [
        ("softmax 1024x1024", soft, soft_same),
        ("vector_add 2^22", vadd, vadd_same),
    ]
    lines = [
        "Warm, default checks; traffic off/on timed round-robin, best of 15 each. "
        "`run()` runs groups in parallel by default, with traffic on as well (each Numba "
        "thread counts in its own arena).",
        "",
        "| kernel | off (default) | traffic (default) | ratio | off (serial) | traffic (serial) "
        "| ratio | outputs identical |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, best, same in rows:
        lines.append(
            f"| {name} | {best['off'] * 1e3:.2f} ms | {best['on'] * 1e3:.2f} ms | "
            f"{best['on'] / best['off']:.2f}x | {best['off_serial'] * 1e3:.2f} ms | "
            f"{best['on_serial'] * 1e3:.2f} ms | {best['on_serial'] / best['off_serial']:.2f}x "
            f"| {'yes' if same else 'NO'} |")
    lines += [
        "",
        f"Target (softmax with traffic at most {TARGET:g}x without): "
        f"{'met' if ratio <= TARGET else 'MISSED'} ({ratio:.2f}x).",
        f"softmax counted {t['global_load_sectors'] + t['global_store_sectors']:,} sectors, "
        f"{t['local_bank_conflicts']:,} bank replays, {t['flops']:,} flops.",
        f"First instrumented run of softmax with an empty kernel cache: {compile_s:.2f} s.",
        f"Load average at the end of the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
        "cores.",
    ]
    append_section("Traffic counting (tests/bench/bench_traffic.py)", lines)
    print("\n".join(lines))
    return 0 if ratio <= TARGET and soft_same and vadd_same else 1


if __name__ == "__main__":
    sys.exit(main())
