"""OpenCL C semantics of the generated code: integer widths, division, conversions, vectors,
local and private memory, helpers, barriers in loops and uniform ifs, 1-3-D ND-ranges."""

import math

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    FLT_MAX,
    INFINITY,
    M_PI_F,
    barrier,
    get_global_id,
    get_global_size,
    get_group_id,
    get_local_id,
    get_local_size,
    get_num_groups,
    kernel,
    local_array,
    private_array,
)


@kernel
def int_ops(a, b, out, n):
    i = get_global_id(0)
    if i < n:
        x = a[i]
        y = b[i]
        out[0 * n + i] = x + y
        out[1 * n + i] = x * y
        out[2 * n + i] = x // y
        out[3 * n + i] = x % y
        out[4 * n + i] = x << 3
        out[5 * n + i] = x >> 2
        out[6 * n + i] = x ^ y
        out[7 * n + i] = -x
        out[8 * n + i] = x - y
        out[9 * n + i] = x << 33


def _c_int32(values):
    return np.asarray(values, dtype=np.int64).astype(np.int32)


@pytest.mark.parametrize("jit", [False, True])
def test_int32_arithmetic_wraps_and_divides_like_c(jit):
    """int32 wraps at 32 bits in every step; // truncates toward zero; % has the dividend's
    sign; shift counts are taken modulo the width (OpenCL C)."""
    a = np.array([2**31 - 1, -7, 7, -7, 123456789, -(2**31)], np.int32)
    b = np.array([1, 2, -2, -2, 1000, -1], np.int32)
    n = a.size
    out = np.zeros(10 * n, np.int32)
    clsim.run(int_ops, (n,), (n,), (a, b, out, np.int32(n)), jit=jit)
    out = out.reshape(10, n)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    q = np.trunc(a64 / b64).astype(np.int64)
    np.testing.assert_array_equal(out[0], _c_int32(a64 + b64))
    np.testing.assert_array_equal(out[1], _c_int32(a64 * b64))
    np.testing.assert_array_equal(out[2][:5], _c_int32(q)[:5])
    np.testing.assert_array_equal(out[3][:5], _c_int32(a64 - q * b64)[:5])
    np.testing.assert_array_equal(out[4], _c_int32(a64 << 3))
    np.testing.assert_array_equal(out[5], a >> 2)
    np.testing.assert_array_equal(out[6], a ^ b)
    np.testing.assert_array_equal(out[7], _c_int32(-a64))
    np.testing.assert_array_equal(out[8], _c_int32(a64 - b64))
    np.testing.assert_array_equal(out[9], _c_int32(a64 << 1))


@kernel
def unsigned_ops(a, out):
    i = get_global_id(0)
    x = a[i]
    out[0 * 4 + i] = x * np.uint32(3)
    out[1 * 4 + i] = x - np.uint32(5)
    out[2 * 4 + i] = x >> 1
    out[3 * 4 + i] = np.uint32(1) if np.int32(-1) < x else np.uint32(0)


def test_uint32_wraps_and_mixed_comparisons_convert_to_unsigned():
    """uint32 arithmetic wraps; comparing int -1 with a uint converts -1 to 0xffffffff."""
    a = np.array([0, 1, 2**31, 2**32 - 1], np.uint32)
    out = np.zeros(16, np.uint32)
    clsim.run(unsigned_ops, (4,), (4,), (a, out), jit=False)
    out = out.reshape(4, 4)
    np.testing.assert_array_equal(out[0], (a.astype(np.uint64) * 3).astype(np.uint32))
    np.testing.assert_array_equal(out[1], (a.astype(np.int64) - 5).astype(np.uint32))
    np.testing.assert_array_equal(out[2], a >> 1)
    np.testing.assert_array_equal(out[3], [0, 0, 0, 0])


@kernel
def conversions(x, ints, bits, back):
    i = get_global_id(0)
    v = x[i]
    ints[i] = clsim.convert_int(v)
    bits[i] = clsim.as_uint(v)
    back[i] = clsim.as_float(bits[i]) + np.float32(i)


@pytest.mark.parametrize("jit", [False, True])
def test_conversions_truncate_and_bitcasts_reinterpret(jit):
    """convert_int truncates toward zero; as_uint/as_float reinterpret the bits."""
    x = np.array([1.7, -1.7, 0.0, -0.0, 1e6, 3.25], np.float32)
    ints = np.zeros(6, np.int32)
    bits = np.zeros(6, np.uint32)
    back = np.zeros(6, np.float32)
    clsim.run(conversions, (6,), (6,), (x, ints, bits, back), jit=jit)
    np.testing.assert_array_equal(ints, np.trunc(x).astype(np.int32))
    np.testing.assert_array_equal(bits, x.view(np.uint32))
    np.testing.assert_array_equal(back, x + np.arange(6, dtype=np.float32))


@kernel
def vectors(src, dst, n4):
    i = get_global_id(0)
    if i < n4:
        v = clsim.vload4(i, src)
        w = (v.w, v.z, v[1] * 2.0, v.x + 1.0)
        clsim.vstore4(w, i, dst)


def test_vload4_vstore4():
    """vload4(i, p) reads p[4i..4i+3]; vstore4 writes them; .x/.y/.z/.w and v[k] index."""
    src = np.arange(16, dtype=np.float32)
    dst = np.zeros(16, np.float32)
    clsim.run(vectors, (8,), (4,), (src, dst, np.int32(4)), jit=False)
    v = src.reshape(4, 4)
    want = np.stack([v[:, 3], v[:, 2], v[:, 1] * 2, v[:, 0] + 1], axis=1).reshape(-1)
    np.testing.assert_array_equal(dst, want)


@kernel
def vload_past_end(src, dst):
    i = get_global_id(0)
    v = clsim.vload4(i, src)
    dst[i] = v.x


def test_vload_out_of_bounds_is_caught():
    """A vector load that runs past the end names the last element it would touch."""
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(vload_past_end, (3,), (3,), (np.zeros(10, np.float32),
                                              np.zeros(3, np.float32)), jit=False)
    assert info.value.index == 11 and info.value.gid == (2,)


TILE = 8


@kernel
def transpose_tile(src, dst, n):
    tx = get_local_id(0)
    ty = get_local_id(1)
    gx = get_group_id(0) * TILE
    gy = get_group_id(1) * TILE
    tile = local_array((TILE, TILE + 1), np.float32)
    tile[ty, tx] = src[(gy + ty) * n + gx + tx]
    barrier(CLK_LOCAL_MEM_FENCE)
    dst[(gx + ty) * n + gy + tx] = tile[tx, ty]


@pytest.mark.parametrize("jit", [False, True])
def test_two_dimensional_local_array_transpose(jit):
    """A 2-D ND-range with a 2-D local tile: the classic transpose through local memory."""
    n = 16
    src = np.arange(n * n, dtype=np.float32)
    dst = np.zeros(n * n, np.float32)
    clsim.run(transpose_tile, (n, n), (TILE, TILE), (src, dst, np.int32(n)), jit=jit)
    np.testing.assert_array_equal(dst.reshape(n, n), src.reshape(n, n).T)


@kernel
def ids_3d(out):
    x = get_global_id(0)
    y = get_global_id(1)
    z = get_global_id(2)
    nx = get_global_size(0)
    ny = get_global_size(1)
    flat = (z * ny + y) * nx + x
    out[4 * flat + 0] = get_local_id(0) + 10 * get_local_id(1) + 100 * get_local_id(2)
    out[4 * flat + 1] = get_group_id(0) + 10 * get_group_id(1) + 100 * get_group_id(2)
    out[4 * flat + 2] = get_local_size(0) * get_local_size(1) * get_local_size(2)
    out[4 * flat + 3] = get_num_groups(0) * get_num_groups(1) * get_num_groups(2)


@pytest.mark.parametrize("jit", [False, True])
def test_three_dimensional_ids_including_partial_groups(jit):
    """Ids in 3-D; with a global size not a multiple of the local size (OpenCL 2.0+), the
    last group of a dimension is smaller and get_local_size says so."""
    g, loc = (6, 4, 3), (4, 2, 2)
    out = np.full(4 * 6 * 4 * 3, -1, np.int64)
    clsim.run(ids_3d, g, loc, (out,), jit=jit)
    out = out.reshape(3, 4, 6, 4)
    z, y, x = np.meshgrid(np.arange(3), np.arange(4), np.arange(6), indexing="ij")
    np.testing.assert_array_equal(out[..., 0], x % 4 + 10 * (y % 2) + 100 * (z % 2))
    np.testing.assert_array_equal(out[..., 1], x // 4 + 10 * (y // 2) + 100 * (z // 2))
    sizes = np.where(x >= 4, 2, 4) * 2 * np.where(z >= 2, 1, 2)
    np.testing.assert_array_equal(out[..., 2], sizes)
    assert (out[..., 3] == 2 * 2 * 2).all()


@kernel
def tree_sum(x, out, n):
    lid = get_local_id(0)
    wg = get_local_size(0)
    scratch = local_array(64, np.float32)
    acc = 0.0
    for i in range(lid, n, wg):
        acc += x[i]
    scratch[lid] = acc
    barrier(CLK_LOCAL_MEM_FENCE)
    s = wg // 2
    while s > 0:
        if lid < s:
            scratch[lid] += scratch[lid + s]
        barrier(CLK_LOCAL_MEM_FENCE)
        s //= 2
    if lid == 0:
        out[get_group_id(0)] = scratch[0]


@pytest.mark.parametrize("jit", [False, True])
def test_barrier_inside_a_loop_tree_reduction(jit):
    """A tree reduction (barrier inside a while loop) sums in the expected pairwise order."""
    x = np.arange(1, 201, dtype=np.float32)
    out = np.zeros(1, np.float32)
    clsim.run(tree_sum, (64,), (64,), (x, out, np.int32(200)), jit=jit)
    assert out[0] == np.float32(200 * 201 / 2)


@kernel
def uniform_if_barrier(x, out, flag):
    lid = get_local_id(0)
    tile = local_array(32, np.float32)
    tile[lid] = x[lid]
    barrier(CLK_LOCAL_MEM_FENCE)
    if flag > 0:
        mirrored = tile[31 - lid]
        barrier(CLK_LOCAL_MEM_FENCE)
        tile[lid] = mirrored
        barrier(CLK_LOCAL_MEM_FENCE)
    else:
        barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = tile[lid]


@pytest.mark.parametrize("flag", [0, 1])
def test_barrier_inside_a_uniform_if(flag):
    """An if whose condition is the same for every work-item may contain barriers."""
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    clsim.run(uniform_if_barrier, (32,), (32,), (x, out, np.int32(flag)), jit=False)
    np.testing.assert_array_equal(out, x[::-1] if flag else x)


@clsim.func
def clamp_index(i, n):
    if i < 0:
        return 0
    if i >= n:
        return n - 1
    return i


@clsim.func
def stage(scratch, lid, value):
    scratch[lid] = value
    barrier(CLK_LOCAL_MEM_FENCE)


@kernel
def with_helpers(x, out, n):
    lid = get_local_id(0)
    scratch = local_array(16, np.float32)
    stage(scratch, lid, x[clamp_index(lid - 2, n)])
    out[lid] = scratch[15 - lid] + M_PI_F * 0.0 + (1.0 if INFINITY > FLT_MAX else 0.0)


def test_helpers_with_returns_and_helpers_with_barriers():
    """@clsim.func helpers: plain ones return values; ones with barriers are inlined."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    clsim.run(with_helpers, (16,), (16,), (x, out, np.int32(16)), jit=False)
    staged = x[np.clip(np.arange(16) - 2, 0, 15)]
    np.testing.assert_array_equal(out, staged[::-1] + 1.0)


@kernel
def private_and_constants(out):
    i = get_global_id(0)
    acc = private_array(4, np.float32)
    for k in range(4):
        acc[k] = np.float32(k * i)
    barrier(CLK_LOCAL_MEM_FENCE)
    total = 0.0
    for k in range(4):
        total += acc[k]
    a, b = total, np.float32(math.pi)
    out[i] = a + b * 0.0 + np.inf * 0.0 if i < 0 else a


def test_private_arrays_survive_barriers_and_constants_resolve():
    """private_array values live per work-item across barriers; math/np constants work."""
    out = np.zeros(8, np.float32)
    clsim.run(private_and_constants, (8,), (8,), (out,), jit=False)
    np.testing.assert_array_equal(out, 6.0 * np.arange(8, dtype=np.float32))


def test_local_size_none_picks_a_legal_size():
    """local_size=None picks a divisor of the global size within the limit, as OpenCL does."""
    src = np.arange(300, dtype=np.float32)
    dst = np.zeros(300, np.float32)

    @kernel
    def copy(a, b):
        i = get_global_id(0)
        b[i] = a[i]

    result = clsim.run(copy, (300,), None, (src, dst), jit=False)
    assert 300 % result.local_size[0] == 0 and result.local_size[0] <= 256
    np.testing.assert_array_equal(dst, src)


@kernel
def hex_compare(x, out):
    i = get_global_id(0)
    out[i] = 1 if x[i] < 0x80000000 else 0
    out[2 + i] = 1 if x[i] < 2147483648 else 0


@pytest.mark.parametrize("jit", [False, True])
def test_hex_literal_is_uint_where_c_makes_it_one(jit):
    """0x80000000 is a uint in C (first of int, uint, long, ulong), so -1 < 0x80000000 compares
    as unsigned (0); the decimal 2147483648 is a long, so there -1 < it (1)."""
    x = np.array([-1, 5], np.int32)
    out = np.zeros(4, np.int32)
    clsim.run(hex_compare, (2,), None, (x, out), jit=jit)
    assert out.tolist() == [0, 1, 1, 1]


@kernel
def loop_var_read_after(out, n):
    i = get_global_id(0)
    for j in range(n):
        out[i] = j
    out[i] = j


@kernel
def loop_var_assigned_inside(out, n):
    i = get_global_id(0)
    for m in range(10):
        m += 2
        out[i] = m


@kernel
def loop_var_reassigned_then_read(out, n):
    i = get_global_id(0)
    s = 0
    for j in range(n):
        s += j
    for j in range(n):
        s += j
    j = n
    out[i] = s + j


def test_loop_variables_that_would_differ_from_c_are_compile_errors():
    """Reading j after 'for j in range(n)' (C: n, Python: n-1) and assigning the loop variable
    inside its loop (changes C's iterations, not Python's) are errors saying what to write;
    reusing the name for another loop or assigning it first is fine."""
    out = np.zeros(2, np.int32)
    with pytest.raises(clsim.KernelCompileError, match="read after 'for j in range"):
        clsim.run(loop_var_read_after, (2,), None, (out, np.int32(3)))
    with pytest.raises(clsim.KernelCompileError, match="Write a while loop"):
        clsim.run(loop_var_assigned_inside, (2,), None, (out, np.int32(3)))
    clsim.run(loop_var_reassigned_then_read, (2,), None, (out, np.int32(3)))
    assert out.tolist() == [9, 9]


@kernel
def float_literal_beside_double(x, out):
    i = get_global_id(0)
    out[i] = x[i] * 0.1
    out[2 + i] = x[i] * np.float64(0.1)
    out[4 + i] = x[i] * np.float64(-0.1)


@pytest.mark.parametrize("jit", [False, True])
def test_bare_float_literal_is_a_float_even_beside_a_double(jit):
    """0.1 is C's 0.1f: beside a double it is widened from float (as `x * 0.1f` in C), while
    np.float64(0.1) is the double literal."""
    x = np.ones(2, np.float64)
    out = np.zeros(6, np.float64)
    clsim.run(float_literal_beside_double, (2,), None, (x, out), jit=jit)
    assert out.tolist() == [float(np.float32(0.1))] * 2 + [0.1] * 2 + [-0.1] * 2


@kernel
def search_with_break(x, out, n, v):
    i = get_global_id(0)
    for j in range(n):
        if x[j] == v + i:
            break
    out[i] = j
    for k in range(1, n, 3):
        if x[k] == v + i:
            break
    out[4 + i] = k


@kernel
def uniform_barrier_loop_with_break(out, n, stop):
    i = get_local_id(0)
    for j in range(n):
        barrier(CLK_LOCAL_MEM_FENCE)
        if j == stop:
            break
    out[i] = j


@pytest.mark.parametrize("jit", [False, True])
def test_for_loop_with_break_read_after_has_c_semantics(jit):
    """for + break, the variable read after: at the break both languages agree; run to its
    end, the variable is C's first failing value (n, or start + count * step), not Python's
    last value. The same in a barrier loop run at group level."""
    x = np.arange(10, dtype=np.int32)
    out = np.zeros(8, np.int32)
    clsim.run(search_with_break, (4,), (4,), (x, out, np.int32(10), np.int32(3)), jit=jit)
    assert out.tolist() == [3, 4, 5, 6, 10, 4, 10, 10]
    out = np.zeros(4, np.int32)
    clsim.run(uniform_barrier_loop_with_break, (4,), (4,), (out, np.int32(6), np.int32(2)),
              jit=jit)
    assert out.tolist() == [2] * 4
    clsim.run(uniform_barrier_loop_with_break, (4,), (4,), (out, np.int32(6), np.int32(9)),
              jit=jit)
    assert out.tolist() == [6] * 4


@kernel
def temporaries_in_blocks(x, out, n):
    i = get_global_id(0)
    if i % 2 == 0:
        t = x[i] * 2.0
        out[i] = t
    else:
        t = np.int32(i) * 3
        out[i] = np.float32(t)
    for k in range(n):
        t = k + 1
        out[i] += np.float32(t)
    while n > 100:
        t = 1.5
        out[i] = t


@kernel
def value_flows_between_iterations(x, out):
    i = get_global_id(0)
    t = 0.0
    for k in range(3):
        if k > 0:
            out[i] = t
        t = x[i] + np.float32(k)


@kernel
def clashing_types_read_after(x, out):
    i = get_global_id(0)
    if i > 0:
        t = x[i]
    else:
        t = i
    out[i] = t


@pytest.mark.parametrize("jit", [False, True])
def test_names_in_separate_blocks_are_separate_variables(jit):
    """A name assigned in different if/else/loop blocks with different types, and never read
    outside the block assigning it, is one variable per block (C's block scope); a value
    that flows from one iteration into the next keeps one variable."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(temporaries_in_blocks, (8,), (8,), (x, out, np.int32(3)), jit=jit)
    np.testing.assert_array_equal(out, np.where(np.arange(8) % 2 == 0, x * 2,
                                                np.arange(8) * 3) + 6)
    clsim.run(value_flows_between_iterations, (8,), (8,), (x, out), jit=jit)
    np.testing.assert_array_equal(out, x + 1)


def test_clashing_types_read_after_the_blocks_name_both_lines():
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(clashing_types_read_after, (2,), (2,), (np.ones(2, np.float32),
                                                         np.zeros(2, np.float32)))
    message = str(info.value)
    first = clashing_types_read_after.fn.__code__.co_firstlineno
    assert f"test_engine_semantics.py:{first + 6} " in message
    assert f"'t' holds float elsewhere but long here (line {first + 4} assigns it float)" \
        in message
