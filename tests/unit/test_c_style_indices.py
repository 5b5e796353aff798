"""2-D local and private arrays indexed C's way, ``tile[a][b]``, work as ``tile[a, b]``:
loads, stores and updates, with the checks and traffic counting that see the access."""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_group_id,
    get_local_id,
    kernel,
    local_array,
    private_array,
)
from clsim.errors import KernelCompileError, OutOfBoundsError


@kernel
def transpose_c_style(x, y, n):
    tile = local_array((4, 5), np.float32)  # padded: the C habit
    lx = get_local_id(0)
    ly = get_local_id(1)
    gx = get_group_id(0) * 4
    gy = get_group_id(1) * 4
    tile[ly][lx] = x[(gy + ly) * n + gx + lx]
    tile[ly][lx] += 1.0
    barrier(CLK_LOCAL_MEM_FENCE)
    y[(gx + ly) * n + gy + lx] = tile[lx][ly]


@kernel
def transpose_tuple(x, y, n):
    tile = local_array((4, 5), np.float32)
    lx = get_local_id(0)
    ly = get_local_id(1)
    gx = get_group_id(0) * 4
    gy = get_group_id(1) * 4
    tile[ly, lx] = x[(gy + ly) * n + gx + lx]
    tile[ly, lx] += 1.0
    barrier(CLK_LOCAL_MEM_FENCE)
    y[(gx + ly) * n + gy + lx] = tile[lx, ly]


@kernel
def private_rows(y):
    acc = private_array((2, 3), np.int32)
    i = get_local_id(0)
    for r in range(2):
        for c in range(3):
            acc[r][c] = r * 10 + c + i
    y[i] = acc[1][2] - acc[0][1]


@kernel
def beyond_a_row(y):
    tile = local_array((2, 3), np.int32)
    tile[0][3] = 1
    y[0] = tile[0][0]


@kernel
def row_of_a_2d_array(y):
    tile = local_array((2, 3), np.int32)
    y[0] = tile[1]


def _transpose(fn, **options):
    n = 8
    x = np.arange(n * n, dtype=np.float32)
    y = np.zeros_like(x)
    result = clsim.run(fn, (n, n), (4, 4), (x, y, np.int32(n)), **options)
    np.testing.assert_array_equal(y.reshape(n, n), x.reshape(n, n).T + 1)
    return result


@pytest.mark.parametrize("jit", [True, False])
def test_c_style_indices_equal_the_tuple_form(jit):
    _transpose(transpose_c_style, jit=jit)
    _transpose(transpose_tuple, jit=jit)


def test_c_style_indices_are_checked_and_counted_as_the_tuple_form():
    c_style = _transpose(transpose_c_style, jit=False, checks="all", traffic=True)
    tuple_form = _transpose(transpose_tuple, jit=False, checks="all", traffic=True)
    assert c_style.traffic.totals == tuple_form.traffic.totals


def test_private_arrays_take_c_style_indices():
    y = np.zeros(4, np.int32)
    clsim.run(private_rows, (4,), (4,), (y,), jit=False)
    np.testing.assert_array_equal(y, 12 - 1 + 0 * np.arange(4))


def test_an_index_beyond_its_dimension_is_still_an_error():
    with pytest.raises(OutOfBoundsError):
        clsim.run(beyond_a_row, (1,), (1,), (np.zeros(1, np.int32),), jit=False)


def test_a_row_alone_is_still_refused():
    with pytest.raises(KernelCompileError, match="has 2 dimension"):
        clsim.run(row_of_a_2d_array, (1,), (1,), (np.zeros(1, np.int32),), jit=False)
