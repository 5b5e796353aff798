"""Messages of errors met through helpers and views name the kernel's own buffers: a
helper's pointer parameter p is reported as the buffer the kernel passed (not the internal
p__buf), through nested helpers too; a view's out-of-bounds access says the byte range and
the buffer's size in bytes."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view


@clsim.func
def store_at(p, k, v):
    p[k] = v


@clsim.func
def store_twice(q, k, v):
    store_at(q, k, v)
    store_at(q + 1, k, v)


@kernel
def nested_store(x, n, out):
    i = get_global_id(0)
    store_twice(out + 1, i * n, x[i])


@kernel
def two_buffers(x, y, k):
    store_at(x, k, np.float32(1.0))
    store_at(y, k + 4, np.float32(2.0))


@clsim.func
def read_float(src, off, i):
    return view(src, np.float32, off)[i]


@kernel
def view_in_helper(raw, off, out):
    i = get_global_id(0)
    out[i] = read_float(raw, off, i)


def test_helper_errors_name_the_kernels_buffer():
    """store_at(q + 1, ...) inside store_twice(out + 1, ...): the store past the end is
    reported on 'out' with out's own index and length."""
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(nested_store, (2,), (2,), (np.ones(2, np.float32), np.int32(2),
                                             np.zeros(4, np.float32)))
    err = info.value
    assert (err.buffer, err.index, err.length) == ("out", 4, 4)
    assert "store to out[4] out of bounds (len 4)" in str(err) and "__buf" not in str(err)
    assert "test_pointers_messages.py:" in str(err) and "p[k] = v" in str(err)


def test_helper_called_with_different_buffers_names_both():
    """One helper called with x and with y: its parameter is named with both."""
    with pytest.raises(clsim.OutOfBoundsError, match=r"store to p \(x or y\)\[4\]"):
        clsim.run(two_buffers, (1,), (1,), (np.zeros(8, np.float32), np.zeros(4, np.float32),
                                            np.int32(0)))


def test_view_errors_in_helpers_name_the_kernels_buffer():
    """A misaligned view inside a helper names the kernel's buffer 'raw'."""
    raw = np.zeros(32, np.uint8)
    with pytest.raises(clsim.MisalignedAccessError) as info:
        clsim.run(view_in_helper, (2,), (2,), (raw, np.int32(2), np.zeros(2, np.float32)))
    assert info.value.buffer == "raw" and "view of 'raw' at byte offset 2" in str(info.value)


@kernel
def view_past_end(raw, out):
    i = get_global_id(0)
    out[i] = view(raw, np.float32, 4)[i]


@kernel
def vload_past_end(raw, out):
    i = get_global_id(0)
    out[i] = clsim.vload2(i, view(raw, np.float32, 8)).x


def test_view_out_of_bounds_quotes_bytes_of_the_buffer():
    """Through a view the index is a byte offset: the message says so, with the access's
    type and size and the buffer's size in bytes (not an element index of the buffer)."""
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(view_past_end, (4,), (4,), (np.zeros(16, np.uint8), np.zeros(4, np.float32)))
    err = info.value
    assert (err.buffer, err.index) == ("raw", 16)
    assert ("load of 4 bytes at byte offset 16 of 'raw' through a view, out of bounds "
            "('raw' has 16 bytes)") in str(err) and err.length == 16
    with pytest.raises(clsim.OutOfBoundsError, match=r"load of 8 bytes at byte offset 16 of "
                                                     r"'raw' through a view"):
        clsim.run(vload_past_end, (2,), (2,), (np.zeros(20, np.uint8), np.zeros(2, np.float32)))


@kernel
def view_store_past_end(raw, v):
    i = get_global_id(0)
    view(raw, np.float16, 2)[i] = v


def test_view_store_out_of_bounds_quotes_bytes():
    raw = np.zeros(8, np.uint8)
    with pytest.raises(clsim.OutOfBoundsError, match=r"store of 2 bytes at byte offset 8 of "
                                                     r"'raw' through a view, out of bounds "
                                                     r"\('raw' has 8 bytes\)"):
        clsim.run(view_store_past_end, (4,), (4,), (raw, np.float16(1.0)))
    np.testing.assert_array_equal(raw[8:], [])  # nothing written past the end
    assert raw[2:8].view(np.float16).tolist() == [1.0, 1.0, 1.0]
