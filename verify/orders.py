"""Which order a device adds float sub-group reductions in, measured once per device.

The OpenCL C spec leaves the order of ``sub_group_reduce_add`` on floats open. A probe kernel
reduces data whose sums depend on the order (magnitudes from 1e-3 to 1e8, both signs) on the
device at each sub-group size it offers (8, 16, 32), and the simulator computes the same data in
each order it knows ("fixed": left fold, "tree": halving tree); the order that matches every
sub-group bit for bit is the device's at that size. The result is cached (JSON, keyed by the
device's platform, name and OpenCL version) in clsim's cache folder.

``device_reduction_order(info)`` gives the simulator's ``reduction_order`` for that device:
"fixed" (left fold everywhere, or no sub-groups), "tree" (halving at every size), a per-size
string such as "8:halfpairs,16:left,32:left" (what the Intel CPU runtime 2024 measured here on
an Intel Xeon), or None (an order clsim cannot model: keep the default and compare with a
tolerance). The verifier passes it to ``clsim.run`` when the user gave no order.

The measured order belongs to the device's compiler and may depend on the kernel around the
collective; the probe is one plain reduction, so a kernel that still disagrees needs a
tolerance (docs/verifying.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

import clsim
from clsim import get_global_id, kernel, sub_group_reduce_add
from clsim.runtime.cache import cache_dir
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


@kernel
def probe_order(x, out):
    i = get_global_id(0)
    out[i] = sub_group_reduce_add(x[i])


def probe_data(size: int) -> np.ndarray:
    rng = np.random.default_rng(20240601 + size)
    n = size * _GROUPS
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 9, n)).astype(np.float32)


def _simulated(x: np.ndarray, size: int, order: str) -> np.ndarray:
    out = np.zeros_like(x)
    clsim.run(probe_order, (x.size,), (size * 4,), (x, out), subgroup_size=size,
              reduction_order=order, checks="none")
    return out


def classify(device_out: np.ndarray, x: np.ndarray, size: int) -> str:
    """"left", "tree", "halfpairs" or "unknown": the simulator order reproducing
    ``device_out``."""
    for order in ("left", "tree", "halfpairs"):
        if _simulated(x, size, order).tobytes() == device_out.tobytes():
            return order
    return "unknown"


def measure(info: DeviceInfo) -> dict[int, str]:
    """Sub-group size -> measured order on the device (one launch per size)."""
    from verify.clrun import run_cl

    found: dict[int, str] = {}
    for size in PROBE_SIZES:
        if not info.has_subgroups or size not in info.subgroup_sizes:
            continue
        x = probe_data(size)
        run = run_cl(info, PROBE_CL, "probe_order", (x.size,), (size * 4,),
                     [x, np.zeros_like(x)], subgroup_size=size)
        found[size] = classify(run.buffers[1], x, size)
    return found


def order_for(measured: dict[int, str]) -> str | None:
    """The simulator's reduction_order reproducing every measured size ("fixed", "tree" or
    per size, "8:halfpairs,16:left,32:left"), or None when a size matched no known order."""
    if any(o == "unknown" for o in measured.values()):
        return None
    if all(o == "left" for o in measured.values()):
        return "fixed"
    if all(o == "tree" for o in measured.values()):
        return "tree"
    return ",".join(f"{s}:{o}" for s, o in sorted(measured.items()))


def _cache_file() -> Path:
    return Path(os.environ.get("CLSIM_ORDERS_CACHE", cache_dir().parent / "orders.json"))


_PROBE_VERSION = 2  # bump when the probe or the classes change: old verdicts are re-measured


def _identity(info: DeviceInfo) -> str:
    return (f"{info.platform} | {info.full_name} | {info.opencl_version} | "
            f"probe {_PROBE_VERSION}")


def measured_orders(info: DeviceInfo, refresh: bool = False) -> dict[int, str]:
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
