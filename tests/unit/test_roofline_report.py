"""Rooflines people accept (clsim/traffic/roofline.py, clsim/traffic/report.py): the bytes
basis chosen and stated, roof labels on their lines, model and measured points told apart,
and a pipeline's stages summed into one column."""

from __future__ import annotations

import math

import pytest

from clsim.errors import ProfileError
from clsim.profiles import load_profile
from clsim.traffic import TrafficReport, TrafficSite, compare_table, roofline
from clsim.traffic.report import combined_row, roofline_figure

pytest.importorskip("matplotlib", reason="the roofline chart needs the 'plot' extra")


def _report(n: int, flops_per_item: int, kernel: str = "k", dram: bool = True) -> TrafficReport:
    """n float loads and n stores, coalesced; ``flops_per_item`` adds each; with the cache
    model's DRAM bytes set to half the unique bytes (a fake cache that halves traffic)."""
    sites = [TrafficSite(3, "y[i] = f(x[i])", buf, kind, "global", "float32", n, 4 * n,
                         n // 8, n // 32, 0, n // 32)
             for buf, kind in (("x", "load"), ("y", "store"))]
    cached = {"dram_read_bytes": {"x": n}, "dram_write_bytes": {"y": n},
              "uncached_bytes": {"x": 4 * n, "y": 4 * n}, "cache_model": "fake"} if dram else {}
    return TrafficReport(kernel, 32, sites, {"x": 4 * n}, {"y": 4 * n},
                         {"add": n * flops_per_item}, work_items=n, **cached)


H200 = load_profile("h200")


def test_the_basis_names_the_bytes_the_floor_counts():
    """basis='dram' times the cache model's bytes, 'unique' the footprint; the default keeps
    sectors. The intensity follows the basis."""
    totals = _report(1 << 20, 4).totals
    by_basis = {b: roofline(totals, H200, basis=b) for b in ("dram", "unique", "sectors")}
    assert roofline(totals, H200).bytes_basis == "sectors"
    assert by_basis["dram"].moved_bytes == 2 * (1 << 20)
    assert by_basis["unique"].moved_bytes == 8 * (1 << 20)
    assert by_basis["dram"].intensity == pytest.approx(4 * (1 << 20) / (2 * (1 << 20)))
    assert by_basis["dram"].predicted_time_s < by_basis["unique"].predicted_time_s


def test_a_dram_basis_without_the_cache_model_is_refused():
    """No DRAM estimate (no caches in the profile): say so and what to use instead."""
    totals = _report(1 << 10, 1, dram=False).totals
    with pytest.raises(ProfileError, match="basis 'dram' needs the cache model"):
        roofline(totals, H200, basis="dram")
    with pytest.raises(ProfileError, match="bytes basis 'dramm' is unknown"):
        roofline(totals, H200, basis="dramm")


def _texts(fig, start: str):
    return [t for t in fig.axes[0].texts if t.get_text().startswith(start)]


def test_roof_labels_sit_on_their_lines_turned_to_their_slope():
    """The bandwidth label's anchor is on the memory roof (y = bandwidth * x), turned to the
    roof's angle on screen; the compute label lies flat on the compute roof."""
    fig = roofline_figure([("a", r := _report(1 << 20, 4), roofline(r.totals, H200))], H200)
    (memory,) = _texts(fig, "4,800 GB/s")
    x, y = memory.get_position()
    assert y == pytest.approx(H200.dram_bandwidth_gbs * x, rel=1e-9)
    assert 10 < memory.get_rotation() < 80
    (compute,) = _texts(fig, "67,000 GFLOP/s")
    assert compute.get_position()[1] == pytest.approx(H200.fp32_gflops)
    assert compute.get_rotation() == pytest.approx(0, abs=1e-6)


def _markers(fig, marker: str) -> list[tuple[float, float]]:
    return [(line.get_xdata()[0], line.get_ydata()[0]) for line in fig.axes[0].lines
            if line.get_marker() == marker]


def test_model_and_measured_points_are_told_apart():
    """Each variant has a hollow model square on the roof; a measured time adds a filled
    circle at flops / time; the legend names both and the device."""
    report = _report(1 << 20, 4)
    roof = roofline(report.totals, H200, basis="dram")
    fig = roofline_figure([("timed", report, roof, 1e-3), ("model only", report, roof)], H200,
                          measured_on="intel-cpu")
    assert len(_markers(fig, "s")) == 2
    ((x, y),) = _markers(fig, "o")
    assert x == pytest.approx(roof.intensity)
    assert y == pytest.approx(roof.flops / 1e-3 / 1e9)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[0].startswith("model: predicted on h200")
    assert legend[1].startswith("measured on intel-cpu")
    unmeasured = roofline_figure([("model only", report, roof)], H200)
    assert len(unmeasured.axes[0].get_legend().get_texts()) == 1


@pytest.mark.parametrize("basis, words", [
    ("dram", "DRAM bytes through the cache model"), ("unique", "unique bytes"),
    (None, "uncached sector bytes"),
])
def test_the_x_axis_states_which_bytes_it_counts(basis, words):
    report = _report(1 << 16, 2)
    fig = roofline_figure([("a", report, roofline(report.totals, H200, basis=basis))], H200)
    assert words in fig.axes[0].get_xlabel()


def test_a_pipeline_column_sums_its_stages():
    """Flops and bytes add up; the floor is the sum of the stages' floors (one launch waits
    for the other), above the floor of the summed traffic when one stage is compute bound
    and the other memory bound; measured times add up when every stage has one."""
    memory_stage = _report(1 << 22, 1, "stage0")
    compute_stage = _report(1 << 10, 200_000, "stage1")
    rows = [("stage0", memory_stage, roofline(memory_stage.totals, H200), 2e-3),
            ("stage1", compute_stage, roofline(compute_stage.totals, H200), 1e-3)]
    label, traffic, roof, measured = combined_row("two (sum)", rows, H200)
    assert label == "two (sum)" and traffic.kernel == "two (sum)"
    assert roof.flops == rows[0][2].flops + rows[1][2].flops
    assert traffic.totals["unique_bytes"] == (memory_stage.totals["unique_bytes"]
                                              + compute_stage.totals["unique_bytes"])
    assert traffic.totals["dram_bytes"] == (memory_stage.totals["dram_bytes"]
                                            + compute_stage.totals["dram_bytes"])
    assert roof.predicted_time_s == pytest.approx(rows[0][2].predicted_time_s
                                                  + rows[1][2].predicted_time_s)
    assert roof.predicted_time_s > roofline(traffic.totals, H200).predicted_time_s
    assert measured == pytest.approx(3e-3)
    assert combined_row("x", [rows[0], rows[1][:3]], H200)[3] is None
    assert "two (sum)" in compare_table([*rows, (label, traffic, roof, measured)])


def test_the_report_adds_a_pipeline_column_after_its_last_stage():
    """clsim report argmax: the two-phase pipeline's stages in launch order, then their sum;
    a report with one stage only has no sum."""
    import kernels_py  # noqa: F401  (registers the library's specs)
    from clsim.traffic.cli import _with_pipelines, variants

    specs = variants(["argmax"])
    names = [s.name for s in specs]
    assert names.index("argmax_partials") + 1 == names.index("argmax_final")
    rows = [(s.name, r := _report(1 << 10, 1, s.name), roofline(r.totals, H200)) for s in specs]
    labels = [row[0] for row in _with_pipelines(specs, rows, H200, "fp32")]
    assert labels[names.index("argmax_final") + 1] == "argmax_two_phase (sum)"
    assert len(labels) == len(names) + 1
    one = [i for i, s in enumerate(specs) if s.name != "argmax_final"]
    kept = _with_pipelines([specs[i] for i in one], [rows[i] for i in one], H200, "fp32")
    assert not any("(sum)" in row[0] for row in kept)


def test_infinite_intensity_is_not_drawn():
    """A variant with flops and no bytes cannot sit on log axes: it is named in the title."""
    report = TrafficReport("k", 32, (), {}, {}, {"add": 10})
    fig = roofline_figure([("no bytes", report, roofline(report.totals, H200))], H200)
    assert "not drawn (no bytes): no bytes" in fig._suptitle.get_text()
    assert math.isinf(roofline(report.totals, H200).intensity)
