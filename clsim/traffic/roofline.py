"""Roofline bound of a launch on a device profile: intensity, memory/compute bound, time floor.

Three byte counts are reported because they answer different questions:

* ``unique_bytes`` (distinct bytes read + distinct bytes written, over global buffers) is what
  a perfect cache hierarchy would move: the floor for any implementation of the same kernel.
* ``dram_bytes`` (the cache model's DRAM estimate through L1 and L2; None when the profile
  describes no caches) is what this access pattern moves through caches of the profile's size.
* ``sector_bytes`` (global sectors x sector size) is what this kernel's access pattern makes
  the coalescer fetch, with no reuse between steps: the cost of uncoalesced or strided access
  with no cache at all (the upper bound).

``floor_time_s`` is the classic roofline bound ``max(flops / peak, bytes / bandwidth)`` on
the bytes ``bytes_basis`` names: the ``basis`` asked for ("unique", "dram" or "sectors"), by
default sector bytes when the report has sectors, else unique bytes; ``time_unique_s`` is the
same bound with unique bytes. ``predicted_time_s`` adds the two limits bytes and flops miss
(``clsim.traffic.occupancy``): local memory with its bank-conflict replays as a third roof,
and occupancy, the share of the device a launch of this many work-groups and sub-groups can
keep busy, which divides every roof. ``limit`` says which binds, ``notes`` say why in words
(the launch too small to fill the device, the replays). Latency and launch overhead are not
modelled: a measured time above the prediction is expected.

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
from clsim.traffic.occupancy import local_time_s, occupancy


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
    floor_time_s: float = 0.0  # max(compute, memory): the roofline without the terms below
    time_local_s: float | None = None  # local bytes and bank replays (None: not modelled)
    fill: float = 1.0  # the share of the device's throughput the launch can use
    limit: str = ""  # the term that binds, in words
    notes: tuple[str, ...] = ()

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
    def achieved_bytes_per_s(self) -> float:
        """The bytes of the basis over the predicted time: what a 0-flop kernel is drawn by."""
        if self.predicted_time_s <= 0:
            return 0.0
        return self.moved_bytes / self.predicted_time_s

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
    t_local = local_time_s(totals, profile)
    terms = {"compute": t_compute, "memory": t_memory, "local": t_local or 0.0}
    bound = max(terms, key=lambda k: (terms[k], k == "memory"))  # ties: memory
    occ = occupancy(totals, profile)
    fill = occ.fill if occ is not None else 1.0
    notes = [_limit_note(bound, terms, totals, profile, basis)]
    occ_note = occ.note(profile.name) if occ is not None else None
    if occ_note:
        notes.append(occ_note)
    notes += _unmodelled(profile, occ)
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
        predicted_time_s=terms[bound] / fill,
        bound=bound,
        dram_bytes=None if dram is None else int(dram),
        intensity_dram=None if dram is None else _intensity(flops, dram),
        floor_time_s=max(t_compute, t_memory),
        time_local_s=t_local,
        fill=fill,
        limit=bound + (" (occupancy)" if fill < 1.0 else ""),
        notes=tuple(notes),
    )


_ROOF_WORDS = {"compute": "the compute roof ({:.3g} s of flops)",
               "memory": "DRAM bandwidth ({:.3g} s of {} bytes)",
               "local": "local memory ({:.3g} s)"}


def _limit_note(bound: str, terms: Mapping[str, float], totals: Mapping[str, Any],
                profile: DeviceProfile, basis: str) -> str:
    """The line saying which limit binds, with the runner-up."""
    def words(name: str) -> str:
        text = _ROOF_WORDS[name]
        return text.format(terms[name], basis) if name == "memory" else text.format(terms[name])

    others = sorted((k for k in terms if k != bound and terms[k] > 0), key=lambda k: -terms[k])
    line = f"limit: {words(bound)}"
    if bound == "local":
        replays = int(totals.get("local_bank_conflicts", 0))
        line += (f", with {replays:,} bank-conflict replays of {profile.local_banks} x "
                 f"{profile.local_bank_width_bytes} bytes")
    if others:
        line += f"; next: {words(others[0])}"
    return line


def _unmodelled(profile: DeviceProfile, occ: Any) -> list[str]:
    """What the prediction leaves out because the profile or report lacks a figure."""
    missing = []
    if profile.local_banks and profile.local_bandwidth_gbs is None:
        missing.append("local memory and bank conflicts (no local_bandwidth_gbs)")
    if occ is None:
        missing.append("occupancy (the report has no work-group count)")
    elif profile.compute_units is None:
        missing.append("occupancy (no compute_units)")
    elif profile.schedulers_per_cu is None:
        missing.append("sub-groups per compute unit (no schedulers_per_cu)")
    if not missing:
        return []
    return [f"not modelled on {profile.name}: " + "; ".join(missing)]


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
