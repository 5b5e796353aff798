"""Packed structs: numpy structured dtypes as OpenCL packed structs. GGUF's quantisation
blocks (Q4_0 18 B, Q8_0 34 B, Q4_K 144 B with a nested record, Q6_K 210 B) round-trip
through kernels byte for byte, x[ib].d (half) and x[ib].qs[j] read like the C code, and
clsim.cstruct prints the matching typedef."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel

Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])
Q8_0 = np.dtype([("d", np.float16), ("qs", np.int8, (32,))])
Q4_K = np.dtype([("dm", [("d", np.float16), ("dmin", np.float16)]),
                 ("scales", np.uint8, (12,)), ("qs", np.uint8, (128,))])
Q6_K = np.dtype([("ql", np.uint8, (128,)), ("qh", np.uint8, (64,)), ("scales", np.int8, (16,)),
                 ("d", np.float16)])
JIT = pytest.mark.parametrize("jit", [False, True])


def _random_blocks(dtype, n, seed=0):
    raw = np.random.default_rng(seed).integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    blocks = raw.view(dtype).copy()
    for name in dtype.names:  # keep half fields finite so == comparisons mean something
        if blocks[name].dtype == np.float16:
            blocks[name] = np.float16(0.5) * (np.arange(n) + 1)
    return blocks


@kernel
def copy_q4_0(x, y):
    ib = get_global_id(0)
    y[ib].d = x[ib].d
    for j in range(16):
        y[ib].qs[j] = x[ib].qs[j]


@kernel
def copy_q8_0(x, y):
    ib = get_global_id(0)
    y[ib].d = x[ib].d
    for j in range(32):
        y[ib].qs[j] = x[ib].qs[j]


@kernel
def copy_q4_k(x, y):
    ib = get_global_id(0)
    y[ib].dm.d = x[ib].dm.d
    y[ib].dm.dmin = x[ib].dm.dmin
    for j in range(12):
        y[ib].scales[j] = x[ib].scales[j]
    for j in range(128):
        y[ib].qs[j] = x[ib].qs[j]


@kernel
def copy_q6_k(x, y):
    ib = get_global_id(0)
    for j in range(128):
        y[ib].ql[j] = x[ib].ql[j]
    for j in range(64):
        y[ib].qh[j] = x[ib].qh[j]
    for j in range(16):
        y[ib].scales[j] = x[ib].scales[j]
    y[ib].d = x[ib].d


@JIT
@pytest.mark.parametrize("dtype, kern, size", [(Q4_0, copy_q4_0, 18), (Q8_0, copy_q8_0, 34),
                                               (Q4_K, copy_q4_k, 144), (Q6_K, copy_q6_k, 210)])
def test_gguf_blocks_round_trip_byte_for_byte(dtype, kern, size, jit):
    """Every field of every block copied through a kernel: the output bytes are the input's."""
    assert dtype.itemsize == size
    x = _random_blocks(dtype, 7)
    y = np.zeros(7, dtype)
    clsim.run(kern, (7,), (7,), (x, y), jit=jit)
    np.testing.assert_array_equal(y.view(np.uint8), x.view(np.uint8))


@kernel
def dequantize_q4_0(x, out):
    ib = get_global_id(0)
    d = x[ib].d
    for j in range(16):
        q = x[ib].qs[j]
        out[ib * 32 + j] = (np.int32(q & 0x0F) - 8) * np.float32(d)
        out[ib * 32 + j + 16] = (np.int32(q >> 4) - 8) * np.float32(d)


@JIT
def test_q4_0_dequantisation_matches_ggml_reference(jit):
    """llama.cpp's dequantize_row_q4_0: low nibbles then high nibbles, minus 8, times d."""
    x = _random_blocks(Q4_0, 5, seed=3)
    out = np.zeros(5 * 32, np.float32)
    clsim.run(dequantize_q4_0, (5,), (5,), (x, out), jit=jit)
    d = x["d"].astype(np.float32)[:, None]
    lo = (x["qs"] & 0x0F).astype(np.int32) - 8
    hi = (x["qs"] >> 4).astype(np.int32) - 8
    np.testing.assert_array_equal(out.reshape(5, 32), np.concatenate([lo, hi], 1) * d)


@kernel
def block_past_end(x, out):
    out[0] = x[get_global_id(0) + 3].d


@kernel
def field_past_end(x, out):
    out[0] = x[0].qs[get_global_id(0) + 16]


@kernel
def store_past_end(x, out):
    x[0].qs[get_global_id(0) + 16] = 1


@pytest.mark.parametrize("kern", [block_past_end, field_past_end, store_past_end])
def test_struct_indices_are_bounds_checked(kern):
    """The block index is checked against the number of records, an array field's index
    against its length (a store is refused before it writes)."""
    x = _random_blocks(Q4_0, 2)
    before = x.copy()
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(kern, (1,), (1,), (x, np.zeros(1, np.float32)))
    np.testing.assert_array_equal(x.view(np.uint8), before.view(np.uint8))


@kernel
def no_such_field(x, out):
    out[0] = x[0].scale


@kernel
def index_a_copy(x, out):
    b = x[0]
    out[0] = b[1].d


@kernel
def advance_a_copy(x, out):
    b = x[0]
    c = b + 1
    out[0] = c.d


@pytest.mark.parametrize("kern, words", [
    (no_such_field, "no field '.scale' (fields: d, qs)"),
    (index_a_copy, "'b' is a struct (a copy of a record), not a pointer"),
    (advance_a_copy, "'+' on a struct (a copy of a record")])
def test_struct_errors(kern, words):
    with pytest.raises(clsim.KernelCompileError, match=None) as info:
        clsim.run(kern, (1,), (1,), (_random_blocks(Q4_0, 1), np.zeros(1, np.float32)))
    assert words in str(info.value) and "test_structs.py:" in str(info.value)


def test_cstruct_prints_the_packed_typedef_with_asserts():
    text = clsim.cstruct(Q4_K, "block_q4_K")
    assert "typedef struct __attribute__((packed)) {" in text
    assert "        half d;\n        half dmin;\n    } dm;" in text
    assert "    uchar scales[12];\n    uchar qs[128];\n} block_q4_K;" in text
    assert '_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K: size");' in text
    assert "__builtin_offsetof(block_q4_K, qs) == 16" in text
    with pytest.raises(clsim.KernelCompileError, match="not a structured dtype"):
        clsim.cstruct(np.float32, "f")


@kernel
def fields_and_views(x, raw, out):
    i = get_global_id(0)
    f = clsim.view(raw, np.float32, 4)
    w = clsim.view(out, np.int32, 0)
    out[i] = np.float32(x[i].d) + np.float32(x[i].qs[i % 16]) + f[i]
    w[i + 8] = 3
    x[i].qs[0] = 9


@pytest.mark.parametrize("options", [{"checks": "all"}, {"traffic": True}])
def test_instruments_see_struct_fields_and_views(options):
    """Race and uninitialised-read checks and the traffic model run over struct fields and
    typed views (one access of the field's bytes, reported in the buffer's own elements, so
    neighbouring work-items' accesses are not mistaken for a race)."""
    x = _random_blocks(Q4_0, 8)
    raw = np.arange(64, dtype=np.uint8)
    out, plain = np.zeros(16, np.float32), np.zeros(16, np.float32)
    x_plain = x.copy()
    clsim.run(fields_and_views, (8,), (8,), (x_plain, raw, plain))
    clsim.run(fields_and_views, (8,), (8,), (x, raw, out), **options)
    np.testing.assert_array_equal(out, plain)
    np.testing.assert_array_equal(x.view(np.uint8), x_plain.view(np.uint8))
    assert (x["qs"][:, 0] == 9).all()


@kernel
def through_block_pointer(x, out):
    ib = get_global_id(0)
    xb = x + ib
    out[2 * ib] = np.float32(xb.d)
    out[2 * ib + 1] = np.float32(xb[0].qs[5]) + np.float32(xb.qs[6])
    xb.qs[0] = 42
    (x + ib).qs[1] = (x + ib).qs[2]


@JIT
def test_pointer_to_a_block(jit):
    """global block_q4_0 *xb = x + ib; xb->d, xb->qs[j]: in Python xb = x + ib, xb.d, xb.qs[j]
    (and xb[0].qs[j])."""
    x = _random_blocks(Q4_0, 4, seed=5)
    want_qs = x["qs"].copy()
    out = np.zeros(8, np.float32)
    clsim.run(through_block_pointer, (4,), (4,), (x, out), jit=jit)
    np.testing.assert_array_equal(out[0::2], x["d"].astype(np.float32))
    np.testing.assert_array_equal(out[1::2], want_qs[:, 5].astype(np.float32) + want_qs[:, 6])
    assert (x["qs"][:, 0] == 42).all()
    np.testing.assert_array_equal(x["qs"][:, 1], want_qs[:, 2])


@kernel
def dequantize_through_a_copy(x, out):
    ib = get_global_id(0)
    b = x[ib]
    d = np.float32(b.d)
    for j in range(16):
        q = b.qs[j]
        out[ib * 32 + j] = (np.int32(q & 0x0F) - 8) * d
        out[ib * 32 + j + 16] = (np.int32(q >> 4) - 8) * d


@kernel
def copy_through_pointer_and_view(x, raw, out):
    ib = get_global_id(0)
    xb = x + 1
    b = xb[ib]
    v = clsim.view(raw, Q4_0, 2)
    c = v[ib]
    out[ib] = np.float32(b.qs[ib]) + np.float32(c.qs[15 - ib]) * 1000.0


@JIT
def test_a_record_copied_into_a_local(jit):
    """block_q4_0 b = x[ib]; b.d, b.qs[j]: the same values as x[ib].d (from a buffer, a
    pointer into one and a typed view at a byte offset)."""
    x = _random_blocks(Q4_0, 5, seed=3)
    out = np.zeros(5 * 32, np.float32)
    clsim.run(dequantize_through_a_copy, (5,), (5,), (x, out), jit=jit)
    d = x["d"].astype(np.float32)[:, None]
    lo = (x["qs"] & 0x0F).astype(np.int32) - 8
    hi = (x["qs"] >> 4).astype(np.int32) - 8
    np.testing.assert_array_equal(out.reshape(5, 32), np.concatenate([lo, hi], 1) * d)
    raw = np.zeros(2 + 4 * 18, np.uint8)
    raw[2:] = x[:4].view(np.uint8).reshape(-1)
    out = np.zeros(4, np.float32)
    clsim.run(copy_through_pointer_and_view, (4,), (4,), (x, raw, out), jit=jit)
    want = [x[1 + i]["qs"][i] + 1000.0 * x[i]["qs"][15 - i] for i in range(4)]
    np.testing.assert_array_equal(out, np.float32(want))


@kernel
def copy_past_end(x, out):
    b = x[get_global_id(0) + 2]
    out[0] = b.d


def test_a_record_copy_is_bounds_checked_where_it_is_copied():
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(copy_past_end, (1,), (1,), (_random_blocks(Q4_0, 2), np.zeros(1, np.float32)))


@kernel
def update_fields(x, m):
    i = get_global_id(0)
    x[i].d += np.float16(1.0)
    x[i].qs[3] |= m
    x[i].qs[4] += np.uint8(250)
    x[i].qs[5] -= 1
    xb = x + i
    xb.qs[6] ^= m
    xb.qs[7] = xb.qs[7] + 1


@JIT
def test_op_assign_on_struct_fields(jit):
    """x[i].d += v and x[i].qs[j] |= m are C's compound assignments on fields: the half
    field rounded to half, the uchar fields wrapped at 8 bits."""
    x = _random_blocks(Q4_0, 4, seed=9)
    y = x.copy()
    clsim.run(update_fields, (4,), (4,), (y, np.uint8(0x81)), jit=jit)
    np.testing.assert_array_equal(y["d"], x["d"] + np.float16(1.0))
    qs, got = x["qs"].astype(np.int32), y["qs"]
    np.testing.assert_array_equal(got[:, 3], (qs[:, 3] | 0x81).astype(np.uint8))
    np.testing.assert_array_equal(got[:, 4], (qs[:, 4] + 250).astype(np.uint8))
    np.testing.assert_array_equal(got[:, 5], (qs[:, 5] - 1).astype(np.uint8))
    np.testing.assert_array_equal(got[:, 6], (qs[:, 6] ^ 0x81).astype(np.uint8))
    np.testing.assert_array_equal(got[:, 7], (qs[:, 7] + 1).astype(np.uint8))
    np.testing.assert_array_equal(got[:, 8:], x["qs"][:, 8:])


@kernel
def scale_by_struct_argument(p, out):
    i = get_global_id(0)
    out[i] = np.float32(p.d) * np.float32(p.qs[i])


@JIT
@pytest.mark.parametrize("as_zero_d", [False, True])
def test_struct_passed_by_value(jit, as_zero_d):
    """A structured scalar (or a 0-d record array) is a struct argument by value: p.d and
    p.qs[j] read its fields; its array fields are bounds-checked."""
    blocks = _random_blocks(Q4_0, 3, seed=4)
    arg = np.array(blocks[2]) if as_zero_d else blocks[2]
    out = np.zeros(16, np.float32)
    clsim.run(scale_by_struct_argument, (16,), (1,), (arg, out), jit=jit)
    np.testing.assert_array_equal(out, np.float32(blocks[2]["d"])
                                  * blocks[2]["qs"].astype(np.float32))
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(scale_by_struct_argument, (17,), (1,), (arg, np.zeros(17, np.float32)),
                  jit=jit)


@clsim.func
def add_block(blk, dst):
    dst[0] = dst[0] + np.float32(blk.qs[0])


@kernel
def new_forms_under_instruments(x, p, y, out):
    i = get_global_id(0)
    b = x[i]
    v = clsim.view(y, clsim.float4)
    w = v[i] * np.float32(b.d)
    v[i] = w + np.float32(p.qs[i])
    out[i] = np.float32(b.qs[1])
    add_block(x[i], out + i)


@pytest.mark.parametrize("options", [{"checks": "all"}, {"traffic": True}])
def test_instruments_see_copies_struct_arguments_vector_views_and_helper_pointers(options):
    """Record copies, a struct argument, a float4 view and a pointer passed to a helper run
    under the race/uninitialised checks and the traffic model with the plain run's results
    (neighbouring work-items' float4 elements are not a race)."""
    x = _random_blocks(Q4_0, 8, seed=2)
    p = _random_blocks(Q4_0, 1, seed=3)[0]
    y, out = np.arange(32, dtype=np.float32), np.zeros(8, np.float32)
    y2, out2 = y.copy(), out.copy()
    clsim.run(new_forms_under_instruments, (8,), (8,), (x.copy(), p, y, out))
    clsim.run(new_forms_under_instruments, (8,), (8,), (x.copy(), p, y2, out2), **options)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(out2, out)
