"""Atomics in the traffic model: which way each one moves data.

A read-modify-write atomic (``atomic_add``, ``atomic_fetch_add``, ``atomic_exchange``...) is a
store site that reads and writes its element. OpenCL 2.0's ``atomic_load`` only reads and
``atomic_store`` only writes (docs/traffic-model.md, "Access sites"): they are a load site and a
store site, with one footprint each, and the cache model neither dirties what an
``atomic_load`` read nor fetches what an ``atomic_store`` wrote. (Regression: both used to be
counted as read-modify-write stores.)
"""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    atomic_fetch_add,
    atomic_load,
    atomic_store,
    barrier,
    get_global_id,
    get_local_id,
    kernel,
    local_array,
)

N = 256


@kernel
def one_way(src, dst, counts, out):
    i = get_global_id(0)
    out[i] = atomic_load(src[i])
    atomic_store(dst[i], i)
    atomic_fetch_add(counts[i], 1)


@kernel
def local_one_way(src, out):
    lid = get_local_id(0)
    tile = local_array(64, np.int32)
    atomic_store(tile[lid], src[get_global_id(0)])
    barrier(CLK_LOCAL_MEM_FENCE)
    out[get_global_id(0)] = atomic_load(tile[63 - lid])


def _site(report, buffer):
    (site,) = [s for s in report.sites if s["buffer"] == buffer]
    return site


@pytest.mark.parametrize("jit", [True, False])
def test_atomic_load_reads_and_atomic_store_writes(jit):
    """src is only read (atomic_load), dst only written (atomic_store), counts both (fetch_add):
    the kinds, footprints and DRAM figures say so; the results are those of the atomics."""
    src = np.arange(N, dtype=np.int32) + 5
    dst = np.zeros(N, np.int32)
    counts = np.full(N, 3, np.int32)
    out = np.zeros(N, np.int32)
    report = clsim.run(one_way, (N,), (64,), (src, dst, counts, out), jit=jit,
                       traffic=True).traffic
    np.testing.assert_array_equal(out, src)
    np.testing.assert_array_equal(dst, np.arange(N))
    np.testing.assert_array_equal(counts, 4)
    size = 4 * N
    assert _site(report, "src")["kind"] == "load"
    assert _site(report, "dst")["kind"] == "store"
    assert _site(report, "counts")["kind"] == "store"
    assert (report.unique_read_bytes["src"], report.unique_write_bytes["src"]) == (size, 0)
    assert (report.unique_read_bytes["dst"], report.unique_write_bytes["dst"]) == (0, size)
    assert (report.unique_read_bytes["counts"], report.unique_write_bytes["counts"]) == (
        size, size)
    assert (report.dram_read_bytes["src"], report.dram_write_bytes["src"]) == (size, 0)
    assert (report.dram_read_bytes["dst"], report.dram_write_bytes["dst"]) == (0, size)
    assert (report.dram_read_bytes["counts"], report.dram_write_bytes["counts"]) == (size, size)
    totals = report.totals
    # src and out's loads/stores: src (atomic_load) is the one global load.
    assert totals["global_load_bytes"] == size
    assert totals["global_store_bytes"] == 3 * size  # dst, counts, out


@pytest.mark.parametrize("jit", [True, False])
def test_local_atomic_load_is_a_local_load(jit):
    """atomic_store/atomic_load on a local array: one local store site, one local load site."""
    src = np.arange(N, dtype=np.int32)
    out = np.zeros(N, np.int32)
    report = clsim.run(local_one_way, (N,), (64,), (src, out), jit=jit, traffic=True).traffic
    np.testing.assert_array_equal(out, (src // 64) * 64 + 63 - src % 64)
    tile = [s for s in report.sites if s["buffer"] == "tile"]
    assert sorted(s["kind"] for s in tile) == ["load", "store"]
    assert report.totals["local_load_bytes"] == report.totals["local_store_bytes"] == 4 * N
