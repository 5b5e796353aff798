"""Pointers to private structs (issue 22): ``private_array(n, T)`` of a module-level
structured dtype in the Python language, and ``fill(&s)`` of a private struct variable in the
OpenCL C front end, which boxes ``s`` in ``private_array(1, T)``. A helper writing through
the pointer changes the caller's struct; ``clsim.to_cl`` prints ``T a[n]``; an access past
the array names the user's variable. Each kernel is written here; the JIT and ``jit=False``
must agree with the value C gives."""

from __future__ import annotations

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    func,
    get_global_id,
    get_local_id,
    kernel,
    local_array,
    private_array,
    struct_value,
)
from clsim.frontends.opencl_c.load import translate

JIT = pytest.mark.parametrize("jit", [False, True])
INFO = np.dtype([("qd", np.float32), ("q_sum", np.int32)])


@func
def fill(p, a):
    p[0].qd = a
    p[0].q_sum = np.int32(3)


@func
def doubled(v):
    return v.qd * np.float32(2)


@kernel
def structs(x, recs, out):
    i = get_global_id(0)
    a = private_array(2, INFO)
    fill(a, x[i])
    fill(a + 1, x[i] * np.float32(2))
    a[1].q_sum = np.int32(5)
    v = a[0]
    a[0] = recs[i]
    b = private_array(1, INFO)
    b[0] = struct_value(INFO, np.float32(1.5), np.int32(4))
    out[i] = v.qd + a[1].qd + a[1].q_sum + a[0].qd + b[0].q_sum + doubled(b[0])


def _records():
    recs = np.zeros(4, INFO)
    recs["qd"] = 10
    return recs


@JIT
def test_private_array_of_structs_written_by_a_helper(jit):
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(structs, (4,), (4,), (x, _records(), out), jit=jit, checks="all")
    # x + 2x + 5 + 10 + 4 + 3
    np.testing.assert_array_equal(out, 22 + 3 * x)


@kernel
def copied(x, out):
    i = get_global_id(0)
    a = private_array(2, INFO)
    fill(a, x[i])
    fill(a + 1, x[i] * np.float32(2))
    v = a[0]
    a[1] = v
    out[i] = a[1].qd + a[0].q_sum


@JIT
def test_to_cl_prints_the_array_of_structs(jit):
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(copied, (4,), (4,), (x, out), jit=jit, checks="all")
    np.testing.assert_array_equal(out, 3 + x)
    text = clsim.to_cl(copied, args=(x, out))
    name = text.split("typedef struct __attribute__((packed)) {")[1].split("}")[1].split(";")[0]
    assert f"{name.strip()} a[2];" in text
    assert "fill(a + 1, " in text
    assert "a[1] = v;" in text
    assert "__vec" not in text


def test_the_front_end_writes_the_box_of_a_struct_as_the_python_language_does():
    source = translate(SOURCE).source
    assert "t = private_array(1, info)" in source
    assert "t[0] = recs[i]" in source
    assert "fill(s, x[i])" in source


@kernel
def past_the_end(x, out):
    i = get_global_id(0)
    a = private_array(2, INFO)
    a[0].qd = x[i]
    a[1].qd = x[i]
    out[i] = a[i].qd


@JIT
def test_an_access_past_a_private_array_of_structs_names_it(jit):
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(clsim.OutOfBoundsError, match=r"byte offset 16 of 'a' .*'a' has 16 "
                                                      r"bytes") as info:
        clsim.run(past_the_end, (4,), (4,), (x, np.zeros(4, np.float32)), jit=jit,
                  checks="all")
    assert info.value.gid == (2,)


def test_fill_is_refused_on_an_array_of_structs():
    @kernel
    def filled(out):
        a = private_array(2, INFO, fill=0)
        out[0] = a[0].qd

    with pytest.raises(clsim.KernelCompileError, match="'a': an array of structs takes no"):
        clsim.run(filled, (1,), (1,), (np.zeros(1, np.float32),), jit=False)


@kernel
def shared(x, out):
    i = get_global_id(0)
    lid = get_local_id(0)
    a = local_array(4, INFO)
    a[lid].qd = x[i]
    a[lid].q_sum = np.int32(lid)
    barrier(CLK_LOCAL_MEM_FENCE)
    out[i] = a[3 - lid].qd + a[3 - lid].q_sum


@kernel
def shared_racy(x, out):
    i = get_global_id(0)
    lid = get_local_id(0)
    a = local_array(4, INFO)
    a[lid].qd = x[i]
    out[i] = a[3 - lid].qd


@JIT
def test_a_local_array_of_structs_is_shared_and_race_checked(jit):
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(shared, (8,), (4,), (x, out), jit=jit, checks="all")
    lid = np.arange(8) % 4
    np.testing.assert_array_equal(out, x[np.arange(8) // 4 * 4 + 3 - lid] + 3 - lid)
    with pytest.raises(clsim.DataRaceError, match="data race on local a"):
        clsim.run(shared_racy, (8,), (4,), (x, out), jit=jit, checks="all")


SOURCE = """
typedef struct { float qd; int q_sum; } info;
void fill(info *p, float a) { p->qd = a; p->q_sum = 3; }
float twice(info v) { return v.qd * 2.0f; }
kernel void k(global float *x, global info *recs, global float *out) {
    int i = get_global_id(0);
    info s;
    fill(&s, x[i]);
    info t = recs[i];
    info *pt = &t;
    pt->q_sum += 7;
    info u = {1.5f, 2};
    fill(&u, u.qd + 1.0f);
    out[i] = s.qd + s.q_sum + t.q_sum + twice(t) + u.qd + u.q_sum;
}
"""


@JIT
def test_the_front_end_boxes_a_private_struct_whose_address_is_taken(jit):
    k = clsim.load_cl(SOURCE, "k")
    x = np.arange(4, dtype=np.float32)
    recs = _records()
    recs["q_sum"] = 1
    out = np.zeros(4, np.float32)
    clsim.run(k, (4,), (4,), (x, recs, out), jit=jit, checks="all")
    # s: x + 3; t: q_sum 1 + 7, twice 20; u: 2.5 + 3
    np.testing.assert_array_equal(out, 36.5 + x)


ARRAY = """
typedef struct { float qd; int q_sum; } info;
void fill(info *p, float a) { p->qd = a; p->q_sum = 3; }
kernel void k(global float *x, global float *out) {
    int i = get_global_id(0);
    info a[3];
    for (int j = 0; j < 3; j++) fill(a + j, x[i] + j);
    a[1].q_sum = 10;
    info b = a[2];
    a[0] = b;
    out[i] = a[0].qd + a[1].q_sum + a[1].qd;
}
"""


@JIT
def test_the_front_end_translates_an_array_of_structs(jit):
    source = translate(ARRAY).source
    assert "a = private_array(3, info)" in source
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(clsim.load_cl(ARRAY, "k"), (4,), (4,), (x, out), jit=jit, checks="all")
    # a[0] = a[2]: x + 2; a[1]: 10 and x + 1
    np.testing.assert_array_equal(out, 13 + 2 * x)


OUT_OF_BOUNDS = """
typedef struct { float qd; int q_sum; } info;
void fill(info *p, float a) { p[1].qd = a; }
kernel void k(global float *x, global float *out) {
    int i = get_global_id(0);
    info s;
    fill(&s, x[i]);
    out[i] = s.qd;
}
"""


@JIT
def test_a_helper_writing_past_a_boxed_struct_names_it_and_the_cl_line(jit):
    k = clsim.load_cl(OUT_OF_BOUNDS, "k")
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(clsim.OutOfBoundsError, match=r"kernel\.cl:3 in fill.*store of 8 "
                                                      r"bytes at byte offset 8 of 's'"):
        clsim.run(k, (4,), (4,), (x, np.zeros(4, np.float32)), jit=jit, checks="all")
