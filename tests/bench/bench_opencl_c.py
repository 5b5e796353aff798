"""The OpenCL C front end's costs: a translated kernel's launch time against its hand-written
Python twin (softmax, tiled matmul, Q4_0 GEMV; warm, at the spec's default shape, measured
round-robin), the first compile of each (CPU seconds of the first launch in a fresh process
and cache, so neither inherits the other's Numba state), and translating the library's largest
.cl file (CPU and wall time). Ratios are translated / twin within one run.

Run: python tests/bench/bench_opencl_c.py [--docs]   (--docs appends to docs/performance.md)
"""

from __future__ import annotations

import json
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

from benchlib import append_section, best_interleaved, machine  # noqa: E402

SPECS = ("softmax", "matmul_tiled", "gemv_q4_0")


def _launch(name: str, which: str):
    import clsim
    import kernels_py  # noqa: F401
    from clsim.commands.specs import fresh
    from clsim.spec import get_spec

    spec = get_spec(name)
    kernel = spec.kernel if which == "twin" else clsim.load_cl(spec.cl_path, spec.cl_kernel_name)
    shape = dict(spec.default_shape)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    plan = spec.launch(inputs, shape, None)

    def go():
        args = fresh(dict(enumerate(plan.args)))
        clsim.run(kernel, plan.global_size, plan.local_size, tuple(args.values()),
                  subgroup_size=spec.subgroup_size)
    return go


def first_compile(name: str, which: str) -> float:
    """CPU seconds of the first launch (compile included) in a fresh process and cache: CPU,
    not wall, time, since other processes share the cores."""
    code = (f"import sys, time; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"from bench_opencl_c import _launch; go = _launch({name!r}, {which!r}); "
            "t = time.process_time(); go(); print(time.process_time() - t)")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CLSIM_CACHE_DIR": cache, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def translate_times() -> tuple[str, int, float, float]:
    from clsim.frontends.opencl_c.load import translate

    path = max((ROOT / "kernels_cl").glob("*.cl"), key=lambda p: len(p.read_text().splitlines()))
    translate(str(path))  # libclang loaded, prelude built
    wall, cpu = time.perf_counter(), time.process_time()
    translate(str(path))
    return (path.name, len(path.read_text().splitlines()), time.process_time() - cpu,
            time.perf_counter() - wall)


def main() -> None:
    rows = {}
    for name in SPECS:
        twin, translated = _launch(name, "twin"), _launch(name, "cl")
        twin(), translated()  # compiled, warm
        best = best_interleaved({"twin": twin, "cl": translated}, rounds=7)
        rows[name] = {"twin_s": best["twin"], "cl_s": best["cl"],
                      "ratio": best["cl"] / best["twin"]}
        rows[name]["compile_twin_s"] = first_compile(name, "twin")
        rows[name]["compile_cl_s"] = first_compile(name, "cl")
        print(name, json.dumps(rows[name]), flush=True)
    file, lines, cpu, wall = translate_times()
    out = [f"Machine: {machine()}.", "",
           "| kernel | launch, twin | launch, translated | ratio | first compile, twin (CPU) | "
           "first compile, translated (CPU) | ratio |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in rows.items():
        out.append(f"| {name} | {r['twin_s'] * 1e3:.2f} ms | {r['cl_s'] * 1e3:.2f} ms | "
                   f"{r['ratio']:.2f} | {r['compile_twin_s']:.1f} s | {r['compile_cl_s']:.1f} s "
                   f"| {r['compile_cl_s'] / r['compile_twin_s']:.2f} |")
    out += ["", f"Translating {file} ({lines} lines): {cpu:.3f} s of CPU, {wall:.3f} s wall."]
    print("\n".join(out))
    if "--docs" in sys.argv:
        append_section("OpenCL C front end (tests/bench/bench_opencl_c.py)", out)


if __name__ == "__main__":
    main()
