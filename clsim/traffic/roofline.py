"""Roofline bound of a launch on a device profile: intensity, memory/compute bound, time floor.

Three byte counts are reported because they answer different questions:

* ``unique_bytes`` (distinct bytes read + distinct bytes written, over global buffers) is what
  a perfect cache hierarchy would move: the floor for any implementation of the same kernel.
* ``dram_bytes`` (the cache model's DRAM estimate through L1 and L2; None when the profile
  describes no caches) is what this access pattern moves through caches of the profile's size.
* ``sector_bytes`` (global sectors x sector size) is what this kernel's access pattern makes
  the coalescer fetch, with no reuse between steps: the cost of uncoalesced or strided access
  with no cache at all (the upper bound).

``predicted_time_s`` is a lower bound ``max(flops / peak, bytes / bandwidth)`` on the bytes
``bytes_basis`` names: the ``basis`` asked for ("unique", "dram" or "sectors"), by default
sector bytes when the report has sectors, else unique bytes; ``time_unique_s`` is the same
bound with unique bytes. Neither models latency, occupancy or launch overhead: a measured time
above the bound is expected.

This module does not count traffic (``model``) or read profiles (``profiles``); it only combines
the two.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from clsim.errors import ProfileError
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
    bytes_basis: str  # "sectors", "dram" or "unique": which bytes predicted_time_s uses
    time_compute_s: float
    time_memory_s: float
    time_unique_s: float
    predicted_time_s: float
    bound: str  # "memory" or "compute"
    dram_bytes: int | None = None
    intensity_dram: float | None = None

    @property
    def moved_bytes(self) -> int:
        """The bytes on the basis ``predicted_time_s`` uses."""
        return {"sectors": self.sector_bytes, "unique": self.unique_bytes,
                "dram": self.dram_bytes or 0}[self.bytes_basis]

    @property
    def intensity(self) -> float:
        """The intensity on the basis ``predicted_time_s`` uses."""
        return _intensity(self.flops, self.moved_bytes)

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


BASES = {  # bytes basis -> how a chart's axis names it
    "unique": "unique bytes (ideal: each byte moved once)",
    "dram": "DRAM bytes through the cache model",
    "sectors": "uncached sector bytes (upper bound)",
}


def roofline(totals: Mapping[str, Any], profile: DeviceProfile,
             precision: str = "fp32", basis: str | None = None) -> Roofline:
    """Place a launch (``TrafficReport.totals``) under ``profile``'s roofs, timing the bytes
    of ``basis`` (a key of ``BASES``; default: sectors when counted, else unique).

    Ties (intensity exactly at the ridge point) count as memory bound.
    """
    flops = int(totals.get("flops", 0))
    unique = int(totals.get("unique_read_bytes", 0)) + int(totals.get("unique_write_bytes", 0))
    sector_size = int(totals.get("sector_size_bytes", profile.sector_bytes))
    sectors = int(totals.get("global_load_sectors", 0)) + int(totals.get("global_store_sectors", 0))
    sector_bytes = sectors * sector_size
    dram = totals.get("dram_bytes")
    peak = profile.peak_flops_per_s(precision)
    bandwidth = profile.bandwidth_bytes_per_s
    basis = _check_basis(basis, dram) or ("sectors" if sector_bytes > 0 else "unique")
    moved = {"sectors": sector_bytes, "unique": unique, "dram": dram}[basis]
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
        dram_bytes=None if dram is None else int(dram),
        intensity_dram=None if dram is None else _intensity(flops, dram),
    )


def _check_basis(basis: str | None, dram: Any) -> str | None:
    if basis is not None and basis not in BASES:
        raise ProfileError(f"roofline: bytes basis {basis!r} is unknown. Use one of "
                           f"{', '.join(BASES)}.")
    if basis == "dram" and dram is None:
        raise ProfileError("roofline: basis 'dram' needs the cache model's DRAM bytes, and this "
                           "report has none (its profile describes no caches). Use basis "
                           "'sectors' or 'unique', or a profile with caches.")
    return basis


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
    moved = roof.moved_bytes
    return MeasuredVsBound(
        measured_s=measured_s,
        predicted_time_s=roof.predicted_time_s,
        fraction_of_bound=roof.predicted_time_s / measured_s,
        achieved_gflops=roof.flops / measured_s / 1e9,
        achieved_gbs=moved / measured_s / 1e9,
    )
