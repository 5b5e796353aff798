"""Contracts of verify/strategies.py: edge values show up within a bounded number of examples,
flags really remove what they say, and launch sizes are legal."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verify.strategies import (
    float_arrays,
    float_edge_values,
    int_arrays,
    int_edge_values,
    local_sizes,
    ndrange,
    problem_launches,
    problem_sizes,
    round_up,
    row_shapes,
    subgroup_sizes,
)

# Deterministic, bounded runs: the coverage assertions hold for this seed-free budget.
BOUNDED = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _collect(strategy, n: int = 300) -> list:
    """Every value ``strategy`` produces in ``n`` derandomised examples."""
    seen = []

    @settings(BOUNDED, max_examples=n)
    @given(strategy)
    def run(value):
        seen.append(value)

    run()
    return seen


UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(dtype, value) -> int:
    return int(np.array(value, dtype=dtype).view(UINT[np.dtype(dtype).itemsize]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_arrays_hit_every_edge_value(dtype):
    """Within 300 examples of 8-element arrays every edge value appears (bit-exactly, so -0.0
    and +0.0 count separately), including NaN, infinities and a subnormal."""
    arrays = _collect(float_arrays(8, dtype=dtype))
    assert all(a.dtype == dtype and a.shape == (8,) for a in arrays)
    seen = {_bits(dtype, v) for a in arrays for v in a.ravel() if not np.isnan(v)}
    nan_seen = any(np.isnan(a).any() for a in arrays)
    wanted = {_bits(dtype, v) for v in float_edge_values(dtype) if not math.isnan(v)}
    assert wanted <= seen, sorted(wanted - seen)
    assert nan_seen


def test_float_arrays_edge_share_and_all_equal_case():
    """A good share (>= 20 %) of elements are edge values, and all-equal arrays occur."""
    arrays = _collect(float_arrays(16))
    edges = {_bits(np.float32, v) for v in float_edge_values(np.float32)}
    values = [v for a in arrays for v in a.ravel()]
    share = sum(np.isnan(v) or _bits(np.float32, v) in edges for v in values) / len(values)
    assert share >= 0.2, share
    assert any(np.array_equal(a, np.full_like(a, a[0]), equal_nan=True) for a in arrays)


def test_float_arrays_flags_remove_nan_inf_subnormal():
    """allow_nan/allow_inf/allow_subnormal=False remove those values from every mode."""
    strategy = float_arrays(
        st.integers(1, 200), allow_nan=False, allow_inf=False, allow_subnormal=False
    )
    for a in _collect(strategy, 200):
        assert np.isfinite(a).all()
        nonzero = np.abs(a[a != 0])
        assert (nonzero >= np.finfo(np.float32).smallest_normal).all()


def test_float_arrays_without_edges_and_with_shape_strategy():
    """edge_values=False still gives arrays of the drawn shapes; large shapes draw quickly."""
    shapes = st.sampled_from([(1,), (3, 5), (2048,)])
    arrays = _collect(float_arrays(shapes, edge_values=False), 60)
    assert {a.shape for a in arrays} == {(1,), (3, 5), (2048,)}


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.int64, np.uint32])
def test_int_arrays_hit_limits_and_respect_bounds(dtype):
    """Integer arrays contain the type's min, max, 0 and 1 within 300 examples."""
    arrays = _collect(int_arrays(8, dtype=dtype))
    seen = {int(v) for a in arrays for v in a.ravel()}
    info = np.iinfo(dtype)
    assert {info.min, info.max, 0, 1} <= seen
    assert all(a.dtype == dtype for a in arrays)


def test_int_arrays_bounds():
    """min_value/max_value bound every mode, and the bounds themselves are edge values."""
    arrays = _collect(int_arrays(st.integers(1, 100), min_value=-3, max_value=10), 200)
    values = {int(v) for a in arrays for v in a.ravel()}
    assert values <= set(range(-3, 11)) and {-3, 10} <= values
    assert int_edge_values(np.uint8) == [0, 1, 2, 127, 128, 254, 255]


def test_problem_sizes_include_one_and_tails():
    """problem_sizes gives n = 1, and with local_sizes gives n that are not multiples."""
    pairs = _collect(st.tuples(problem_sizes(1024), local_sizes(64)))
    assert all(1 <= n <= 1024 and 1 <= loc <= 64 for n, loc in pairs)
    assert any(n == 1 for n, _ in pairs)
    assert any(n % loc for n, loc in pairs) and any(n % loc == 0 and loc > 1 for n, loc in pairs)
    assert {1, 64} <= {loc for _, loc in pairs}


def test_local_sizes_powers_of_two_only():
    """powers_of_two=True gives only powers of two up to max_local."""
    assert set(_collect(local_sizes(100, powers_of_two=True), 100)) == {1, 2, 4, 8, 16, 32, 64}


@pytest.mark.parametrize("nonuniform", [False, True])
def test_problem_launches_are_legal(nonuniform):
    """Without nonuniform the global size is n rounded up to the local size (a multiple);
    with it the global size may be n itself; tails (n % local != 0) occur either way."""
    launches = _collect(problem_launches(2048, 128, nonuniform=nonuniform), 200)
    for n, (glob,), (loc,) in launches:
        assert glob >= n >= 1 and loc <= 128
        if not nonuniform:
            assert glob % loc == 0 and glob - n < loc
    assert any(n % loc for n, _, (loc,) in launches)
    if nonuniform:
        assert any(g % loc for _, (g,), (loc,) in launches)
    assert round_up(0, 8) == 8 and round_up(9, 8) == 16 and round_up(16, 8) == 16


@pytest.mark.parametrize("allow_tail", [False, True])
def test_ndrange_sizes_are_legal(allow_tail):
    """Every ND-range has 1..3 dims, a group of at most max_local work-items, at most
    max_groups groups per dim; global is a multiple of local unless tails are allowed, and
    then tails do occur; all dimension counts occur."""
    ranges = _collect(ndrange(max_local=64, max_groups=5, allow_tail=allow_tail))
    for glob, loc in ranges:
        assert 1 <= len(glob) == len(loc) <= 3
        assert math.prod(loc) <= 64 and all(
            g >= 1 and n >= 1 for g, n in zip(glob, loc, strict=True)
        )
        assert all(-(-g // n) <= 5 for g, n in zip(glob, loc, strict=True))
        if not allow_tail:
            assert all(g % n == 0 for g, n in zip(glob, loc, strict=True))
    assert {len(g) for g, _ in ranges} == {1, 2, 3}
    has_tail = any(g % n for glob, loc in ranges for g, n in zip(glob, loc, strict=True))
    assert has_tail == allow_tail


def test_ndrange_fixed_dims():
    """dims=2 gives exactly two dimensions."""
    assert {len(g) for g, _ in _collect(ndrange(dims=2), 50)} == {2}


def test_subgroup_sizes():
    """Sub-group sizes are the device-like set plus 7 (not a power of two) unless excluded."""
    assert set(_collect(subgroup_sizes(), 100)) == {1, 4, 7, 8, 16, 32, 64}
    assert set(_collect(subgroup_sizes(16, include_unusual=False), 100)) == {1, 4, 8, 16}


def test_row_shapes_include_degenerate_cases():
    """row_shapes gives (1, 1), one-row and one-column shapes, and general ones, in range."""
    shapes = _collect(row_shapes(max_rows=32, max_cols=512))
    assert all(1 <= r <= 32 and 1 <= c <= 512 for r, c in shapes)
    assert (1, 1) in shapes
    assert any(r == 1 and c > 1 for r, c in shapes)
    assert any(r > 1 and c == 1 for r, c in shapes)
    assert any(r > 1 and c > 1 for r, c in shapes)
