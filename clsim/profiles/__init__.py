"""Device profiles: what clsim knows about a device it simulates or models.

A profile gives the launch limits a simulated device enforces (sub-group size, maximum
work-group size, local memory, reduction order; ``clsim.runtime.config.SimDevice``) and the
figures the traffic model and the roofline use (peak bandwidth and FLOPS, local-memory banks,
sector and line sizes, compute units and the L1/L2 caches). A profile is a TOML file next to
this module (h200, a100, adreno750, intel-xe, arc, cpu), with a ``[sources]`` table citing each
figure. ``load_profile`` takes a short name, an alias listed in a profile, or a path to a
``.toml`` file; directories named in ``CLSIM_PROFILE_PATH`` (``os.pathsep``-separated) are
searched before the shipped ones, so a user profile can add a device or override a shipped one.
A missing or malformed profile raises ``ProfileError`` naming the file and the key.

This module only reads and validates profiles; it does not run or query devices (a measured
OpenCL device is the verifier's business) and does not compute rooflines
(``clsim.traffic.roofline``).
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clsim.errors import ProfileError

SHIPPED_DIR = Path(__file__).resolve().parent
ENV_VAR = "CLSIM_PROFILE_PATH"

# key -> (type, minimum allowed value). Tables over branches: validation is driven by this.
_NUMBERS: dict[str, tuple[type, float]] = {
    "dram_bandwidth_gbs": (float, 0.0),
    "fp32_gflops": (float, 0.0),
    "fp16_gflops": (float, 0.0),
    "local_banks": (int, 0),  # 0 = local memory not banked (CPUs)
    "local_bank_width_bytes": (int, 1),
    "subgroup_size": (int, 1),
    "max_work_group_size": (int, 1),
    "sector_bytes": (int, 1),
    "line_bytes": (int, 1),
    # Optional: the cache model (clsim.traffic.cache) needs all six; without them the traffic
    # report gives the unique and uncached figures only.
    "compute_units": (int, 1),  # units with a private L1 (SMs, Xe-cores, CPU cores)
    "local_mem_bytes": (int, 1),  # CL_DEVICE_LOCAL_MEM_SIZE
    "l1_bytes": (int, 1),
    "l1_ways": (int, 1),
    "l2_bytes": (int, 1),
    "l2_ways": (int, 1),
    # Optional: the occupancy and local-memory terms of the predicted time
    # (clsim.traffic.occupancy); without them those terms are left out, and said so.
    "local_bandwidth_gbs": (float, 0.0),  # all compute units' local memory together
    "subgroups_per_cu": (int, 1),  # resident sub-groups per compute unit at most
    "schedulers_per_cu": (int, 1),  # sub-groups a compute unit issues from per clock
}
_OPTIONAL = ("compute_units", "local_mem_bytes", "l1_bytes", "l1_ways", "l2_bytes", "l2_ways",
             "local_bandwidth_gbs", "subgroups_per_cu", "schedulers_per_cu")
REDUCTION_ORDERS = ("fixed", "left", "tree", "halfpairs", "tree16", "shuffled")  # runtime.config
_REQUIRED = ("name", "description", "dram_bandwidth_gbs", "fp32_gflops", "fp16_gflops",
             "local_banks", "local_bank_width_bytes", "subgroup_size", "max_work_group_size")
_DEFAULTS = {"sector_bytes": 32, "line_bytes": 128, **dict.fromkeys(_OPTIONAL)}
_KNOWN = set(_REQUIRED) | set(_DEFAULTS) | {"aliases", "sources", "reduction_order"}


@dataclass(frozen=True)
class DeviceProfile:
    """Peak figures of one device. Bandwidth in GB/s (1e9 bytes/s), throughput in GFLOP/s."""

    name: str
    description: str
    dram_bandwidth_gbs: float
    fp32_gflops: float
    fp16_gflops: float
    local_banks: int
    local_bank_width_bytes: int
    subgroup_size: int
    max_work_group_size: int
    sector_bytes: int = 32
    line_bytes: int = 128
    compute_units: int | None = None
    local_mem_bytes: int | None = None
    l1_bytes: int | None = None
    l1_ways: int | None = None
    l2_bytes: int | None = None
    l2_ways: int | None = None
    local_bandwidth_gbs: float | None = None
    subgroups_per_cu: int | None = None
    schedulers_per_cu: int | None = None
    reduction_order: str = "fixed"  # order of float sums in reduce/scan collectives
    aliases: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    path: str = field(default="", compare=False)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.dram_bandwidth_gbs * 1e9

    def peak_flops_per_s(self, precision: str = "fp32") -> float:
        """Peak throughput in flop/s for ``"fp32"`` or ``"fp16"``."""
        if precision not in ("fp32", "fp16"):
            raise ProfileError(
                f"profile {self.name}: precision {precision!r} unknown. Use 'fp32' or 'fp16'.",
                profile=self.name)
        gflops = self.fp32_gflops if precision == "fp32" else self.fp16_gflops
        return gflops * 1e9

    @property
    def has_caches(self) -> bool:
        """Whether the profile describes its caches (the cache model needs all of it)."""
        return all(getattr(self, key) is not None for key in
                   ("compute_units", "l1_bytes", "l1_ways", "l2_bytes", "l2_ways"))

    def ridge_point(self, precision: str = "fp32") -> float:
        """Arithmetic intensity (flop/byte) where the memory and compute roofs meet."""
        return self.peak_flops_per_s(precision) / self.bandwidth_bytes_per_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "description": self.description,
            "dram_bandwidth_gbs": self.dram_bandwidth_gbs, "fp32_gflops": self.fp32_gflops,
            "fp16_gflops": self.fp16_gflops, "local_banks": self.local_banks,
            "local_bank_width_bytes": self.local_bank_width_bytes,
            "subgroup_size": self.subgroup_size, "max_work_group_size": self.max_work_group_size,
            "sector_bytes": self.sector_bytes, "line_bytes": self.line_bytes,
            **{key: getattr(self, key) for key in _OPTIONAL},
            "reduction_order": self.reduction_order,
            "aliases": list(self.aliases), "sources": dict(self.sources), "path": self.path,
        }


def search_dirs() -> list[Path]:
    """Directories searched for profiles by name: ``CLSIM_PROFILE_PATH`` entries, then shipped."""
    dirs = []
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if not entry:
            continue
        d = Path(entry).expanduser()
        if not d.is_dir():
            raise ProfileError(
                f"{ENV_VAR}: {entry!r} is not a directory. Point it at a folder of .toml "
                "profiles or unset it.", path=entry)
        dirs.append(d)
    dirs.append(SHIPPED_DIR)
    return dirs


def _catalogue() -> dict[str, Path]:
    """Every known name and alias -> file; earlier directories win (user overrides shipped)."""
    found: dict[str, Path] = {}
    for d in reversed(search_dirs()):
        for path in sorted(d.glob("*.toml")):
            names = {path.stem.lower()}
            try:
                data = _read_toml(path)
                names.add(str(data.get("name", path.stem)).lower())
                names.update(str(a).lower() for a in data.get("aliases", ()))
            except ProfileError:
                pass  # listed by file stem; the error surfaces when it is loaded
            for n in names:
                found[n] = path
    return found


def list_profiles() -> list[str]:
    """Names (file stems) of every profile found, user directories included, sorted."""
    names = set()
    for d in search_dirs():
        names.update(p.stem.lower() for p in d.glob("*.toml"))
    return sorted(names)


def load_profile(name_or_path: str | os.PathLike[str]) -> DeviceProfile:
    """Load a profile by short name, alias, or path to a ``.toml`` file."""
    text = os.fspath(name_or_path)
    looks_like_path = text.endswith(".toml") or os.sep in text or "/" in text
    if looks_like_path:
        path = Path(text).expanduser()
        if not path.is_file():
            raise ProfileError(
                f"{text}: profile file not found. Check the path, or pass a short name "
                f"({', '.join(list_profiles())}).", path=text)
        return _parse(path)
    path = _catalogue().get(text.lower())
    if path is None:
        raise ProfileError(
            f"profile {text!r}: not found in {', '.join(str(d) for d in search_dirs())}. "
            f"Known profiles: {', '.join(list_profiles())}; pass a path to a .toml file or add "
            f"a directory to {ENV_VAR}.", profile=text)
    return _parse(path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML ({exc}). Fix the syntax.",
                           path=str(path)) from exc
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read ({exc.strerror}).", path=str(path)) from exc


def _parse(path: Path) -> DeviceProfile:
    data = _read_toml(path)
    unknown = sorted(set(data) - _KNOWN)
    if unknown:
        raise ProfileError(
            f"{path}: unknown key {unknown[0]!r}. Valid keys: {', '.join(sorted(_KNOWN))}.",
            path=str(path), key=unknown[0])
    for key in _REQUIRED:
        if key not in data:
            raise ProfileError(f"{path}: missing key {key!r}. Add it to the profile.",
                               path=str(path), key=key)
    values: dict[str, Any] = {**_DEFAULTS, **{k: v for k, v in data.items() if k in _NUMBERS}}
    for key, (kind, minimum) in _NUMBERS.items():
        if values[key] is not None:
            values[key] = _number(path, key, values[key], kind, minimum)
    order = data.get("reduction_order", "fixed")
    if order not in REDUCTION_ORDERS:
        raise ProfileError(f"{path}: key 'reduction_order' must be one of {REDUCTION_ORDERS}, "
                           f"got {order!r}.", path=str(path), key="reduction_order")
    for key in ("name", "description"):
        if not isinstance(data[key], str) or not data[key]:
            raise ProfileError(f"{path}: key {key!r} must be a non-empty string.",
                               path=str(path), key=key)
    aliases = data.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ProfileError(f"{path}: key 'aliases' must be a list of strings.",
                           path=str(path), key="aliases")
    sources = data.get("sources", {})
    if not isinstance(sources, dict):
        raise ProfileError(f"{path}: key 'sources' must be a table ([sources]).",
                           path=str(path), key="sources")
    return DeviceProfile(
        name=data["name"], description=data["description"], aliases=tuple(aliases),
        sources={str(k): str(v) for k, v in sources.items()}, path=str(path),
        reduction_order=order, **values)


def _number(path: Path, key: str, value: Any, kind: type, minimum: float) -> Any:
    # bool is an int subclass in Python; 'true' for a bandwidth is a typo, not 1.
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is float:
        ok = numeric and math.isfinite(value) and value > minimum
        need = "a positive number"
    else:
        ok = numeric and isinstance(value, int) and value >= minimum
        need = f"an integer >= {int(minimum)}"
    if not ok:
        raise ProfileError(f"{path}: key {key!r} must be {need}, got {value!r}.",
                           path=str(path), key=key)
    return kind(value)
