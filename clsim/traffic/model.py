"""Traffic records: one ``TrafficSite`` per access site, one ``TrafficReport`` per launch.

A site is one load or store in the kernel source (line + buffer + direction + address space),
counted over the whole launch. The report adds per-buffer unique footprints and flop counters,
and derives the totals the CLI, the roofline and outside tests read (``report.totals``,
``report.sites`` as plain dicts). It also (de)serialises to JSON and prints a fixed-width table.

This module only holds and derives numbers. It does not count anything during a launch (the
engine's instrumentation does, with ``clsim.traffic.counting``), and it knows no device
(``clsim.traffic.profiles`` / ``roofline`` do).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from clsim.errors import SimulationError

KINDS = ("load", "store")
# "constant" is __constant memory: it lives in DRAM, so it is folded into the global totals;
# "image" is an image's pixels, read through the texture cache: folded in too, and also
# totalled on its own (image_*).
SPACES = ("global", "local", "constant", "image")
FLOP_KINDS = ("add", "mul", "fma", "div", "sqrt", "transcendental", "int")
REPORT_VERSION = 1


def flops_from_counts(counts: Mapping[str, int]) -> int:
    """Floating-point operations from a counter dict: add + mul + 2*fma + div + sqrt + transc.

    ``int`` ops are not flops; they are reported separately as ``int_ops``.
    """
    return int(
        counts.get("add", 0) + counts.get("mul", 0) + 2 * counts.get("fma", 0)
        + counts.get("div", 0) + counts.get("sqrt", 0) + counts.get("transcendental", 0)
    )


@dataclass(frozen=True)
class TrafficSite:
    """Counters of one access site over a whole launch.

    ``executions`` counts lane accesses (one per work-item that ran the access; a ``vload4`` is
    one access of 16 bytes). ``bytes`` is what the lanes asked for, ``sectors``/``lines`` what
    the coalescer touched, summed over sub-group steps. ``steps`` is the number of sub-group
    steps (warp-level requests). ``bank_conflicts`` is the sum of per-step replays (local only).
    ``func`` names the function holding the site (line numbers are per file).
    """

    line: int
    source: str
    buffer: str
    kind: str
    space: str
    dtype: str
    executions: int
    bytes: int
    sectors: int = 0
    lines: int = 0
    bank_conflicts: int = 0
    steps: int = 0
    sector_bytes: int = 32
    func: str = ""  # the function the site is in (a helper's name when not the kernel's)
    file: str = ""  # the source file of ``line`` (a helper may live in another file)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SimulationError(
                f"traffic site line {self.line} ({self.buffer}): kind {self.kind!r} is not one "
                f"of {KINDS}.", line=self.line, buffer=self.buffer)
        if self.space not in SPACES:
            raise SimulationError(
                f"traffic site line {self.line} ({self.buffer}): space {self.space!r} is not "
                f"one of {SPACES}.", line=self.line, buffer=self.buffer)

    @property
    def efficiency(self) -> float | None:
        """Coalescing efficiency, bytes requested / (sectors x sector size); None without sectors
        (local memory, or a site that never ran)."""
        if self.sectors <= 0:
            return None
        return self.bytes / (self.sectors * self.sector_bytes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["efficiency"] = self.efficiency
        return d


_SITE_FIELDS = tuple(f.name for f in fields(TrafficSite))


@dataclass(frozen=True)
class TrafficReport:
    """The traffic of one kernel launch.

    ``site_records`` holds the ``TrafficSite`` records; ``sites`` gives them as dicts.
    ``unique_read_bytes``/``unique_write_bytes`` map each global buffer to the distinct bytes
    read/written. ``flop_counts`` holds the counters named in ``FLOP_KINDS`` over the launch.
    ``work_items`` is the launch's global size (for per-work-item figures).

    With the cache model (a profile describing its caches), ``dram_read_bytes`` /
    ``dram_write_bytes`` map each global buffer to the DRAM bytes estimated through L1 and L2,
    ``uncached_bytes`` to its sectors' bytes with no cache (the upper bound), and
    ``cache_model`` describes the caches; ``unreplayed_bytes`` counts sectors the model could
    not replay (counted in DRAM reads as if uncached). ``buffers`` gives the three figures per
    buffer: unique footprint, DRAM estimate, uncached.
    """

    kernel: str
    simd_width: int
    site_records: tuple[TrafficSite, ...] = ()
    unique_read_bytes: dict[str, int] = field(default_factory=dict)
    unique_write_bytes: dict[str, int] = field(default_factory=dict)
    flop_counts: dict[str, int] = field(default_factory=dict)
    work_items: int = 0
    sector_bytes: int = 32
    line_bytes: int = 128
    dram_read_bytes: dict[str, int] = field(default_factory=dict)
    dram_write_bytes: dict[str, int] = field(default_factory=dict)
    uncached_bytes: dict[str, int] = field(default_factory=dict)
    unreplayed_bytes: int = 0
    cache_model: str | None = None
    work_groups: int = 0  # the launch's work-groups (for occupancy; 0: unknown)

    def __post_init__(self) -> None:
        # Accept any iterable / mapping from the engine but store immutable-ish, complete copies.
        object.__setattr__(self, "site_records", tuple(self.site_records))
        object.__setattr__(self, "unique_read_bytes", dict(self.unique_read_bytes))
        object.__setattr__(self, "unique_write_bytes", dict(self.unique_write_bytes))
        for name in ("dram_read_bytes", "dram_write_bytes", "uncached_bytes"):
            object.__setattr__(self, name, {k: int(v) for k, v in getattr(self, name).items()})
        unknown = set(self.flop_counts) - set(FLOP_KINDS)
        if unknown:
            raise SimulationError(
                f"traffic report of {self.kernel}: unknown flop counter(s) {sorted(unknown)}. "
                f"Use {FLOP_KINDS}.", kernel=self.kernel)
        counts = {k: int(self.flop_counts.get(k, 0)) for k in FLOP_KINDS}
        object.__setattr__(self, "flop_counts", counts)

    @property
    def sites(self) -> list[dict[str, Any]]:
        """The site records as plain dicts (with ``efficiency``), in record order."""
        return [s.to_dict() for s in self.site_records]

    @property
    def buffers(self) -> dict[str, dict[str, int | None]]:
        """Per global buffer: ``unique`` (bytes read + bytes written, the ideal), ``dram``
        (estimated through the caches; None without the cache model) and ``uncached`` (its
        sectors' bytes, each step paying its own: the upper bound; None without the model)."""
        names = dict.fromkeys([*self.unique_read_bytes, *self.unique_write_bytes])
        cached = self.cache_model is not None
        return {n: {
            "unique": self.unique_read_bytes.get(n, 0) + self.unique_write_bytes.get(n, 0),
            "dram": (self.dram_read_bytes.get(n, 0) + self.dram_write_bytes.get(n, 0))
            if cached else None,
            "uncached": self.uncached_bytes.get(n, 0) if cached else None,
        } for n in names}

    @property
    def totals(self) -> dict[str, Any]:
        """Launch-wide sums; see docs/traffic-model.md for every key."""
        t: dict[str, Any] = {
            "global_load_bytes": 0, "global_store_bytes": 0,
            "global_load_sectors": 0, "global_store_sectors": 0,
            "global_load_lines": 0, "global_store_lines": 0,
            "global_load_executions": 0, "global_store_executions": 0,
            "local_load_bytes": 0, "local_store_bytes": 0,
            "local_bank_conflicts": 0,
            "image_load_bytes": 0, "image_store_bytes": 0,
            "image_load_sectors": 0, "image_store_sectors": 0,
        }
        for s in self.site_records:
            if s.space == "local":
                t[f"local_{s.kind}_bytes"] += s.bytes
                t["local_bank_conflicts"] += s.bank_conflicts
            else:
                t[f"global_{s.kind}_bytes"] += s.bytes
                t[f"global_{s.kind}_sectors"] += s.sectors
                t[f"global_{s.kind}_lines"] += s.lines
                t[f"global_{s.kind}_executions"] += s.executions
            if s.space == "image":
                t[f"image_{s.kind}_bytes"] += s.bytes
                t[f"image_{s.kind}_sectors"] += s.sectors
        sectors = t["global_load_sectors"] + t["global_store_sectors"]
        requested = t["global_load_bytes"] + t["global_store_bytes"]
        t["global_sector_bytes"] = sectors * self.sector_bytes
        t["global_efficiency"] = requested / (sectors * self.sector_bytes) if sectors else None
        t["unique_read_bytes"] = sum(self.unique_read_bytes.values())
        t["unique_write_bytes"] = sum(self.unique_write_bytes.values())
        t["unique_bytes"] = t["unique_read_bytes"] + t["unique_write_bytes"]
        cached = self.cache_model is not None
        t["dram_read_bytes"] = (sum(self.dram_read_bytes.values()) + self.unreplayed_bytes
                                if cached else None)
        t["dram_write_bytes"] = sum(self.dram_write_bytes.values()) if cached else None
        t["dram_bytes"] = t["dram_read_bytes"] + t["dram_write_bytes"] if cached else None
        t["flops"] = flops_from_counts(self.flop_counts)
        t["int_ops"] = self.flop_counts["int"]
        t["sector_size_bytes"] = self.sector_bytes
        t["line_size_bytes"] = self.line_bytes
        t["work_items"] = self.work_items
        t["work_groups"] = self.work_groups
        return t

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; ``totals`` and per-site ``efficiency`` are included for readers but
        ignored by ``from_dict`` (they are derived)."""
        return {
            "version": REPORT_VERSION,
            "kernel": self.kernel,
            "simd_width": self.simd_width,
            "work_items": self.work_items,
            "work_groups": self.work_groups,
            "sector_bytes": self.sector_bytes,
            "line_bytes": self.line_bytes,
            "sites": self.sites,
            "unique_read_bytes": dict(self.unique_read_bytes),
            "unique_write_bytes": dict(self.unique_write_bytes),
            "flop_counts": dict(self.flop_counts),
            "dram_read_bytes": dict(self.dram_read_bytes),
            "dram_write_bytes": dict(self.dram_write_bytes),
            "uncached_bytes": dict(self.uncached_bytes),
            "unreplayed_bytes": self.unreplayed_bytes,
            "cache_model": self.cache_model,
            "totals": self.totals,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrafficReport:
        """Rebuild a report written by ``to_dict`` (or parsed from ``to_json``)."""
        try:
            version = data.get("version", REPORT_VERSION)
            if version != REPORT_VERSION:
                raise SimulationError(
                    f"traffic report: version {version} is not {REPORT_VERSION}. Re-run the "
                    "launch with this clsim to regenerate it.")
            sites = tuple(
                TrafficSite(**{k: v for k, v in s.items() if k in _SITE_FIELDS})
                for s in data["sites"]
            )
            return cls(
                kernel=data["kernel"],
                simd_width=int(data["simd_width"]),
                site_records=sites,
                unique_read_bytes=dict(data.get("unique_read_bytes", {})),
                unique_write_bytes=dict(data.get("unique_write_bytes", {})),
                flop_counts=dict(data.get("flop_counts", {})),
                work_items=int(data.get("work_items", 0)),
                sector_bytes=int(data.get("sector_bytes", 32)),
                line_bytes=int(data.get("line_bytes", 128)),
                dram_read_bytes=dict(data.get("dram_read_bytes", {})),
                dram_write_bytes=dict(data.get("dram_write_bytes", {})),
                uncached_bytes=dict(data.get("uncached_bytes", {})),
                unreplayed_bytes=int(data.get("unreplayed_bytes", 0)),
                cache_model=data.get("cache_model"),
                work_groups=int(data.get("work_groups", 0)),
            )
        except KeyError as exc:
            raise SimulationError(
                f"traffic report: missing key {exc.args[0]!r}. Pass a dict made by "
                "TrafficReport.to_dict().") from exc
        except TypeError as exc:
            raise SimulationError(f"traffic report: malformed site record ({exc}).") from exc

    @classmethod
    def from_json(cls, text: str) -> TrafficReport:
        return cls.from_dict(json.loads(text))

    def format_table(self, source_width: int = 40) -> str:
        """A fixed-width text table: one row per site, then the totals."""
        header = ("line", "buffer", "kind", "space", "execs", "bytes", "sectors", "eff%",
                  "replays", "source")
        rows = [header]
        for s in self.site_records:
            eff = "-" if s.efficiency is None else f"{100 * s.efficiency:.1f}"
            src = s.source.strip()
            if s.func and s.func != self.kernel:  # a helper's line: say whose
                src = f"[{s.func}] {src}"
            if len(src) > source_width:
                src = src[: source_width - 3] + "..."
            where = str(s.line)
            if s.func and s.func != self.kernel and s.file:  # its line is in its own file
                where = f"{os.path.basename(s.file)}:{s.line}"
            rows.append((where, s.buffer, s.kind, s.space, f"{s.executions:,}",
                         f"{s.bytes:,}", f"{s.sectors:,}", eff, f"{s.bank_conflicts:,}", src))
        out = [f"traffic of {self.kernel} (simd width {self.simd_width}, "
               f"{self.sector_bytes}-byte sectors)"]
        out.extend(_align(rows, right={0, 4, 5, 6, 7, 8}))
        out.append("")
        out.extend(_totals_lines(self.totals))
        if self.cache_model is not None:
            out.extend(["", f"DRAM through the caches ({self.cache_model})"])
            rows = [("buffer", "unique (ideal)", "DRAM (cache model)", "uncached (bound)")]
            per = self.buffers
            t = self.totals
            rows += [(n, f"{b['unique']:,}", f"{b['dram']:,}", f"{b['uncached']:,}")
                     for n, b in per.items()]
            rows.append(("total", f"{t['unique_bytes']:,}", f"{t['dram_bytes']:,}",
                         f"{t['global_sector_bytes']:,}"))
            out.extend("  " + line for line in _align(rows, right={1, 2, 3}))
        return "\n".join(out)


def _align(rows: Iterable[tuple[str, ...]], right: set[int]) -> list[str]:
    """Pad columns to equal width; numbers right-aligned, text left-aligned; last column free."""
    rows = list(rows)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(r, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return lines


def _totals_lines(t: Mapping[str, Any]) -> list[str]:
    eff = t["global_efficiency"]
    eff_text = "-" if eff is None else f"{100 * eff:.1f}%"
    pairs = [
        ("global load", f"{t['global_load_bytes']:,} B in {t['global_load_sectors']:,} sectors, "
                        f"{t['global_load_lines']:,} lines"),
        ("global store", f"{t['global_store_bytes']:,} B in {t['global_store_sectors']:,} "
                         f"sectors, {t['global_store_lines']:,} lines"),
        ("coalescing", eff_text),
        ("local", f"{t['local_load_bytes']:,} B loaded, {t['local_store_bytes']:,} B stored, "
                  f"{t['local_bank_conflicts']:,} bank replays"),
        ("unique", f"{t['unique_read_bytes']:,} B read, {t['unique_write_bytes']:,} B written"),
        ("arithmetic", f"{t['flops']:,} flops, {t['int_ops']:,} int ops"),
    ]
    width = max(len(k) for k, _ in pairs)
    return ["totals"] + [f"  {k.ljust(width)}  {v}" for k, v in pairs]
