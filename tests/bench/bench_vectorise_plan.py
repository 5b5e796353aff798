"""What the lane-major layout of issue 25 would buy, measured before anyone changes the engine.

softmax 1024x1024 (work-group 256 per row) written by hand three ways, all launched as a
``prange`` over groups (rows):

* ``today``: the group function clsim generates today (read from a generated module), with the
  same runtime helpers: one work-item at a time (``for _lid``) through each region, privates
  as per-lane arrays only where they cross a barrier, checked loads that return early.
* ``lane-major``: each region's work-item loop innermost over contiguous lanes; the kernel's own
  ``for c in range(lid, ncols, wg)`` loop outside it (full trips for all lanes, then a tail of
  the lanes that have one more); privates as arrays; no early exit (the affine indices'
  whole range checked once before the region); uniform values hoisted; branch-free fmax.
  Same order of operations per lane and the same tree order: bit-identical.
* ``lane-major + poly exp``: the same with float32 exp computed in float64 by a branch-free
  polynomial (table 2^n, degree-13 Taylor on |r| <= ln2/2) and rounded once.

Timed round-robin with clsim default and the Intel CPU runtime (kernel events) on the same
``.cl``. Also: the exp on its own (libm vs polynomial, 2^20 float32), whether the loop around
each exp has vector instructions, and how often float32(poly) differs from float32(libm).

Run: python tests/bench/bench_vectorise_plan.py [--rounds N]   (prints; docs/engine.md has a run)
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import best_interleaved  # noqa: E402
from clsim.runtime.jit_helpers import use  # noqa: E402

_ck, _exp_float32, _fmax_float32, _idiv_int64, _oob = use(
    "_ck", "_exp_float32", "_fmax_float32", "_idiv_int64", "_oob")
_jit = njit(error_model="numpy", fastmath=False, nogil=True)
_jitp = njit(error_model="numpy", fastmath=False, parallel=True)
# Numba calls another njit function through its status-code ABI and LLVM does not inline it
# into the loop (clsim --explain-speed: "call instruction cannot be vectorized"); inline at
# Numba IR level instead, as a vectorising engine would have to.
_inline = njit(error_model="numpy", fastmath=False, nogil=True, inline="always")
WG = 256
MAX_WG = 1024
ROWS = COLS = 1024


# ---- today: clsim's generated _group for softmax (checks default), reductions elided to
# the same code as generated (one work-item at a time, an early return after every check).
@_jit
def today_group(gx, L0, v_x, v_y, v_ncols, err):
    n = v_x.shape[0]
    lid_c = np.empty(L0, np.int64)
    row_max_c = np.empty(L0, np.float32)
    scratch = np.empty(MAX_WG, np.float32)
    base = gx * np.int64(v_ncols)
    for lid in range(L0):
        lid_c[lid] = lid
        row_max_c[lid] = -np.float32(np.inf)
        for c in range(lid_c[lid], np.int64(v_ncols), L0):
            row_max_c[lid] = _fmax_float32(row_max_c[lid], v_x[_ck(base + c, n, err, 0, lid)])
            if err[0] != 0:
                return
        i = lid_c[lid]
        if i < 0 or i >= scratch.shape[0]:
            _oob(err, 2, 1, i, scratch.shape[0], lid)
            return
        scratch[i] = row_max_c[lid]
    active = L0
    while active > 1:
        half = _idiv_int64(active + 1, 2, err, 3, 0)
        if err[0] != 0:
            return
        for lid in range(L0):
            if lid_c[lid] < active - half:
                v = _fmax_float32(scratch[_ck(lid_c[lid], scratch.shape[0], err, 4, lid)],
                                  scratch[_ck(lid_c[lid] + half, scratch.shape[0], err, 5, lid)])
                i = lid_c[lid]
                if i < 0 or i >= scratch.shape[0]:
                    _oob(err, 2, 6, i, scratch.shape[0], lid)
                    return
                scratch[i] = v
                if err[0] != 0:
                    return
        active = half
    for lid in range(L0):
        row_max_c[lid] = scratch[_ck(0, scratch.shape[0], err, 8, lid)]
        if err[0] != 0:
            return
    for lid in range(L0):
        total = np.float32(0.0)
        for c in range(lid_c[lid], np.int64(v_ncols), L0):
            total = total + _exp_float32(v_x[_ck(base + c, n, err, 10, lid)] - row_max_c[lid])
            if err[0] != 0:
                return
        i = lid_c[lid]
        if i < 0 or i >= scratch.shape[0]:
            _oob(err, 2, 11, i, scratch.shape[0], lid)
            return
        scratch[i] = total
    active = L0
    while active > 1:
        half = _idiv_int64(active + 1, 2, err, 13, 0)
        if err[0] != 0:
            return
        for lid in range(L0):
            if lid_c[lid] < active - half:
                v = (scratch[_ck(lid_c[lid], scratch.shape[0], err, 14, lid)]
                     + scratch[_ck(lid_c[lid] + half, scratch.shape[0], err, 15, lid)])
                i = lid_c[lid]
                if i < 0 or i >= scratch.shape[0]:
                    _oob(err, 2, 16, i, scratch.shape[0], lid)
                    return
                scratch[i] = v
                if err[0] != 0:
                    return
        active = half
    for lid in range(L0):
        total = scratch[_ck(0, scratch.shape[0], err, 18, lid)]
        if err[0] != 0:
            return
        for c in range(lid_c[lid], np.int64(v_ncols), L0):
            v = _exp_float32(v_x[_ck(base + c, n, err, 19, lid)] - row_max_c[lid]) / total
            i = base + c
            if i < 0 or i >= v_y.shape[0]:
                _oob(err, 2, 20, i, v_y.shape[0], lid)
                return
            v_y[i] = v


# ---- branch-free helpers for the lane-major form
@_inline
def clamp(i, n):
    # selects: Numba's min/max builtins are loops over their arguments, branches to LLVM
    i = i if i > 0 else 0
    return i if i < n - 1 else n - 1


@_inline
def fmax32(a, b):
    # fmax's NaN rule as selects: LLVM if-converts these, the helper's early returns it cannot
    m = b if a < b else a
    m = a if b != b else m
    return b if a != a else m


LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
LOG2E = 1.4426950408889634
_N_MIN, _N_MAX = -220, 150  # n for |v| <= 150: float32 exp is 0 or inf beyond
POW2 = np.array([math.ldexp(1.0, k) for k in range(_N_MIN, _N_MAX + 1)])  # 2^n by lookup
_ROUNDER = 6755399441055744.0  # 1.5 * 2^52: adding it rounds a double to an integer


@_inline
def exp64_poly(v):
    """exp(v) in float64 without a call or a branch: v = n ln2 + r, |r| <= ln2/2, exp(r) by
    Taylor to degree 13 (truncation < 2^-60), times 2^n looked up. Exact to about 1 ulp of
    double for |v| <= 150, the range whose float32 result is neither 0 nor inf; beyond, it
    returns a value that rounds to float32 0 or inf as libm's does."""
    w = v if v > -150.0 else -150.0  # selects, not min/max: Numba's min/max are calls
    w = w if w < 150.0 else 150.0
    n = (w * LOG2E + _ROUNDER) - _ROUNDER  # round to nearest without a libm call
    r = (w - n * LN2_HI) - n * LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    # a gather from a global (a constant to LLVM: no alias check, which a table passed as an
    # argument needs and cannot get: "cannot identify array bounds")
    res = p * POW2[np.int32(n) - _N_MIN]
    return v if v != v else res


@_inline
def exp32_poly(x):
    return np.float32(exp64_poly(np.float64(x)))


@_inline
def exp32_libm(x):
    v = np.float64(x)
    return np.float32(math.exp(v))


def _lane_major(use_poly: bool):
    def exp32(x):
        return exp32_poly(x) if use_poly else exp32_libm(x)
    exp32 = _inline(exp32)

    @_jit
    def group(gx, L, x, y, ncols, bad):
        n = x.shape[0]
        row_max = np.empty(L, np.float32)
        total = np.empty(L, np.float32)
        scratch = np.empty(MAX_WG, np.float32)
        base = gx * np.int64(ncols)  # uniform: hoisted
        full = np.int64(ncols) // L  # trips every lane makes; then a tail of `rest` lanes
        rest = np.int64(ncols) - full * L
        # x[base + c] and y[base + c] are affine in (k, lid): their whole range is checked
        # once, before the region; a failure would rerun the group the checked way for the
        # first failing work-item's message (not written here).
        if ncols > 0 and (base < 0 or base + ncols > n or base + ncols > y.shape[0]):
            bad[gx] = 1
            return
        for lid in range(L):
            row_max[lid] = -np.float32(np.inf)
        for k in range(full):
            for lid in range(L):  # contiguous lanes: the loop LLVM vectorises
                row_max[lid] = fmax32(row_max[lid], x[base + k * L + lid])
        for lid in range(rest):
            row_max[lid] = fmax32(row_max[lid], x[base + full * L + lid])
        for lid in range(L):
            scratch[lid] = row_max[lid]
        active = L
        while active > 1:
            half = (active + 1) // 2
            for lid in range(active - half):
                scratch[lid] = fmax32(scratch[lid], scratch[lid + half])
            active = half
        rmax = scratch[0]  # uniform after the barrier: one value, not an array
        for lid in range(L):
            total[lid] = np.float32(0.0)
        for k in range(full):
            for lid in range(L):
                total[lid] = total[lid] + exp32(x[base + k * L + lid] - rmax)
        for lid in range(rest):
            total[lid] = total[lid] + exp32(x[base + full * L + lid] - rmax)
        for lid in range(L):
            scratch[lid] = total[lid]
        active = L
        while active > 1:
            half = (active + 1) // 2
            for lid in range(active - half):
                scratch[lid] = scratch[lid] + scratch[lid + half]
            active = half
        tot = scratch[0]
        for k in range(full + (rest > 0)):
            for lid in range(L if k < full else rest):
                i = base + k * L + lid
                y[i] = exp32(x[i] - rmax) / tot
    return group


lane_libm_group = _lane_major(False)
lane_poly_group = _lane_major(True)


@_jitp
def launch_today(x, y, ncols, errs):
    for g in prange(errs.shape[0]):
        today_group(g, WG, x, y, ncols, errs[g])


def _launcher(group):
    @_jitp
    def launch(x, y, ncols, bad):
        for g in prange(bad.shape[0]):
            group(g, WG, x, y, ncols, bad)
    return launch


@_jit
def serial_today(x, y, ncols, errs):
    for g in range(errs.shape[0]):
        today_group(g, WG, x, y, ncols, errs[g])


@_jit
def serial_lane_poly(x, y, ncols, bad):
    # one thread: the comparison a loaded machine disturbs least
    for g in range(bad.shape[0]):
        lane_poly_group(g, WG, x, y, ncols, bad)


launch_lane_libm = _launcher(lane_libm_group)
launch_lane_poly = _launcher(lane_poly_group)


@_jit
def exp_loop_libm(x, out):
    for i in range(x.size):
        out[i] = exp32_libm(x[i])


@_jit
def exp_loop_poly(x, out):
    for i in range(x.size):
        out[i] = exp32_poly(x[i])


def vector_lines(dispatcher) -> tuple[int, bool]:
    """(instructions on ymm/zmm registers, whether a call to exp remains) in its assembly."""
    asm = next(iter(dispatcher.inspect_asm().values()))
    body = [ln for ln in asm.splitlines() if ln.startswith("\t") and not ln.startswith("\t.")]
    wide = sum(1 for ln in body if "%ymm" in ln or "%zmm" in ln)
    calls_exp = any(re.search(r"\$exp\b|\bexp@", ln) for ln in body)
    return wide, calls_exp


def exp_accuracy(count: int = 1 << 22) -> dict:
    """float64 ulps of the polynomial against libm, and float32 results that differ."""
    rng = np.random.default_rng(1)
    x = rng.uniform(-104.0, 88.7, count).astype(np.float32)
    poly = np.empty_like(x)
    libm = np.empty_like(x)
    exp_loop_poly(x, poly)
    exp_loop_libm(x, libm)
    v = x.astype(np.float64)
    p64 = np.array([exp64_poly(t) for t in v[:20000]])
    ref = np.exp(v[:20000])
    ulps = np.abs(p64 - ref) / np.spacing(ref)
    return {"max_ulp_f64": float(ulps.max()), "f32_differ": int((poly != libm).sum()),
            "count": count}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args(argv)
    import clsim
    from bench_engine import njit_softmax
    from clsim.spec import get_spec
    from verify.clrun import run_cl

    spec = get_spec("softmax")
    shape = {"rows": ROWS, "cols": COLS}
    inputs = spec.make_inputs(np.random.default_rng(0), shape)
    launch = spec.launch(inputs, shape, (WG,))
    x = inputs["x"].reshape(-1)
    ncols = np.int32(COLS)
    outs = {k: np.zeros_like(x) for k in ("today", "libm", "poly")}
    errs = np.zeros((ROWS, 16), np.int64)
    bad = np.zeros(ROWS, np.int64)
    sim_y = np.zeros_like(inputs["x"])
    kernel_ns: list[int] = []
    source = spec.cl_path.read_text()

    def intel():
        ran = run_cl("intel-cpu", source, spec.cl_kernel_name, launch.global_size,
                     launch.local_size, list(launch.args))
        kernel_ns.append(ran.time_ns)

    systems = {
        "Intel CPU runtime (kernel events)": intel,
        "clsim default": lambda: clsim.run(spec.kernel, launch.global_size, launch.local_size,
                                           (inputs["x"], sim_y, ncols)),
        "hand: today's generated form": lambda: launch_today(x, outs["today"], ncols, errs),
        "hand: lane-major, libm exp": lambda: launch_lane_libm(x, outs["libm"], ncols, bad),
        "hand: lane-major, poly exp": lambda: launch_lane_poly(x, outs["poly"], ncols, bad),
        "hand, one thread: today's form": lambda: serial_today(x, outs["today"], ncols, errs),
        "hand, one thread: lane-major, poly exp": lambda: serial_lane_poly(x, outs["poly"],
                                                                           ncols, bad),
        "plain @njit loop, one thread": lambda: njit_softmax(inputs["x"], plain_y),
    }
    plain_y = np.zeros_like(inputs["x"])
    for fn in systems.values():
        fn()
    same = {k: outs[k].tobytes() == sim_y.tobytes() for k in outs}
    kernel_ns.clear()
    best = best_interleaved(systems, rounds=opts.rounds)
    best["Intel CPU runtime (kernel events)"] = min(kernel_ns) * 1e-9
    base = best["Intel CPU runtime (kernel events)"]
    print(f"softmax {ROWS}x{COLS}, wg {WG}, numba {numba.__version__}, "
          f"load average {os.getloadavg()[0]:.0f}")
    print("| system | best time | vs Intel CPU runtime | vs today's form |")
    print("| --- | --- | --- | --- |")
    today = best["hand: today's generated form"]
    for name, s in best.items():
        print(f"| {name} | {s * 1e3:.2f} ms | {s / base:.1f}x | {s / today:.2f}x |")
    print("bit-identical to clsim:", same)

    xs = np.random.default_rng(2).uniform(-20, 0, 1 << 20).astype(np.float32)
    out = np.empty_like(xs)
    exp_loop_libm(xs, out)
    exp_loop_poly(xs, out)
    t = best_interleaved({"libm": lambda: exp_loop_libm(xs, out),
                          "poly": lambda: exp_loop_poly(xs, out)}, rounds=opts.rounds)
    print(f"exp over 2^20 float32: libm {t['libm'] * 1e3:.2f} ms, poly {t['poly'] * 1e3:.2f} ms "
          f"({t['libm'] / t['poly']:.1f}x faster)")
    for name, fn in (("libm", exp_loop_libm), ("poly", exp_loop_poly),
                     ("lane-major group, libm", lane_libm_group),
                     ("lane-major group, poly", lane_poly_group), ("today's group", today_group)):
        wide, calls = vector_lines(fn)
        print(f"  {name}: {wide} ymm/zmm instructions, call to exp left: {calls}")
    print("accuracy:", exp_accuracy())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
