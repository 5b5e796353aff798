"""The memory part of ``clsim conformance``: ``async_work_group_copy`` (global to local and
back, a full and a partial count), ``async_work_group_strided_copy`` (a gather into local
memory and a scatter back out), ``wait_group_events`` after each, and ``prefetch``, on char,
int, long, float and double.

Three work-groups of 16 work-items copy 40 elements each (not a multiple of the group size)
and gather/scatter 24 elements at stride 3 (interleaving the groups). Judged bit for bit: the
copied elements equal the source (NaN payloads, -0 and denormals included), every element a
copy must not touch keeps its sentinel, and ``prefetch`` leaves its buffer as it was. Double
is skipped on a device lacking cl_khr_fp64, with that reason.
"""

from __future__ import annotations

import numpy as np

from verify.conformance_cases import _C

GROUPS, LOCAL, N, PART, M, STRIDE = 3, 16, 40, 27, 24, 3
TYPES = ("int8", "int32", "int64", "float32", "float64")
NAMES = ("async_work_group_copy", "async_work_group_strided_copy", "prefetch")


def source_column(t: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = GROUPS * N + STRIDE * M
    raw = rng.integers(0, 256, n * np.dtype(t).itemsize, dtype=np.uint8).view(t).copy()
    if t.startswith("float"):
        u = f"u{np.dtype(t).itemsize}"
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310 if t == "float64"
                             else 1e-40, 1.5], t)
        raw[:specials.size] = specials
        raw.view(u)[specials.size] = np.array(-1, "i8").astype(u)  # a NaN of all-ones bits
    return raw


def sentinel(t: str, n: int) -> np.ndarray:
    return np.full(n * np.dtype(t).itemsize, 0xA5, np.uint8).view(t).copy()


def python_source(t: str) -> str:
    return f"""import numpy as np

from clsim import (async_work_group_copy, async_work_group_strided_copy, get_group_id, kernel,
                   local_array, prefetch, wait_group_events)


@kernel
def probe(x, full, part, scatter, n):
    g = get_group_id(0)
    t = local_array({N}, np.{t})
    ev = async_work_group_copy(t, x + g * {N}, {N}, 0)
    wait_group_events(1, ev)
    ev = async_work_group_copy(full + g * {N}, t, {N}, 0)
    wait_group_events(1, ev)
    ev = async_work_group_copy(part + g * {N}, t, n, 0)
    wait_group_events(1, ev)
    s = local_array({M}, np.{t})
    ev = async_work_group_strided_copy(s, x + g, {M}, {STRIDE}, 0)
    wait_group_events(1, ev)
    ev = async_work_group_strided_copy(scatter + g, s, {M}, {STRIDE}, 0)
    wait_group_events(1, ev)
    prefetch(x + g * {N}, {N})
"""


def cl_source(t: str) -> str:
    c = _C[t]
    return (("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if t == "float64" else "")
            + f"""__kernel void probe(__global const {c} *x, __global {c} *full,
                    __global {c} *part, __global {c} *scatter, int n) {{
    int g = get_group_id(0);
    __local {c} t[{N}];
    __local {c} s[{M}];
    event_t ev = async_work_group_copy(t, x + g * {N}, {N}, 0);
    wait_group_events(1, &ev);
    ev = async_work_group_copy(full + g * {N}, t, {N}, 0);
    wait_group_events(1, &ev);
    ev = async_work_group_copy(part + g * {N}, t, n, 0);
    wait_group_events(1, &ev);
    ev = async_work_group_strided_copy(s, x + g, {M}, {STRIDE}, 0);
    wait_group_events(1, &ev);
    ev = async_work_group_strided_copy(scatter + g, s, {M}, {STRIDE}, 0);
    wait_group_events(1, &ev);
    prefetch(x + g * {N}, {N});
}}
""")


def buffers(t: str, seed: int) -> list:
    x = source_column(t, seed)
    size = GROUPS * N + STRIDE * M
    return [x, sentinel(t, size), sentinel(t, size), sentinel(t, size), np.int32(PART)]


def references(t: str, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(full, part, scatter) as the spec defines them, sentinels where nothing is copied."""
    size = x.size
    full, part, scatter = (sentinel(t, size) for _ in range(3))
    full[:GROUPS * N] = x[:GROUPS * N]
    for g in range(GROUPS):
        part[g * N:g * N + PART] = x[g * N:g * N + PART]
    idx = (np.arange(GROUPS)[:, None] + STRIDE * np.arange(M)[None, :]).ravel()
    scatter[idx] = x[idx]
    return full, part, scatter


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def judge(t: str, backend: str, x0: np.ndarray, outs: list[np.ndarray]):
    """Rows of one backend's run: (x after the run, full, part, scatter) against the spec."""
    from verify.conformance import Row

    full, part, scatter = references(t, x0)
    rows = []
    checks = {"async_work_group_copy": [(outs[1], full), (outs[2], part)],
              "async_work_group_strided_copy": [(outs[3], scatter)],
              "prefetch": [(outs[0], x0)]}
    for name, pairs in checks.items():
        bad = [np.flatnonzero(_bits(got) != _bits(want)) for got, want in pairs]
        examples = [{"index": int(k), "got": got[k].item(), "want": want[k].item()}
                    for (got, want), ks in zip(pairs, bad, strict=True) for k in ks[:2]]
        rows.append(Row(name, t, backend, 0.0, 0.0, int(sum(b.size for b in bad)),
                        examples[:3]))
    return rows


def run_simulator(t: str, seed: int, *, jit: bool) -> list[np.ndarray]:
    import clsim
    from verify.conformance_exact import _simulator_kernel

    bufs = buffers(t, seed)
    clsim.run(_simulator_kernel(python_source(t)), (GROUPS * LOCAL,), (LOCAL,), bufs, jit=jit,
              checks="none")
    return bufs[:4]


def run_device(info, t: str, seed: int) -> list[np.ndarray]:
    from verify.clrun import run_cl

    run = run_cl(info, cl_source(t), "probe", (GROUPS * LOCAL,), (LOCAL,), buffers(t, seed))
    return list(run.buffers[:4])


def memory_suite(devices=(), builtins=None, draws: int = 0, seed: int = 0,
                 simulator_modes=("jit", "nojit"), report=None):
    """Rows of the memory kernels on the simulator and ``devices`` (``draws`` unused)."""
    from clsim.errors import DeviceError, SimulationError
    from verify.conformance import ConformanceReport
    from verify.devices import get_device

    report = report if report is not None else ConformanceReport()
    if builtins is not None and not set(builtins) & {*NAMES, "wait_group_events"}:
        return report
    for k, t in enumerate(TYPES):
        x0 = source_column(t, seed + k)
        results = {f"sim-{m}": run_simulator(t, seed + k, jit=m == "jit")
                   for m in simulator_modes}
        for device in devices:
            info = get_device(device)
            if t == "float64" and not info.fp64:
                report.skipped.append(f"{device}: memory double: lacks cl_khr_fp64")
                continue
            try:
                results[device] = run_device(info, t, seed + k)
            except (DeviceError, SimulationError) as exc:
                report.skipped.append(f"{device}: memory {t}: {str(exc).splitlines()[0]}")
        for backend, outs in results.items():
            report.rows += [r for r in judge(t, backend, x0, outs)
                            if builtins is None or r.builtin in builtins
                            or "wait_group_events" in builtins]
    return report
