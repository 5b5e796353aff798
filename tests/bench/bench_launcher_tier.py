"""What a small JIT launch saves by running its launcher's loop as Python (launcher_tier).

For a few library kernels at a small shape (at most 256 work-groups, as tests and first runs
launch), each case in a fresh process with an empty kernel cache (clsim's shared helpers
already in Numba's cache, as on any machine after its first run): the CPU seconds of the first
``clsim.run`` (nearly all compiling) with the launcher's loop as Python (the default) and with
the launcher compiled (``PYTHON_LOOP_GROUPS = 0``), interleaved round by round so background
load hits both alike; then the best of 5 warm runs both ways (the Python loop costs a few
microseconds a group; LLVM may vectorise the group function differently alone, launcher_tier's
docstring).

Run: python tests/bench/bench_launcher_tier.py [--write] [--rounds N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import append_section

ROOT = Path(__file__).resolve().parents[2]
CASES = {  # kernel: shape with few work-groups
    "vector_add": {"n": 4096},
    "softmax": {"rows": 8, "cols": 1024},
    "matmul_tiled": {"M": 64, "N": 64, "K": 64},
    "gemv_q4_0": {"rows": 16, "blocks": 32},
    "matmul_regblock": {"M": 256, "N": 256, "K": 256},
}

CHILD = r"""
import json, resource, sys, time
import numpy as np
import clsim, kernels_py
from clsim.runtime import launcher_tier
from clsim.spec import get_spec

name, shape, compiled = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1"
if compiled:
    launcher_tier.PYTHON_LOOP_GROUPS = 0
else:  # the warm runs below stay Python loops, to price them
    launcher_tier.PYTHON_LOOP_SECONDS = float("inf")
spec = get_spec(name)
inputs = spec.make_inputs(np.random.default_rng(0), shape)
launch = spec.launch(inputs, shape)
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
before = cpu()
first = clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args, parallel=False)
first_cpu = cpu() - before
warm = min(clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                     parallel=False).elapsed_s for _ in range(5))
print(json.dumps({"cpu": first_cpu, "groups": first.work_groups, "run": warm}))
"""


def _case(name: str, shape: dict, compiled: bool) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CLSIM_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", CHILD, name, json.dumps(shape),
                              "1" if compiled else "0"], env=env, capture_output=True,
                             text=True, check=True, cwd=ROOT).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 2
    _case("vector_add", CASES["vector_add"], False)  # the shared helpers into Numba's cache
    best: dict = {}
    for _ in range(rounds):
        for name, shape in CASES.items():
            for compiled in (False, True):
                got = _case(name, shape, compiled)
                key = (name, compiled)
                if key not in best or got["cpu"] < best[key]["cpu"]:
                    best[key] = {**got, "run": min(got["run"], best.get(key, got)["run"])}
    lines = ["| kernel | groups | first run CPU, Python loop | launcher compiled | saved | "
             "warm run, Python loop | compiled |", "|---|---|---|---|---|---|---|"]
    for name in CASES:
        loop, full = best[(name, False)], best[(name, True)]
        lines.append(f"| {name} | {loop['groups']} | {loop['cpu']:.2f} s | {full['cpu']:.2f} s | "
                     f"{1 - loop['cpu'] / full['cpu']:.0%} | {loop['run'] * 1e3:.2f} ms | "
                     f"{full['run'] * 1e3:.2f} ms |")
    lines.append("")
    lines.append(f"Best of {rounds} rounds, each case a fresh process with an empty kernel cache; "
                 "one thread (`parallel=False`).")
    print("\n".join(lines))
    if "--write" in sys.argv:
        append_section("Small launches: the launcher's loop as Python (issue 21)", lines)


if __name__ == "__main__":
    main()
