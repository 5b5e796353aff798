"""Vector types: constructors, components and swizzles, component-wise operators with OpenCL
C's rules (no integer promotion, comparisons give -1/0), math builtins lifted per component,
geometric functions, conversions, bit casts, vloadN/vstoreN — against numpy, in JIT and
no-JIT mode."""

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    all,
    any,
    as_float4,
    as_uchar16,
    as_uint,
    as_uint4,
    barrier,
    clamp,
    convert_char4_sat,
    convert_float4,
    convert_int4,
    convert_int4_sat_rte,
    convert_int4_sat_rtn,
    convert_int4_sat_rtp,
    convert_uchar4_sat,
    cross,
    distance,
    dot,
    exp,
    float2,
    float3,
    float4,
    fmax,
    get_global_id,
    get_local_id,
    int4,
    isnan,
    kernel,
    length,
    normalize,
    select,
    uint2,
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

VLOAD = {2: vload2, 3: vload3, 4: vload4, 8: vload8, 16: vload16}
VSTORE = {2: vstore2, 3: vstore3, 4: vstore4, 8: vstore8, 16: vstore16}
JIT = pytest.mark.parametrize("jit", [False, True])


def make_ops(vload, vstore):
    @kernel
    def vector_ops(a, b, out):
        i = get_global_id(0)
        x = vload(i, a)
        y = vload(i, b)
        vstore(x + y, 6 * i, out)
        vstore(x - y, 6 * i + 1, out)
        vstore(x * y, 6 * i + 2, out)
        vstore(x * 3, 6 * i + 3, out)
        vstore(-x, 6 * i + 4, out)
        vstore(y - 1, 6 * i + 5, out)

    return vector_ops


def make_int_ops(vload, vstore):
    @kernel
    def vector_int_ops(a, b, out, cmp):
        i = get_global_id(0)
        x = vload(i, a)
        y = vload(i, b)
        vstore(x & y, 5 * i, out)
        vstore(x | y, 5 * i + 1, out)
        vstore(x ^ y, 5 * i + 2, out)
        vstore(x << 3, 5 * i + 3, out)
        vstore(~x, 5 * i + 4, out)
        vstore(x < y, 2 * i, cmp)
        vstore(x == y, 2 * i + 1, cmp)

    return vector_int_ops


OPS = {w: make_ops(VLOAD[w], VSTORE[w]) for w in VLOAD}
INT_OPS = {w: make_int_ops(VLOAD[w], VSTORE[w]) for w in VLOAD}
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float32, np.float64]
MASK = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _values(rng, dtype, n):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(n).astype(dtype) * 100
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@given(width=st.sampled_from(sorted(VLOAD)), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**16))
def test_arithmetic_is_component_wise_in_the_element_type(width, dtype, seed):
    """x + y, x - y, x * y, x * 3, -x, y - 1 per component, wrapping at the element's width
    (no integer promotion for vectors) and in IEEE float32/64: exactly numpy's arrays.
    (No-JIT mode: the same generated source, without a Numba compile per width and type;
    test_jit_agrees covers the compiled path.)"""
    check_arithmetic(width, dtype, seed, jit=False)


@pytest.mark.parametrize("width, dtype", [(4, np.float32), (16, np.int8), (3, np.uint64),
                                          (8, np.int32)])
def test_jit_agrees(width, dtype):
    """The compiled code computes what the no-JIT run computes (a few widths and types)."""
    check_arithmetic(width, dtype, 7, jit=True)
    check_bits(width, dtype if np.dtype(dtype).kind != "f" else np.uint16, 7, jit=True)


def check_arithmetic(width, dtype, seed, jit):
    rng = np.random.default_rng(seed)
    groups = 3
    a, b = _values(rng, dtype, groups * width), _values(rng, dtype, groups * width)
    out = np.zeros(6 * groups * width, dtype)
    with np.errstate(all="ignore"):
        clsim.run(OPS[width], (groups,), (groups,), (a, b, out), jit=jit)
        x, y = a.reshape(groups, 1, width), b.reshape(groups, 1, width)
        want = np.concatenate([x + y, x - y, x * y, x * dtype(3), -x, y - dtype(1)], axis=1)
    np.testing.assert_array_equal(out, want.reshape(-1))


@given(width=st.sampled_from(sorted(VLOAD)),
       dtype=st.sampled_from([d for d in DTYPES if np.dtype(d).kind != "f"]),
       seed=st.integers(0, 2**16))
def test_bit_operations_and_comparisons(width, dtype, seed):
    """& | ^ << ~ per component; a comparison gives -1 (true) or 0 in the signed integer type
    of the element's size, as OpenCL C's vector relational operators do."""
    check_bits(width, dtype, seed, jit=False)


def check_bits(width, dtype, seed, jit):
    rng = np.random.default_rng(seed)
    a, b = _values(rng, dtype, width), _values(rng, dtype, width)
    b[0] = a[0]  # one equal pair
    out = np.zeros(5 * width, dtype)
    cmp = np.zeros(2 * width, MASK[np.dtype(dtype).itemsize])
    clsim.run(INT_OPS[width], (1,), (1,), (a, b, out, cmp), jit=jit)
    with np.errstate(all="ignore"):
        want = np.concatenate([a & b, a | b, a ^ b, a << dtype(3), ~a])
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(cmp, -np.concatenate([a < b, a == b]).astype(cmp.dtype))


@kernel
def swizzles(x, out):
    v = vload4(0, x)
    w = v.wzyx
    vstore4(w, 0, out)
    vstore2(v.lo, 2, out)
    vstore2(v.hi, 3, out)
    vstore2(v.even, 4, out)
    vstore2(v.odd, 5, out)
    vstore4(float4(v.s31, 9.0, v.s0), 3, out)
    u = float4(0.5)
    u.xz = v.yw
    u.w = 7.0
    u.s1 += 1.0
    vstore4(u, 4, out)
    f = float3(v.x, v.y, v.z)
    out[20] = f.z + v.w


@JIT
def test_components_swizzles_and_component_assignment(jit):
    """.wzyx .lo .hi .even .odd .s31, constructors from mixed parts, broadcast, and
    assignments to components (u.xz = ..., u.w = ..., u.s1 += ...)."""
    x = np.array([1, 2, 3, 4], np.float32)
    out = np.zeros(21, np.float32)
    clsim.run(swizzles, (1,), (1,), (x, out), jit=jit)
    np.testing.assert_array_equal(out[:4], [4, 3, 2, 1])
    np.testing.assert_array_equal(out[4:12], [1, 2, 3, 4, 1, 3, 2, 4])
    np.testing.assert_array_equal(out[12:16], [4, 2, 9, 1])
    np.testing.assert_array_equal(out[16:20], [2, 1.5, 4, 7])
    assert out[20] == 7


@kernel
def runtime_index(x, k, out):
    v = vload8(0, x)
    i = get_global_id(0)
    out[i] = v[(i + k) % 8]
    v[i % 8] = -1.0
    vstore8(v, i + 1, out)


@JIT
def test_component_chosen_at_run_time(jit):
    """v[i] reads and v[i] = x writes a component chosen at run time."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8 * 9, np.float32)
    clsim.run(runtime_index, (8,), (8,), (x, np.int32(3), out), jit=jit)
    np.testing.assert_array_equal(out[:8], (np.arange(8) + 3) % 8)
    # work-items store overlapping vectors; the last one (i = 7) wins each slot in clsim's
    # in-order loop, so check the last row only
    want = x.copy()
    want[7] = -1
    np.testing.assert_array_equal(out[64:72], want)


@kernel
def bad_runtime_index(x, out):
    v = vload4(0, x)
    out[0] = v[get_global_id(0) + 4]


def test_runtime_index_beyond_the_vector_is_an_error():
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(bad_runtime_index, (1,), (1,), (np.zeros(4, np.float32),
                                                 np.zeros(1, np.float32)))


@kernel
def lifted(x, y, out, mask):
    i = get_global_id(0)
    v = vload4(i, x)
    w = vload4(i, y)
    vstore4(exp(v), 4 * i, out)
    vstore4(fmax(v, 0.25), 4 * i + 1, out)
    vstore4(clamp(v, -0.5, 0.5), 4 * i + 2, out)
    vstore4(select(v, w, v < w), 4 * i + 3, out)
    vstore4(isnan(w), i, mask)


@JIT
def test_math_builtins_apply_per_component(jit):
    """exp, fmax(vector, scalar), clamp, select(a, b, mask) and isnan on float4 are the
    scalar builtin per component; isnan gives -1/0 ints."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(8).astype(np.float32)
    y = rng.standard_normal(8).astype(np.float32)
    y[3] = np.nan
    out = np.zeros(32, np.float32)
    mask = np.zeros(8, np.int32)
    clsim.run(lifted, (2,), (2,), (x, y, out, mask), jit=jit)
    got = out.reshape(2, 4, 4)
    xv, yv = x.reshape(2, 4), y.reshape(2, 4)
    np.testing.assert_array_equal(got[:, 0], np.exp(xv.astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(got[:, 1], np.fmax(xv, np.float32(0.25)))
    np.testing.assert_array_equal(got[:, 2], np.clip(xv, -0.5, 0.5))
    np.testing.assert_array_equal(got[:, 3], np.where(xv < yv, yv, xv))
    np.testing.assert_array_equal(mask, -np.isnan(y).astype(np.int32))


@kernel
def geometric(x, y, out):
    v = vload4(0, x)
    w = vload4(0, y)
    out[0] = dot(v, w)
    out[1] = length(v)
    out[2] = distance(v, w)
    vstore4(normalize(v), 1, out)
    vstore4(cross(v, w), 2, out)
    a = float3(v.x, v.y, v.z)
    vstore3(cross(a, float3(w.x, w.y, w.z)), 4, out)
    vstore4(normalize(float4(0.0)), 4, out)
    out[3] = any(v > 3.5) + 2 * all(v > 0.0) + 4 * any(int4(0, 1, 2, 3) < 0)


@JIT
def test_geometric_functions(jit):
    """dot, length, distance, normalize, cross (float3 and float4), any, all."""
    x = np.array([1, 2, 3, 4], np.float32)
    y = np.array([0.5, -1, 2, 8], np.float32)
    out = np.zeros(20, np.float32)
    clsim.run(geometric, (1,), (1,), (x, y, out), jit=jit)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    assert out[0] == np.float32(x @ y)
    assert out[1] == np.float32(np.linalg.norm(x64))
    assert out[2] == np.float32(np.linalg.norm(x64 - y64))
    assert out[3] == 1 + 2
    np.testing.assert_allclose(out[4:8], x64 / np.linalg.norm(x64), rtol=1e-7)
    np.testing.assert_array_equal(out[8:11], np.cross(x[:3], y[:3]))
    assert out[11] == 0
    np.testing.assert_array_equal(out[16:20], 0)


@kernel
def conversions(x, ints, sat, rte, rtp, rtn, chars, bits, back, ub):
    i = get_global_id(0)
    v = vload4(i, x)
    vstore4(convert_int4(v), i, ints)
    vstore4(convert_uchar4_sat(v), i, sat)
    vstore4(convert_int4_sat_rte(v), i, rte)
    vstore4(convert_int4_sat_rtp(v), i, rtp)
    vstore4(convert_int4_sat_rtn(v), i, rtn)
    vstore4(convert_char4_sat(convert_int4_sat_rte(v)), i, chars)
    vstore4(as_uint4(v), i, bits)
    vstore4(as_float4(as_uint4(v)), i, back)
    vstore16(as_uchar16(v), i, ub)
    if i == 0:
        bits[0] = as_uint(as_uchar16(v).s0123)


@JIT
def test_conversions_saturation_rounding_and_bit_casts(jit):
    """convert_int4 truncates; _sat clamps (NaN to 0); _rte/_rtp/_rtn round to nearest even,
    up, down; as_uint4/as_uchar16/as_float4 keep the bytes (little-endian)."""
    x = np.array([2.5, -3.5, 300.7, -1e10, np.nan, 0.5, -0.5, 1.5], np.float32)
    outs = [np.zeros(8, t) for t in (np.int32, np.uint8, np.int32, np.int32, np.int32, np.int8,
                                     np.uint32, np.float32)] + [np.zeros(32, np.uint8)]
    clsim.run(conversions, (2,), (2,), (x, *outs), jit=jit)
    ints, sat, rte, rtp, rtn, chars, bits, back, ub = outs
    finite = np.isfinite(x) & (np.abs(x) < 2**31)
    np.testing.assert_array_equal(ints[finite], np.trunc(x[finite]).astype(np.int32))
    np.testing.assert_array_equal(sat, [2, 0, 255, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(rte, [2, -4, 301, -(2**31), 0, 0, 0, 2])
    np.testing.assert_array_equal(rtp, [3, -3, 301, -(2**31), 0, 1, 0, 2])
    np.testing.assert_array_equal(rtn, [2, -4, 300, -(2**31), 0, 0, -1, 1])
    np.testing.assert_array_equal(chars, [2, -4, 127, -128, 0, 0, 0, 2])
    want_bits = x.view(np.uint32).copy()
    np.testing.assert_array_equal(bits[1:], want_bits[1:])
    assert bits[0] == want_bits[0]
    np.testing.assert_array_equal(back.view(np.uint32), x.view(np.uint32))
    np.testing.assert_array_equal(ub, x.view(np.uint8))


def make_offsets(vload, vstore):
    @kernel
    def vector_copy(src, dst, k):
        i = get_global_id(0)
        vstore(vload(i + k, src), i, dst)

    return vector_copy


COPIES = {w: make_offsets(VLOAD[w], VSTORE[w]) for w in VLOAD}


@given(width=st.sampled_from(sorted(VLOAD)), k=st.integers(0, 5), n=st.integers(1, 4))
def test_vload_vstore_every_width(width, k, n):
    """vloadN(i + k, p) reads p[N(i+k) .. N(i+k)+N-1]; vstoreN writes N elements at N*i
    (no-JIT; the compiled vload/vstore are covered by the tests above)."""
    src = np.arange(width * (n + k), dtype=np.float32)
    dst = np.zeros(width * n, np.float32)
    clsim.run(COPIES[width], (n,), (n,), (src, dst, np.int32(k)), jit=False)
    np.testing.assert_array_equal(dst, src[width * k:])


def test_vload_past_the_end_is_an_error():
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(COPIES[8], (2,), (2,), (np.zeros(15, np.float32), np.zeros(16, np.float32),
                                          np.int32(0)))


@kernel
def across_barrier(x, out):
    i = get_local_id(0)
    v = vload2(i, x) * 2.0
    barrier(CLK_LOCAL_MEM_FENCE)
    v.y += 1.0
    vstore2(v, i, out)


@JIT
def test_vector_live_across_a_barrier(jit):
    """A vector value that lives across a barrier is kept per work-item (context array)."""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    result = clsim.run(across_barrier, (4,), (4,), (x, out), jit=jit)
    np.testing.assert_array_equal(out, x * 2 + np.tile([0, 1], 4))
    # Stored one component at a time: Numba compiles a tuple stored into an array row as a
    # sequence setslice, 1.6 s the first time in each process (docs/performance.md).
    source = Path(result.module_path).read_text()
    assert "v_v__c[_lid, 1] = " in source
    assert not re.search(r"__c\[[^],]*\] = ", source)


@kernel
def mixed_types(x, out):
    v = vload4(0, x)
    w = uint2(1, 2)
    vstore2(w + v.xy, 0, out)


@kernel
def float_into_int(x, out):
    v = int4(1)
    vstore4(v * 1.5, 0, out)


@kernel
def vector_truth(x, out):
    v = vload2(0, x)
    if v:
        out[0] = 1.0


@kernel
def bad_component(x, out):
    v = float2(1.0, 2.0)
    out[0] = v.z


@kernel
def scalar_updated_by_vector(x, out):
    s = 0.0
    s += vload4(0, x)
    out[0] = s


@kernel
def repeated_component_store(x, out):
    v = float4(1.0, 2.0, 3.0, 4.0)
    v.xx = v.yz  # reading .yx or .xx is fine; writing one component twice is not
    out[0] = v.x


@kernel
def repeated_component_update(x, out):
    v = float4(1.0, 2.0, 3.0, 4.0)
    v.s00 += v.xx
    out[0] = v.x


@pytest.mark.parametrize("kern, words", [
    (repeated_component_store, "'.xx' names component 0 more than once"),
    (repeated_component_update, "'.s00' names component 0 more than once"),
    (mixed_types, "between uint2 and float2"),
    (float_into_int, "float scalar cannot widen to an integer vector"),
    (vector_truth, "float2 is not a truth value"),
    (bad_component, "beyond a 2-vector"),
    (scalar_updated_by_vector, "computes float4"),
])
def test_vector_errors_name_opencl_types(kern, words):
    """Mistakes are KernelCompileErrors at the kernel's line that spell types as OpenCL does
    (float4, never float324)."""
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(kern, (1,), (1,), (np.zeros(4, np.float32), np.zeros(4, np.float32)))
    assert words in str(info.value)
    assert "test_vectors.py:" in str(info.value)
    assert "float32" not in str(info.value).split("\n")[0]


def test_constructor_marker_outside_a_kernel():
    with pytest.raises(clsim.KernelCompileError):
        float4(1.0)
    assert str(convert_float4) == "<clsim builtin convert_float4>"


@clsim.func
def scale4(v, s):
    return v * s


@clsim.func
def hsum(v):
    return v.x + v.y + v.z + v.w


@kernel
def vector_helpers(x, out):
    i = get_global_id(0)
    out[i] = hsum(scale4(vload4(i, x), 2.0))


@JIT
def test_vectors_through_helpers(jit):
    """@clsim.func helpers take and return vectors."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(vector_helpers, (4,), (4,), (x, out), jit=jit)
    np.testing.assert_array_equal(out, x.reshape(4, 4).sum(1) * 2)


@kernel
def float4_view_axpy(x, y, s):
    i = get_global_id(0)
    p = clsim.view(x, float4)
    q = clsim.view(y, float4, 16)  # the float4 elements of y from y[4] on
    q[i] = p[i] * s
    q[i] += float4(1.0, 2.0, 3.0, 4.0)


@kernel
def uchar4_view_to_float4(x, y):
    i = get_global_id(0)
    p = clsim.view(x, clsim.uchar4)
    q = clsim.view(y, float4)
    v = p[i]
    q[i] = convert_float4(v.wzyx)


@pytest.mark.parametrize("jit", [False, True])
def test_vector_views_of_scalar_buffers(jit):
    """(global float4 *)x: element i is x[4i..4i+3], loaded and stored whole (p[i] op= v
    too), at a byte offset; a uchar4 view of a byte buffer reads 4 bytes per element."""
    x = np.arange(32, dtype=np.float32)
    y = np.full(40, -1.0, np.float32)
    clsim.run(float4_view_axpy, (8,), (8,), (x, y, np.float32(2)), jit=jit)
    np.testing.assert_array_equal(y[4:36], x * 2 + np.tile(np.float32([1, 2, 3, 4]), 8))
    np.testing.assert_array_equal(y[:4], -1.0)
    np.testing.assert_array_equal(y[36:], -1.0)
    b = np.arange(32, dtype=np.uint8)
    out = np.zeros(32, np.float32)
    clsim.run(uchar4_view_to_float4, (8,), (8,), (b, out), jit=jit)
    np.testing.assert_array_equal(out, b.reshape(8, 4)[:, ::-1].reshape(-1))


@kernel
def float4_view_at(x, y, off):
    i = get_global_id(0)
    p = clsim.view(x, float4, off)
    y[i] = p[i].y


@kernel
def float4_view_store_at(x, off):
    p = clsim.view(x, float4, off)
    p[get_global_id(0)] = float4(7.0)


@pytest.mark.parametrize("jit", [False, True])
def test_vector_views_are_bounds_and_alignment_checked(jit):
    """A float4 element past the buffer's end is out of bounds; a byte offset that is not a
    multiple of 16 is a MisalignedAccessError naming the buffer, the offset and the line,
    raised where the pointer local is assigned (C leaves the misaligned cast undefined), so
    a store is refused before it writes."""
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(8, np.float32)
    clsim.run(float4_view_at, (7,), (1,), (x, y, np.int32(16)), jit=jit)
    np.testing.assert_array_equal(y[:7], x[5:32:4])
    with pytest.raises(clsim.OutOfBoundsError):
        clsim.run(float4_view_at, (8,), (1,), (x, y, np.int32(16)), jit=jit)
    with pytest.raises(clsim.MisalignedAccessError, match=r"in float4_view_at.* view "
                       r"of 'x' with 16-byte elements at byte offset 4 .*multiple of 16") \
            as info:
        clsim.run(float4_view_at, (2,), (1,), (x, y, np.int32(4)), jit=jit)
    assert info.value.buffer == "x" and info.value.index == 4
    assert "test_vectors.py:" in str(info.value) and info.value.kernel == "float4_view_at"
    before = x.copy()
    with pytest.raises(clsim.MisalignedAccessError, match="misaligned pointer"):
        clsim.run(float4_view_store_at, (1,), (1,), (x, np.int32(8)), jit=jit)
    np.testing.assert_array_equal(x, before)


@kernel
def float3_view(x, y):
    p = clsim.view(x, float3)
    y[0] = p[0].x


def test_three_wide_vector_views_are_refused():
    with pytest.raises(clsim.KernelCompileError, match="16 bytes in memory but has 3 comp"):
        clsim.run(float3_view, (1,), (1,), (np.zeros(4, np.float32), np.zeros(1, np.float32)))


@kernel
def guarded_vector_reads(x, out, n):
    i = get_global_id(0)
    p = clsim.view(x, float4)
    ok = i < n and p[i].x * 2.0 > -1.0
    w = (p[i] * 2.0).y if i < n else 0.0
    out[i] = np.float32(1.0) if ok else w


@pytest.mark.parametrize("jit", [False, True])
def test_vector_reads_after_and_or_in_if_else_run_only_when_reached(jit):
    """p[i] after 'i < n and' (or in the branch of an if-else) is read only when C reads it:
    out of range there is no error (operands are not evaluated ahead of the statement)."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(guarded_vector_reads, (8,), (8,), (x, out, np.int32(4)), jit=jit)
    np.testing.assert_array_equal(out, np.float32([1, 1, 1, 1, 0, 0, 0, 0]))
