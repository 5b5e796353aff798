"""What run() takes as arguments and ranges beyond the basics of test_launch_guards.py:
arguments by parameter name, byte order, ranges too large for 64-bit ids, and one array bound
to parameters of different pointee types."""

import numpy as np
import pytest

import clsim
from clsim import CLK_LOCAL_MEM_FENCE, barrier, get_global_id, get_local_id, kernel


@kernel
def copy(a, out):
    i = get_global_id(0)
    out[i] = a[i]


@kernel
def bump(a):
    i = get_global_id(0)
    a[i] = a[i] + np.float32(1.0)


@pytest.mark.parametrize("jit", [True, False])
def test_arguments_by_parameter_name(jit):
    """A dict keyed by parameter name is the same launch as the tuple in parameter order."""
    a, out = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    clsim.run(copy, (8,), (8,), {"out": out, "a": a}, jit=jit)
    assert np.array_equal(out, a)


@pytest.mark.parametrize("args, named", [
    ({"a": np.zeros(8, np.float32)}, "missing 'out'"),
    ({"a": np.zeros(8, np.float32), "out": np.zeros(8, np.float32), "b": np.int32(1)},
     "no parameter named 'b'"),
])
def test_arguments_dict_with_wrong_names_names_them(args, named):
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(copy, (8,), (8,), args, jit=False)
    assert named in str(info.value) and "(a, out)" in str(info.value)


@pytest.mark.parametrize("jit", [True, False])
def test_big_endian_buffer_is_refused_naming_it(jit):
    """A '>f4' buffer would be read as garbage (and an in-place kernel would corrupt it):
    refused before anything runs, naming the argument; the array is left as it was."""
    a = np.arange(8, dtype=">f4")
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(bump, (8,), (8,), (a,), jit=jit)
    assert "buffer 'a'" in str(info.value) and "byte order" in str(info.value)
    assert info.value.argument == "a"
    assert np.array_equal(a, np.arange(8))
    native = a.astype(a.dtype.newbyteorder("="))
    clsim.run(bump, (8,), (8,), (native,), jit=jit)
    assert np.array_equal(native, np.arange(8) + 1)


@pytest.mark.parametrize("global_size, offset", [
    ((1 << 63,), None), ((1 << 64,), None), ((1 << 62,), (1 << 62,)),
    ((1 << 32, 1 << 32), None),
])
def test_range_beyond_64_bit_ids_is_an_ndrange_error(global_size, offset):
    """Sizes whose ids or work-item count do not fit int64 are InvalidNDRangeError naming the
    size, not a raw OverflowError from the launch."""
    a, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(clsim.InvalidNDRangeError) as info:
        clsim.run(copy, global_size, None, (a, out), global_offset=offset, jit=False)
    assert str(global_size[0]) in str(info.value) and info.value.cl_error == \
        "CL_INVALID_GLOBAL_WORK_SIZE"


@kernel
def own_copy_of_n(x, y, n):
    lid = get_local_id(0)
    off = lid * n
    n = n + 1  # this work-item's copy of n: the others still see the argument
    barrier(CLK_LOCAL_MEM_FENCE)
    for k in range(2):
        n += k
    y[lid] = x[off] + n


@pytest.mark.parametrize("jit", [True, False])
def test_each_work_item_assigns_its_own_copy_of_a_scalar_argument(jit):
    """As in C, a kernel's scalar arguments are per work-item values: work-item i reads
    x[2 * i] (n is still 2 for it) and adds its own n, 2 + 1 + 0 + 1. Shared, n would have
    grown with every work-item before it (x[143] out of bounds for work-item 11)."""
    x = np.arange(128, dtype=np.float32)
    y = np.zeros(64, np.float32)
    clsim.run(own_copy_of_n, (64,), (64,), (x, y, np.int32(2)), jit=jit)
    assert y.tolist() == [2.0 * i + 4.0 for i in range(64)]
