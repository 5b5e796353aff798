"""The step counter's in-place sort (``step_rules._sort``) sorts as ``np.sort`` does.

What it proves: both of its paths (insertion sort up to ``_SMALL_SORT`` entries, heapsort
beyond: a local step of wide elements or a sub-group wider than 64 lanes) leave the range
sorted and the entries around it untouched, so the sector and bank counts that read the
sorted addresses are those of ``counting``'s reference rules. Compiles ``_sort`` alone (the
step counter's C entry point is not needed).
"""

from __future__ import annotations

import numpy as np
import pytest

from clsim.traffic.step_rules import _SMALL_SORT, _sort


@pytest.mark.parametrize("n", [0, 1, 2, 31, _SMALL_SORT, _SMALL_SORT + 1, _SMALL_SORT + 2,
                               129, 256, 1000])
def test_sort_matches_numpy(n):
    rng = np.random.default_rng(n)
    for values in (rng.integers(-(2**40), 2**40, n + 7), rng.integers(0, 4, n + 7),
                   np.arange(n + 7)[::-1].copy(), np.arange(n + 7)):
        a = values.astype(np.int64)
        expected = a.copy()
        expected[3:3 + n] = np.sort(expected[3:3 + n])
        _sort(a, 3, n)
        np.testing.assert_array_equal(a, expected)
