"""C's struct copies: a record copied into a variable (``b = x[ib]``) is C's copy: modifying
it changes neither the buffer nor other copies; whole records are assigned (``x[i] = b``,
``y[j] = x[i]``); a struct argument or a record passed to a helper is a value the callee
may modify; a pointer to a record stores through ``xb.d``. Each against numpy."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel

Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])
Q4_K = np.dtype([("dm", [("d", np.float16), ("dmin", np.float16)]),
                 ("scales", np.uint8, (12,)), ("qs", np.uint8, (128,))])
JIT = pytest.mark.parametrize("jit", [False, True])


def _blocks(dtype, n, seed=0):
    raw = np.random.default_rng(seed).integers(0, 256, n * dtype.itemsize, dtype=np.uint8)
    blocks = raw.view(dtype).copy()
    if "d" in dtype.names:
        blocks["d"] = np.float16(0.5) * (np.arange(n) + 1)
    return blocks


@kernel
def modify_a_copy(x, out):
    i = get_global_id(0)
    b = x[i]
    b.d = np.float16(0.0)
    b.qs[0] = 7
    out[2 * i] = np.float32(b.d) + np.float32(b.qs[0])
    out[2 * i + 1] = np.float32(x[i].d) + np.float32(x[i].qs[0])


@JIT
def test_modifying_a_copy_leaves_the_buffer(jit):
    """b = x[ib]; b.d = 0 changes b only: x[ib] keeps its bytes and reads its own values."""
    x = _blocks(Q4_0, 4, seed=1)
    before = x.copy()
    out = np.zeros(8, np.float32)
    clsim.run(modify_a_copy, (4,), (4,), (x, out), jit=jit)
    np.testing.assert_array_equal(out[0::2], np.full(4, 7, np.float32))
    np.testing.assert_array_equal(out[1::2], np.float32(before["d"])
                                  + before["qs"][:, 0].astype(np.float32))
    assert x.tobytes() == before.tobytes()


@kernel
def copy_then_write_buffer(x, out):
    i = get_global_id(0)
    b = x[i]
    x[i].d = np.float16(-1.0)
    out[i] = np.float32(b.d)


@JIT
def test_copy_keeps_its_value_when_the_buffer_is_written(jit):
    """C copies the record where it is assigned: a later store to x[i] does not reach b."""
    x = _blocks(Q4_0, 4, seed=2)
    want = np.float32(x["d"])
    out = np.zeros(4, np.float32)
    clsim.run(copy_then_write_buffer, (4,), (4,), (x, out), jit=jit)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(x["d"], np.full(4, -1.0, np.float16))


@kernel
def whole_records(x, y):
    i = get_global_id(0)
    y[i] = x[i]
    b = x[i]
    b.qs[1] = 99
    b.d += np.float16(1.0)
    y[i + 4] = b
    xb = y + 8
    xb[i] = y[i]
    x[i] = b


@JIT
def test_whole_struct_assignment(jit):
    """x[i] = b, y[i] = x[i] and p[k] = x[j] copy the record's bytes, as C's assignment."""
    x = _blocks(Q4_0, 4, seed=3)
    original = x.copy()
    y = np.zeros(12, Q4_0)
    clsim.run(whole_records, (4,), (4,), (x, y), jit=jit)
    modified = original.copy()
    modified["qs"][:, 1] = 99
    modified["d"] += np.float16(1.0)
    assert y[:4].tobytes() == original.tobytes()
    assert y[4:8].tobytes() == modified.tobytes()
    assert y[8:].tobytes() == original.tobytes()
    assert x.tobytes() == modified.tobytes()


@kernel
def nested_copy(x, out):
    i = get_global_id(0)
    b = x[i]
    dm = b.dm
    dm.d = np.float16(2.0)
    b.dm.dmin = dm.d
    x[i].dm = b.dm
    out[i] = np.float32(dm.d) + np.float32(b.scales[0])


@JIT
def test_nested_records_copy_as_values(jit):
    """A nested record (b.dm) is copied into a variable and assigned back whole."""
    x = _blocks(Q4_K, 3, seed=4)
    scales = x["scales"][:, 0].astype(np.float32)
    d_bits = x["dm"]["d"].view(np.uint16).copy()
    out = np.zeros(3, np.float32)
    clsim.run(nested_copy, (3,), (3,), (x, out), jit=jit)
    np.testing.assert_array_equal(out, 2.0 + scales)
    np.testing.assert_array_equal(x["dm"]["d"].view(np.uint16), d_bits)  # dm was a copy
    np.testing.assert_array_equal(x["dm"]["dmin"], np.full(3, 2.0, np.float16))


@kernel
def modify_struct_argument(p, out):
    i = get_global_id(0)
    p.d = np.float16(i)
    p.qs[0] += 1
    out[i] = np.float32(p.d) + np.float32(p.qs[i])


@JIT
def test_struct_argument_is_a_value_each_work_item_may_modify(jit):
    """A struct argument is passed by value: each work-item modifies its own copy."""
    p = _blocks(Q4_0, 1, seed=5)[0]
    out = np.zeros(16, np.float32)
    clsim.run(modify_struct_argument, (16,), (16,), (p, out), jit=jit)
    qs = p["qs"].astype(np.float32)
    qs[0] = np.float32(np.uint8(p["qs"][0] + 1))
    np.testing.assert_array_equal(out, np.arange(16, dtype=np.float32) + qs)


@clsim.func
def scaled_sum(blk, n):
    blk.d = blk.d * np.float16(2.0)
    s = np.float32(0.0)
    for j in range(n):
        s += np.float32(blk.qs[j])
    return s * np.float32(blk.d)


@kernel
def helper_modifies_its_record(x, out):
    i = get_global_id(0)
    out[i] = scaled_sum(x[i], 4)
    b = x[i]
    out[i + 4] = scaled_sum(b, 2) + np.float32(b.d)


@JIT
def test_helper_modifies_the_record_it_was_given(jit):
    """A record passed to a helper is a value there: the helper's change stays inside."""
    x = _blocks(Q4_0, 4, seed=6)
    before = x.copy()
    out = np.zeros(8, np.float32)
    clsim.run(helper_modifies_its_record, (4,), (4,), (x, out), jit=jit)
    d = np.float32(x["d"])
    qs = x["qs"].astype(np.float32)
    np.testing.assert_array_equal(out[:4], qs[:, :4].sum(axis=1) * 2 * d)
    np.testing.assert_array_equal(out[4:], qs[:, :2].sum(axis=1) * 2 * d + d)
    assert x.tobytes() == before.tobytes()


@kernel
def copy_across_a_barrier(x, out):
    i = get_global_id(0)
    b = x[i]
    b.qs[0] = np.uint8(i)
    clsim.barrier(clsim.CLK_GLOBAL_MEM_FENCE)
    x[(i + 1) % 4] = b
    clsim.barrier(clsim.CLK_GLOBAL_MEM_FENCE)
    out[i] = np.float32(b.qs[0]) + np.float32(x[i].qs[0])


@JIT
def test_each_work_item_keeps_its_copy_across_barriers(jit):
    """A private struct is one per work-item, kept across a barrier."""
    x = _blocks(Q4_0, 4, seed=7)
    out = np.zeros(4, np.float32)
    clsim.run(copy_across_a_barrier, (4,), (4,), (x, out), jit=jit)
    i = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(out, i + (i - 1) % 4)


@clsim.func
def set_block(xb, v):
    xb.qs[3] = 6
    xb.qs[4] += xb.qs[3]


@kernel
def store_through_record_pointer(x, raw, v):
    i = get_global_id(0)
    xb = x + i
    xb.d = v
    xb.qs[2] = 5
    set_block(xb, v)
    rb = clsim.view(raw, Q4_0, 2) + i
    rb.d = v


@JIT
def test_store_through_a_record_pointer(jit):
    """xb = x + i; xb.d = v is C's xb->d = v, also in a helper and through a view."""
    x = _blocks(Q4_0, 3, seed=8)
    raw = np.zeros(2 + 3 * Q4_0.itemsize, np.uint8)
    want = x.copy()
    want["d"] = np.float16(0.25)
    want["qs"][:, 2] = 5
    want["qs"][:, 3] = 6
    want["qs"][:, 4] += np.uint8(6)
    clsim.run(store_through_record_pointer, (3,), (3,), (x, raw, np.float16(0.25)), jit=jit)
    assert x.tobytes() == want.tobytes()
    np.testing.assert_array_equal(raw[2:].view(Q4_0)["d"], np.full(3, 0.25, np.float16))


@kernel
def assign_other_struct(x, y):
    x[0] = y[0]


@clsim.func
def first_scale(blk):
    return np.float32(blk.d)


@kernel
def pass_record_of_written_buffer(x, out):
    out[0] = first_scale(x[0])
    x[0].d = np.float16(1.0)


@kernel
def copy_out_of_bounds(x, out):
    b = x[4]
    b.d = np.float16(0.0)
    out[0] = np.float32(b.d)


def test_struct_copy_errors():
    """A struct is assigned from the same struct type only; a record passed to a helper
    from a buffer the kernel writes is refused (with the fix); a copy is bounds-checked."""
    with pytest.raises(clsim.KernelCompileError, match=r"test_structs_copies.py:\d+.*"
                                                      r"cannot assign a struct\{dm"):
        clsim.run(assign_other_struct, (1,), (1,), (np.zeros(1, Q4_0), np.zeros(1, Q4_K)))
    with pytest.raises(clsim.KernelCompileError, match=r"Copy the record into a variable"):
        clsim.run(pass_record_of_written_buffer, (1,), (1,),
                  (np.zeros(1, Q4_0), np.zeros(1, np.float32)))
    with pytest.raises(clsim.OutOfBoundsError,
                       match=r"load from x\[4\] out of bounds \(len 4\)"):
        clsim.run(copy_out_of_bounds, (1,), (1,), (np.zeros(4, Q4_0), np.zeros(1, np.float32)))


@pytest.mark.parametrize("options", [{"checks": "all"}, {"traffic": True},
                                     {"checks": "none"}])
def test_struct_copies_under_instruments(options):
    """Copies and whole-record stores run under the checks, the traffic model and with no
    checks at all with the plain run's results."""
    x = _blocks(Q4_0, 4, seed=3)
    y, y2 = np.zeros(12, Q4_0), np.zeros(12, Q4_0)
    x2 = x.copy()
    clsim.run(whole_records, (4,), (4,), (x, y))
    clsim.run(whole_records, (4,), (4,), (x2, y2), **options)
    assert x2.tobytes() == x.tobytes() and y2.tobytes() == y.tobytes()


@kernel
def copy_chosen_then_modified(x, out):
    b = x[0]
    if out[0] > 0.0:
        b = x[1]
    c = b
    c.d = np.float16(3.0)
    out[0] = np.float32(b.d) + np.float32(c.d)


@JIT
def test_copies_of_copies_are_their_own(jit):
    """c = b is another copy: modifying c leaves b (and x) as they were."""
    x = np.zeros(2, Q4_0)
    x["d"] = [0.5, 0.25]
    for start, want in ((0.0, 3.5), (1.0, 3.25)):
        out = np.full(1, start, np.float32)
        clsim.run(copy_chosen_then_modified, (1,), (1,), (x, out), jit=jit)
        assert out[0] == want
    np.testing.assert_array_equal(x["d"], np.float16([0.5, 0.25]))


@clsim.func
def modified_block(x, i):
    b = x[i]
    b.d = np.float16(1.0)
    return b


@kernel
def returns_a_struct(x, out):
    b = modified_block(x, 0)
    out[0] = np.float32(b.d)


@clsim.func
def record_of(x, i):
    return x[i]


@clsim.func
def record_copy_of(x, i):
    b = x[i]
    return b


@kernel
def returns_records(x, out):
    b = record_of(x, 1)
    c = record_copy_of(x, 0)
    x[0].d = np.float16(3.0)
    out[0] = np.float32(b.d) + np.float32(b.qs[3])
    out[1] = np.float32(c.d)


@JIT
def test_a_helper_returns_its_modified_copy_by_value(jit):
    """C returns the struct's bytes: the caller gets the helper's copy, x keeps its own."""
    x = _blocks(Q4_0, 2, seed=5)
    before = x.copy()
    out = np.zeros(1, np.float32)
    clsim.run(returns_a_struct, (1,), (1,), (x, out), jit=jit)
    assert out[0] == 1.0
    assert x.tobytes() == before.tobytes()


@JIT
def test_a_helper_returns_a_record_of_a_buffer_by_value(jit):
    """return x[i] (or a copy read in place) returns the bytes as they are at the return."""
    x = _blocks(Q4_0, 2, seed=6)
    before = x.copy()
    out = np.zeros(2, np.float32)
    clsim.run(returns_records, (1,), (1,), (x, out), jit=jit)
    assert out[0] == np.float32(before[1]["d"]) + np.float32(before[1]["qs"][3])
    assert out[1] == np.float32(before[0]["d"])
    assert x[0]["d"] == 3.0


@kernel
def structs_in_a_tuple(x, out):
    a, b = x[0], x[1]
    out[0] = np.float32(a.d) + np.float32(b.d)


@kernel
def assigns_an_array_field(x, out):
    b = x[0]
    b.qs = x[1].qs
    out[0] = np.float32(b.d)


@pytest.mark.parametrize("kern, words", [
    (structs_in_a_tuple, "structs in a tuple assignment: assign one struct per line"),
    (assigns_an_array_field, "'b.qs' is an array field: assign its elements in a loop")])
def test_unsupported_struct_forms_say_what_to_write(kern, words):
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(kern, (1,), (1,), (np.zeros(2, Q4_0), np.zeros(1, np.float32)))
    assert words in str(info.value) and "test_structs_copies.py:" in str(info.value)
