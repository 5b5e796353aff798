"""Side-by-side reports of kernel variants: text table, JSON file, roofline plot.

Each row is ``(label, TrafficReport, Roofline)`` or ``(label, TrafficReport, Roofline,
measured_s)``, e.g. a naive and a tiled transpose on the same profile. This module formats
and writes; it does not run launches, show progress bars (the CLI does) or choose profiles.
The plot uses matplotlib's Agg canvas directly, so it never switches the process-wide backend.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from clsim.errors import SimulationError
from clsim.profiles import DeviceProfile
from clsim.traffic.model import TrafficReport
from clsim.traffic.roofline import Roofline, measured_vs_bound

Row = tuple[str, TrafficReport, Roofline] | tuple[str, TrafficReport, Roofline, float | None]


def _unpack(row: Sequence[Any]) -> tuple[str, TrafficReport, Roofline, float | None]:
    if len(row) == 3:
        return row[0], row[1], row[2], None
    if len(row) == 4:
        return row[0], row[1], row[2], row[3]
    raise ValueError(f"a report row is (label, report, roofline[, measured_s]), got {len(row)} "
                     "items")


def format_seconds(s: float | None) -> str:
    """Human time: '41.9 us', '3.20 ms', '1.50 s'; '-' for None."""
    if s is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _fmt_int(v: int) -> str:
    return f"{v:,}"


def _fmt_ratio(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf"
    return f"{100 * v:.1f}%" if pct else f"{v:.3g}"


# (metric label, how to compute the cell). Tables over branches: add a metric by adding a row.
_METRICS: list[tuple[str, Callable[[TrafficReport, Roofline, float | None], str]]] = [
    ("global bytes requested", lambda t, r, m: _fmt_int(
        t.totals["global_load_bytes"] + t.totals["global_store_bytes"])),
    ("global sectors", lambda t, r, m: _fmt_int(
        t.totals["global_load_sectors"] + t.totals["global_store_sectors"])),
    ("coalescing efficiency", lambda t, r, m: _fmt_ratio(t.totals["global_efficiency"], True)),
    ("unique bytes", lambda t, r, m: _fmt_int(r.unique_bytes)),
    ("DRAM bytes (cache model)", lambda t, r, m: "-" if t.totals["dram_bytes"] is None
        else _fmt_int(t.totals["dram_bytes"])),
    ("local bytes", lambda t, r, m: _fmt_int(
        t.totals["local_load_bytes"] + t.totals["local_store_bytes"])),
    ("bank-conflict replays", lambda t, r, m: _fmt_int(t.totals["local_bank_conflicts"])),
    ("flops", lambda t, r, m: _fmt_int(r.flops)),
    ("intensity, unique (flop/B)", lambda t, r, m: _fmt_ratio(r.intensity_unique)),
    ("intensity, sectors (flop/B)", lambda t, r, m: _fmt_ratio(r.intensity_sectors)),
    ("bound", lambda t, r, m: r.bound),
    ("predicted time (floor)", lambda t, r, m: format_seconds(r.predicted_time_s)),
    ("floor with unique bytes", lambda t, r, m: format_seconds(r.time_unique_s)),
]
_MEASURED: list[tuple[str, Callable[[TrafficReport, Roofline, float | None], str]]] = [
    ("measured time", lambda t, r, m: format_seconds(m)),
    ("fraction of bound", lambda t, r, m: "-" if m is None else
        f"{100 * measured_vs_bound(m, r).fraction_of_bound:.1f}%"),
]


def compare_table(rows: Sequence[Row]) -> str:
    """A fixed-width table with one column per variant and one line per metric.

    Measured-time lines appear when any row carries a measured time.
    """
    unpacked = [_unpack(r) for r in rows]
    if not unpacked:
        return "(no variants)"
    metrics = list(_METRICS)
    if any(m is not None for *_, m in unpacked):
        metrics += _MEASURED
    profiles = sorted({r.profile for _, _, r, _ in unpacked})
    table = [["metric"] + [label for label, *_ in unpacked]]
    for name, cell in metrics:
        table.append([name] + [cell(t, r, m) for _, t, r, m in unpacked])
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out = [f"profile: {', '.join(profiles)}"]
    for line in table:
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:],
                                                                           strict=True)]
        out.append("  ".join(cells))
    return "\n".join(out)


def report_dict(rows: Sequence[Row], profile: DeviceProfile) -> dict[str, Any]:
    """What ``write_report_json`` writes: the profile and, per variant, traffic and roofline."""
    variants = []
    for label, traffic, roof, measured in (_unpack(r) for r in rows):
        entry: dict[str, Any] = {"label": label, "traffic": traffic.to_dict(),
                                 "roofline": roof.to_dict(), "measured_s": measured}
        if measured is not None:
            entry["measured_vs_bound"] = vars(measured_vs_bound(measured, roof))
        variants.append(entry)
    return {"profile": profile.to_dict(), "variants": variants}


def write_report_json(path: str | os.PathLike[str], rows: Sequence[Row],
                      profile: DeviceProfile) -> Path:
    """Write the comparison as JSON (see ``report_dict``); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report_dict(rows, profile), indent=2) + "\n")
    return out


def plot_roofline(path: str | os.PathLike[str], rows: Sequence[Row], profile: DeviceProfile,
                  precision: str = "fp32") -> Path:
    """Draw a log-log roofline (memory roof, compute roof) with one labelled point per variant.

    A point sits at the variant's intensity on its prediction basis (sector bytes when it has
    sectors); its height is the measured flop rate when a measured time is given, else the
    roof itself. Variants with no flops or no bytes cannot sit on log axes and are listed in
    the title instead. Returns the path written (PNG, SVG or PDF by extension).
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # matplotlib is the optional 'plot' extra
        raise SimulationError(
            f"plotting {path} needs matplotlib, which is not installed: "
            "pip install -e '.[plot]' (or pip install matplotlib)") from exc

    peak = profile.peak_flops_per_s(precision) / 1e9
    bw = profile.bandwidth_bytes_per_s / 1e9
    ridge = peak / bw
    points, skipped = [], []
    for label, _, roof, measured in (_unpack(r) for r in rows):
        x = roof.intensity
        y = (roof.flops / measured if measured else roof.attainable_flops_per_s) / 1e9
        if x > 0 and math.isfinite(x) and y > 0:
            points.append((label, x, y, measured is not None))
        else:
            skipped.append(label)

    xs = [ridge] + [p[1] for p in points]
    lo, hi = min(xs) / 10, max(xs) * 10
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig = Figure(figsize=(7, 5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.loglog(grid, [min(peak, bw * x) for x in grid], color="black", lw=2)
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    # Labels sit just above their roof; the headroom keeps the compute label inside the axes.
    ax.text(lo * 1.2, bw * lo * 10, f"{bw:,.4g} GB/s", fontsize=8)
    ax.text(hi / 1.2, peak * 1.2, f"{peak:,.6g} GFLOP/s ({precision})", ha="right", fontsize=8)
    ax.set_ylim(top=peak * 3)
    for label, x, y, was_measured in points:
        ax.plot([x], [y], "o" if was_measured else "s", ms=7)
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(6, -12), fontsize=8)
    ax.set_xlabel("arithmetic intensity (flop/byte)")
    ax.set_ylabel("performance (GFLOP/s)")
    title = f"roofline: {profile.name} ({profile.description})"
    if skipped:
        title += f"\nnot drawn (no flops or bytes): {', '.join(skipped)}"
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out
