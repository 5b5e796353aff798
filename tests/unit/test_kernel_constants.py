"""OpenCL C's float constants (INFINITY, NAN, MAXFLOAT, ...) are module-level constants of
clsim, usable in kernels imported by name or as clsim.NAME (docs/language.md)."""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import FLT_MIN, INFINITY, MAXFLOAT, NAN, fmin, get_global_id, kernel


@kernel
def constants(y):
    i = get_global_id(0)
    if i == 0:
        y[i] = -INFINITY
    elif i == 1:
        y[i] = NAN
    elif i == 2:
        y[i] = MAXFLOAT
    elif i == 3:
        y[i] = fmin(clsim.INFINITY, clsim.FLT_MAX)
    else:
        y[i] = FLT_MIN


@pytest.mark.parametrize("jit", [False, True])
def test_float_constants_in_a_kernel(jit):
    y = np.zeros(5, np.float32)
    clsim.run(constants, (5,), (5,), (y,), jit=jit)
    big = np.finfo(np.float32).max
    np.testing.assert_array_equal(y, np.array([-np.inf, np.nan, big, big,
                                               np.finfo(np.float32).tiny], np.float32))
    assert all(type(c) is np.float32 for c in (INFINITY, NAN, MAXFLOAT, FLT_MIN))
