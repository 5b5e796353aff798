"""The cache model of traffic counting: DRAM bytes estimated through L1 and L2.

Each case has an answer known by hand (docs/traffic-model.md, "Caches"): a streaming copy
reads and writes every sector once; a GEMV reads ``x`` from DRAM once when it fits in a cache
and once per row when it does not; a tiled matmul whose inputs fit in the L2 reads each once
although its tiles are fetched n/16 times. The kernels are in tests/bench/traffic_kernels.py.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim.profiles import load_profile
from clsim.traffic import TrafficReport

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import traffic_kernels as tk


def _run(case, profile=None):
    kernel, global_size, local_size, args, expected = case
    result = clsim.run(kernel, global_size, local_size, args, traffic=True, profile=profile)
    out = [a for a in args if isinstance(a, np.ndarray)][-1]
    np.testing.assert_allclose(out, next(iter(expected.values())), rtol=1e-3, atol=1e-3)
    return result.traffic


def _profile(**caches):
    """h200 with other caches (sets of one way each are what the sizes make them)."""
    return dataclasses.replace(load_profile("h200"), **caches)


def test_streaming_copy_reads_and_writes_each_sector_once():
    """dst = src over 2^16 floats: every figure is the buffer size, for both buffers."""
    n = 1 << 16
    t = _run(tk.copy_case(n))
    assert t.cache_model is not None and "L2" in t.cache_model
    for name in ("src", "dst"):
        assert t.buffers[name] == {"unique": 4 * n, "dram": 4 * n, "uncached": 4 * n}
    assert t.dram_read_bytes["src"] == 4 * n and t.dram_read_bytes["dst"] == 0
    assert t.dram_write_bytes["dst"] == 4 * n and t.dram_write_bytes["src"] == 0
    assert t.totals["dram_bytes"] == 8 * n == t.totals["unique_bytes"]


def test_gemv_reads_x_once_when_it_fits_in_l2():
    """256 rows x 1024 columns on h200: x (4 KiB) is fetched by every row (uncached: 256 x
    4 KiB) but comes from DRAM once; m streams (its DRAM bytes are its size)."""
    rows, cols = 256, 1024
    t = _run(tk.gemv_case(rows, cols))
    b = t.buffers
    assert b["x"]["uncached"] == rows * cols * 4
    assert b["x"]["dram"] == cols * 4 == b["x"]["unique"]
    assert b["m"]["dram"] == rows * cols * 4 == b["m"]["uncached"]
    assert b["y"]["dram"] == rows * 4


def test_gemv_rereads_x_when_no_cache_holds_it():
    """With a 4 KiB L2 and L1s smaller than x (16 KiB), each row's m stream evicts x: every
    row reads x from DRAM again, the uncached bound."""
    rows, cols = 64, 4096
    tiny = _profile(compute_units=4, l1_bytes=2048, l1_ways=4, l2_bytes=4096, l2_ways=4)
    b = _run(tk.gemv_case(rows, cols), tiny).buffers
    assert b["x"]["dram"] == rows * cols * 4 == b["x"]["uncached"]


def test_gemv_x_stays_in_a_fully_associative_l1():
    """One compute unit with a 64 KiB fully associative L1 (512 ways of 128 bytes) keeps x
    (16 KiB, refreshed every row) while m streams through, even with a useless L2: x comes
    from DRAM once."""
    rows, cols = 64, 4096
    one_unit = _profile(compute_units=1, l1_bytes=65536, l1_ways=512, l2_bytes=4096,
                        l2_ways=4)
    b = _run(tk.gemv_case(rows, cols), one_unit).buffers
    assert b["x"]["dram"] == cols * 4
    assert b["x"]["uncached"] == rows * cols * 4


def test_tiled_matmul_reads_each_input_once_through_l2():
    """c = a @ b, 64 x 64 with 16 x 16 tiles: every group fetches a row of tiles of a and a
    column of b (n/16 = 4 groups share each tile), so uncached = 4 x the buffer; a 50 MB L2
    holds all of it, so DRAM = the footprint."""
    n = 64
    t = _run(tk.matmul_case(n))
    b = t.buffers
    for name in ("a", "b"):
        assert b[name]["unique"] == b[name]["dram"] == n * n * 4
        assert b[name]["uncached"] == (n // 16) * n * n * 4
    assert b["c"]["dram"] == n * n * 4


def test_profile_without_caches_gives_no_dram_estimate():
    """A profile that does not describe its caches: the report says so (None), the other
    figures are unchanged."""
    n = 1 << 12
    t = _run(tk.copy_case(n), _profile(l2_bytes=None))
    assert t.cache_model is None
    assert t.totals["dram_bytes"] is None and t.buffers["src"]["dram"] is None
    assert t.totals["global_sector_bytes"] == 8 * n


def test_cache_figures_survive_json():
    """to_json / from_json keep the DRAM figures and the cache description."""
    t = _run(tk.copy_case(1 << 12))
    back = TrafficReport.from_json(t.to_json())
    assert back.buffers == t.buffers and back.cache_model == t.cache_model
    assert "DRAM through the caches" in t.format_table()


def test_compare_table_shows_dram_bytes():
    """clsim report's table has a DRAM row: the cache model's bytes, '-' without it."""
    from clsim.traffic import compare_table, roofline

    p = load_profile("h200")
    with_cache = _run(tk.copy_case(1 << 12))
    without = _run(tk.copy_case(1 << 12), _profile(l2_bytes=None))
    text = compare_table([("cached", with_cache, roofline(with_cache.totals, p)),
                          ("no model", without, roofline(without.totals, p))])
    row = next(ln for ln in text.splitlines() if ln.startswith("DRAM bytes (cache model)"))
    assert row.split()[-2:] == [f"{8 << 12:,}", "-"]


def test_l2_replay_split_over_threads_counts_as_one_part(monkeypatch):
    """The L2's sets are replayed in ranges on parallel threads: with evictions and dirty
    write-backs in play (a small L2 under a GEMV and a copy), 1, 2 and 3 parts give the
    same DRAM figures."""
    import clsim.traffic.cache as cache

    small = _profile(compute_units=4, l1_bytes=2048, l1_ways=4, l2_bytes=16384, l2_ways=4)
    parts_seen = []
    real = cache._l2_pass

    def by_parts(parts):
        def spy(*args):
            parts_seen.append(parts)
            return real(*args[:-1], parts)
        return spy

    reports = []
    for parts in (1, 2, 3):
        monkeypatch.setattr(cache, "_l2_pass", by_parts(parts))
        reports.append([(_run(case, small).buffers, _run(case, small).dram_write_bytes)
                        for case in (tk.gemv_case(64, 4096), tk.copy_case(1 << 14))])
    assert parts_seen.count(3) == 4 and parts_seen.count(1) == 4
    assert reports[0] == reports[1] == reports[2]
    assert reports[0][0][0]["x"]["dram"] > reports[0][0][0]["x"]["unique"]  # evictions ran


def test_a_launch_after_a_longer_one_replays_only_its_own_stream():
    """The sector streams are kept from one launch for the next (``arena._streams``: their
    pages stay committed, no fault per page written): a copy launched after a longer one
    gets the same figures as launched first, as nothing reads a stream past what its own
    launch wrote, and it runs on the streams the longer launch left."""
    from clsim.traffic import arena

    arena._kept_streams.clear()
    alone = _run(tk.copy_case(1 << 10, seed=1))
    _run(tk.copy_case(1 << 16))  # a longer stream, left in the kept rows
    kept = arena._kept_streams[0]
    after = _run(tk.copy_case(1 << 10, seed=1))
    assert arena._kept_streams[0] is kept
    assert after.buffers == alone.buffers
    assert (after.dram_read_bytes, after.dram_write_bytes) == (
        alone.dram_read_bytes, alone.dram_write_bytes)


def test_the_footprint_flags_kept_for_the_next_launch_start_cleared():
    """The footprint flags are kept from one launch for the next of the same sizes
    (``arena._flags``: no page faults as they are first set) and cleared before it: a copy
    of half the elements after a whole copy reports half the footprint."""
    from clsim.traffic import arena

    kernel, global_size, local_size, (src, dst, n), _ = tk.copy_case(1 << 12)
    arena._kept_flags.clear()
    whole = clsim.run(kernel, global_size, local_size, (src, dst, n), traffic=True).traffic
    kept = arena._kept_flags[0]
    half = clsim.run(kernel, global_size, local_size, (src, dst, np.int32(n // 2)),
                     traffic=True).traffic
    assert arena._kept_flags[0] is kept
    assert whole.buffers["src"]["unique"] == 4 * n and whole.buffers["dst"]["unique"] == 4 * n
    assert half.buffers["src"]["unique"] == 2 * n and half.buffers["dst"]["unique"] == 2 * n


def test_only_the_flags_a_launch_set_are_counted_and_cleared():
    """A buffer's read and write flags are counted, and cleared for the next launch, only
    where the step counter flagged one of its elements so (``layout.B_FLAGGED``): a copy
    leaves all the flags clear, and the copy back the other way, with the same flags
    kept, counts only its own."""
    from clsim.traffic import arena

    kernel, global_size, local_size, (src, dst, n), _ = tk.copy_case(1 << 12)
    arena._kept_flags.clear()
    there = clsim.run(kernel, global_size, local_size, (src, dst, n), traffic=True).traffic
    kept = arena._kept_flags[0]
    assert not kept.any()
    back = clsim.run(kernel, global_size, local_size, (dst, src, np.int32(n // 4)),
                     traffic=True).traffic
    assert arena._kept_flags[0] is kept and not kept.any()
    assert there.buffers["src"]["unique"] == there.buffers["dst"]["unique"] == 4 * n
    assert back.buffers["src"]["unique"] == back.buffers["dst"]["unique"] == n


def test_a_kept_cache_state_counts_as_a_fresh_one():
    """The caches' state is kept for the next launch and not cleared: a line of the last
    launch is never found, its dirty sectors never written back. The same launch again (the
    same lines) and after another one give the DRAM figures of a fresh state. In the second
    profile x stays in the L1s and not in the L2: an L1 that missed would read it again."""
    import clsim.traffic.cache as cache

    small = _profile(compute_units=4, l1_bytes=2048, l1_ways=4, l2_bytes=16384, l2_ways=4)
    l1_holds_x = _profile(compute_units=4, l1_bytes=32768, l1_ways=4, l2_bytes=16384,
                          l2_ways=4)
    # The small copy fits in the L2: its next launch finds the same lines there.
    cases = (lambda: tk.gemv_case(64, 4096), lambda: tk.copy_case(1 << 14),
             lambda: tk.copy_case(1 << 10))
    for profile in (small, l1_holds_x):
        fresh = _fresh_figures(cases, profile)
        for case, want in zip((*cases, *cases), (*fresh, *fresh), strict=True):
            # kept, not fresh
            assert any(key[:3] == ("L2", 16384 // 128 // 4, 4) for key in cache._kept)
            assert _figures(case, profile) == want


def _figures(case, profile):
    report = _run(case(), profile)
    return report.buffers, report.dram_read_bytes, report.dram_write_bytes


def _fresh_figures(cases, profile) -> list:
    """Each case's figures from fresh cache states."""
    import clsim.traffic.cache as cache

    fresh = []
    for case in cases:
        cache._kept.clear()
        fresh.append(_figures(case, profile))
    return fresh


@pytest.mark.parametrize("generation_bits", [1, 2])
def test_a_cache_state_cleared_when_its_generations_run_out(monkeypatch, generation_bits):
    """A kept state's ways carry their launch's generation; when the generations run out
    (every 1 or 3 launches here, every 1,023 on an h200) the state is cleared and they
    start again. Launch after launch, the figures stay a fresh state's."""
    import clsim.traffic.cache as cache

    monkeypatch.setattr(cache, "generation_bits_max", generation_bits)
    small = _profile(compute_units=4, l1_bytes=2048, l1_ways=4, l2_bytes=16384, l2_ways=4)
    cases = (lambda: tk.gemv_case(64, 4096), lambda: tk.copy_case(1 << 10))
    fresh = _fresh_figures(cases, small)
    generations = []
    for case, want in zip(cases * 4, fresh * 4, strict=True):
        assert _figures(case, small) == want
        generations.append(next(g for key, (_, g) in cache._kept.items() if key[0] == "L2"))
    assert 1 << generation_bits in generations  # ran out at least once
