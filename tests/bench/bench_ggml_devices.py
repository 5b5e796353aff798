"""ggml's OpenCL kernels, unchanged, in the simulator (translated by the OpenCL C front end) and
on a device (the same .cl built by pyopencl), at the launch shapes of ggml-opencl.cpp (Intel
path: nth = 32 for soft_max, 64 for rms_norm; the device's sub-group size), compared bit for
bit, in ULPs, and for dot products against the magnitude of their terms. Argument lists follow
the host code's clSetKernelArg calls.

Run: python tests/bench/bench_ggml_devices.py /path/to/ggml-opencl/kernels [--device intel-cpu]
(test data from outside the project: nothing of it is copied here).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import clsim  # noqa: E402
from verify.clrun import LocalMem, run_cl  # noqa: E402

OPTIONS = "-cl-std=CL2.0 -cl-mad-enable -cl-unsafe-math-optimizations -cl-finite-math-only " \
          "-cl-fast-relaxed-math"
SUBGROUP = 16
# Without fast-relaxed math, and with division and sqrt correctly rounded as the simulator's
PLAIN = "-cl-std=CL2.0 -cl-fp32-correctly-rounded-divide-sqrt"


def soft_max(rng, ne00=1000, ne01=8, ne02=4):
    """ggml_cl_soft_max with a mask (src1) and attention sinks (src2), each its own buffer (the
    kernel tests src1 != src0: one array passed twice is one buffer in the simulator, while
    run_cl makes a buffer per argument)."""
    x = (rng.standard_normal((ne02, ne01, ne00)) * 3).astype(np.float32)
    mask = rng.standard_normal((ne01, ne00)).astype(np.float32)
    sinks = rng.standard_normal(ne02).astype(np.float32)
    dst = np.zeros_like(x)
    nb01, nb02 = ne00 * 4, ne00 * ne01 * 4
    nb03 = nb02 * ne02
    nth = min(32, ne00)
    u, i, f = np.uint64, np.int32, np.float32
    args = [x, u(0), mask, u(0), sinks, u(0), dst, u(0), i(ne00), u(nb01), u(nb02), u(nb03),
            i(1), i(1), u(nb01), u(0), u(0), u(nb01), u(nb02), u(nb03), f(0.125), f(0.0),
            f(1.0), f(1.0), i(4)]
    return "softmax_f32.cl", "kernel_soft_max", (ne01 * nth, ne02, 1), (nth, 1, 1), args, 6


def rms_norm(rng, ne00=4096, ne01=8, ne02=2):
    x = rng.standard_normal((ne02, ne01, ne00)).astype(np.float32)
    dst = np.zeros_like(x)
    nth = min(64, ne00)
    nb01, nb02 = ne00 * 4, ne00 * ne01 * 4
    u, i = np.uint64, np.int32
    args = [x, u(0), dst, u(0), i(ne00), i(ne01), i(ne02), i(1), u(nb01), u(nb02),
            u(nb02 * ne02), np.float32(1e-6), LocalMem(4 * nth // SUBGROUP)]
    return "rms_norm.cl", "kernel_rms_norm", (ne01 * nth, ne02, 1), (nth, 1, 1), args, 2


def norm(rng, ne00=4096, ne01=8, ne02=2):
    x = rng.standard_normal((ne02, ne01, ne00)).astype(np.float32)
    dst = np.zeros_like(x)
    nth = 64
    nb01, nb02 = ne00 * 4, ne00 * ne01 * 4
    u, i = np.uint64, np.int32
    args = [x, u(0), dst, u(0), i(ne00), i(ne01), i(ne02), i(1), u(4), u(nb01), u(nb02),
            u(nb02 * ne02), np.float32(1e-5), LocalMem(4 * nth)]
    return "norm.cl", "kernel_norm", (ne01 * nth, ne02, 1), (nth, 1, 1), args, 2


def mul_mv_f32(rng, ne00=4096, ne01=64, ne11=4):
    """ggml_cl_mul_mat, F32 x F32 (nrows 4, nth0 32 on Intel): W (ne01 x ne00), ne11 vectors."""
    w = rng.standard_normal((ne01, ne00)).astype(np.float32)
    x = rng.standard_normal((ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne11, ne01), np.float32)
    u, i = np.uint64, np.int32
    nb01, nb11 = ne00 * 4, ne00 * 4
    args = [w, u(0), x, u(0), dst, u(0), i(ne00), i(ne01), i(1), u(4), u(nb01), u(nb01 * ne01),
            u(nb01 * ne01), i(ne00), i(ne11), i(1), u(4), u(nb11), u(nb11 * ne11),
            u(nb11 * ne11), i(ne01), i(ne11), i(1), i(1)]
    ny = (ne11 + 3) // 4
    SCALES["mul_mv_f32"] = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T
    return "mul_mv_f32_f32.cl", "kernel_mul_mat_f32_f32", (ne01 * 32, ny, 1), (32, 1, 1), args, 4


# sum |terms| per output of a dot-product kernel: its reduction order is the device's own (a
# sub-group reduction's tree), so agreement is judged against the magnitude of the terms.
SCALES: dict[str, np.ndarray] = {}
CASES = {"soft_max": soft_max, "rms_norm": rms_norm, "norm": norm, "mul_mv_f32": mul_mv_f32}


def ulps(a: np.ndarray, b: np.ndarray) -> int:
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return int(np.abs(ia - ib).max())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", type=Path)
    ap.add_argument("--device", default="intel-cpu")
    args = ap.parse_args()
    for (name, make), options in [(c, o) for c in CASES.items() for o in (OPTIONS, PLAIN)]:
        file, kernel_name, gsize, lsize, kargs, out = make(np.random.default_rng(0))
        source = (args.kernels / file).read_text()
        # The device picks its sub-group size (the Intel CPU runtime: 8 or 16); the simulator
        # runs with the same one, since ggml's reductions depend on it.
        dev = run_cl(args.device, source, kernel_name, gsize, lsize, kargs, options=options)
        try:
            kernel = clsim.load_cl(str(args.kernels / file), kernel_name, options=options)
            sim_args = [a.copy() if isinstance(a, np.ndarray) else a for a in kargs]
            clsim.run(kernel, gsize, lsize, sim_args, subgroup_size=dev.subgroup_size)
        except clsim.SimulationError as exc:
            print(f"{name}: simulator: {str(exc).splitlines()[0]}")
            continue
        got, want = sim_args[out], dev.buffers[out]
        same = np.array_equal(got.view(np.uint32), want.view(np.uint32))
        magnitude = ""
        if name in SCALES:
            err = np.abs(got.astype(np.float64) - want) / SCALES[name].reshape(got.shape)
            magnitude = f", max error {err.max() / np.finfo(np.float32).eps:.1f} eps of sum|terms|"
        print(f"{name} ({file}, global {gsize}, local {lsize}, "
              f"{'ggml build options' if options == OPTIONS else 'plain build'}): "
              f"{'bit for bit' if same else f'max {ulps(got, want)} ULP'} against "
              f"{args.device} (sub-groups of {dev.subgroup_size}){magnitude}", flush=True)


if __name__ == "__main__":
    main()
