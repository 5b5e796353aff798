"""Pointers into a struct's array field (issue 22): ``x[i].qs + k``, ``q = x[i].qs``,
``xb.qs`` on a pointer to records, ``f(x[i].qs + 8)`` and ``view(x[i].qs, T, off)`` are C's
array-to-pointer decay: a view of the field's element type into the buffer's bytes, read and
written through, checked against the buffer."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view

Q8 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])
JIT = pytest.mark.parametrize("jit", [False, True])


@clsim.func
def sum4(p):
    return np.int32(p[0]) + np.int32(p[1]) + np.int32(p[2]) + np.int32(p[3])


@kernel
def field_pointers(x, y):
    i = get_global_id(0)
    q = x[i].qs + 4
    xb = x + i
    r = xb.qs
    w = view(x[i].qs, np.uint16, 2)
    y[i] = np.int32(q[0]) + 100 * np.int32(r[1]) + 10000 * sum4(x[i].qs + 8)
    y[i + 3] = np.int32(w[0])
    z = x[i].qs + 12
    z[1] = np.uint8(200)


@JIT
@pytest.mark.parametrize("options", [{}, {"checks": "all"}, {"traffic": True}])
def test_pointers_into_array_fields(jit, options):
    x = np.zeros(3, Q8)
    x["qs"] = np.arange(48).reshape(3, 16)
    y = np.zeros(6, np.int32)
    qs = x["qs"].astype(np.int64).copy()
    clsim.run(field_pointers, (3,), (3,), (x, y), jit=jit, **options)
    want = qs[:, 4] + 100 * qs[:, 1] + 10000 * qs[:, 8:12].sum(axis=1)
    np.testing.assert_array_equal(y[:3], want)
    np.testing.assert_array_equal(y[3:], qs[:, 2] + 256 * qs[:, 3])
    np.testing.assert_array_equal(x["qs"][:, 13], [200] * 3)


@kernel
def past_the_buffer(x, y):
    i = get_global_id(0)
    q = x[i].qs + 16
    y[i] = np.int32(q[2])  # the last record's field ends the buffer


@JIT
def test_an_access_past_the_buffer_through_a_field_pointer_names_it(jit):
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(past_the_buffer, (2,), (2,), (np.zeros(2, Q8), np.zeros(2, np.int32)),
                  jit=jit)
    assert "'x'" in str(info.value) and "y[i] = np.int32(q[2])" in str(info.value)
