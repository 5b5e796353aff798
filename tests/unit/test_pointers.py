"""Pointers: pointer locals into one buffer (p = x, p = x + k, p[i], p += k, p - q, p < q),
vloadN/vstoreN at any element offset through them, bounds checked against the underlying
buffer; None arguments as null pointers; __constant tables (module-level numpy arrays)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim import (
    get_global_id,
    kernel,
    vload2,
    vload3,
    vload4,
    vload8,
    vload16,
    vstore2,
    vstore3,
    vstore4,
    vstore8,
    vstore16,
)

JIT = pytest.mark.parametrize("jit", [False, True])
# IQ4_NL's 16 values (llama.cpp kvalues_iq4nl), a __constant table
KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89,
                          113], np.int8)
HALF_TABLE = np.array([0.5, 1.5, -2.25], np.float16)


@kernel
def pointer_locals(x, y, k):
    i = get_global_id(0)
    p = x + k
    q = p
    q += 2
    y[i] = p[i] + q[0]
    r = y + 8
    r[i] = np.float32(q - p)
    if p < q:
        y[12 + i] = 1.0


@JIT
def test_pointer_locals_offsets_and_comparison(jit):
    """p = x + k reads x[k + i]; q = p; q += 2; q - p is 2; p < q; a pointer into y stores."""
    x = np.arange(20, dtype=np.float32)
    y = np.zeros(16, np.float32)
    clsim.run(pointer_locals, (4,), (4,), (x, y, np.int32(3)), jit=jit)
    np.testing.assert_array_equal(y[:4], x[3:7] + x[5])
    np.testing.assert_array_equal(y[8:12], 2)
    np.testing.assert_array_equal(y[12:16], 1)


VLOAD = {2: vload2, 3: vload3, 4: vload4, 8: vload8, 16: vload16}
VSTORE = {2: vstore2, 3: vstore3, 4: vstore4, 8: vstore8, 16: vstore16}


def make_unaligned(vload, vstore):
    @kernel
    def unaligned_copy(src, dst, k, m):
        i = get_global_id(0)
        vstore(vload(i, src + k), i, dst + m)

    return unaligned_copy


UNALIGNED = {w: make_unaligned(VLOAD[w], VSTORE[w]) for w in VLOAD}


@given(width=st.sampled_from(sorted(VLOAD)), k=st.integers(0, 7), m=st.integers(0, 7),
       n=st.integers(1, 3))
def test_vload_vstore_at_any_element_offset(width, k, m, n):
    """vloadN(i, src + k) reads src[k + N*i ..], vstoreN(v, i, dst + m) writes dst[m + N*i ..]
    for every offset, not only multiples of N (no-JIT; the JIT path is tested below)."""
    src = np.arange(k + width * n, dtype=np.float32)
    dst = np.zeros(m + width * n, np.float32)
    clsim.run(UNALIGNED[width], (n,), (n,), (src, dst, np.int32(k), np.int32(m)), jit=False)
    np.testing.assert_array_equal(dst[m:], src[k:])
    np.testing.assert_array_equal(dst[:m], 0)


def test_unaligned_vload_compiled():
    src = np.arange(3 + 8, dtype=np.float32)
    dst = np.zeros(8, np.float32)
    clsim.run(UNALIGNED[4], (2,), (2,), (src, dst, np.int32(3), np.int32(0)))
    np.testing.assert_array_equal(dst, src[3:])


@kernel
def pointer_past_end(x, y):
    p = x + 3
    y[0] = p[get_global_id(0) + 5]


@kernel
def vload_past_end(x, y):
    vstore4(vload4(0, x + 6), 0, y)


@pytest.mark.parametrize("kern", [pointer_past_end, vload_past_end])
def test_accesses_through_pointers_are_checked_against_the_buffer(kern):
    with pytest.raises(clsim.OutOfBoundsError, match=r"x\[8\]|x\[9\]"):
        clsim.run(kern, (1,), (1,), (np.zeros(8, np.float32), np.zeros(4, np.float32)))


@kernel
def optional_bias(x, bias, y):
    i = get_global_id(0)
    acc = x[i]
    if bias is not None:
        acc += bias[i]
    else:
        acc = acc * 2.0
    y[i] = acc


@JIT
def test_none_is_a_null_pointer(jit):
    """A None buffer argument: 'bias is not None' is decided at compile time, per launch."""
    x = np.arange(4, dtype=np.float32)
    bias = np.full(4, 10, np.float32)
    y = np.zeros(4, np.float32)
    clsim.run(optional_bias, (4,), (4,), (x, None, y), jit=jit)
    np.testing.assert_array_equal(y, x * 2)
    clsim.run(optional_bias, (4,), (4,), (x, bias, y), jit=jit)
    np.testing.assert_array_equal(y, x + 10)
    clsim.run(optional_bias, (4,), (4,), (x, None, y), jit=jit)  # the cached tree is intact
    np.testing.assert_array_equal(y, x * 2)


@kernel
def uses_null(x, bias, y):
    y[0] = bias[0]


@kernel
def iq4_lookup(q, out):
    i = get_global_id(0)
    out[i] = np.float32(KVALUES_IQ4NL[q[i] & 15]) + HALF_TABLE[i % 3]


@JIT
def test_constant_tables(jit):
    """A module-level numpy array is a __constant table: read (bounds checked) in kernels."""
    q = np.arange(40, dtype=np.uint8)
    out = np.zeros(40, np.float32)
    clsim.run(iq4_lookup, (40,), (8,), (q, out), jit=jit)
    want = KVALUES_IQ4NL[q & 15].astype(np.float32) + HALF_TABLE[np.arange(40) % 3]
    np.testing.assert_array_equal(out, want)


@kernel
def writes_table(q, out):
    KVALUES_IQ4NL[0] = 1


@kernel
def two_buffers(x, y, out):
    p = x
    if get_global_id(0) > 0:
        p = y
    out[0] = p[0]


@pytest.mark.parametrize("kern, args, words", [
    (uses_null, (np.zeros(1, np.float32), None, np.zeros(1, np.float32)),
     "'bias' is None (a null pointer)"),
    (writes_table, (np.zeros(1, np.uint8), np.zeros(1, np.float32)),
     "'KVALUES_IQ4NL' is a __constant table"),
    # into two buffers of one element type is a split variable (test_pointers_two_buffers);
    # of two types, C's pointer would need a cast: refused
    (two_buffers, (np.zeros(1, np.float32), np.zeros(1, np.int32), np.zeros(1, np.float32)),
     "'p' points into 'x' elsewhere but into 'y' here"),
])
def test_pointer_errors(kern, args, words):
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(kern, (1,), (1,), args)
    assert words in str(info.value) and "test_pointers.py:" in str(info.value)


@kernel
def filled_private(out):
    i = get_global_id(0)
    a = clsim.private_array(4, np.float32, fill=1.5)
    b = clsim.private_array(4, np.int32, fill=(7, -2))
    a[i % 4] = 0.0
    for k in range(4):
        out[i * 8 + k] = a[k]
        out[i * 8 + 4 + k] = np.float32(b[k])


@JIT
def test_private_array_initialisers(jit):
    """fill=x sets every element; fill=(a, b) the first ones and the rest 0 (C's
    float s[4] = {a, b}); each work-item's array starts filled."""
    out = np.zeros(16, np.float32)
    clsim.run(filled_private, (2,), (2,), (out,), jit=jit)
    np.testing.assert_array_equal(out, [0, 1.5, 1.5, 1.5, 7, -2, 0, 0,
                                        1.5, 0, 1.5, 1.5, 7, -2, 0, 0])


@kernel
def bad_keyword(out):
    a = clsim.private_array(4, np.float32, init=0.0)
    out[0] = a[0]


def test_unknown_keyword_says_which():
    with pytest.raises(clsim.KernelCompileError, match="'init' is not supported here; "
                                                       "private_array\\(\\) takes fill="):
        clsim.run(bad_keyword, (1,), (1,), (np.zeros(1, np.float32),))


BLOCK = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])


@kernel
def typed_views(src, out, off):
    i = get_global_id(0)
    f = clsim.view(src, np.float32, off)
    out[i] = f[i]
    b = clsim.view(src, BLOCK, 0)
    out[8 + i] = np.float32(b[i].d) + np.float32(b[i].qs[3])
    h = clsim.view(src, np.float16, 2)
    out[16 + i] = np.float32(h[i])
    g = f + 1
    out[24 + i] = np.float32(g - f)
    w = clsim.view(out, np.int32, 128)
    w[i] = 7


@JIT
def test_typed_views_of_bytes_at_a_byte_offset(jit):
    """view(src, np.float32, off) is (global float *)((global char *)src + off): byte
    offsets (aligned to the view's type, test_pointers_expressions.py), struct views
    (block_q4_0 over a byte buffer), half views, pointer arithmetic in elements of the
    view's type, and stores through a view of another buffer type."""
    src = np.random.default_rng(0).integers(0, 256, 200, dtype=np.uint8)
    src[:144].view(BLOCK)["d"] = np.arange(8)
    out = np.zeros(40, np.float32)
    clsim.run(typed_views, (8,), (8,), (src, out, np.int64(8)), jit=jit)
    blocks = src[:144].view(BLOCK)
    np.testing.assert_array_equal(out[:8], src[8:40].view(np.float32))
    np.testing.assert_array_equal(out[8:16], blocks["d"].astype(np.float32) + blocks["qs"][:, 3])
    np.testing.assert_array_equal(out[16:24], src[2:18].view(np.float16).astype(np.float32))
    np.testing.assert_array_equal(out[24:32], 1)
    np.testing.assert_array_equal(out[32:].view(np.int32), 7)


@kernel
def view_past_end(src, out):
    f = clsim.view(src, np.float32, 4)
    out[0] = f[get_global_id(0) + 1]


def test_view_accesses_are_checked_against_the_bytes():
    """Reading bytes 8..11 of an 8-byte buffer is out of bounds."""
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(view_past_end, (1,), (1,), (np.zeros(8, np.uint8), np.zeros(1, np.float32)))


@kernel
def reused_loop_variable(x, out, n):
    lid = clsim.get_local_id(0)
    s = clsim.local_array(4, np.float32)
    for row in range(lid, n, 4):  # a varying range, no barrier
        out[row] = x[row]
    for row in range(2):  # a barrier loop: its counter must be the group's
        s[lid] = np.float32(row)
        clsim.barrier(clsim.CLK_LOCAL_MEM_FENCE)
        out[n + 2 * lid + row] = s[3 - lid]
        clsim.barrier(clsim.CLK_LOCAL_MEM_FENCE)


@JIT
def test_a_loop_variable_reused_in_two_loops_is_two_variables(jit):
    """C's block scope: `for (int row...)` twice is two variables, so the barrier loop's
    counter is not 'assigned elsewhere' by the other loop (issue 10)."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(16, np.float32)
    clsim.run(reused_loop_variable, (4,), (4,), (x, out, np.int32(8)), jit=jit)
    np.testing.assert_array_equal(out[:8], x)
    np.testing.assert_array_equal(out[8:], np.tile([0, 1], 4))


@kernel
def vectors_through_views(src, dst, off):
    i = get_global_id(0)
    f = clsim.view(src, np.float32, off)
    g = clsim.view(dst, np.float32, 4)
    vstore4(vload4(i, f) * 2.0, i, g)


@JIT
def test_vload_vstore_through_typed_views(jit):
    """vload4(i, (global float *)(src + off)) at a byte offset that is a multiple of the
    element's size only (not of the vector's), and vstore4 into a float view of a byte
    buffer; a byte offset that is not a multiple of 4 is misaligned."""
    src = np.random.default_rng(4).integers(0, 256, 64, dtype=np.uint8)
    src[4:36] = np.arange(8, dtype=np.float32).view(np.uint8)
    dst = np.zeros(40, np.uint8)
    clsim.run(vectors_through_views, (2,), (1,), (src, dst, np.int64(4)), jit=jit)
    np.testing.assert_array_equal(dst[4:36].view(np.float32), np.arange(8) * 2.0)
    np.testing.assert_array_equal(dst[:4], 0)
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(vectors_through_views, (3,), (1,), (src, dst, np.int64(4)), jit=jit)
    with pytest.raises(clsim.MisalignedAccessError):
        clsim.run(vectors_through_views, (2,), (1,), (src, dst, np.int64(3)), jit=jit)


Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])


@clsim.func
def dot_n(a, b, n):
    s = np.float32(0.0)
    for k in range(n):
        s += a[k] * b[k]
    return s


@clsim.func
def block_sum(blk):
    s = np.int32(0)
    for j in range(16):
        s += np.int32(blk.qs[j])
    return np.float32(s) * np.float32(blk.d)


@clsim.func
def put_pair(p, v):
    p[0] = v
    p += 1
    p[0] = v + 1.0


@kernel
def pointers_into_helpers(x, y, raw, blocks, out):
    i = get_global_id(0)
    xi = x + 4 * i
    out[i] = dot_n(xi, y + 4 * i, 4)
    out[8 + i] = (block_sum(clsim.view(raw, Q4_0, 1 + 18 * i)) + block_sum(blocks[i])
                  + block_sum(blocks + i))
    put_pair(out + 16 + 2 * i, np.float32(i))


@pytest.mark.parametrize("jit", [False, True])
def test_pointers_and_views_passed_to_helpers(jit):
    """helper(x + k, n), helper(p) for a pointer local, helper(view(src, BLOCK, off)),
    helper(x[ib]) (a struct by value) and helper(x + ib): the helper indexes the caller's
    buffer through the pointer (and writes through it), checked against that buffer."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(32).astype(np.float32)
    y = rng.standard_normal(32).astype(np.float32)
    blocks = rng.integers(0, 256, 8 * 18, dtype=np.uint8).view(Q4_0).copy()
    blocks["d"] = np.float16(0.5) * np.arange(1, 9)
    raw = np.zeros(1 + 8 * 18, np.uint8)
    raw[1:] = blocks.view(np.uint8)
    out = np.zeros(32, np.float32)
    clsim.run(pointers_into_helpers, (8,), (8,), (x, y, raw, blocks, out), jit=jit)
    want = np.zeros(8, np.float32)
    for i in range(8):
        for k in range(4):
            want[i] = np.float32(want[i] + x[4 * i + k] * y[4 * i + k])
    np.testing.assert_array_equal(out[:8], want)
    sums = blocks["qs"].astype(np.int32).sum(1).astype(np.float32) * blocks["d"].astype(
        np.float32)
    np.testing.assert_array_equal(out[8:16], sums * 3)
    np.testing.assert_array_equal(out[16:], np.repeat(np.arange(8, dtype=np.float32), 2)
                                  + np.tile(np.float32([0, 1]), 8))


@kernel
def helper_past_end(x, out):
    put_pair(out + 1, x[0])


def test_helpers_check_pointers_against_the_callers_buffer():
    with pytest.raises(clsim.OutOfBoundsError, match=r"store to out\[2\] out of bounds \(len 2\)"):
        clsim.run(helper_past_end, (1,), (1,), (np.ones(1, np.float32), np.zeros(2, np.float32)))
