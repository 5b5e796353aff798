"""Roofline bound of a launch on a device profile: intensity, memory/compute bound, time floor.

Two byte counts are reported because they answer different questions:

* ``unique_bytes`` (distinct bytes read + distinct bytes written, over global buffers) is what
  a perfect cache hierarchy would move: the floor for any implementation of the same kernel.
* ``sector_bytes`` (global sectors x sector size) is what this kernel's access pattern makes
  the coalescer fetch, with no reuse between steps: the cost of uncoalesced or strided access.

``predicted_time_s`` is a lower bound ``max(flops / peak, bytes / bandwidth)`` using sector
bytes when the report has sectors, else unique bytes (``bytes_basis`` says which);
``time_unique_s`` is the same bound with unique bytes. Neither models latency, occupancy,
caches between steps, or launch overhead: a measured time above the bound is expected.

This module does not count traffic (``model``) or read profiles (``profiles``); it only combines
the two.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from clsim.profiles import DeviceProfile


@dataclass(frozen=True)
class Roofline:
    """The roofline position of one launch on one profile (times in seconds, rates per second)."""

    profile: str
    precision: str
    flops: int
    unique_bytes: int
    sector_bytes: int
    intensity_unique: float
    intensity_sectors: float
    peak_flops_per_s: float
    bandwidth_bytes_per_s: float
    ridge_point: float
    bytes_basis: str  # "sectors" or "unique": which bytes predicted_time_s uses
    time_compute_s: float
    time_memory_s: float
    time_unique_s: float
    predicted_time_s: float
    bound: str  # "memory" or "compute"

    @property
    def intensity(self) -> float:
        """The intensity on the basis ``predicted_time_s`` uses."""
        return self.intensity_sectors if self.bytes_basis == "sectors" else self.intensity_unique

    @property
    def attainable_flops_per_s(self) -> float:
        """Performance at the roof for this launch: flops / predicted time."""
        if self.predicted_time_s <= 0:
            return 0.0
        return self.flops / self.predicted_time_s

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict: infinite intensities (no bytes moved) become None."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in asdict(self).items()}


def _intensity(flops: float, nbytes: float) -> float:
    if nbytes > 0:
        return flops / nbytes
    return math.inf if flops > 0 else 0.0


def roofline(totals: Mapping[str, Any], profile: DeviceProfile,
             precision: str = "fp32") -> Roofline:
    """Place a launch (``TrafficReport.totals``) under ``profile``'s roofs.

    Ties (intensity exactly at the ridge point) count as memory bound.
    """
    flops = int(totals.get("flops", 0))
    unique = int(totals.get("unique_read_bytes", 0)) + int(totals.get("unique_write_bytes", 0))
    sector_size = int(totals.get("sector_size_bytes", profile.sector_bytes))
    sectors = int(totals.get("global_load_sectors", 0)) + int(totals.get("global_store_sectors", 0))
    sector_bytes = sectors * sector_size
    peak = profile.peak_flops_per_s(precision)
    bandwidth = profile.bandwidth_bytes_per_s
    basis = "sectors" if sector_bytes > 0 else "unique"
    moved = sector_bytes if basis == "sectors" else unique
    t_compute = flops / peak
    t_memory = moved / bandwidth
    return Roofline(
        profile=profile.name,
        precision=precision,
        flops=flops,
        unique_bytes=unique,
        sector_bytes=sector_bytes,
        intensity_unique=_intensity(flops, unique),
        intensity_sectors=_intensity(flops, sector_bytes),
        peak_flops_per_s=peak,
        bandwidth_bytes_per_s=bandwidth,
        ridge_point=peak / bandwidth,
        bytes_basis=basis,
        time_compute_s=t_compute,
        time_memory_s=t_memory,
        time_unique_s=max(t_compute, unique / bandwidth),
        predicted_time_s=max(t_compute, t_memory),
        bound="compute" if t_compute > t_memory else "memory",
    )


@dataclass(frozen=True)
class MeasuredVsBound:
    """A measured time against the roofline floor; ``fraction_of_bound`` is floor / measured
    (1.0 = at the roof, 0.25 = four times slower than the bound)."""

    measured_s: float
    predicted_time_s: float
    fraction_of_bound: float
    achieved_gflops: float
    achieved_gbs: float  # on the same bytes basis as the prediction


def measured_vs_bound(measured_s: float, roof: Roofline) -> MeasuredVsBound:
    """Compare a measured kernel time with the roofline lower bound of the same launch."""
    if not measured_s > 0:
        raise ValueError(f"measured time must be positive seconds, got {measured_s!r}")
    moved = roof.sector_bytes if roof.bytes_basis == "sectors" else roof.unique_bytes
    return MeasuredVsBound(
        measured_s=measured_s,
        predicted_time_s=roof.predicted_time_s,
        fraction_of_bound=roof.predicted_time_s / measured_s,
        achieved_gflops=roof.flops / measured_s / 1e9,
        achieved_gbs=moved / measured_s / 1e9,
    )
