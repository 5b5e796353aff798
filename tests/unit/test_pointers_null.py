"""Run-time null pointers (issue 22): ``p = None``, ``x + k if c else None``, ``p is None``,
``if p:``, and on buffer parameters passed as None the same forms decided when the kernel
compiles (``src2[i] if src2 is not None else 0``, C's ``psrc2 ? psrc2[i] : 0``)."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view

JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def optional_pointers(x, src2, y):
    i = get_global_id(0)
    p = x + 1 if i % 2 == 0 else None
    q = None
    if i > 1:
        q = view(x, np.float32, 8)
    a = p[0] if p is not None else np.float32(-1)
    b = q[0] if q else np.float32(-2)
    c = src2[i] if src2 is not None else np.float32(0)
    if not p:
        a += 100.0
    if src2:
        c += 0.5
    y[i] = a + b * 10.0 + c * 1000.0


@JIT
@pytest.mark.parametrize("options", [{}, {"checks": "all"}, {"traffic": True}])
def test_null_pointers_at_run_time(jit, options):
    x = np.arange(8, dtype=np.float32)
    a = np.array([1, 99, 1, 99], np.float32)
    b = np.array([-2, -2, 2, 2], np.float32)
    for src2, c in ((None, np.zeros(4, np.float32)), (x, x[:4] + 0.5)):
        y = np.zeros(4, np.float32)
        clsim.run(optional_pointers, (4,), (4,), (x, src2, y), jit=jit, **options)
        np.testing.assert_array_equal(y, a + b * 10 + c * 1000)


@kernel
def reads_null(x, y):
    i = get_global_id(0)
    p = x + 1 if i % 2 == 0 else None
    y[i] = p[0]


@kernel
def reads_null_view(x, y):
    i = get_global_id(0)
    p = None
    if i == 0:
        p = view(x, np.float32, 4)
    y[i] = p[0]


@JIT
@pytest.mark.parametrize("kern", [reads_null, reads_null_view])
def test_an_access_through_null_is_an_error_naming_the_buffer(jit, kern):
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(kern, (2,), (2,), (np.zeros(4, np.float32), np.zeros(2, np.float32)),
                  jit=jit)
    message = str(info.value)
    assert "through a null pointer" in message and ("x[" in message or "'x'" in message)
    assert "y[i] = p[0]" in message


@kernel
def always_null(x, y):
    p = None
    y[0] = p[0]


@kernel
def compares_int(x, y):
    n = 3
    if n is None:
        y[0] = 1.0


@pytest.mark.parametrize("kern, words", [
    (always_null, "'p' is None (a null pointer) on every path here"),
    (compares_int, "'is None' on a int: only pointers can be None"),
])
def test_null_misuse_is_a_compile_error(kern, words):
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(kern, (1,), (1,), (np.zeros(4, np.float32), np.zeros(2, np.float32)))
    assert words in str(info.value) and "test_pointers_null.py:" in str(info.value)


@kernel
def offset_optional(src2, y, off2):
    src2 = view(src2, np.float32, off2)  # ggml's first lines, on an optional input
    i = get_global_id(0)
    y[i] = src2[i] if src2 is not None else np.float32(-1)
    if src2:
        y[i] += 10.0


@kernel
def reassigned_to_none(src2, y):
    i = get_global_id(0)
    if i > 1:
        src2 = None  # a reassigned parameter is tested at run time
    y[i] = src2[i] if src2 is not None else np.float32(-1)


@JIT
def test_a_reassigned_optional_parameter(jit):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(4, np.float32)
    clsim.run(offset_optional, (4,), (4,), (x, y, np.int64(4)), jit=jit)
    np.testing.assert_array_equal(y, x[1:5] + 10)
    clsim.run(offset_optional, (4,), (4,), (None, y, np.int64(4)), jit=jit)
    np.testing.assert_array_equal(y, [-1.0] * 4)
    clsim.run(reassigned_to_none, (4,), (4,), (x, y), jit=jit)
    np.testing.assert_array_equal(y, [0.0, 1.0, -1.0, -1.0])
