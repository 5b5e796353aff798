"""Arrays of pointers (issue 22): C's ``global block_q8_0 *ax[4]`` is
``ax = pointer_array(4)``; ``ax[k] = view(src, T, off)`` stores a pointer (all into one buffer,
of one pointee type), ``ax[k][i]``, ``ax[k][i].qs[j]``, ``ax[k] + i`` use it; accesses are
checked and instrumented against the buffer behind it."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, pointer_array, view

Q8 = np.dtype([("d", np.float16), ("qs", np.int8, (32,))])
JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def rows_of_blocks(src0, x, y, nb01):
    i = get_global_id(0)
    ax = pointer_array(4)
    for r in range(4):
        ax[r] = view(src0, Q8, r * nb01)
    s = np.int32(0)
    for r in range(4):
        s += np.int32(ax[r][i].qs[1]) + np.int32(np.float32(ax[r][i].d))
    y[i] = s
    px = pointer_array(2)
    px[0] = x + 1
    px[1] = x + 2
    y[i + 2] = np.int32(px[0][i] + (px[1] + 1)[i])


@JIT
@pytest.mark.parametrize("options", [{}, {"checks": "all"}, {"traffic": True}])
def test_pointer_arrays(jit, options):
    blocks = np.zeros(8, Q8)
    blocks["qs"] = np.arange(8 * 32).reshape(8, 32) % 100
    blocks["d"] = np.arange(8)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(4, np.int32)
    clsim.run(rows_of_blocks, (2,), (2,), (blocks.view(np.uint8), x, y,
                                            np.int64(2 * Q8.itemsize)), jit=jit, **options)
    rows = np.array([[2 * r + i for r in range(4)] for i in range(2)])
    want = blocks["qs"][rows, 1].astype(np.int64).sum(axis=1) + rows.sum(axis=1)
    np.testing.assert_array_equal(y[:2], want)
    np.testing.assert_array_equal(y[2:], [x[1] + x[3], x[2] + x[4]])


@kernel
def racing_through_an_array(x, y):
    i = get_global_id(0)
    ax = pointer_array(2)
    ax[0] = x + 1
    ax[1] = x + 2
    ax[0][0] = np.float32(i)  # every work-item stores x[1]


def test_checks_follow_a_pointer_array_to_its_buffer():
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(racing_through_an_array, (2,), (2,),
                  (np.zeros(8, np.float32), np.zeros(2, np.float32)), checks="all")
    assert "x[1]" in str(info.value)


@kernel
def past_the_end(x, y):
    i = get_global_id(0)
    ax = pointer_array(1)
    ax[0] = x + 6
    y[i] = ax[0][i]


@JIT
def test_an_access_through_a_pointer_array_is_bounds_checked(jit):
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(past_the_end, (4,), (4,), (np.zeros(8, np.float32), np.zeros(4, np.float32)),
                  jit=jit)
    assert "x[8]" in str(info.value)


@kernel
def two_buffers(x, y):
    ax = pointer_array(2)
    ax[0] = x
    ax[1] = y


def test_a_pointer_array_points_into_one_buffer():
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(two_buffers, (1,), (1,), (np.zeros(2, np.float32), np.zeros(2, np.float32)))
    assert "'ax' points into 'x' elsewhere but into 'y' here" in str(info.value)
