"""Memory-traffic and roofline model of simulated launches.

``model`` holds the records (``TrafficSite``, ``TrafficReport``), ``counting`` the per-step
counters the engine compiles into its loops, ``profiles`` the device profiles, ``roofline`` the
bound, ``report`` the comparison table, JSON and plot. The model is documented with worked
examples in docs/traffic-model.md.

Importing this package imports neither numba nor matplotlib; ``counting.compiled()`` and
``report.plot_roofline`` import them when first used.
"""

from clsim.profiles import DeviceProfile, list_profiles, load_profile
from clsim.traffic.counting import (
    bank_replays,
    compiled,
    count_marked,
    count_sectors,
    mark_bytes,
    new_bitmap,
)
from clsim.traffic.model import FLOP_KINDS, TrafficReport, TrafficSite, flops_from_counts
from clsim.traffic.report import compare_table, plot_roofline, write_report_json
from clsim.traffic.roofline import MeasuredVsBound, Roofline, measured_vs_bound, roofline

__all__ = [
    "FLOP_KINDS",
    "DeviceProfile",
    "MeasuredVsBound",
    "Roofline",
    "TrafficReport",
    "TrafficSite",
    "bank_replays",
    "compare_table",
    "compiled",
    "count_marked",
    "count_sectors",
    "flops_from_counts",
    "list_profiles",
    "load_profile",
    "mark_bytes",
    "measured_vs_bound",
    "new_bitmap",
    "plot_roofline",
    "roofline",
    "write_report_json",
]
