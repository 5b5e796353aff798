"""Buffers that share memory are one memory to the race checks (issue 9).

Contract (docs/checks.md, Limits): the same array passed as two parameters, or overlapping
views of one array, share one shadow keyed by byte address, so a race through two names is
found, including reads through a parameter the kernel never writes; arrays that merely sit
side by side in one allocation stay independent. The regression: passing one array as a
read-only and a written argument crashed the process (report_all) or raised IndexError, and
later launches could hang.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel

F32 = np.float32


@kernel
def shift(dst, src):
    i = get_global_id(0)
    dst[i] = src[i + 1]


@kernel
def copy(dst, src):
    i = get_global_id(0)
    dst[i] = src[i]


@kernel
def two_stores(a, b):
    i = get_global_id(0)
    a[i] = 1.0
    b[i] = 2.0


def run(kern, args, size=256, **kw):
    return clsim.run(kern, (size,), (64,), args, checks="races", **kw)


@pytest.mark.parametrize("jit", [True, False])
def test_one_array_as_read_only_and_written_argument_races(jit):
    """dst[i] = src[i + 1] on one array: work-item i reads what work-item i + 1 writes. Found
    in first-error mode and with report_all (where it used to crash); a clean launch after it
    still runs."""
    x = np.arange(257, dtype=F32)
    with pytest.raises(clsim.DataRaceError) as raised:
        run(shift, (x, x), jit=jit)
    assert raised.value.buffer in ("dst", "src")
    result = run(shift, (x, x), jit=jit, report_all=True)
    assert [f.category for f in result.findings] == ["race"]
    race = result.findings[0]
    assert sorted(race.kinds) == ["load", "store"]
    assert race.count > 1
    y, z = np.arange(257, dtype=F32), np.zeros(257, F32)
    assert run(shift, (z, y), jit=jit).findings == []
    np.testing.assert_array_equal(z[:256], y[1:])


def test_overlapping_views_of_one_array_are_one_memory():
    """base[0:256] written, base[1:257] read: the read of element i + 1 races with work-item
    i + 1's store, exactly as if one array had been passed twice."""
    base = np.arange(257, dtype=F32)
    result = run(copy, (base[0:256], base[1:257]), report_all=True)
    assert [f.category for f in result.findings] == ["race"]
    assert result.findings[0].count > 1


def test_overlapping_written_views_race_on_the_shared_element():
    """a = base[0:256], b = base[1:257], both stored: work-item i's a[i] and work-item i - 1's
    b[i - 1] are the same element."""
    base = np.zeros(257, F32)
    result = run(two_stores, (base[0:256], base[1:257]), report_all=True)
    assert [f.kinds for f in result.findings] == [("store", "store")]


def test_adjacent_views_of_one_array_do_not_race():
    """Views that share an allocation but no element are independent buffers."""
    base = np.arange(512, dtype=F32)
    assert run(copy, (base[0:256], base[256:512]), report_all=True).findings == []
    np.testing.assert_array_equal(base[0:256], base[256:512])
    both = np.zeros(512, F32)
    assert run(two_stores, (both[0:256], both[256:512]), report_all=True).findings == []


def test_overlap_with_another_element_size_is_reported_as_unchecked():
    """Two float32 views of the same bytes, two bytes apart, cannot
    share element records: the checks say so instead of guessing."""
    raw = np.zeros(1028, np.uint8)
    a = raw[0:1024].view(F32)
    b = raw[2:1026].view(F32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(two_stores, (a, b), report_all=True)
    assert any("share memory" in str(w.message) for w in caught)
