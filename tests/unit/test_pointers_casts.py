"""Pointers of any cast (issue 22): buffer parameters reassigned as C's pointer parameters are
(``src0 = view(src0, np.float32, offset0)``, ``dst += k``), views of views and byte
arithmetic through ``view(p, np.int8) + n``; accesses stay checked against the buffer behind
them (bounds, alignment) and instruments keep working."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view

JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def ggml_prologue(src0, dst, offset0, offsetd, nb1):
    # C: src0 = (global float *)((global char *)src0 + offset0); dst likewise
    src0 = view(src0, np.float32, offset0)
    dst = view(dst, np.float32, offsetd)
    i = get_global_id(0)
    shifted = view(view(src0, np.uint8, 4), np.float32)  # a view of a view
    dst[i] = src0[i] + shifted[i]
    row = view(view(dst, np.int8) + nb1, np.float32)  # (global float *)((char *)dst + nb1)
    row[i] += 1.0


@JIT
def test_reassigned_parameters_and_views_of_views(jit):
    src = np.arange(24, dtype=np.float32)
    out = np.zeros(16, np.float32)
    clsim.run(ggml_prologue, (4,), (4,), (src, out, np.int64(8), np.int64(4), np.int64(16)),
              jit=jit)
    want = np.zeros(16, np.float32)
    want[1:5] = src[2:6] + src[3:7]
    want[5:9] += 1.0
    np.testing.assert_array_equal(out, want)


@kernel
def advanced(x, y):
    i = get_global_id(0)
    x = x + 2
    x += 1
    y[i] = x[i]


@clsim.func
def tail_sum(x, n):
    x = x + 1  # a buffer passed whole to a helper is a pointer parameter there too
    s = np.float32(0)
    for k in range(n):
        s += x[k]
    return s


@kernel
def through_helper(x, out):
    out[get_global_id(0)] = tail_sum(x, 3)


@kernel
def element_then_view(x, y):
    i = get_global_id(0)
    p = x + 1  # an element offset, held as bytes once the variable also holds a view
    if i > 1:
        p = view(p, np.float32, 4)
    y[i] = p[0]


@JIT
def test_element_arithmetic_on_parameters(jit):
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(4, np.float32)
    clsim.run(advanced, (4,), (4,), (x, y), jit=jit)
    np.testing.assert_array_equal(y, x[3:7])
    out = np.zeros(2, np.float32)
    clsim.run(through_helper, (2,), (2,), (x, out), jit=jit)
    np.testing.assert_array_equal(out, [6.0, 6.0])
    clsim.run(element_then_view, (4,), (4,), (x, y), jit=jit)
    np.testing.assert_array_equal(y, [1.0, 1.0, 2.0, 2.0])


@kernel
def offset_read(src0, dst, offset0):
    src0 = view(src0, np.float32, offset0)
    i = get_global_id(0)
    dst[i] = src0[i]


@JIT
@pytest.mark.parametrize("offset, error, words, line", [
    # C leaves the misaligned cast itself undefined: checked where the pointer is assigned
    (2, clsim.MisalignedAccessError, "a view of 'src0' with 4-byte elements at byte offset 2",
     "src0 = view(src0, np.float32, offset0)"),
    (24, clsim.OutOfBoundsError, "of 'src0'", "dst[i] = src0[i]"),
])
def test_reassigned_parameter_stays_checked(jit, offset, error, words, line):
    with pytest.raises(error) as info:
        clsim.run(offset_read, (4,), (4,), (np.zeros(8, np.float32), np.zeros(4, np.float32),
                                            np.int64(offset)), jit=jit)
    assert words in str(info.value) and line in str(info.value)


def test_reassigned_parameter_under_checks_and_traffic():
    src = np.arange(8, dtype=np.float32)
    for options in ({"checks": "all"}, {"traffic": True}):
        out = np.zeros(4, np.float32)
        clsim.run(offset_read, (4,), (4,), (src, out, np.int64(4)), **options)
        np.testing.assert_array_equal(out, src[1:5])


@kernel
def two_pointee_types(x, out):
    out[1] = x[0]  # x is the float buffer here
    x = view(x, np.int8, 4)  # and a char pointer here
    out[0] = np.float32(x[0])


def test_a_pointer_variable_has_one_pointee_type():
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(two_pointee_types, (1,), (1,), (np.zeros(4, np.float32),
                                                  np.zeros(1, np.float32)))
    message = str(info.value)
    assert "'x' is a global float* (into 'x') elsewhere but a global char* (into 'x') here" \
        in message and "test_pointers_casts.py:" in message


@clsim.func
def fill_two(p):
    p[0] = 3.0
    p[1] = 4.0


@kernel
def bytes_in_private_and_local_pointers(src0, y, offset0):
    src0 = view(src0, np.float32, offset0)  # the argument is a uint8 array: its bytes
    i = get_global_id(0)
    t = clsim.private_array(4, np.float32, fill=0.0)
    p = t + 1  # a pointer into a private array
    p[0] = 2.0
    fill_two(t + 2)  # C: fill_two(&t[2]): the caller's array changes
    tile = clsim.local_array(8, np.float32)
    q = tile + clsim.get_local_id(0)
    q[0] = src0[i]
    clsim.barrier(clsim.CLK_LOCAL_MEM_FENCE)
    w = view(tile, clsim.float4)
    y[i] = t[1] + t[2] + t[3] + w[0].y


@JIT
@pytest.mark.parametrize("options", [{}, {"checks": "all"}, {"traffic": True}])
def test_a_byte_argument_and_private_and_local_pointers(jit, options):
    raw = np.zeros(40, np.uint8)
    raw[4:36] = np.arange(8, dtype=np.float32).view(np.uint8)
    y = np.zeros(4, np.float32)
    clsim.run(bytes_in_private_and_local_pointers, (4,), (4,), (raw, y, np.int64(4)), jit=jit,
              **options)
    np.testing.assert_array_equal(y, [10.0] * 4)
