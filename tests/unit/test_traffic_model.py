"""Unit tests of clsim.traffic: counting kernels, records, profiles, roofline and reports.

The expected numbers are the worked examples of docs/traffic-model.md, computed by hand.
Counting functions are checked both as plain Python and njit-compiled.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clsim.errors import ProfileError, SimulationError
from clsim.profiles import ENV_VAR
from clsim.traffic import (
    TrafficReport,
    TrafficSite,
    compare_table,
    counting,
    list_profiles,
    load_profile,
    measured_vs_bound,
    plot_roofline,
    roofline,
    write_report_json,
)

SHIPPED = ("h200", "a100", "adreno750", "intel-xe", "arc", "cpu")
FIGURES = ("dram_bandwidth_gbs", "fp32_gflops", "fp16_gflops", "local_banks",
           "local_bank_width_bytes", "subgroup_size", "max_work_group_size")


@pytest.fixture(params=["python", "njit"])
def impl(request):
    """The counting functions, plain or compiled: both must give identical numbers."""
    return counting if request.param == "python" else counting.compiled()


def lanes(*values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


# ---------------------------------------------------------------- coalescing


@pytest.mark.parametrize(("stride", "sectors", "lines"), [(1, 4, 1), (2, 8, 2), (32, 32, 32)])
def test_strided_float_loads(impl, stride, sectors, lines):
    """32 lanes loading float32 a[stride*i]: stride 1 -> 4 sectors/1 line, 2 -> 8/2, 32 -> 32/32."""
    addrs = np.arange(32, dtype=np.int64) * 4 * stride
    assert impl.count_sectors(addrs, 4, 32) == (sectors, lines)


def test_order_does_not_matter(impl):
    """Reversed and shuffled lanes touch the same sectors as ascending ones."""
    addrs = np.arange(32, dtype=np.int64) * 8
    rng = np.random.default_rng(1)
    assert impl.count_sectors(addrs[::-1].copy(), 4, 32) == (8, 2)
    assert impl.count_sectors(rng.permutation(addrs), 4, 32) == (8, 2)


def test_broadcast_and_empty(impl):
    """All lanes on one address fetch 1 sector; count 0 fetches nothing; lanes past count are
    ignored."""
    assert impl.count_sectors(np.zeros(32, np.int64), 4, 32) == (1, 1)
    assert impl.count_sectors(np.zeros(32, np.int64), 4, 0) == (0, 0)
    garbage = lanes(0, 4, 10_000, 20_000)
    assert impl.count_sectors(garbage, 4, 2) == (1, 1)


def test_misaligned_wide_access_spans_two_sectors(impl):
    """A 16-byte access at byte 28 touches sectors 0 and 1; one at 60 adds sector 2 only."""
    assert impl.count_sectors(lanes(28), 16, 1) == (2, 1)
    assert impl.count_sectors(lanes(28, 60), 16, 2) == (3, 1)
    assert impl.count_sectors(lanes(120), 16, 1) == (2, 2)


def test_vload4_against_scalar(impl):
    """vload4 of 32 lanes: 512 B in 16 sectors; four scalar a[4i+k] steps: 512 B in 64 sectors."""
    i = np.arange(32, dtype=np.int64)
    assert impl.count_sectors(16 * i, 16, 32) == (16, 4)
    scalar = [impl.count_sectors(16 * i + 4 * k, 4, 32) for k in range(4)]
    assert sum(s for s, _ in scalar) == 64
    assert sum(ln for _, ln in scalar) == 16


def _reference_units(addrs, width, unit):
    return len({b // unit for a in addrs for b in range(a, a + width)})


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(0, 4096), min_size=1, max_size=128), st.sampled_from([1, 2, 4, 8, 16]))
def test_sectors_match_brute_force(addrs, width):
    """For any lanes (up to 128, any order, any width) both versions equal a set-based count."""
    arr = np.asarray(addrs, dtype=np.int64)
    expected = (_reference_units(addrs, width, 32), _reference_units(addrs, width, 128))
    assert counting.count_sectors(arr, width, len(addrs)) == expected
    assert counting.compiled().count_sectors(arr, width, len(addrs)) == expected


def test_sector_size_parameters(impl):
    """Sector and line sizes are parameters: 32 contiguous floats are 2 lines of 64 bytes."""
    addrs = np.arange(32, dtype=np.int64) * 4
    assert impl.count_sectors(addrs, 4, 32, 64, 64) == (2, 2)


# ---------------------------------------------------------------- local memory banks


def test_transpose_unpadded_and_padded(impl):
    """tile[lx][ly] read by 32 lanes: 31 replays with rows of 32 floats, 0 with rows of 33;
    the row-wise store tile[ly][lx] is conflict-free."""
    lx = np.arange(32, dtype=np.int64)
    ly = 5
    assert impl.bank_replays(32 * lx + ly, 32, 32) == 31
    assert impl.bank_replays(33 * lx + ly, 32, 32) == 0
    assert impl.bank_replays(32 * ly + lx, 32, 32) == 0


def test_broadcast_is_not_a_conflict(impl):
    """32 lanes on one word: 0 replays; two words of one bank: 1 replay."""
    assert impl.bank_replays(np.full(32, 7, np.int64), 32, 32) == 0
    assert impl.bank_replays(lanes(0, 0, 32, 32), 4, 32) == 1


def test_bank_edge_cases(impl):
    """No lanes, or an unbanked memory (nbanks 0), give 0; 16 banks halve the period."""
    assert impl.bank_replays(lanes(0, 32), 0, 32) == 0
    assert impl.bank_replays(lanes(0, 32, 64), 3, 0) == 0
    assert impl.bank_replays(np.arange(32, dtype=np.int64), 32, 16) == 1


def test_float4_words_make_four_passes(impl):
    """32 lanes loading contiguous float4: 128 words, 4 per bank -> 3 replays."""
    assert impl.bank_replays(np.arange(128, dtype=np.int64), 128, 32) == 3


@settings(deadline=None, max_examples=60)
@given(st.lists(st.integers(0, 2048), min_size=1, max_size=128), st.sampled_from([16, 32]))
def test_replays_match_brute_force(words, nbanks):
    """Replays equal max over banks of distinct words in the bank, minus 1, in both versions."""
    per_bank: dict[int, set[int]] = {}
    for w in words:
        per_bank.setdefault(w % nbanks, set()).add(w)
    expected = max(len(s) for s in per_bank.values()) - 1
    arr = np.asarray(words, dtype=np.int64)
    assert counting.bank_replays(arr, len(words), nbanks) == expected
    assert counting.compiled().bank_replays(arr, len(words), nbanks) == expected


# ---------------------------------------------------------------- footprint


def test_stencil_reads_footprint_once(impl):
    """A periodic 3-point stencil reads each float 3 times: unique read bytes = 1 x size."""
    n = 100
    bitmap = counting.new_bitmap(4 * n)
    requested = 0
    for i in range(n):
        for j in ((i - 1) % n, i, (i + 1) % n):
            impl.mark_bytes(bitmap, 4 * j, 4)
            requested += 4
    assert requested == 3 * 4 * n
    assert impl.count_marked(bitmap) == 4 * n


def test_mark_bytes_returns_new_and_clips(impl):
    """mark_bytes returns newly flagged bytes only and ignores bytes outside the bitmap."""
    bitmap = counting.new_bitmap(100)
    assert impl.mark_bytes(bitmap, 96, 8) == 4
    assert impl.mark_bytes(bitmap, 90, 8) == 6
    assert impl.mark_bytes(bitmap, -4, 8) == 4
    assert impl.count_marked(bitmap) == 14


# ---------------------------------------------------------------- records


def vector_add_report(n: int = 1 << 24) -> TrafficReport:
    """The vector_add launch of the docs: 2 loads + 1 store, coalesced, one add per item."""
    src = "c[i] = a[i] + b[i]"
    sites = [TrafficSite(13, src, buf, kind, "global", "float32", n, 4 * n, n // 8, n // 32,
                         0, n // 32)
             for buf, kind in (("a", "load"), ("b", "load"), ("c", "store"))]
    return TrafficReport("vector_add", 32, sites, {"a": 4 * n, "b": 4 * n}, {"c": 4 * n},
                         {"add": n}, work_items=n)


def transpose_report(padded: bool) -> TrafficReport:
    """1024x1024 transpose through a 32x32 tile: the local load site runs 32768 steps."""
    steps = 1024 * 1024 // 32
    n = 1024 * 1024
    sites = [
        TrafficSite(8, "tile[ly][lx] = src[gy*w+gx]", "src", "load", "global", "float32",
                    n, 4 * n, steps * 4, steps, 0, steps),
        TrafficSite(8, "tile[ly][lx] = src[gy*w+gx]", "tile", "store", "local", "float32",
                    n, 4 * n, 0, 0, 0, steps),
        TrafficSite(10, "dst[oy*w+ox] = tile[lx][ly]", "tile", "load", "local", "float32",
                    n, 4 * n, 0, 0, 0 if padded else 31 * steps, steps),
        TrafficSite(10, "dst[oy*w+ox] = tile[lx][ly]", "dst", "store", "global", "float32",
                    n, 4 * n, steps * 4, steps, 0, steps),
    ]
    return TrafficReport("transpose", 32, sites, {"src": 4 * n}, {"dst": 4 * n}, {})


REQUIRED_TOTALS = ("global_load_bytes", "global_store_bytes", "global_load_sectors",
                   "global_store_sectors", "local_load_bytes", "local_store_bytes",
                   "local_bank_conflicts", "unique_read_bytes", "unique_write_bytes", "flops",
                   "global_load_lines", "global_store_lines", "int_ops")
REQUIRED_SITE_KEYS = ("line", "buffer", "kind", "space", "executions", "bytes", "sectors",
                      "bank_conflicts")


def test_vector_add_totals():
    """vector_add over n: flops = n, unique = 3 x 4n bytes, 3 x n/8 sectors, 100% efficiency."""
    n = 1 << 24
    t = vector_add_report(n).totals
    for key in REQUIRED_TOTALS:
        assert key in t
    assert t["flops"] == n
    assert t["global_load_bytes"] == 8 * n and t["global_store_bytes"] == 4 * n
    assert t["global_load_sectors"] == n // 4 and t["global_store_sectors"] == n // 8
    assert t["unique_read_bytes"] + t["unique_write_bytes"] == 12 * n
    assert t["global_efficiency"] == 1.0


def test_transpose_totals():
    """Unpadded transpose: 31 x 32768 = 1,015,808 replays; padded: 0. Local bytes kept apart."""
    assert transpose_report(False).totals["local_bank_conflicts"] == 1_015_808
    assert transpose_report(True).totals["local_bank_conflicts"] == 0
    t = transpose_report(False).totals
    assert t["local_load_bytes"] == t["local_store_bytes"] == 4 * 1024 * 1024
    assert t["global_load_bytes"] == 4 * 1024 * 1024


def test_flop_formula():
    """flops = add + mul + 2*fma + div + sqrt + transcendental; int ops are separate."""
    counts = {"add": 1, "mul": 2, "fma": 3, "div": 4, "sqrt": 5, "transcendental": 6, "int": 7}
    t = TrafficReport("k", 32, flop_counts=counts).totals
    assert t["flops"] == 1 + 2 + 6 + 4 + 5 + 6
    assert t["int_ops"] == 7


def test_sites_are_dicts_with_efficiency():
    """report.sites is a list of dicts with the keys outside code relies on, plus efficiency;
    the records stay available as site_records."""
    r = vector_add_report(1024)
    assert isinstance(r.sites, list) and all(isinstance(s, dict) for s in r.sites)
    for key in REQUIRED_SITE_KEYS:
        assert key in r.sites[0]
    assert r.sites[0]["efficiency"] == 1.0
    assert isinstance(r.site_records[0], TrafficSite)
    strided = TrafficSite(3, "x = a[32*i]", "a", "load", "global", "float32", 32, 128, 32, 32)
    assert strided.efficiency == 0.125
    local = TrafficSite(3, "x = t[i]", "t", "load", "local", "float32", 32, 128)
    assert local.efficiency is None


def test_json_round_trip():
    """from_json(to_json()) gives back an equal report; the JSON carries the totals."""
    r = transpose_report(False)
    text = r.to_json()
    assert TrafficReport.from_json(text) == r
    assert json.loads(text)["totals"]["local_bank_conflicts"] == 1_015_808


def test_bad_records_raise():
    """An unknown kind, space or flop counter, or a dict lacking a key, raises SimulationError."""
    with pytest.raises(SimulationError, match="kind"):
        TrafficSite(1, "", "a", "read", "global", "float32", 1, 4)
    with pytest.raises(SimulationError, match="space"):
        TrafficSite(1, "", "a", "load", "private", "float32", 1, 4)
    with pytest.raises(SimulationError, match="flop"):
        TrafficReport("k", 32, flop_counts={"adds": 1})
    data = vector_add_report(64).to_dict()
    del data["kernel"]
    with pytest.raises(SimulationError, match="'kernel'"):
        TrafficReport.from_dict(data)


def test_format_table():
    """The text table has a header, one row per site with its efficiency, and the totals."""
    text = transpose_report(False).format_table()
    lines = text.splitlines()
    assert lines[1].split()[:9] == ["line", "buffer", "kind", "space", "execs", "bytes",
                                    "sectors", "eff%", "replays"]
    assert sum(1 for ln in lines if ln.lstrip().startswith(("8 ", "10 "))) == 4
    assert "1,015,808" in text and "100.0" in text and "totals" in text


# ---------------------------------------------------------------- profiles


def test_every_shipped_profile_loads_with_sources():
    """Each shipped profile loads by short name, has positive peaks and cites every figure."""
    assert set(SHIPPED) <= set(list_profiles())
    for name in SHIPPED:
        p = load_profile(name)
        assert p.name == name
        assert p.dram_bandwidth_gbs > 0 and p.fp32_gflops > 0 and p.fp16_gflops > 0
        assert p.subgroup_size >= 1 and p.max_work_group_size >= p.subgroup_size
        for key in FIGURES:
            assert p.sources.get(key), f"{name}: no source for {key}"


def test_profile_figures():
    """The datasheet figures: H200 4.8 TB/s and 67 TFLOPS, A100 2039 GB/s and 19.5 TFLOPS."""
    h200, a100 = load_profile("h200"), load_profile("A100")
    assert (h200.dram_bandwidth_gbs, h200.fp32_gflops) == (4800.0, 67000.0)
    assert (a100.dram_bandwidth_gbs, a100.fp32_gflops) == (2039.0, 19500.0)
    assert (h200.local_banks, h200.local_bank_width_bytes, h200.subgroup_size) == (32, 4, 32)
    assert load_profile("iris-xe").name == "intel-xe"
    assert load_profile("cpu").local_banks == 0


GOOD = """
name = "mygpu"
description = "test device"
dram_bandwidth_gbs = 100.0
fp32_gflops = 1000.0
fp16_gflops = 2000.0
local_banks = 32
local_bank_width_bytes = 4
subgroup_size = 32
max_work_group_size = 256
"""


def test_profile_from_path_and_env(tmp_path, monkeypatch):
    """A .toml path loads directly; a CLSIM_PROFILE_PATH directory adds names and overrides
    shipped profiles of the same name."""
    (tmp_path / "mygpu.toml").write_text(GOOD)
    p = load_profile(tmp_path / "mygpu.toml")
    assert p.ridge_point() == 10.0 and p.sector_bytes == 32
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert load_profile("mygpu").path == str(tmp_path / "mygpu.toml")
    (tmp_path / "h200.toml").write_text(GOOD.replace('"mygpu"', '"h200"'))
    assert load_profile("h200").dram_bandwidth_gbs == 100.0


@pytest.mark.parametrize(("edit", "key"), [
    (lambda s: s.replace("fp32_gflops = 1000.0\n", ""), "fp32_gflops"),
    (lambda s: s.replace("100.0", '"fast"'), "dram_bandwidth_gbs"),
    (lambda s: s.replace("local_banks = 32", "local_banks = 32.5"), "local_banks"),
    (lambda s: s.replace("subgroup_size = 32", "subgroup_size = 0"), "subgroup_size"),
    (lambda s: s + "bandwith = 3\n", "bandwith"),
])
def test_malformed_profile_names_file_and_key(tmp_path, edit, key):
    """A missing, mistyped, out-of-range or unknown key raises ProfileError naming file and key."""
    path = tmp_path / "bad.toml"
    path.write_text(edit(GOOD))
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(path) in str(info.value) and repr(key) in str(info.value)
    assert info.value.key == key


def test_profile_syntax_and_missing(tmp_path, monkeypatch):
    """Bad TOML names the file; an unknown name lists known profiles; a bad env dir is named."""
    path = tmp_path / "broken.toml"
    path.write_text("name = \n")
    with pytest.raises(ProfileError, match=r"broken\.toml"):
        load_profile(path)
    with pytest.raises(ProfileError, match="h200"):
        load_profile("no-such-gpu")
    with pytest.raises(ProfileError, match="not found"):
        load_profile(tmp_path / "absent.toml")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(ProfileError, match=ENV_VAR):
        load_profile("h200")


# ---------------------------------------------------------------- roofline


def test_vector_add_roofline_on_h200():
    """vector_add, n = 2^24, on h200: intensity 1/12, memory bound, 41.94 us floor."""
    roof = roofline(vector_add_report().totals, load_profile("h200"))
    assert roof.flops == 1 << 24
    assert roof.unique_bytes == roof.sector_bytes == 201_326_592
    assert roof.intensity_unique == pytest.approx(1 / 12)
    assert roof.ridge_point == pytest.approx(67000 / 4800)
    assert roof.bound == "memory" and roof.bytes_basis == "sectors"
    assert roof.predicted_time_s == pytest.approx(201_326_592 / 4.8e12)
    assert roof.predicted_time_s == pytest.approx(41.94e-6, rel=1e-3)


def test_bound_switches_at_ridge():
    """Below the ridge point a launch is memory bound, above it compute bound; time follows."""
    p = load_profile("a100")
    base = {"unique_read_bytes": 1_000_000, "unique_write_bytes": 0}
    ridge_flops = p.ridge_point() * 1_000_000
    low = roofline({**base, "flops": int(ridge_flops / 2)}, p)
    high = roofline({**base, "flops": int(ridge_flops * 2)}, p)
    assert low.bound == "memory" and high.bound == "compute"
    assert low.bytes_basis == "unique"
    assert low.predicted_time_s == pytest.approx(1_000_000 / 2039e9)
    assert high.predicted_time_s == pytest.approx(int(ridge_flops * 2) / 19.5e12)


def test_sector_bytes_raise_the_floor():
    """Stride-32 loads: sectors 8x the unique bytes make the floor 8x the unique-bytes floor."""
    totals = {"flops": 0, "unique_read_bytes": 4096, "global_load_sectors": 1024}
    roof = roofline(totals, load_profile("h200"))
    assert roof.sector_bytes == 32768
    assert roof.predicted_time_s == pytest.approx(8 * roof.time_unique_s)


def test_no_bytes_and_measured():
    """No bytes moved: infinite intensity (None in JSON). measured_vs_bound = floor / measured."""
    roof = roofline({"flops": 10}, load_profile("cpu"))
    assert math.isinf(roof.intensity_unique) and roof.to_dict()["intensity_unique"] is None
    roof = roofline(vector_add_report().totals, load_profile("h200"))
    m = measured_vs_bound(2 * roof.predicted_time_s, roof)
    assert m.fraction_of_bound == pytest.approx(0.5)
    with pytest.raises(ValueError):
        measured_vs_bound(0.0, roof)


# ---------------------------------------------------------------- reports


def _rows():
    p = load_profile("h200")
    naive, tiled = transpose_report(False), transpose_report(True)
    return p, [("naive", naive, roofline(naive.totals, p)),
               ("padded", tiled, roofline(tiled.totals, p), 1e-3)]


def test_compare_table():
    """One column per variant, with replays, bound and the measured lines when times are given."""
    _, rows = _rows()
    text = compare_table(rows)
    assert "naive" in text.splitlines()[1] and "padded" in text.splitlines()[1]
    replays = next(ln for ln in text.splitlines() if ln.startswith("bank-conflict replays"))
    assert replays.split()[-2:] == ["1,015,808", "0"]
    assert "measured time" in text and "memory" in text
    assert "measured time" not in compare_table(rows[:1])


def test_write_report_json(tmp_path):
    """The JSON file holds the profile and each variant's traffic, roofline and measured time."""
    p, rows = _rows()
    path = write_report_json(tmp_path / "out" / "report.json", rows, p)
    data = json.loads(path.read_text())
    assert data["profile"]["name"] == "h200"
    assert [v["label"] for v in data["variants"]] == ["naive", "padded"]
    assert TrafficReport.from_dict(data["variants"][0]["traffic"]) == rows[0][1]
    assert data["variants"][1]["measured_s"] == 1e-3


def test_plot_writes_png(tmp_path):
    """plot_roofline writes a PNG file, also when some variants cannot be placed on log axes."""
    p, rows = _rows()
    vadd = vector_add_report()
    rows += [("vector_add", vadd, roofline(vadd.totals, p), 1e-4),
             ("empty", TrafficReport("k", 32), roofline({}, p))]
    path = plot_roofline(tmp_path / "roof.png", rows, p)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
