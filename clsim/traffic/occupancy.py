"""How much of a device a launch can keep busy, and what local memory costs: the two terms of
the predicted time that bytes and flops alone miss (docs/traffic-model.md, "Limits").

- **Occupancy.** A work-group runs on one compute unit, so a launch of G work-groups keeps at
  most ``min(G, CUs)`` units busy; a busy unit issues from one sub-group per scheduler per
  clock, so fewer resident sub-groups than schedulers leave issue slots idle. ``fill`` is the
  product of the two fractions, and every throughput (DRAM, local memory, flops) is scaled by
  it: one work-group of 64 work-items on an H200 (132 SMs, 4 schedulers each) can use
  ``1/132 * 2/4`` of the device. Resident sub-groups per unit are the work-groups the unit
  holds at once (``subgroups_per_cu`` over the group's sub-groups, at most the groups it gets)
  times the group's sub-groups. This is a throughput model: latency hiding beyond one
  sub-group per scheduler, registers and local-memory limits on residency are not modelled.
- **Local memory.** Each bank-conflict replay is one more pass of the banks
  (``local_banks * local_bank_width_bytes`` bytes of local bandwidth); the local term is
  ``(local bytes + replays * banks * width) / local_bandwidth_gbs``.

Profiles that lack a figure (``schedulers_per_cu``, ``subgroups_per_cu``,
``local_bandwidth_gbs``) leave that part out, and the notes say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clsim.profiles import DeviceProfile


@dataclass(frozen=True)
class Occupancy:
    """What a launch of ``work_groups`` groups of ``group_size`` work-items can use."""

    work_groups: int
    group_size: int
    subgroups_per_group: int
    busy_units: int
    compute_units: int | None
    subgroups_per_unit: int  # resident on a busy unit
    schedulers: int | None
    fill: float  # fraction of the device's throughput the launch can use (0 < fill <= 1)

    def note(self, profile: str) -> str | None:
        """One line when the launch cannot fill the device, else None."""
        if self.fill >= 1.0 or self.compute_units is None:
            return None
        parts = []
        if self.busy_units < self.compute_units:
            parts.append(f"{self.work_groups:,} work-group{'s' if self.work_groups != 1 else ''}"
                         f" for {self.compute_units} compute units ({self.busy_units} busy)")
        if self.schedulers is not None and self.subgroups_per_unit < self.schedulers:
            parts.append(f"{self.subgroups_per_unit} sub-group"
                         f"{'s' if self.subgroups_per_unit != 1 else ''} per busy unit for "
                         f"{self.schedulers} schedulers")
        return (f"occupancy: {'; '.join(parts)}: the launch is too small to fill {profile} "
                f"({self.fill:.2%} of its throughput; time x{1 / self.fill:,.0f})")


def occupancy(totals: Mapping[str, Any], profile: DeviceProfile) -> Occupancy | None:
    """The launch's occupancy on ``profile`` (None: the report has no work-group count)."""
    groups = int(totals.get("work_groups", 0) or 0)
    items = int(totals.get("work_items", 0) or 0)
    if groups <= 0 or items <= 0:
        return None
    size = max(1, math.ceil(items / groups))
    per_group = math.ceil(size / profile.subgroup_size)
    units = profile.compute_units
    if units is None:
        return Occupancy(groups, size, per_group, groups, None, per_group, None, 1.0)
    busy = min(groups, units)
    groups_per_unit = math.ceil(groups / units)
    if profile.subgroups_per_cu is not None:
        groups_per_unit = min(groups_per_unit, max(1, profile.subgroups_per_cu // per_group))
    resident = groups_per_unit * per_group
    schedulers = profile.schedulers_per_cu
    issue = 1.0 if schedulers is None else min(1.0, resident / schedulers)
    return Occupancy(groups, size, per_group, busy, units, resident, schedulers,
                     busy / units * issue)


def local_time_s(totals: Mapping[str, Any], profile: DeviceProfile) -> float | None:
    """Seconds the local-memory traffic takes at the profile's local bandwidth, each
    bank-conflict replay one more pass of the banks; None when the profile has no figure or
    its local memory is not banked (CPUs: local memory is ordinary cached memory)."""
    if profile.local_bandwidth_gbs is None or profile.local_banks == 0:
        return None
    moved = int(totals.get("local_load_bytes", 0)) + int(totals.get("local_store_bytes", 0))
    replays = int(totals.get("local_bank_conflicts", 0))
    moved += replays * profile.local_banks * profile.local_bank_width_bytes
    return moved / (profile.local_bandwidth_gbs * 1e9)
