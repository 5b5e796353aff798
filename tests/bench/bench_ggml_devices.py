"""ggml's OpenCL kernels, unchanged, in the simulator (translated by the OpenCL C front end) and
on a device (the same .cl built by pyopencl), at the launch shapes of ggml-opencl.cpp (Intel
path; the launches are in ggml_launches.py), with ggml's build options and with a plain build.
For each kernel: translated, compiled, ran, agreed (bit for bit, in ULPs, or for dot products
against the magnitude of their terms), and the simulator's and the device's times.

Run: python tests/bench/bench_ggml_devices.py /path/to/ggml-opencl/kernels [--device intel-cpu]
     [--only rope_norm,get_rows] [--docs]
(test data from outside the project: nothing of it is copied here). ``--docs`` rewrites the
generated section of docs/opencl-c.md.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import clsim  # noqa: E402
from clsim.errors import KernelCompileError, SimulationError  # noqa: E402
from clsim.frontends.opencl_c.load import translate, translated_kernels  # noqa: E402
from ggml_launches import CASES, Launch  # noqa: E402
from verify.clrun import build_kernel, build_options, run_cl  # noqa: E402
from verify.devices import get_device, import_pyopencl  # noqa: E402
from verify.policy import compare  # noqa: E402

# ggml-opencl.cpp builds its programs with these
OPTIONS = "-cl-std=CL2.0 -cl-mad-enable -cl-unsafe-math-optimizations -cl-finite-math-only " \
          "-cl-fast-relaxed-math"
# Without fast-relaxed math, and with division and sqrt correctly rounded as the simulator's
PLAIN = "-cl-std=CL2.0 -cl-fp32-correctly-rounded-divide-sqrt"
BUILDS = {"ggml": OPTIONS, "plain": PLAIN}
BEGIN = "<!-- BEGIN GENERATED: ggml devices -->"
END = "<!-- END GENERATED: ggml devices -->"


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    ia = a.astype(np.float32).view(np.int32).astype(np.int64)
    ib = b.astype(np.float32).view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return int(np.abs(ia - ib).max()) if ia.size else 0


def agreement(launch: Launch, build: str, got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    """(agreed under the launch's policy for this build, what was measured, in words)."""
    policy = launch.policies[build]
    scale = None if launch.scale is None else launch.scale.reshape(got.shape)
    verdict = compare(launch.kernel, got, want, policy, scale=scale)
    if np.array_equal(got.view(np.uint8), want.view(np.uint8)):
        return verdict.equal, "bit for bit"
    if got.dtype.kind != "f":
        bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        return verdict.equal, f"{bad.size} values differ (first at {bad[0]})"
    text = f"max {ulps(got, want)} ULP"
    if scale is not None:
        err = np.abs(got.astype(np.float64) - want) / scale
        text += f", {err.max() / np.finfo(np.float32).eps:.2f} eps of {launch.scale_of}"
    return verdict.equal, f"{text} (policy {policy})"


def _wg_size(device: str, source: str, options: str, kernel: str) -> int:
    """CL_KERNEL_WORK_GROUP_SIZE, as the host's get_kernel_workgroup_size asks it."""
    cl = import_pyopencl()
    info = get_device(device)
    k = build_kernel(info, source, build_options(info, options), kernel)
    return int(k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, info.cl_device))


def _fill_get_rows(launch: Launch, max_wg: int) -> None:
    """ggml_cl_get_rows: nth = smallest power of two >= ne00 within the kernel's limit."""
    ne00, ne10 = int(launch.args[6]), int(launch.args[10])
    nth = 1
    while nth < ne00 and 2 * nth <= max_wg:
        nth *= 2
    launch.global_size = (ne10 * nth, 1, 1)
    launch.local_size = (nth, 1, 1)


def _copies(args: list) -> list:
    """Fresh arrays for the simulator; one array passed twice stays one (one buffer, as the
    host passes src0 again for rope's absent src2 and the kernel compares the pointers)."""
    copies: dict[int, np.ndarray] = {}
    return [copies.setdefault(id(a), a.copy()) if isinstance(a, np.ndarray) else a
            for a in args]


def measure(name: str, kernels_dir: Path, device: str, build: str) -> dict:
    launch = CASES[name](np.random.default_rng(0))
    path = kernels_dir / launch.file
    options = f"{BUILDS[build]} {launch.defines}".strip()
    row = dict(name=name, build=build, file=launch.file, kernel=launch.kernel,
               shape=launch.shape, translated="no", compiled="no", ran="no", agreed="",
               why="", sim_s=None, compile_s=None, device_ms=None, subgroup=None)
    try:
        t = translate(str(path), options)
        fail = t.failure_of(launch.kernel)
        if fail is not None:
            row["why"] = fail.message(launch.file)
            return row
        kernel = translated_kernels(t)[launch.kernel]
    except SimulationError as exc:
        row["why"] = str(exc).splitlines()[0]
        return row
    row["translated"] = "yes"
    source = path.read_text()
    if launch.needs_kernel_wg:
        _fill_get_rows(launch, _wg_size(device, source, options, launch.kernel))
    row["launch"] = f"{launch.global_size} / {launch.local_size}"
    outs = launch.out if isinstance(launch.out, tuple) else (launch.out,)
    dev = run_cl(device, source, launch.kernel, launch.global_size, launch.local_size,
                 launch.args, options=f"{options} {launch.device_options}".strip())
    row["device_ms"] = dev.time_ns / 1e6 if dev.time_ns else None
    row["subgroup"] = dev.subgroup_size
    sim_args = _copies(launch.args)
    began = time.perf_counter()
    try:
        result = clsim.run(kernel, launch.global_size, launch.local_size, sim_args,
                           subgroup_size=dev.subgroup_size,
                           max_work_group_size=max(1024, math.prod(launch.local_size)))
    except KernelCompileError as exc:
        row["why"] = str(exc).splitlines()[0]
        return row
    except SimulationError as exc:
        row["compiled"] = "yes"
        row["why"] = str(exc).splitlines()[0]
        return row
    row.update(compiled="yes", ran="yes", sim_s=result.elapsed_s, compile_s=result.compile_s,
               wall_s=time.perf_counter() - began)
    texts, agreed = [], True
    for index in outs:
        ok, text = agreement(launch, build, sim_args[index], dev.buffers[index])
        agreed &= ok
        texts.append(text)
    row["agreed"] = ("yes: " if agreed else "NO: ") + "; ".join(texts)
    row["why_policy"] = launch.why
    return row


def fmt_time(row: dict) -> str:
    """The simulator's launch (its compile apart) against the device's kernel time."""
    if row["sim_s"] is None:
        return ""
    text = f"{row['sim_s']:.2f} s (+{row['compile_s']:.1f} s compile)"
    if row["device_ms"]:
        text += f" / {row['device_ms']:.2f} ms: {row['sim_s'] * 1e3 / row['device_ms']:.0f}x"
    return text


def table(rows: list[dict], device: str) -> list[str]:
    by_name: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_name.setdefault(r["name"], {})[r["build"]] = r
    out = [f"| kernel | shape (global / local) | translated | compiled | ran | {device}, ggml "
           "build | plain build | sub-group | simulator / device, plain build |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for builds in by_name.values():
        g, p = builds.get("ggml"), builds.get("plain")
        r = p or g  # the plain build's time: its compile is the ggml build's, cached
        shape = r["shape"] + (f" ({r['launch']})" if "launch" in r else "")
        agreed = [(b["agreed"] or b["why"].replace("|", "\\|")[:150]) if b else ""
                  for b in (g, p)]
        out.append(f"| `{r['kernel']}` ({r['file']}) | {shape} | {r['translated']} | "
                   f"{r['compiled']} | {r['ran']} | {agreed[0]} | {agreed[1]} | "
                   f"{r['subgroup'] or ''} | {fmt_time(r)} |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", type=Path)
    ap.add_argument("--device", default="intel-cpu")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--builds", default="ggml,plain")
    ap.add_argument("--docs", action="store_true", help="rewrite docs/opencl-c.md's table")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n] or list(CASES)
    rows = []
    for name in names:
        for build in args.builds.split(","):
            row = measure(name, args.kernels, args.device, build)
            rows.append(row)
            print(f"{name} ({build}): translated {row['translated']}, compiled "
                  f"{row['compiled']}, ran {row['ran']}: {row['agreed'] or row['why']} "
                  f"[{fmt_time(row)}]", flush=True)
    lines = table(rows, args.device)
    print("\n".join(lines))
    if args.docs:
        doc = ROOT / "docs" / "opencl-c.md"
        text = doc.read_text()
        head, _, rest = text.partition(BEGIN)
        _, _, tail = rest.partition(END)
        stamp = f"Measured {datetime.date.today()} against {args.device}."
        doc.write_text(head + BEGIN + "\n\n" + stamp + "\n\n" + "\n".join(lines) + "\n\n" +
                       END + tail)


if __name__ == "__main__":
    main()
