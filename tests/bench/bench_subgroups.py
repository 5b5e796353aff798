"""Sub-group benchmark: softmax_subgroup (one sub-group of 32 per row, 4 rows per work-group)
on 1024x1024 float32, warm, default checks, against the local-memory ``softmax`` spec (256
work-items per row, as in bench_engine.py) and a plain numba.njit softmax in the same run;
and the library's sub-group GEMVs (a row per sub-group: fp32, Q4_0, Q8_0) against their
work-group forms (a row per work-group, local-memory sum).

Target: no collective makes the kernel fall back to a slower execution mode, measured as
softmax_subgroup at most 1.5x the local-memory softmax.

Every launch runs the compiled launcher (``launcher_tier.PYTHON_LOOP_GROUPS = 0``): a
256-group launch otherwise runs its first launches' group loop as Python (6-8 us a group,
clsim.runtime.launcher_tier), which is the first minute's cost, not the kernel's.

Run: python tests/bench/bench_subgroups.py   (appends a section to docs/performance.md)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import njit_softmax  # noqa: E402
from benchlib import append_section, best_interleaved  # noqa: E402

TARGET = 1.5


def _case(spec, local, **kw):
    """The warm-run callables (parallel, serial) of one spec at 1024x1024, plus its error."""
    import clsim

    shape = {"rows": 1024, "cols": 1024}
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, local, **kw)
    size = kw.get("subgroup_size")

    def run(**extra):
        return clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                         subgroup_size=size, **extra)

    first = run()
    run(parallel=False)
    err = float(np.abs(inputs["y"] - spec.reference(inputs)["y"]).max())
    return run, lambda: run(parallel=False), first.compile_s, err



GEMVS = [  # (sub-group spec, work-group spec, shape)
    ("gemv_subgroup", "gemv", {"rows": 1024, "cols": 4096}),
    ("gemv_q4_0_subgroup", "gemv_q4_0", {"rows": 4096, "blocks": 128}),
    ("gemv_q8_0_subgroup", "gemv_q8_0", {"rows": 4096, "blocks": 128}),
]


def _gemv(name, shape):
    import clsim
    from clsim.spec import get_spec

    spec = get_spec(name)
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, None)

    def run():
        return clsim.run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                         subgroup_size=spec.subgroup_size)

    run()
    return run


def _gemv_lines() -> list[str]:
    fns = {}
    for sub, group, shape in GEMVS:
        fns[sub], fns[group] = _gemv(sub, shape), _gemv(group, shape)
    t = best_interleaved(fns, rounds=9)
    lines = ["", "GEMVs, warm, default checks, best of 9 interleaved runs:", "",
             "| shape | sub-group form | work-group form | ratio |", "| --- | --- | --- | --- |"]
    for sub, group, shape in GEMVS:
        dims = "x".join(str(v) for v in shape.values())
        lines.append(f"| {sub} / {group} {dims} | {t[sub] * 1e3:.2f} ms | "
                     f"{t[group] * 1e3:.2f} ms | {t[sub] / t[group]:.2f}x |")
    return lines


def main() -> int:
    from clsim.runtime import launcher_tier
    from clsim.spec import get_spec

    launcher_tier.PYTHON_LOOP_GROUPS = 0

    sub, sub_serial, compile_s, err = _case(get_spec("softmax_subgroup"), (128,),
                                            subgroup_size=32)
    loc, loc_serial, _, _ = _case(get_spec("softmax"), (256,))
    x = get_spec("softmax").make_inputs(np.random.default_rng(0),
                                        {"rows": 1024, "cols": 1024})["x"]
    y = np.zeros_like(x)
    njit_softmax(x, y)
    t = best_interleaved({"sub": sub, "sub_serial": sub_serial, "local": loc,
                      "local_serial": loc_serial, "njit": lambda: njit_softmax(x, y)})
    ratio = t["sub"] / t["local"]
    met = "met" if ratio <= TARGET else "NOT met"
    ms = {k: f"{v * 1e3:.2f} ms" for k, v in t.items()}
    lines = [
        "softmax 1024x1024 float32, warm, default checks (bounds, barrier and sub-group "
        "divergence), best of 15 interleaved runs:",
        "",
        "| what | groups in parallel | groups serial | vs local-memory softmax | vs plain njit |",
        "| --- | --- | --- | --- | --- |",
        f"| softmax_subgroup (sub-groups of 32, 128 work-items = 4 rows per group) | "
        f"{ms['sub']} | {ms['sub_serial']} | {ratio:.2f}x | {t['sub'] / t['njit']:.2f}x |",
        f"| softmax (local memory, 256 work-items per row) | {ms['local']} | "
        f"{ms['local_serial']} | 1.00x | {t['local'] / t['njit']:.2f}x |",
        f"| plain numba.njit softmax | {ms['njit']} | | | 1.00x |",
        "",
        f"Target (softmax_subgroup at most {TARGET}x the local-memory softmax: collectives keep "
        f"the tight work-item loops): {met} ({ratio:.2f}x; serial groups "
        f"{t['sub_serial'] / t['local_serial']:.2f}x). First run of softmax_subgroup in this "
        f"process (compile or load from the on-disk cache): {compile_s:.2f} s. Max abs error "
        f"vs the float64 reference: {err:.1e}.",
        *_gemv_lines(),
        "",
        f"Load average at the end of the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
        "cores (the cases are timed round-robin, so background load hits them alike).",
    ]
    append_section("Sub-groups (tests/bench/bench_subgroups.py)", lines)
    print("\n".join(lines))
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
