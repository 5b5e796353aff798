"""The half part of ``clsim conformance``: half arithmetic, fma, sqrt, math builtins on half,
every convert_half rounding mode from float, double and int, convert_float/convert_int of a
half (with _sat and every rounding mode) and the bit casts are correctly rounded (or exact)
on the simulator in both modes; a device with cl_khr_fp16 runs them, one without is skipped
with the reason."""

import numpy as np
import pytest

from verify.conformance_half import half_group, half_suite
from verify.devices import get_device
from verify.testing import device_params

NAMES = {"x+y", "x-y", "x*y", "x/y", "fma", "sqrt", "exp", "sin", "convert_half_rtz",
         "convert_half_rtp", "convert_half_rtn", "convert_half", "convert_float",
         "convert_int", "as_half", "as_ushort", "convert_int_sat_rte", "convert_uchar_sat",
         "convert_short_rtn", "convert_float_rtp"}


@pytest.mark.parametrize("mode", ["nojit", "jit"])
def test_simulator_half_builtins_are_correctly_rounded(mode):
    report = half_suite((), draws=150, simulator_modes=(mode,))
    assert NAMES <= {r.builtin for r in report.rows}
    assert {r.dtype for r in report.rows if r.builtin == "convert_half_rtz"} == {
        "float32", "float64", "int32"}
    bad = [(r.builtin, r.dtype, r.examples[:2]) for r in report.rows if r.deviations]
    assert bad == []


def test_half_references_round_at_the_ties():
    """The references themselves: 1 + 2^-11 (a tie) rounds to 1 (even), up under _rtp; 65520
    overflows to inf under _rte but gives 65504 under _rtz."""
    group = half_group(0, 10)
    f = group.cols[3]
    refs = {(c.name, c.args[0]): c.wants[0] for c in group.calls}
    tie = np.flatnonzero(f == np.float32(1 + 2.0**-11))[0]
    big = np.flatnonzero(f == np.float32(65520.0))[0]
    assert refs[("convert_half", 3)][tie] == 1.0
    assert refs[("convert_half_rtp", 3)][tie] == np.float16(1 + 2.0**-10)
    assert np.isinf(refs[("convert_half", 3)][big])
    assert refs[("convert_half_rtz", 3)][big] == np.float16(65504)


@pytest.mark.parametrize("device", device_params())
def test_device_half_rows_or_a_skip_with_the_reason(device):
    """With fp16 every half builtin runs on the device and + - * / fma sqrt and the
    conversions are correctly rounded there too (measured: intel-cpu); without fp16 the
    group is skipped with 'lacks cl_khr_fp16'."""
    report = half_suite((device,), draws=100, simulator_modes=())
    if not get_device(device).fp16:
        assert not report.rows
        assert report.skipped and "lacks cl_khr_fp16" in report.skipped[0]
        return
    exact = [r for r in report.rows if r.builtin in ("x+y", "x-y", "x*y", "x/y", "fma", "sqrt")
             or r.builtin.startswith("convert_")]
    assert len(exact) == 23 + 3 * 9 + 4 and [r.examples for r in exact if r.deviations] == []
