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
from dataclasses import replace
from pathlib import Path
from typing import Any

from clsim.errors import SimulationError
from clsim.profiles import DeviceProfile
from clsim.traffic.model import TrafficReport
from clsim.traffic.roofline import BASES, Roofline, measured_vs_bound, roofline

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
    ("limit", lambda t, r, m: r.limit or r.bound),
    ("work-groups", lambda t, r, m: _fmt_int(t.work_groups) if t.work_groups else "-"),
    ("device share (occupancy)", lambda t, r, m: _fmt_ratio(r.fill, True)),
    ("local time (replays incl.)", lambda t, r, m: format_seconds(r.time_local_s)),
    ("roofline floor", lambda t, r, m: format_seconds(r.floor_time_s)),
    ("predicted time", lambda t, r, m: format_seconds(r.predicted_time_s)),
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
    for label, _, roof, _ in unpacked:
        out += [f"{label}: {note}" for note in roof.notes]
    return "\n".join(out)


def _summed(maps: Sequence[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in maps:
        for key, value in m.items():
            out[key] = out.get(key, 0) + value
    return out


def combined_row(label: str, rows: Sequence[Row], profile: DeviceProfile,
                 precision: str = "fp32") -> Row:
    """One row for launches the host runs one after another (a pipeline's stages).

    Traffic and flops are the sums of the stages' (a buffer one stage writes and the next
    reads counts in both: each launch moves it). The floor is the sum of the stages' floors,
    not the floor of the summed traffic, since a launch cannot overlap the one it waits for;
    the measured time is the sum when every stage has one.
    """
    parts = [_unpack(r) for r in rows]
    reports = [t for _, t, _, _ in parts]
    first = reports[0]
    traffic = TrafficReport(
        kernel=label, simd_width=first.simd_width,
        site_records=tuple(s for t in reports for s in t.site_records),
        unique_read_bytes=_summed([t.unique_read_bytes for t in reports]),
        unique_write_bytes=_summed([t.unique_write_bytes for t in reports]),
        flop_counts=_summed([t.flop_counts for t in reports]),
        work_items=sum(t.work_items for t in reports),
        work_groups=sum(t.work_groups for t in reports),
        sector_bytes=first.sector_bytes, line_bytes=first.line_bytes,
        dram_read_bytes=_summed([t.dram_read_bytes for t in reports]),
        dram_write_bytes=_summed([t.dram_write_bytes for t in reports]),
        uncached_bytes=_summed([t.uncached_bytes for t in reports]),
        unreplayed_bytes=sum(t.unreplayed_bytes for t in reports),
        cache_model=first.cache_model)
    roofs = [r for _, _, r, _ in parts]
    summed = {name: sum(getattr(r, name) for r in roofs) for name in
              ("time_compute_s", "time_memory_s", "time_unique_s", "predicted_time_s",
               "floor_time_s")}
    roof = replace(roofline(traffic.totals, profile, precision, roofs[0].bytes_basis),
                   **summed,
                   bound="compute" if summed["time_compute_s"] > summed["time_memory_s"]
                   else "memory")
    times = [m for *_, m in parts]
    measured = sum(times) if all(m is not None for m in times) else None
    return label, traffic, roof, measured


# (device name, the profile of its roofs, its rows with measured times)
DeviceRows = tuple[str, DeviceProfile, Sequence[Row]]


def _variants(rows: Sequence[Row]) -> list[dict[str, Any]]:
    variants = []
    for label, traffic, roof, measured in (_unpack(r) for r in rows):
        entry: dict[str, Any] = {"label": label, "traffic": traffic.to_dict(),
                                 "roofline": roof.to_dict(), "measured_s": measured}
        if measured is not None:
            entry["measured_vs_bound"] = vars(measured_vs_bound(measured, roof))
        variants.append(entry)
    return variants


def report_dict(rows: Sequence[Row], profile: DeviceProfile,
                devices: Sequence[DeviceRows] = ()) -> dict[str, Any]:
    """What ``write_report_json`` writes: the profile and, per variant, traffic and roofline;
    per measured device, its profile and its variants with measured times."""
    return {"profile": profile.to_dict(), "variants": _variants(rows),
            "devices": [{"device": name, "profile": prof.to_dict(),
                         "variants": _variants(device_rows)}
                        for name, prof, device_rows in devices]}


def write_report_json(path: str | os.PathLike[str], rows: Sequence[Row],
                      profile: DeviceProfile, devices: Sequence[DeviceRows] = ()) -> Path:
    """Write the comparison as JSON (see ``report_dict``); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report_dict(rows, profile, devices), indent=2) + "\n")
    return out


def _matplotlib(path: Any):
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # matplotlib is the optional 'plot' extra
        raise SimulationError(
            f"plotting {path} needs matplotlib, which is not installed: "
            "pip install -e '.[plot]' (or pip install matplotlib)") from exc
    return Figure, FigureCanvasAgg


def _points(rows: Sequence[Row]) -> tuple[list[tuple[str, float, float, float | None]],
                                          list[tuple[str, float, float | None, str]],
                                          list[str]]:
    """Per variant with flops: (label, intensity, model GFLOP/s, measured GFLOP/s or None);
    per variant with bytes but no flops, for the bandwidth panel: (label, model GB/s, measured
    GB/s or None, its limit); and the labels of those with no bytes (no intensity, no
    bandwidth)."""
    points, bandwidth, skipped = [], [], []
    for label, _, roof, measured in (_unpack(r) for r in rows):
        x, model = roof.intensity, roof.attainable_flops_per_s / 1e9
        if x > 0 and math.isfinite(x) and model > 0:
            points.append((label, x, model, roof.flops / measured / 1e9 if measured else None))
        elif roof.flops == 0 and roof.moved_bytes > 0 and roof.predicted_time_s > 0:
            bandwidth.append((label, roof.achieved_bytes_per_s / 1e9,
                              roof.moved_bytes / measured / 1e9 if measured else None,
                              roof.limit or roof.bound))
        else:
            skipped.append(label)
    return points, bandwidth, skipped


def _figure(value: float) -> str:
    """A roof's rate for its label: 67,000 / 4,800 / 4.77."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _clear_spot(lo: float, ridge: float, xs: list[float]) -> float:
    """Where along the memory roof (lo .. ridge) its label is farthest from every point."""
    spots = [lo * (ridge / lo) ** (k / 20) for k in range(1, 12)]
    return max(spots, key=lambda x: min((abs(math.log(x / p)) for p in xs), default=0.0))


def _label_on_line(ax, x0: float, x1: float, y0: float, y1: float, text: str, **kw) -> None:
    """Write ``text`` on the segment (x0, y0)-(x1, y1) from x0, turned to its slope on screen
    (the axes' limits must be final)."""
    (dx0, dy0), (dx1, dy1) = ax.transData.transform([(x0, y0), (x1, y1)])
    angle = math.degrees(math.atan2(dy1 - dy0, dx1 - dx0))
    ax.text(x0, y0, text, rotation=angle, rotation_mode="anchor", va="bottom", fontsize=8,
            **kw)


def roofline_figure(rows: Sequence[Row], profile: DeviceProfile, precision: str = "fp32",
                    measured_on: str | None = None):
    """The roofline chart as a matplotlib Figure (see ``plot_roofline``): a log-log roofline
    for variants with flops, a bandwidth panel for variants with none (a copy, a transpose)."""
    Figure, FigureCanvasAgg = _matplotlib("the roofline")
    points, bandwidth, skipped = _points(rows)
    panels = (1 if points or not bandwidth else 0) + (1 if bandwidth else 0)
    fig = Figure(figsize=(7.5 * panels, 5.5), dpi=100)
    FigureCanvasAgg(fig)
    basis = {_unpack(r)[2].bytes_basis for r in rows}
    axis = " / ".join(BASES[b] for b in sorted(basis)) or BASES["sectors"]
    if points or not bandwidth:
        ax = fig.add_subplot(1, panels, 1)
        _draw_roofline(ax, points, profile, precision, measured_on, axis)
    if bandwidth:
        _draw_bandwidth(fig.add_subplot(1, panels, panels), bandwidth, profile, measured_on,
                        axis)
    title = f"{profile.name} ({profile.description})"
    if skipped:
        title += f"\nnot drawn (no bytes): {', '.join(skipped)}"
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def _draw_roofline(ax, points, profile: DeviceProfile, precision: str,
                   measured_on: str | None, axis: str) -> None:
    peak = profile.peak_flops_per_s(precision) / 1e9
    bw = profile.bandwidth_bytes_per_s / 1e9
    ridge = peak / bw
    xs = [ridge] + [p[1] for p in points]
    lo, hi = min(xs) / 10, max(xs) * 10
    ys = [peak] + [p[2] for p in points] + [p[3] for p in points if p[3]]
    bottom = min(min(ys) / 10, bw * lo)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom, peak * 3)
    ax.plot([lo, ridge, hi], [bw * lo, peak, peak], color="black", lw=2)
    ax.axvline(ridge, color="grey", ls=":", lw=1)
    start = _clear_spot(lo, ridge, [p[1] for p in points])
    _label_on_line(ax, start, ridge, bw * start, peak, f"{_figure(bw)} GB/s")
    _label_on_line(ax, hi / 1.15, hi, peak, peak, f"{_figure(peak)} GFLOP/s "
                   f"({precision})", ha="right")
    _draw_points(ax, points)
    _legend(ax, profile, measured_on, any(p[3] for p in points))
    ax.set_xlabel(f"arithmetic intensity (flop per byte; bytes: {axis})", fontsize=9)
    ax.set_ylabel("performance (GFLOP/s)")
    ax.set_title("roofline", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)


def _draw_bandwidth(ax, bandwidth, profile: DeviceProfile, measured_on: str | None,
                    axis: str) -> None:
    """Kernels with no flops have no intensity: one bar per variant, its predicted bandwidth
    against the DRAM roof (a vertical line), labelled with the share of the roof and the limit
    that binds; a measured bandwidth is a filled circle on its bar."""
    roof = profile.bandwidth_bytes_per_s / 1e9
    top = max([roof] + [b[1] for b in bandwidth] + [b[2] for b in bandwidth if b[2]])
    rows = list(range(len(bandwidth)))[::-1]  # first variant on top
    for row, (label, model, measured, limit) in zip(rows, bandwidth, strict=True):
        color = f"C{rows.index(row) % 10}"
        ax.barh(row, model, height=0.5, color=color, alpha=0.35, edgecolor=color)
        share = f"{model / roof:.0%}" if model >= roof / 100 else f"{model / roof:.2%}"
        ax.text(top * 0.01, row, f"{_figure(model)} GB/s, {share} of the roof; limit: {limit}",
                fontsize=8, va="center")  # inside the bar: never clipped
        if measured:
            ax.plot([measured], [row], "o", ms=7, color=color)
    ax.axvline(roof, color="black", lw=2)
    ax.text(roof, len(bandwidth) - 0.45, f" DRAM roof {_figure(roof)} GB/s", fontsize=8,
            va="bottom", ha="right")
    ax.set_yticks(rows, [b[0] for b in bandwidth], fontsize=8)
    ax.set_ylim(-0.6, len(bandwidth) - 0.1)
    ax.set_xlim(0, top * 1.1)
    ax.set_xlabel(f"bandwidth (GB/s; bytes: {axis})", fontsize=9)
    where = f"; circles: measured on {measured_on}" if measured_on and any(
        b[2] for b in bandwidth) else ""
    ax.set_title(f"no flops: bandwidth against the DRAM roof (bars: model{where})",
                 fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)


def _draw_points(ax, points) -> None:
    """Per variant: a hollow model square at its predicted performance (on the roof unless
    local memory or occupancy binds), labelled; a filled measured circle joined to it by a
    dotted line."""
    for index, (label, x, model, measured) in enumerate(points):
        color = f"C{index % 10}"
        ax.plot([x], [model], "s", ms=8, mfc="none", mec=color, mew=1.5)
        ax.annotate(label, (x, model), textcoords="offset points", xytext=(7, 4), fontsize=8,
                    color=color)
        if measured:
            ax.plot([x], [measured], "o", ms=7, color=color)
            ax.plot([x, x], [measured, model], ":", color=color, lw=1)


def _legend(ax, profile: DeviceProfile, measured_on: str | None, any_measured: bool) -> None:
    from matplotlib.lines import Line2D  # with the figure: matplotlib is optional

    handles = [Line2D([], [], ls="none", marker="s", mfc="none", mec="black",
                      label=f"model: predicted on {profile.name} (traffic, local memory, "
                            "occupancy)")]
    if any_measured:
        where = f" on {measured_on}" if measured_on else ""
        handles.append(Line2D([], [], ls="none", marker="o", color="black",
                              label=f"measured{where}: flops / kernel time"))
    ax.legend(handles=handles, loc="lower right", fontsize=8)


def plot_roofline(path: str | os.PathLike[str], rows: Sequence[Row], profile: DeviceProfile,
                  precision: str = "fp32", measured_on: str | None = None) -> Path:
    """Draw a log-log roofline of ``profile`` with each variant's points, and write it.

    The roofs carry their labels along their lines. Every variant has a model point (hollow
    square) at its intensity on its roofline's bytes basis, at flops over its predicted time
    (on the roof unless local memory or occupancy binds, then below it); a variant with a
    measured time also has a measured point (filled circle, flops / time), joined by a dotted
    line. The legend tells them apart (``measured_on`` names the device), the x-axis label
    states which bytes the intensity counts. Variants with no flops (a copy, a transpose)
    have no intensity: they are drawn in a bandwidth panel beside it, a bar per variant
    against the DRAM roof. Returns the path written (PNG, SVG or PDF by extension).
    """
    _matplotlib(path)
    fig = roofline_figure(rows, profile, precision, measured_on)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    return out
