"""Which order a device adds floats in, per collective, measured once per device.

The OpenCL C spec leaves the order of float ``sub_group_reduce_add``, the scans and the
work-group reductions open. Probe kernels run each on data whose sums depend on the order
(magnitudes from 1e-3 to 1e8, both signs) at each sub-group size the device offers (8, 16, 32),
four sub-groups per work-group and again 3.5 (a partial last sub-group), and the simulator
computes the same data in each order it knows for that collective
(``clsim.runtime.config.COLLECTIVE_ORDERS``: sub_reduce left/tree/halfpairs, sub_scan
left/descending, work_reduce left/columns, work_scan left); the order that matches
every result bit for bit is the device's for that collective and size. The result is cached
(JSON, keyed by the device's platform, name, OpenCL version and the probe's version) in
clsim's cache folder.

``device_reduction_order(info)`` gives the simulator's ``reduction_order`` for that device:
"fixed" (left fold everywhere, or no sub-groups), "tree", or per collective and size, e.g. what
the Intel CPU runtime 2024 measured here on an Intel Xeon:
"8:halfpairs,16:left,32:left;sub_scan=8:descending,16:left,32:left;work_reduce=8:columns,
16:columns,32:columns" (one line), or None (an order clsim cannot model: keep the default and
compare with a tolerance). The verifier passes it to ``clsim.run`` when the user gave no order.

The measured order belongs to the device's compiler and may depend on the kernel around the
collective; the probes are plain collectives, so a kernel that still disagrees needs a
tolerance (docs/verifying.md).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

import clsim
from clsim import (
    get_global_id,
    get_global_size,
    kernel,
    sub_group_reduce_add,
    sub_group_scan_exclusive_add,
    sub_group_scan_inclusive_add,
    work_group_reduce_add,
    work_group_scan_exclusive_add,
    work_group_scan_inclusive_add,
)
from clsim.errors import DeviceLacksFeature
from clsim.runtime.cache import cache_dir
from clsim.runtime.config import COLLECTIVE_ORDERS
from verify.devices import DeviceInfo, get_device

PROBE_SIZES = (8, 16, 32)
_GROUPS = 64
PROBE_CL = """#pragma OPENCL FP_CONTRACT OFF
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
__kernel void probe_order(__global const float *x, __global float *out) {
    size_t i = get_global_id(0);
    out[i] = sub_group_reduce_add(x[i]);
}
"""


# The other collectives: outputs k * n + i, per collective the ones its order decides.
PROBE_COLLECTIVES_CL = """#pragma OPENCL FP_CONTRACT OFF
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
__kernel void probe_collectives(__global const float *x, __global float *o) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float v = x[i];
    o[i] = sub_group_reduce_add(v);
    o[n + i] = sub_group_scan_inclusive_add(v);
    o[2 * n + i] = sub_group_scan_exclusive_add(v);
    o[3 * n + i] = work_group_reduce_add(v);
    o[4 * n + i] = work_group_scan_inclusive_add(v);
    o[5 * n + i] = work_group_scan_exclusive_add(v);
}
"""
OUTPUTS = {"sub_reduce": (0,), "sub_scan": (1, 2), "work_reduce": (3,), "work_scan": (4, 5)}
_NOUT = 6


@kernel
def probe_order(x, out):
    i = get_global_id(0)
    out[i] = sub_group_reduce_add(x[i])


@kernel
def probe_collectives(x, o):
    i = get_global_id(0)
    n = get_global_size(0)
    v = x[i]
    o[i] = sub_group_reduce_add(v)
    o[n + i] = sub_group_scan_inclusive_add(v)
    o[2 * n + i] = sub_group_scan_exclusive_add(v)
    o[3 * n + i] = work_group_reduce_add(v)
    o[4 * n + i] = work_group_scan_inclusive_add(v)
    o[5 * n + i] = work_group_scan_exclusive_add(v)


def probe_data(size: int) -> np.ndarray:
    rng = np.random.default_rng(20240601 + size)
    n = size * _GROUPS
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 9, n)).astype(np.float32)


def partial_local(size: int) -> int:
    """A local size whose last sub-group is partial (3.5 sub-groups): 28 at size 8, 56 at 16,
    112 at 32. The probe runs it too, so a measured order also covers partial sub-groups."""
    return size * 3 + size // 2


def _simulated(x: np.ndarray, size: int, order: str, kern=probe_order, outputs=1,
               local: int | None = None) -> np.ndarray:
    out = np.zeros(x.size * outputs, x.dtype)
    # Plain Python: each (size, local size, order) would be a Numba module of its own, about
    # 2 CPU s to compile (up to 54 per device) where plain Python runs the probe in 20 ms.
    clsim.run(kern, (x.size,), (local or size * 4,), (x, out), subgroup_size=size,
              reduction_order=order, checks="none", jit=False)
    return out.reshape(outputs, x.size)


def classify(device_out: np.ndarray, x: np.ndarray, size: int) -> str:
    """"left", "tree", "halfpairs" or "unknown": the simulator order reproducing the device's
    ``sub_group_reduce_add`` results ``device_out``."""
    for order in ("left", "tree", "halfpairs"):
        if _simulated(x, size, order)[0].tobytes() == device_out.tobytes():
            return order
    return "unknown"


def _order_string(collective: str, size: int, order: str) -> str:
    return f"{size}:{order}" if collective == "sub_reduce" else f"{collective}={size}:{order}"


def classify_collectives(device_out: np.ndarray, x: np.ndarray, size: int,
                         local: int | None = None) -> dict[str, str]:
    """Collective -> the order reproducing its outputs in ``device_out`` (rows of
    ``probe_collectives`` at local size ``local``, default four sub-groups), or "unknown"."""
    found = {}
    for collective, rows in OUTPUTS.items():
        found[collective] = "unknown"
        for order in COLLECTIVE_ORDERS[collective]:
            if order == "fixed":
                continue
            sim = _simulated(x, size, _order_string(collective, size, order), probe_collectives,
                             _NOUT, local)
            if all(sim[k].tobytes() == device_out[k].tobytes() for k in rows):
                found[collective] = order
                break
    return found


def _agreeing(full: dict[str, str], partial: dict[str, str]) -> dict[str, str]:
    """Per collective the order both launches found ("unknown" where they differ)."""
    return {c: o if partial.get(c) == o else "unknown" for c, o in full.items()}


def measure(info: DeviceInfo) -> dict[int, dict[str, str]]:
    """Sub-group size -> collective -> measured order on the device (one or two launches per
    size; the work-group collectives only where the device runs OpenCL C 2.0)."""
    from verify.clrun import run_cl

    found: dict[int, dict[str, str]] = {}
    for size in PROBE_SIZES:
        if not info.has_subgroups or size not in info.subgroup_sizes:
            continue
        x = probe_data(size)
        try:
            verdicts = []
            for local in (size * 4, partial_local(size)):
                xs = x[:x.size // local * local]
                run = run_cl(info, PROBE_COLLECTIVES_CL, "probe_collectives", (xs.size,),
                             (local,), [xs, np.zeros(xs.size * _NOUT, x.dtype)],
                             subgroup_size=size)
                verdicts.append(classify_collectives(
                    run.buffers[1].reshape(_NOUT, xs.size), xs, size, local))
            found[size] = _agreeing(*verdicts)
        except DeviceLacksFeature:  # no work-group functions: the sub-group reduction alone
            run = run_cl(info, PROBE_CL, "probe_order", (x.size,), (size * 4,),
                         [x, np.zeros_like(x)], subgroup_size=size)
            found[size] = {"sub_reduce": classify(run.buffers[1], x, size)}
    return found


def order_for(measured: dict) -> str | None:
    """The simulator's reduction_order reproducing every measured size and collective
    ("fixed", "tree" or per size, "8:halfpairs,16:left;sub_scan=8:descending,16:left"), or
    None when one matched no known order. A size's value may be one order (the sub-group
    reduction's, as probe version 2 recorded) or a dict per collective."""
    per = {s: (v if isinstance(v, dict) else {"sub_reduce": v}) for s, v in measured.items()}
    if any(o == "unknown" for v in per.values() for o in v.values()):
        return None
    others = {c for v in per.values() for c, o in v.items() if c != "sub_reduce" and o != "left"}
    sub = {s: v.get("sub_reduce", "left") for s, v in per.items()}
    if not others:
        if all(o == "left" for o in sub.values()):
            return "fixed"
        if all(o == "tree" for o in sub.values()):
            return "tree"
    parts = [",".join(f"{s}:{o}" for s, o in sorted(sub.items()))] if sub else []
    for c in sorted(others):
        parts.append(f"{c}=" + ",".join(f"{s}:{v.get(c, 'left')}" for s, v in sorted(per.items())))
    return ";".join(parts)


_WORK_FOLDS = re.compile(r"\bwork_group_(?:reduce|scan_inclusive|scan_exclusive)_add\s*\(")


def uses_work_group_sums(source: str) -> bool:
    """Whether OpenCL C ``source`` calls a work-group sum or scan (whose float order on some
    devices follows the sub-group size the device picked)."""
    return _WORK_FOLDS.search(re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)) \
        is not None


def _cache_file() -> Path:
    return Path(os.environ.get("CLSIM_ORDERS_CACHE", cache_dir().parent / "orders.json"))


# bump when the probe or the classes change: old verdicts are re-measured (4: the probe also
# runs a partial last sub-group, and halfpairs halves by the sub-group size there)
_PROBE_VERSION = 4


def _identity(info: DeviceInfo) -> str:
    return (f"{info.platform} | {info.full_name} | {info.opencl_version} | "
            f"probe {_PROBE_VERSION}")


def measured_orders(info: DeviceInfo, refresh: bool = False) -> dict[int, dict[str, str]]:
    """``measure(info)``, cached by the device's identity."""
    path = _cache_file()
    try:
        cache = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError):
        cache = {}
    key = _identity(info)
    if refresh or key not in cache:
        cache[key] = {str(s): o for s, o in measure(info).items()}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cache, indent=1, sort_keys=True))
        except OSError:
            pass  # an unwritable cache only costs a re-measurement
    return {int(s): o for s, o in cache[key].items()}


_IN_PROCESS: dict[str, str | None] = {}  # the verifier asks once per launch: no file read


def device_reduction_order(device: str | DeviceInfo, refresh: bool = False) -> str | None:
    """The ``reduction_order`` that makes the simulator add like ``device``."""
    info = device if isinstance(device, DeviceInfo) else get_device(device)
    key = _identity(info)
    if refresh or key not in _IN_PROCESS:
        _IN_PROCESS[key] = order_for(measured_orders(info, refresh))
    return _IN_PROCESS[key]


# ---- per-work-item loops ----------------------------------------------------------------------
# A compiler may also reassociate a float loop inside one work-item (vectorising it into P
# partial sums). These probes run the loop shapes of the library kernels on general data:
# reduce_sum's second stage (a runtime trip count over __local memory), a constant trip count
# over __local and over __global memory, and a dot product with a converted integer factor
# (gguf_q4_k's sub-block sums, where the Intel runtime did vectorise on an earlier host).
LOOP_PROBE_CL = """#pragma OPENCL FP_CONTRACT OFF
__kernel void loop_local(__global const float *x, __global float *out, int n) {
    __local float l[4096];
    int lid = get_local_id(0), L = get_local_size(0), g = get_group_id(0);
    for (int k = lid; k < n * L; k += L) l[k] = x[g * n * L + k];
    barrier(CLK_LOCAL_MEM_FENCE);
    float v = 0.0f;
    for (int k = lid; k < n * L; k += L) v += l[k];
    out[g * L + lid] = v;
}
__kernel void loop_local_const(__global const float *x, __global float *out, int n) {
    __local float l[4096];
    int lid = get_local_id(0), L = get_local_size(0), g = get_group_id(0);
    for (int k = lid; k < NC * L; k += L) l[k] = x[g * NC * L + k];
    barrier(CLK_LOCAL_MEM_FENCE);
    float v = 0.0f;
    for (int k = 0; k < NC; k++) v += l[lid * NC + k];
    out[g * L + lid] = v;
}
__kernel void loop_global_const(__global const float *x, __global float *out, int n) {
    int i = get_global_id(0);
    float v = 0.0f;
    for (int k = 0; k < NC; k++) v += x[i * NC + k];
    out[i] = v;
}
__kernel void loop_dot_const(__global const float *x, __global float *out, int n) {
    int i = get_global_id(0);
    float v = 0.0f;
    for (int k = 0; k < NC; k++) v += (float)(k % 7 - 3) * x[i * NC + k];
    out[i] = v;
}
"""
LOOP_KERNELS = ("loop_local", "loop_local_const", "loop_global_const", "loop_dot_const")
_LOOP_LOCAL, _LOOP_GROUPS = 64, 8


def _lane_terms(kernel_name: str, x: np.ndarray, n: int) -> np.ndarray:
    """(work-items, n): the terms each work-item's loop adds, in loop order."""
    if kernel_name == "loop_local":  # work-item lid adds l[lid], l[lid + L], ...
        return x.reshape(_LOOP_GROUPS, n, _LOOP_LOCAL).transpose(0, 2, 1).reshape(-1, n)
    terms = x.reshape(-1, n)
    if kernel_name == "loop_dot_const":
        terms = (np.arange(n) % 7 - 3).astype(np.float32) * terms
    return terms


def loop_folds(terms: np.ndarray, partial: int) -> np.ndarray:
    """Each row summed as ``partial`` running sums (term k into sum k % partial), then those
    folded left; partial=1 is the plain left fold of the loop as written."""
    sums = np.zeros((terms.shape[0], partial), np.float32)
    for k in range(terms.shape[1]):
        sums[:, k % partial] += terms[:, k]
    total = sums[:, 0].copy()
    for j in range(1, partial):
        total += sums[:, j]
    return total


def classify_loop(device_out: np.ndarray, terms: np.ndarray) -> str:
    """"left" (the loop as written), "partial:P" (P running sums, P = 2 .. 16), "unknown"."""
    for partial in (1, 2, 4, 8, 16):
        if loop_folds(terms, partial).tobytes() == device_out.tobytes():
            return "left" if partial == 1 else f"partial:{partial}"
    return "unknown"


def measure_loops(info: DeviceInfo, trips=(4, 16, 32, 64)) -> dict[str, str]:
    """"kernel@trips" -> how ``info`` adds that per-work-item loop (``classify_loop``)."""
    from verify.clrun import run_cl

    rng = np.random.default_rng(20240601)
    found = {}
    for name in LOOP_KERNELS:
        for n in trips:
            if name.startswith("loop_local") and n * _LOOP_LOCAL > 4096:
                continue  # the probe's __local array holds 4096 floats
            size = _LOOP_GROUPS * _LOOP_LOCAL * n
            x = (rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4, size)).astype(
                np.float32)
            run = run_cl(info, LOOP_PROBE_CL, name, (_LOOP_GROUPS * _LOOP_LOCAL,),
                         (_LOOP_LOCAL,), [x, np.zeros(_LOOP_GROUPS * _LOOP_LOCAL, np.float32),
                                          np.int32(n)], options=f"-DNC={n}")
            found[f"{name}@{n}"] = classify_loop(run.buffers[1], _lane_terms(name, x, n))
    return found
