"""The limits the predicted time adds to the roofline (docs/traffic-model.md, "Limits"):
local memory with its bank-conflict replays, and occupancy (work-groups against compute units,
sub-groups against schedulers); which limit binds is said in words, and a kernel with no flops
is drawn against the bandwidth roof instead of being left off the chart."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel
from clsim.profiles import load_profile
from clsim.traffic import roofline
from clsim.traffic.model import TrafficReport, TrafficSite
from clsim.traffic.report import compare_table, plot_roofline

H200 = load_profile("h200")
N = 1024 * 1024
STEPS = N // 32


def transpose_report(padded: bool) -> TrafficReport:
    """1024x1024 float transpose through a 32x32 tile in 1024 work-groups of 32x32: the
    unpadded tile's column reads replay 31 times per step (1,015,808 replays)."""
    sites = [
        TrafficSite(8, "tile[ly][lx] = src[...]", "src", "load", "global", "float32",
                    N, 4 * N, STEPS * 4, STEPS, 0, STEPS),
        TrafficSite(8, "tile[ly][lx] = src[...]", "tile", "store", "local", "float32",
                    N, 4 * N, 0, 0, 0, STEPS),
        TrafficSite(10, "dst[...] = tile[lx][ly]", "tile", "load", "local", "float32",
                    N, 4 * N, 0, 0, 0 if padded else 31 * STEPS, STEPS),
        TrafficSite(10, "dst[...] = tile[lx][ly]", "dst", "store", "global", "float32",
                    N, 4 * N, STEPS * 4, STEPS, 0, STEPS),
    ]
    return TrafficReport("transpose", 32, sites, {"src": 4 * N}, {"dst": 4 * N}, {},
                         work_items=N, work_groups=N // 1024)


def test_bank_conflicts_enter_the_predicted_time():
    plain = roofline(transpose_report(False).totals, H200)
    padded = roofline(transpose_report(True).totals, H200)
    assert plain.bound == "local" and padded.bound == "memory"
    # (4 MiB stored + 4 MiB loaded + 1,015,808 replays x 128 B) over 33,454 GB/s; the padded
    # one is DRAM-bound
    assert plain.predicted_time_s == pytest.approx((8 * N + 31 * STEPS * 128) / 33454e9)
    assert padded.predicted_time_s == pytest.approx(2 * 4 * N / 4800e9)
    assert plain.predicted_time_s > 2 * padded.predicted_time_s
    assert plain.floor_time_s == padded.floor_time_s  # the classic roofline cannot tell
    assert "limit: local memory" in plain.notes[0] and "1,015,808 bank-conflict replays" in \
        plain.notes[0]
    assert padded.notes[0].startswith("limit: DRAM bandwidth")


def test_one_work_group_cannot_fill_an_h200():
    """One work-group of 64 work-items: 1 of 132 SMs, 2 warps for 4 schedulers."""
    totals = {**transpose_report(True).totals, "work_items": 64, "work_groups": 1}
    roof = roofline(totals, H200)
    assert roof.fill == pytest.approx(1 / 132 * 2 / 4)
    assert roof.predicted_time_s == pytest.approx(roof.floor_time_s * 264)
    assert roof.limit == "memory (occupancy)"
    (note,) = [n for n in roof.notes if n.startswith("occupancy")]
    assert "1 work-group for 132 compute units (1 busy)" in note
    assert "2 sub-groups per busy unit for 4 schedulers" in note
    assert "too small to fill h200" in note
    assert roofline(transpose_report(True).totals, H200).fill == 1.0  # 1024 groups fill it


def test_profile_without_the_figures_says_what_is_left_out():
    bare = replace(H200, local_bandwidth_gbs=None, schedulers_per_cu=None)
    roof = roofline(transpose_report(False).totals, bare)
    assert roof.bound == "memory" and roof.time_local_s is None
    assert any("not modelled on h200: local memory and bank conflicts" in n and
               "no schedulers_per_cu" in n for n in roof.notes)


@kernel
def copy_rows(src, dst, n):
    i = get_global_id(0)
    if i < n:
        dst[i] = src[i]


def test_engine_reports_work_groups():
    n = 1000
    result = clsim.run(copy_rows, (1024,), (64,), (np.ones(n, np.float32),
                                                   np.zeros(n, np.float32), np.int32(n)),
                       traffic=True, jit=False)
    assert result.traffic.work_groups == 16
    assert TrafficReport.from_dict(result.traffic.to_dict()).work_groups == 16


def test_zero_flop_kernels_are_drawn_on_a_bandwidth_panel(tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs the 'plot' extra (matplotlib)")
    rows = [(f"transpose{' padded' if p else ''}", transpose_report(p),
             roofline(transpose_report(p).totals, H200)) for p in (False, True)]
    path = plot_roofline(tmp_path / "transpose.png", rows, H200)
    assert path.is_file() and path.stat().st_size > 10_000
    from clsim.traffic.report import _points, roofline_figure

    points, bandwidth, skipped = _points(rows)
    assert points == [] and skipped == [] and [b[0] for b in bandwidth] == [
        "transpose", "transpose padded"]
    fig = roofline_figure(rows, H200)
    (ax,) = fig.axes
    assert "bandwidth" in ax.get_title() and "not drawn" not in fig._suptitle.get_text()
    table = compare_table(rows)
    assert "transpose: limit: local memory" in table and "predicted time" in table
