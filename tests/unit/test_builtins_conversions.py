"""Conversions with saturation and rounding modes, bit casts of char/short, the relational
comparisons and the common functions (step, smoothstep, degrees, radians), in both modes."""

import math
from fractions import Fraction

import numpy as np
import pytest

from verify.probe_kernels import evaluate, evaluate_many

F, D = np.float32, np.float64
MODES = ("jit", "nojit")


def both(name, args, out):
    a = evaluate(name, args, [out], jit=False)[0]
    b = evaluate(name, args, [out], jit=True)[0]
    assert a.tobytes() == b.tobytes(), name
    return a


def both_many(names, args, out):
    """``both`` for builtins of one shape in one kernel (one compile per mode, not per name):
    row j is ``names[j]``'s result."""
    a = evaluate_many(names, args, out, jit=False)
    b = evaluate_many(names, args, out, jit=True)
    assert [n for n, x, y in zip(names, a, b, strict=True) if x.tobytes() != y.tobytes()] == []
    return a


X = np.array([1.5, -1.5, 2.5, -2.5, 3e9, -3e9, np.nan, 1e30, -0.4, 255.7], D)


@pytest.mark.parametrize(("name", "dtype", "want"), [
    ("convert_int_sat", np.int32, [1, -1, 2, -2, 2**31 - 1, -(2**31), 0, 2**31 - 1, 0, 255]),
    ("convert_int_rte", np.int32, [2, -2, 2, -2, None, None, None, None, 0, 256]),
    ("convert_uchar_sat_rtp", np.uint8, [2, 0, 3, 0, 255, 0, 0, 255, 0, 255]),
    ("convert_ulong_sat", np.uint64, [1, 0, 2, 0, 3000000000, 0, 0, 2**64 - 1, 0, 255]),
    ("convert_long_sat_rtn", np.int64, [1, -2, 2, -3, 3 * 10**9, -3 * 10**9, 0, 2**63 - 1,
                                        -1, 255]),
])
def test_float_to_integer_with_mode_and_saturation(name, dtype, want):
    """The mode rounds (rte ties to even), _sat clamps and sends NaN to 0; out-of-range
    values without _sat are C's undefined case (None: not checked)."""
    got = both(name, [X], dtype).tolist()
    assert [g for g, w in zip(got, want, strict=True) if w is not None] == \
        [w for w in want if w is not None]


def test_integer_saturation_across_signedness():
    i = np.array([-5, 300, 2**40, -(2**40), 2**63 - 1], np.int64)
    assert both("convert_uchar_sat", [i], np.uint8).tolist() == [0, 255, 255, 0, 255]
    assert both("convert_int_sat", [i], np.int32).tolist() == [
        -5, 300, 2**31 - 1, -(2**31), 2**31 - 1]
    u = np.array([2**64 - 1, 5], np.uint64)
    assert both("convert_long_sat", [u], np.int64).tolist() == [2**63 - 1, 5]


def _directed(value: Fraction, mode: str) -> float:
    """value rounded to float32 by mode, from the exact rational value."""
    near = np.float32(float(value))
    if Fraction(float(near)) == value or mode == "rte" or not math.isfinite(float(value)):
        return near
    below = near if Fraction(float(near)) < value else np.nextafter(near, F(-np.inf))
    above = np.nextafter(below, F(np.inf))
    if mode == "rtp":
        return above
    if mode == "rtn":
        return below
    return below if value > 0 else above


@pytest.mark.parametrize("mode", ["rte", "rtz", "rtp", "rtn"])
def test_to_float_rounding_modes_round_once_from_exact_values(mode):
    """convert_float_<mode> of doubles and of longs: the exact value rounded by the mode (a
    long is rounded once, not through double); overflow gives inf or FLT_MAX by the mode."""
    d = np.array([1 / 3, -1 / 3, 0.1, -0.1, 1e-50, 2.0**-149 * 1.5, 1e300, -1e300], D)
    got, huge = np.split(both(f"convert_float_{mode}", [d], F), [6])  # one launch: one compile
    assert got.tobytes() == np.array([_directed(Fraction(v), mode) for v in d[:6]],
                                     F).tobytes()
    longs = np.array([2**62 + 1, -(2**62) - 1, 2**63 - 1, 16777217, 2**24 + 2**-0 * 3], np.int64)
    got = both(f"convert_float_{mode}", [longs], F)
    assert got.tobytes() == np.array([_directed(Fraction(int(v)), mode) for v in longs],
                                     F).tobytes()
    big = float(np.finfo(F).max)
    want = {"rte": [np.inf, -np.inf], "rtz": [big, -big], "rtp": [np.inf, -big],
            "rtn": [big, -np.inf]}[mode]
    assert huge.tolist() == want


def test_char_and_short_bit_casts():
    assert both("as_uchar", [np.array([-1, 5], np.int8)], np.uint8).tolist() == [255, 5]
    assert both("as_char", [np.array([200], np.uint8)], np.int8).tolist() == [-56]
    assert both("as_short", [np.array([65535, 5], np.uint16)], np.int16).tolist() == [-1, 5]
    assert both("as_ushort", [np.array([-2], np.int16)], np.uint16).tolist() == [65534]


def test_relational_comparisons_treat_nan_as_unordered():
    x = np.array([1.0, np.nan, 2.0, np.nan, -0.0], F)
    y = np.array([2.0, 1.0, 2.0, np.nan, 0.0], F)
    table = {"isequal": [0, 0, 1, 0, 1], "isnotequal": [1, 1, 0, 1, 0],
             "isgreater": [0, 0, 0, 0, 0], "isgreaterequal": [0, 0, 1, 0, 1],
             "isless": [1, 0, 0, 0, 0], "islessequal": [1, 0, 1, 0, 1],
             "islessgreater": [1, 0, 0, 0, 0], "isordered": [1, 0, 1, 0, 1],
             "isunordered": [0, 1, 0, 1, 0]}
    got = both_many(list(table), [x, y], np.int32)
    for (name, want), row in zip(table.items(), got, strict=True):
        assert row.tolist() == want, name


def test_common_functions():
    e = np.array([0.5, 0.5, 0.5, np.nan], F)
    x = np.array([0.4, 0.5, 0.6, 1.0], F)
    assert both("step", [e, x], F).tolist() == [0.0, 1.0, 1.0, 1.0]
    e0 = np.zeros(4, F)
    e1 = np.full(4, 2.0, F)
    xs = np.array([-1.0, 0.5, 1.0, 3.0], F)
    t = np.clip(xs / F(2), 0, 1).astype(F)
    want = (t * t * (F(3) - F(2) * t)).astype(F)
    assert both("smoothstep", [e0, e1, xs], F).tobytes() == want.tobytes()
    r = np.array([180.0, -90.0, 1.0], F)
    assert both("radians", [r], F).tobytes() == (F(math.pi / 180) * r).tobytes()
    assert both("degrees", [np.array([math.pi], D)], D).tolist() == [180.0]
