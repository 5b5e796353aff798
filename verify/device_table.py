"""The ``clsim devices`` table: one row per device with its features and its health probe
verdict (``usable``; the ``-cl-std`` for OpenCL C 2.0), then why each unusable device is.

This module discovers and probes nothing itself (``verify.devices``, ``verify.probe``).
"""

from __future__ import annotations

from verify.devices import WORKING_POCL_HINT, DeviceInfo
from verify.probe import Health, health_all


def _subgroup_cell(info: DeviceInfo) -> str:
    if info.subgroup_sizes:
        return ",".join(str(s) for s in info.subgroup_sizes)
    return "yes" if info.has_subgroups else "-"


def _bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def _std_cell(health: Health) -> str:
    if not health.cl2_option:
        return "-"
    std = health.cl2_option.removeprefix("-cl-std=")
    return std if health.cl2_builtins else f"{std} (partial groups only)"


def format_table(devices: list[DeviceInfo]) -> str:
    """A plain-text table of devices, one per line, for ``clsim devices``; each device's health
    probe verdict in the ``usable`` column, and why an unusable one is, under the table."""
    verdicts = health_all(devices)
    # The driver version tells two drivers of one kind apart (pocl: 3.0-rc2, pocl-1: 3.1+debian).
    header = ("name", "usable", "platform", "driver", "OpenCL", "CL2 std", "CUs", "max WG",
              "sub-groups", "fp16", "fp64", "local mem", "device")
    rows = [header] + [(
        d.short_name, "yes" if verdicts[d.short_name].usable else "NO", d.platform,
        d.driver_version or "-", d.opencl_version, _std_cell(verdicts[d.short_name]),
        str(d.compute_units), str(d.max_work_group_size), _subgroup_cell(d), "yes" if d.fp16 else "-",
        "yes" if d.fp64 else "-", _bytes(d.local_mem_size), d.full_name,
    ) for d in devices]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    if not devices:
        lines.append("(no OpenCL devices found; pip install '.[devices]' adds intel-cpu and "
                     "oclgrind)")
    unusable = [d for d in devices if not verdicts[d.short_name].usable]
    for d in unusable:
        lines.append(f"{d.short_name}: unusable: {verdicts[d.short_name].reason}")
    if unusable:
        lines.append(WORKING_POCL_HINT + ".")
    return "\n".join(lines)
