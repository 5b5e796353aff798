"""Private pointer variables into local memory (issue 22: ggml's ``local float *Ash =
(local float *)shared;``, ``__local float *temp_ptr = reduce_temp + off;``, ``__local const
uint *a = sh_qa[j];``, ``(__local float4 *)matrix_B_local`` in a helper). In the Python
language they are the forms pointers into buffers have (``p = shm + 8``, ``view(shm, T, off)``,
reassigned, passed to helpers): JIT and ``jit=False`` agree, checks name the local array,
traffic counts them as local accesses, and ``clsim.to_cl`` prints ``__local T*`` variables."""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_local_id,
    local_array,
    view,
    vload4,
)
from clsim.backends.opencl_c import to_cl
from clsim.errors import DataRaceError, OutOfBoundsError, UninitializedReadError

JIT = pytest.mark.parametrize("jit", [False, True])
X = np.arange(8, dtype=np.float32)


@clsim.func
def pair_sum(p, lid):
    return p[lid] + p[lid + 4]


@clsim.kernel
def local_pointer(x, out, shift):
    lid = get_local_id(0)
    gid = get_global_id(0)
    shm = local_array(16, np.float32)
    p = shm + 8
    shm[lid] = x[gid]
    p[lid] = x[gid] * 2.0
    barrier(CLK_LOCAL_MEM_FENCE)
    q = p
    q = q - 8
    v = vload4(0, view(shm, np.float32, 16))
    out[gid] = pair_sum(q, lid) + v.x + q[lid + shift]


def expected_local_pointer():
    shm = np.concatenate([X, 2 * X])
    lid = np.arange(8)
    return shm[lid] + shm[lid + 4] + shm[4] + shm[lid]


@JIT
def test_python_local_pointer_variable(jit):
    out = np.zeros(8, np.float32)
    clsim.run(local_pointer, (8,), (8,), (X, out, np.int32(0)), jit=jit, checks="all")
    np.testing.assert_array_equal(out, expected_local_pointer())


@JIT
def test_python_local_pointer_out_of_bounds_names_the_local_array(jit):
    with pytest.raises(OutOfBoundsError, match=r"load from shm\[20\] out of bounds \(len 16\)"):
        clsim.run(local_pointer, (8,), (8,), (X, np.zeros(8, np.float32), np.int32(20)),
                  jit=jit, checks="all")


@JIT
def test_python_local_pointer_traffic_is_local(jit):
    report = clsim.run(local_pointer, (8,), (8,), (X, np.zeros(8, np.float32), np.int32(0)),
                       jit=jit, traffic=True).traffic
    assert {s["buffer"] for s in report.sites if s["kind"] == "store"} >= {"shm"}
    # two stores of 4 bytes per work-item (shm[lid], p[lid]); loads: two in pair_sum, q[...]
    # and the vload4 of 16 bytes
    assert report.totals["local_store_bytes"] == 8 * 8
    assert report.totals["local_load_bytes"] == 8 * (3 * 4 + 16)


@clsim.kernel
def local_pointer_race(x, out):
    lid = get_local_id(0)
    shm = local_array(16, np.float32)
    p = shm + 4
    p[lid] = x[lid]
    out[lid] = p[(lid + 1) % 8]


@clsim.kernel
def local_pointer_uninit(x, out):
    lid = get_local_id(0)
    shm = local_array(16, np.float32)
    p = shm + 8
    out[lid] = p[lid] + x[lid]


@JIT
def test_python_local_pointer_races_and_uninit_name_the_local_array(jit):
    args = (X, np.zeros(8, np.float32))
    with pytest.raises(DataRaceError, match=r"data race on local shm\[5\]"):
        clsim.run(local_pointer_race, (8,), (8,), args, jit=jit, checks="races")
    with pytest.raises(UninitializedReadError, match=r"load of local shm\[8\]"):
        clsim.run(local_pointer_uninit, (8,), (8,), args, jit=jit, checks="uninit")


def test_to_cl_prints_local_pointer_variables():
    src = to_cl(local_pointer, (X, np.zeros(8, np.float32), np.int32(0)))
    assert "float pair_sum(__local float* p, long lid)" in src
    assert "__local float* p;" in src and "__local float* q;" in src
    assert "p = shm + 8;" in src and "q = q - 8;" in src
    assert "vload4(0, ((__local float*)((__local uchar*)shm + 16)))" in src


SRC = """
float sum4(local float *p, int k) { return p[k] + p[k + 1] + p[k + 2] + p[k + 3]; }
float4 second4(local float4 *v) { return v[1]; }

kernel void k(global float *x, global float *out, local uchar *shared, int shift) {
    int lid = get_local_id(0);
    int i = get_global_id(0);
    local float *a = (local float *)shared;
    local float4 *b = (local float4 *)&a[8];
    __local float tile[2][8];
    __local float *row = tile[1];
    local float *t = tile[0] + lid;
    a[lid] = x[i];
    a[lid + 8] = 2.0f * x[i];
    *t = x[i] + 1.0f;
    row[lid] = 3.0f * x[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    t = row;
    t += 2;
    float4 w = vload4(0, a + 4);
    out[i] = sum4(a, lid % 4) + second4(b).y + w.x + t[lid % 6 + shift] + tile[0][lid];
}
"""


def expected_cl():
    lid = np.arange(8)
    a = np.concatenate([X, 2 * X])
    sums = sum(a[lid % 4 + j] for j in range(4))
    return sums + a[13] + a[4] + 3 * X[lid % 6 + 2] + (X + 1)


@JIT
def test_opencl_c_local_pointer_variables(jit):
    kernel = clsim.load_cl(SRC, "k")
    out = np.zeros(8, np.float32)
    clsim.run(kernel, (8,), (8,), (X, out, clsim.LocalMem(64), np.int32(0)), jit=jit,
              checks="all")
    np.testing.assert_array_equal(out, expected_cl())


@JIT
def test_opencl_c_local_pointer_out_of_bounds_names_the_local_array(jit):
    kernel = clsim.load_cl(SRC, "k")
    with pytest.raises(OutOfBoundsError, match=r"kernel.cl:21 .*load from tile\[16\]"):
        clsim.run(kernel, (8,), (8,), (X, np.zeros(8, np.float32), clsim.LocalMem(64),
                                       np.int32(3)), jit=jit, checks="all")


def test_opencl_c_local_pointers_print_back():
    kernel = clsim.load_cl(SRC, "k")
    src = to_cl(kernel, (X, np.zeros(8, np.float32), clsim.LocalMem(64), np.int32(0)))
    assert "__local float* a;" in src and "__local float4* b;" in src
    assert "a = ((__local float*)shared);" in src
    assert "b = ((__local float4*)(a + 8));" in src
    assert "row = tile + 8;" in src and "t += 2;" in src
    assert "float4 second4(__local float4* v)" in src
