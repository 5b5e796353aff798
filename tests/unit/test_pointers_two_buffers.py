"""A pointer variable assigned pointers into different buffers (issue 22; ggml's concat:
``x = src0 + ...`` on one branch, ``x = src1 + ...`` on the other, ``z = c ? p : q``): each
access goes to the buffer the variable points into when it runs, and is checked against that
buffer."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel

JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def pick(a, b, c, d, out, n):
    i = get_global_id(0)
    x = None
    if i < n:
        x = a + i
    else:
        x = b + (i - n)
    out[i] = x[0] * 2.0
    x[0] = np.float32(i)  # a store through it goes to the same buffer
    z = c + 1 if i % 2 == 0 else d + 2
    out[i + 8] = z[0] + z[1]


@JIT
@pytest.mark.parametrize("options", [{"checks": "all"}, {"traffic": True}])
def test_a_pointer_into_one_of_two_buffers(jit, options):
    a = np.arange(4, dtype=np.float32)
    b = np.arange(4, dtype=np.float32) + 10
    c, d = a + 100, b + 100
    a0, b0 = a.copy(), b.copy()
    out = np.zeros(16, np.float32)
    clsim.run(pick, (8,), (4,), (a, b, c, d, out, np.int32(4)), jit=jit, **options)
    np.testing.assert_array_equal(out[:8], np.concatenate([a0, b0]) * 2)
    np.testing.assert_array_equal(out[8:], [c[1] + c[2], d[2] + d[3]] * 4)
    np.testing.assert_array_equal(a, [0, 1, 2, 3])
    np.testing.assert_array_equal(b, [4, 5, 6, 7])


@kernel
def past_b(a, b, out, n):
    i = get_global_id(0)
    if i < n:
        x = a + i
    else:
        x = b + i
    out[i] = x[0]


@JIT
def test_an_access_past_the_second_buffer_names_it(jit):
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(past_b, (8,), (4,), (np.zeros(4, np.float32), np.zeros(4, np.float32),
                                       np.zeros(8, np.float32), np.int32(4)), jit=jit)
    text = str(info.value)
    assert "load from b[4]" in text and "gid=(4,)" in text and "out[i] = x[0]" in text
