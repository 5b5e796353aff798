"""Private structs made from field values (``struct_value(T, a, f=b)``, C's ``T v = {a, b}``,
``{.f = b}``, ``(T){...}``) and helpers returning a struct by value: in Python kernels, in
``.cl`` kernels through ``clsim.load_cl``, and printed back as C by ``clsim.to_cl``."""

import numpy as np
import pytest

import clsim
from clsim import func, get_global_id, kernel, struct_value
from clsim.errors import KernelCompileError

INFO = np.dtype([("qd", np.float32), ("q_sum", np.int32), ("pad", np.uint8, (3,))])
JIT = pytest.mark.parametrize("jit", [False, True])


@func
def quantised(x, i):
    info = struct_value(INFO, x[i] * np.float32(2.0), q_sum=np.int32(i) + 1)
    return info


@func
def only_first(x, i):
    return struct_value(INFO, x[i])


@kernel
def fields_of_returned_structs(x, out, outi):
    i = get_global_id(0)
    info = quantised(x, i)
    z = only_first(x, i)
    out[i] = info.qd + z.qd
    outi[i] = info.q_sum + np.int32(info.pad[1]) * 100 + z.q_sum * 1000


@JIT
def test_helper_returns_a_struct_built_from_fields(jit):
    """Fields given by position and by name land in their fields; the rest are 0 (C)."""
    x = np.arange(4, dtype=np.float32) + np.float32(0.5)
    out, outi = np.zeros(4, np.float32), np.full(4, -1, np.int32)
    clsim.run(fields_of_returned_structs, (4,), (4,), (x, out, outi), jit=jit, checks="all")
    np.testing.assert_array_equal(out, 3 * x)
    np.testing.assert_array_equal(outi, np.arange(4, dtype=np.int32) + 1)


@kernel
def kernel_struct_value(x, out):
    i = get_global_id(0)
    v = struct_value(INFO, q_sum=np.int32(i))
    v.pad[2] = 9
    out[i] = x[i] * np.float32(v.q_sum) + v.qd + np.float32(v.pad[2]) + np.float32(v.pad[0])


@JIT
def test_struct_value_in_a_kernel_is_each_work_items_own(jit):
    x = np.full(8, 2.0, np.float32)
    out = np.zeros(8, np.float32)
    clsim.run(kernel_struct_value, (8,), (4,), (x, out), jit=jit, checks="all")
    np.testing.assert_array_equal(out, 2 * np.arange(8, dtype=np.float32) + 9)


@kernel
def unknown_field(out):
    v = struct_value(INFO, nope=1)
    out[0] = v.qd


def test_an_unknown_field_is_a_compile_error_naming_it():
    with pytest.raises(KernelCompileError, match="no field 'nope'.*qd, q_sum, pad"):
        clsim.run(unknown_field, (1,), (1,), (np.zeros(1, np.float32),))


CL = """
typedef struct { float qd; int q_sum; } info_t;
typedef struct { float a; int b; uchar c; } trio_t;

info_t make_info(global const float *x, int i) {
    info_t info = { x[i] * 2.0f, i + 1 };
    return info;
}

info_t make_info2(global const float *x, int i) {
    return (info_t){ .q_sum = 7, .qd = x[i] };
}

trio_t make_trio(float v) {
    trio_t t = { v };
    return t;
}

__kernel void k(global const float *x, global float *out, global int *outi) {
    int i = get_global_id(0);
    info_t info = make_info(x, i);
    info_t z = make_info2(x, i);
    trio_t t = make_trio(x[i]);
    out[i] = info.qd + z.qd + t.a;
    outi[i] = info.q_sum + z.q_sum * 10 + t.b + t.c + make_info2(x, i).q_sum * 100;
}
"""


def _run_cl(source, jit):
    x = np.arange(4, dtype=np.float32) + np.float32(0.5)
    out, outi = np.zeros(4, np.float32), np.full(4, -1, np.int32)
    clsim.run(clsim.load_cl(source, "k"), (4,), (4,), (x, out, outi), jit=jit, checks="all")
    return x, out, outi


@JIT
def test_cl_struct_initialisers_and_struct_returns(jit):
    """Positional, designated (out of order) and compound-literal initialisers; fields
    left out are 0; a returned struct's field read off the call."""
    x, out, outi = _run_cl(CL, jit)
    np.testing.assert_array_equal(out, 4 * x)
    np.testing.assert_array_equal(outi, np.arange(4, dtype=np.int32) + 1 + 770)


def test_to_cl_round_trip_runs_the_same():
    """The C that to_cl prints for the translated kernel translates back and computes the
    same values."""
    x, out, outi = _run_cl(CL, jit=False)
    printed = clsim.to_cl(clsim.load_cl(CL, "k"), args=(x, out, outi))
    assert "){0}" in printed and "return info;" in printed
    _x, out2, outi2 = _run_cl(printed, jit=False)
    np.testing.assert_array_equal(out2, out)
    np.testing.assert_array_equal(outi2, outi)


def test_to_cl_prints_a_struct_value_as_a_compound_literal():
    src = clsim.to_cl(fields_of_returned_structs,
                      args=(np.zeros(4, np.float32), np.zeros(4, np.float32),
                            np.zeros(4, np.int32)))
    assert "quantised(" in src and ".qd = " in src and "){0};" in src


@kernel
def struct_value_in_the_kernel(x, out):
    i = get_global_id(0)
    v = struct_value(INFO, x[i], q_sum=np.int32(3))
    out[i] = v.qd * np.float32(v.q_sum)


def test_to_cl_prints_a_struct_value_made_in_the_kernel_itself():
    """A kernel's own ``v = struct_value(...)`` (not only a helper's) prints as C, and the C,
    read back, computes what the Python kernel does."""
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    src = clsim.to_cl(struct_value_in_the_kernel, args=(x, out))
    assert "){0};" in src and ".q_sum = " in src
    clsim.run(struct_value_in_the_kernel, (4,), (4,), (x, out), jit=False)
    back = np.zeros(4, np.float32)
    clsim.run(clsim.load_cl(src, "struct_value_in_the_kernel"), (4,), (4,), (x, back), jit=False)
    np.testing.assert_array_equal(back, out)
    np.testing.assert_array_equal(out, 3 * x)


@kernel
def fields_of_a_call(x, out):
    i = get_global_id(0)
    out[i] = quantised(x, i).qd + np.float32(quantised(x, i).q_sum)


@JIT
def test_fields_of_a_returned_struct_are_read_directly(jit):
    x = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    clsim.run(fields_of_a_call, (4,), (4,), (x, out), jit=jit, checks="all")
    np.testing.assert_array_equal(out, 2 * x + np.arange(4, dtype=np.float32) + 1)


def test_private_struct_fields_are_no_memory_traffic():
    """A returned struct and its fields stay private: only x's loads and the stores count."""
    x = np.arange(4, dtype=np.float32)
    result = clsim.run(fields_of_returned_structs, (4,), (4,),
                       (x, np.zeros(4, np.float32), np.zeros(4, np.int32)), traffic=True)
    sites = {(s.buffer, s.kind, s.space) for s in result.traffic.site_records}
    assert sites == {("x", "load", "global"), ("out", "store", "global"),
                     ("outi", "store", "global")}
    assert result.traffic.unique_read_bytes["x"] == 16
