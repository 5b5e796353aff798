"""Private and local arrays of vectors (issue 22): ``uint4 qv[8]`` is
``qv = private_array(8, uint4)``, ``__local half4 l_k[4][2]`` is
``l_k = local_array((4, 2), half4)``. Whole vectors move with ``qv[i]``, components are read
and written in place (``acc[i].y = e``, ``acc[i].x += e``, ``acc[i][k] = e``), a helper given
the array writes the caller's vectors, and every access is checked against the array, named
as the user wrote it."""

import numpy as np
import pytest

import clsim
from clsim import (CLK_LOCAL_MEM_FENCE, barrier, float4, get_global_id, get_local_id,
                   kernel, local_array, private_array, uint4)

JIT = pytest.mark.parametrize("jit", [False, True])


@clsim.func
def add_one(p, n):
    for j in range(n):
        p[j] = p[j] + float4(1.0)


@kernel
def vector_arrays(x, out):
    i = get_global_id(0)
    lid = get_local_id(0)
    acc = private_array(4, float4, fill=0.0)
    qv = private_array(2, uint4, fill=(uint4(np.uint32(3)), uint4(np.uint32(5))))
    tile = local_array((4, 2), float4)
    for j in range(4):
        acc[j] = float4(x[i] + j)
    acc[1].y = 7.0
    acc[2].x += 1.0
    acc[3][2] = acc[0].w * 2.0
    tile[lid][0] = acc[0]
    tile[lid, 1] = acc[1]
    add_one(acc, 4)
    barrier(CLK_LOCAL_MEM_FENCE)
    v = acc[2]
    out[i] = v.x + acc[3].y + acc[1].y + acc[3].z + np.float32(qv[1].x + qv[0].w) + \
        tile[(lid + 1) % 4][1].y


def _reference(x):
    # acc[2].x, acc[3].y after add_one; acc[1].y = 7 + 1; acc[3].z = 2 acc[0].w + 1; the qv
    # sum; the neighbour's tile row 1 (its acc[1] before add_one): .y = 7
    return (x + 3 + 1) + (x + 3 + 1) + (7 + 1) + (2 * x + 1) + (5 + 3) + 7


@pytest.mark.parametrize("jit, options", [(False, {}), (True, {}), (False, {"checks": "all"}),
                                          (True, {"checks": "all"}),
                                          (False, {"traffic": True})])
def test_vectors_in_private_and_local_arrays(jit, options):
    x = np.arange(8, dtype=np.float32) * 1.5
    out = np.zeros(8, np.float32)
    clsim.run(vector_arrays, (8,), (4,), (x, out), jit=jit, **options)
    np.testing.assert_array_equal(out, _reference(x).astype(np.float32))


@kernel
def past_the_end(x, out):
    i = get_global_id(0)
    acc = private_array(4, float4, fill=0.0)
    acc[i] = float4(x[i])
    out[i] = acc[0].x


@JIT
def test_an_index_past_an_array_of_vectors_names_the_array_and_line(jit):
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(past_the_end, (8,), (4,), (np.ones(8, np.float32), np.zeros(8, np.float32)),
                  jit=jit)
    text = str(info.value)
    assert "'acc'" in text and "acc__vec" not in text and "gid=(4,)" in text
    assert "acc[i] = float4(x[i])" in text


@kernel
def unwritten_vector(x, out):
    i = get_global_id(0)
    acc = private_array(4, float4)
    acc[0] = float4(x[i])
    out[i] = acc[0].x + acc[1].y


@JIT
def test_reading_a_vector_never_written_is_reported(jit):
    with pytest.raises(clsim.UninitializedReadError) as info:
        clsim.run(unwritten_vector, (4,), (4,),
                  (np.ones(4, np.float32), np.zeros(4, np.float32)), jit=jit, checks="all")
    assert "acc" in str(info.value) and "acc__vec" not in str(info.value)


@clsim.func
def fill_vector(p, a):
    p[0] = float4(a, a + 1.0, a + 2.0, a + 3.0)


@kernel
def out_parameter(x, out):
    i = get_global_id(0)
    t = private_array(1, float4)
    fill_vector(t, x[i])
    out[i] = t[0].w - t[0].x


@JIT
def test_a_helper_writes_the_callers_vector(jit):
    out = np.zeros(4, np.float32)
    clsim.run(out_parameter, (4,), (4,), (np.arange(4, dtype=np.float32), out), jit=jit,
              checks="all")
    np.testing.assert_array_equal(out, [3.0] * 4)


def test_three_wide_arrays_are_refused_with_the_reason():
    from clsim import float3

    @kernel
    def three(x):
        a = private_array(4, float3)
        a[0] = float3(1.0)
        x[0] = a[0].x

    with pytest.raises(clsim.KernelCompileError, match="array of float3"):
        clsim.run(three, (1,), (1,), (np.zeros(1, np.float32),))


def test_printed_as_c_arrays_of_vectors_and_read_back():
    """to_cl prints ``float4 acc[4]``, ``__local float4 tile[8]`` (rows flattened, as the
    indices are); load_cl reads the print back as the same kernel."""
    x = np.arange(8, dtype=np.float32) * 1.5
    text = clsim.to_cl(vector_arrays, (x, np.zeros(8, np.float32)), local_size=(4,))
    assert "float4 acc[4];" in text and "__local float4 tile[8];" in text
    assert "uint4 qv[2];" in text and "__vec" not in text
    back = clsim.load_cl(text, "vector_arrays")
    out = np.zeros(8, np.float32)
    clsim.run(back, (8,), (4,), (x, out), jit=False, checks="all")
    np.testing.assert_array_equal(out, _reference(x).astype(np.float32))
