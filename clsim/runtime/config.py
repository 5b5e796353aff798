"""The simulated device and the launch configuration, built once per ``run()``.

``SimDevice`` is what the simulator enforces and mimics for one device: sub-group size, maximum
work-group size, local memory size and the order of float sums in collectives, plus the
``DeviceProfile`` the traffic model reads. ``run(..., device="intel-xe")`` builds it from a
profile; the default device is the ``h200`` profile's (32-wide sub-groups, 1024 work-items,
48 KiB of local memory as NVIDIA's OpenCL reports it).

``LaunchConfig`` is everything about one launch besides the kernel's arguments: the ND-range,
the device, the sub-group size and reduction order in force, the checks, the OpenCL version,
JIT and parallelism, and the instruments' options. It is frozen and built in one place
(``run()``); the compiler and every instrument read it, so a launch parameter has one path.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clsim.errors import InvalidArgumentError
from clsim.profiles import REDUCTION_ORDERS, DeviceProfile, load_profile
from clsim.runtime.ndrange import NDRange

DEFAULT_DEVICE = "h200"
CHECK_MODES = ("default", "all", "races", "uninit", "bounds", "none")
MAX_SUBGROUP_SIZE = 128


@dataclass(frozen=True)
class SimDevice:
    """The device a launch simulates (limits and behaviour) and models (its profile)."""

    name: str
    subgroup_size: int
    max_work_group_size: int
    local_mem_bytes: int | None  # None: no limit (a profile that does not say)
    reduction_order: str
    profile: DeviceProfile = field(repr=False)

    @classmethod
    def from_profile(cls, profile: DeviceProfile) -> SimDevice:
        return cls(profile.name, profile.subgroup_size, profile.max_work_group_size,
                   profile.local_mem_bytes, profile.reduction_order, profile)


_DEVICES: dict[str, SimDevice] = {}


def resolve_device(device) -> SimDevice:
    """A ``SimDevice`` from None (the default), a profile name or ``.toml`` path, a
    ``DeviceProfile`` or a ``SimDevice``."""
    if isinstance(device, SimDevice):
        return device
    if isinstance(device, DeviceProfile):
        return SimDevice.from_profile(device)
    if device is None:
        device = DEFAULT_DEVICE
    if not isinstance(device, str | os.PathLike):
        raise InvalidArgumentError(
            f"run(): device={device!r}; pass a profile name such as 'intel-xe', a .toml path, "
            "a clsim.profiles.DeviceProfile or a SimDevice")
    key = os.fspath(device)
    if key not in _DEVICES:  # profiles are files: read each once per process
        _DEVICES[key] = SimDevice.from_profile(load_profile(key))
    return _DEVICES[key]


@dataclass(frozen=True)
class LaunchConfig:
    """One launch's configuration; see the module docstring."""

    kernel: str
    ndrange: NDRange
    device: SimDevice
    subgroup_size: int
    reduction_order: str
    reduction_seed: int
    checks: str
    opencl_version: str
    jit: bool
    parallel: bool
    options: Mapping[str, Any] = field(default_factory=dict)  # instruments' run() options

    @property
    def bounds(self) -> bool:
        """Bounds checks and barrier/collective divergence checks (off only for "none")."""
        return self.checks != "none"

    @property
    def local_size(self) -> tuple[int, ...]:
        return self.ndrange.local_size[: self.ndrange.work_dim]

    def option(self, name: str, default=None):
        return self.options.get(name, default)


def check_subgroup_size(size) -> int:
    try:
        value = None if isinstance(size, bool) else operator.index(size)
    except TypeError:
        value = None
    if value is None or not 1 <= value <= MAX_SUBGROUP_SIZE:
        raise InvalidArgumentError(
            f"run(): subgroup_size={size!r} must be an int from 1 to {MAX_SUBGROUP_SIZE}")
    return value


def check_mode(checks) -> str:
    if checks not in CHECK_MODES:
        raise InvalidArgumentError(f"run(): checks={checks!r}; use one of {CHECK_MODES}")
    return checks


# Orders of float additions in reduce collectives (docs/subgroups.md): "fixed"/"left" fold in
# lane order; "tree" halves (x[i] + x[i + n/2], then n/4, ...); "halfpairs" halves once, then
# adds adjacent pairs (measured on the Intel CPU runtime at 8 lanes); "tree16" is "tree" up to
# 16 lanes, else left; "shuffled" a seeded permutation. "8:halfpairs,16:left" picks by the
# sub-group size (sizes not named fold left). These apply to sub-group reductions; other
# collectives are named with ";"-separated "collective=orders" parts (verify.orders measures
# them): "sub_scan=8:descending" (lane k adds x[k] + x[k-1] + ... + x[0] in that order),
# "work_reduce=8:columns" (each sub-group lane j folds x[j], x[j + n], ... over the
# sub-groups, then the n lanes fold left). Work-group scans fold left.
SUB_ORDERS = ("fixed", "left", "tree", "halfpairs")
COLLECTIVE_ORDERS = {"sub_reduce": SUB_ORDERS, "sub_scan": ("left", "descending"),
                     "work_reduce": ("left", "columns"), "work_scan": ("left",)}


def parse_order(order: str, allowed=SUB_ORDERS) -> dict[int, str] | None:
    """A per-size order "8:halfpairs,16:left" as {8: "halfpairs", 16: "left"}; None if
    ``order`` is not of that form or names an order not in ``allowed``."""
    table: dict[int, str] = {}
    for part in order.split(","):
        size, _, name = part.strip().partition(":")
        if not size.isdigit() or name not in allowed:
            return None
        table[int(size)] = name
    return table


def parse_collective_orders(order: str) -> dict[str, dict[int, str]] | None:
    """"8:halfpairs;sub_scan=8:descending" as {"sub_reduce": {8: "halfpairs"}, "sub_scan":
    {8: "descending"}}; None if a part is malformed (a part without a name is sub_reduce)."""
    out: dict[str, dict[int, str]] = {}
    for part in order.split(";"):
        name, eq, sizes = part.strip().rpartition("=")
        name = name if eq else "sub_reduce"
        table = parse_order(sizes, COLLECTIVE_ORDERS.get(name, ()))
        if table is None or name in out:
            return None
        out[name] = table
    return out


def collective_order(order: str, collective: str, subgroup_size: int) -> str:
    """The order float additions of ``collective`` ("sub_reduce", "sub_scan", "work_reduce",
    "work_scan") take at ``subgroup_size``: "left" unless ``order`` names another."""
    if collective == "sub_reduce":
        return sub_reduce_order(order, subgroup_size)
    if ":" not in order:
        return "left"
    return (parse_collective_orders(order) or {}).get(collective, {}).get(subgroup_size, "left")


def sub_reduce_order(order: str, subgroup_size: int) -> str:
    """The order a float sub-group reduction of ``subgroup_size`` lanes adds in: "left",
    "tree" or "halfpairs" (or "shuffled")."""
    if order == "tree16":
        return "tree" if subgroup_size <= 16 else "left"
    if ":" in order:
        order = (parse_collective_orders(order) or {}).get("sub_reduce", {}).get(
            subgroup_size, "left")
    return "left" if order == "fixed" else order


def check_reduction(order, seed) -> tuple[str, int]:
    if not isinstance(order, str) or (order not in REDUCTION_ORDERS and (
            ":" not in order or parse_collective_orders(order) is None)):
        raise InvalidArgumentError(
            f"run(): reduction_order={order!r}; use 'fixed' or 'left' (left fold in lane "
            "order, the default), 'tree' (halving: x[i] + x[i + n/2], ...), 'halfpairs' (one "
            "halving, then adjacent pairs), 'tree16' (tree up to 16 lanes, else left), "
            "'shuffled' (seeded permutation), or per sub-group size: '8:halfpairs,16:left' "
            "(+ ';sub_scan=8:descending;work_reduce=8:columns' for the other collectives)")
    try:
        value = None if isinstance(seed, bool) else operator.index(seed)
    except TypeError:
        value = None
    if value is None or not 0 <= value < 2**63:
        raise InvalidArgumentError(f"run(): reduction_seed={seed!r} must be an int in "
                                   "[0, 2**63)")
    return order, value
