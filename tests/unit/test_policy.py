"""Contracts of verify/policy.py: ULP distances and buffer comparison under EXACT and ulp(N)."""

from __future__ import annotations

import numpy as np
import pytest

from clsim.spec import EXACT, ulp
from verify.policy import (
    NAN_DISTANCE,
    Comparison,
    compare,
    compare_outputs,
    ulp_distance,
)

FLOATS = [np.float16, np.float32, np.float64]


def _nan_with_payload(dtype, payload: int, negative: bool = False):
    """A quiet NaN of ``dtype`` whose low mantissa bits are ``payload``."""
    signed = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
    bits = np.array(np.nan, dtype=dtype).view(signed) | signed(payload)
    if negative:
        bits = bits | signed(1 << (8 * np.dtype(dtype).itemsize - 1))
    return bits.view(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_ulp_distance_known_pairs(dtype):
    """Adjacent floats are 1 apart, signed zeros 0, max finite to inf 1, across zero counts
    both sides, and the smallest subnormal is 1 from zero."""
    t = np.dtype(dtype).type
    fi = np.finfo(dtype)
    one = t(1)
    assert ulp_distance(one, np.nextafter(one, t(2))) == 1
    assert ulp_distance(np.nextafter(one, t(0)), one) == 1
    assert ulp_distance(t(-0.0), t(0.0)) == 0
    assert ulp_distance(t(fi.max), t(np.inf)) == 1
    assert ulp_distance(t(-fi.max), t(-np.inf)) == 1
    assert ulp_distance(t(0.0), t(fi.smallest_subnormal)) == 1
    assert ulp_distance(t(-fi.smallest_subnormal), t(fi.smallest_subnormal)) == 2
    assert ulp_distance(one, t(2)) == 2**fi.nmant
    assert ulp_distance(t(2), one) == 2**fi.nmant  # symmetric


@pytest.mark.parametrize("dtype", FLOATS)
def test_ulp_distance_nan_rules(dtype):
    """NaN vs NaN is 0 whatever the payload; NaN vs a number is NAN_DISTANCE."""
    t = np.dtype(dtype).type
    a = np.array([np.nan, np.nan, 1.0, np.inf], dtype=dtype)
    b = np.array([_nan_with_payload(dtype, 1, negative=True), 0.0, np.nan, np.nan], dtype=dtype)
    assert ulp_distance(a, b).tolist() == [0, NAN_DISTANCE, NAN_DISTANCE, NAN_DISTANCE]
    assert ulp_distance(t(np.nan), t(np.nan)) == 0


def test_ulp_distance_float64_full_range_does_not_overflow():
    """-inf to +inf in float64 is 2 * 0x7FF0000000000000 ULPs, which exceeds int64."""
    d = ulp_distance(np.float64(-np.inf), np.float64(np.inf))
    assert d.dtype == np.uint64
    assert int(d) == 2 * 0x7FF0000000000000


def test_ulp_distance_rejects_ints_and_mixed_dtypes():
    """ULP distance is defined for one float dtype only; anything else is a TypeError."""
    with pytest.raises(TypeError, match="float16/float32/float64"):
        ulp_distance(np.int32([1]), np.int32([2]))
    with pytest.raises(TypeError):
        ulp_distance(np.float32([1]), np.float64([1]))


def test_exact_signed_zero_is_a_difference_but_not_under_ulp():
    """EXACT is bitwise: -0.0 vs +0.0 differs (0 ULP apart); ulp(0) accepts it."""
    a = np.array([0.0, 1.0], dtype=np.float32)
    b = np.array([-0.0, 1.0], dtype=np.float32)
    exact = compare("out", a, b, EXACT)
    assert not exact.equal and exact.n_different == 1
    assert exact.first_difference.flat_index == 0
    assert exact.first_difference.ulp == 0
    assert exact.first_difference.expected_hex == "0x00000000"
    assert exact.first_difference.actual_hex == "0x80000000"
    assert compare("out", a, b, ulp(0)).equal


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("policy", [EXACT, ulp(0), ulp(4)])
def test_nan_payloads_are_equal(dtype, policy):
    """NaN equals NaN whatever its payload or sign, under every policy."""
    a = np.array([np.nan, 2.0], dtype=dtype)
    b = np.array([_nan_with_payload(dtype, 5, negative=True), 2.0], dtype=dtype)
    assert a.tobytes() != b.tobytes()
    assert compare("out", a, b, policy).equal


@pytest.mark.parametrize("policy", [EXACT, ulp(1000)])
def test_nan_against_number_is_a_difference(policy):
    """A NaN on one side and a number on the other differs under every policy."""
    c = compare("out", np.float32([np.nan]), np.float32([3.0]), policy)
    assert not c.equal and c.first_difference.ulp == NAN_DISTANCE
    assert "NaN vs number" in c.describe()


def test_ulp_policy_threshold():
    """ulp(N) accepts |distance| <= N and rejects N + 1; fractional N (2.5) rounds down."""
    one = np.float32(1)
    b = one
    for _ in range(3):
        b = np.nextafter(b, np.float32(2))
    a, b = np.float32([1.0]), np.float32([b])
    assert compare("o", a, b, ulp(3)).equal
    assert not compare("o", a, b, ulp(2)).equal
    assert not compare("o", a, b, ulp(2.5)).equal
    assert compare("o", a, b, ulp(3)).max_ulp == 3


def test_first_difference_multi_dim_index():
    """The first difference is the first in C order, with its flat and multi-dim index."""
    a = np.zeros((3, 4, 5), dtype=np.float32)
    b = a.copy()
    b[2, 0, 1] = 1.0
    b[1, 3, 4] = np.float32(1e-45)  # earlier in C order: flat 1*20 + 3*5 + 4 = 39
    c = compare("grid", a, b, EXACT)
    d = c.first_difference
    assert (d.flat_index, d.index) == (39, (1, 3, 4))
    assert d.buffer == "grid" and c.n_different == 2
    assert d.ulp == 1 and d.actual_hex == "0x00000001"
    text = d.describe()
    assert "'grid'" in text and "(1, 3, 4)" in text and "0x00000001" in text
    assert "ULP distance: 1" in text


def test_float16_difference_hex_and_ulp():
    """float16 values print as 4 hex digits and their ULP distance is in float16 steps."""
    c = compare("h", np.float16([1.0]), np.float16([1.0009765625]), EXACT)
    d = c.first_difference
    assert (d.expected_hex, d.actual_hex, d.ulp) == ("0x3c00", "0x3c01", 1)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint32, np.int64, np.bool_])
def test_integers_compare_exactly_even_under_ulp(dtype):
    """A ULP policy on an integer (or bool) buffer means exact; ULP distance is None."""
    a = np.array([0, 1, 1], dtype=dtype)
    b = np.array([0, 1, 0], dtype=dtype)
    for policy in (EXACT, ulp(100)):
        c = compare("i", a, b, policy)
        assert not c.equal and c.first_difference.index == (2,)
        assert c.first_difference.ulp is None and c.max_ulp is None
    assert compare("i", a, a.copy(), ulp(1)).equal


def test_int_hex_is_twos_complement():
    """Negative ints show their two's-complement bits."""
    d = compare("i", np.int32([0]), np.int32([-1]), EXACT).first_difference
    assert d.actual_hex == "0xffffffff"


def test_shape_and_dtype_mismatch_are_differences_not_errors():
    """A shape or dtype mismatch gives one difference with a message, no exception."""
    s = compare("o", np.zeros(6, np.float32), np.zeros((2, 3), np.float32), EXACT)
    assert not s.equal and s.first_difference.reason == "shape"
    assert "shape differs" in s.describe() and "reshape" in s.describe()
    t = compare("o", np.zeros(3, np.float32), np.zeros(3, np.float64), ulp(1))
    assert not t.equal and t.first_difference.reason == "dtype"
    assert "float32" in t.describe() and "float64" in t.describe()


def test_zero_dim_and_empty_buffers():
    """0-d buffers compare as one element with index (); empty buffers are equal."""
    c = compare("s", np.float32(1), np.float32(2), EXACT)
    assert c.first_difference.index == () and c.first_difference.flat_index == 0
    assert compare("e", np.zeros(0, np.float32), np.zeros(0, np.float32), EXACT).equal


def test_vector_type_buffers_compare_per_component():
    """A structured float4-like buffer follows float rules per component (NaN==NaN)."""
    f4 = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("w", "<f4")])
    a = np.zeros(3, f4)
    a[0]["y"] = np.nan
    b = a.copy()
    assert compare("v", a, b, EXACT).equal
    b[2]["z"] = 1.0
    d = compare("v", a, b, EXACT).first_difference
    assert d.index == (2, 2)


def test_comparison_is_frozen_and_describes_equal_buffers():
    """Comparisons are immutable records; an equal one says so with its max ULP."""
    c = compare("o", np.float32([1, 2]), np.float32([1, 2]), ulp(2))
    assert isinstance(c, Comparison) and c.equal and c.first_difference is None
    with pytest.raises(AttributeError):
        c.equal = False  # type: ignore[misc]
    assert "equal" in c.describe() and "ulp(2)" in c.describe()


def test_compare_outputs_aggregates_in_policy_order():
    """compare_outputs compares the buffers named by the policies, in that order, reports the
    first difference across buffers, and reports a missing buffer as a difference."""
    exp = {"a": np.float32([1, 2]), "b": np.int32([1, 2]), "x_in": np.float32([9])}
    act = {"a": np.float32([1, 2]), "b": np.int32([1, 3]), "x_in": np.float32([0])}
    r = compare_outputs(exp, act, {"a": ulp(1), "b": EXACT})
    assert not r.equal and list(r.comparisons) == ["a", "b"]
    assert r.first_difference.buffer == "b" and r.first_difference.index == (1,)
    assert r.n_different == 1
    assert "'b'" in r.describe()
    missing = compare_outputs(exp, {"a": act["a"]}, {"a": EXACT, "b": EXACT})
    assert missing.first_difference.reason == "missing"
    assert "missing from the device outputs" in missing.describe()
    assert compare_outputs(exp, exp, EXACT).equal  # one Policy for every expected buffer


def test_big_endian_buffers_compare_by_value():
    """Byte order is storage, not value: a big-endian buffer follows the same rules."""
    a = np.array([1.0, 2.0], dtype=">f4")
    b = np.array([1.0, np.nextafter(np.float32(2), np.float32(3))], dtype=">f4")
    d = compare("be", a, b, EXACT).first_difference
    assert (d.index, d.ulp, d.expected_hex, d.actual_hex) == ((1,), 1, "0x40000000", "0x40000001")
    assert compare("be", a, b, ulp(1)).equal
    assert ulp_distance(a, b).tolist() == [0, 1]


def test_messages_name_the_sides_and_magnitude_prints_bound_and_margin():
    """Issue 23: sides by name (never expected/actual); a magnitude policy shows its bound
    k*eps*scale and the margin at the element shown, and the least margin when it agrees."""
    from verify.policy import magnitude

    x = np.array([1e8, 1.0, -1e8, 3.0], np.float32)
    forward, backward = np.array([3.0], np.float32), np.array([0.0], np.float32)
    tight = magnitude(0.01, scale=lambda inputs: np.float64(1.0))
    text = compare("dot", forward, backward, tight, 1.0,
                   ("simulator", "device intel-cpu")).describe()
    assert "simulator:        3.0" in text and "device intel-cpu: 0.0" in text
    assert "expected" not in text and "actual" not in text
    assert "bound k*eps*scale = 0.01 * 1.19e-07 * 1 = 1.19209e-09; |difference| 3; margin -3" \
        in text
    safe = magnitude(4, scale=lambda inputs: np.sum(np.abs(inputs["x"]), dtype=np.float64))
    agree = compare("dot", forward, backward, safe, safe.scale({"x": x})).describe()
    assert "equal" in agree and "least margin: bound k*eps*scale = 4 * 1.19e-07" in agree
    assert "margin 92.3674" in agree
