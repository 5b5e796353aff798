"""The OpenCL C front end (clsim.load_cl, clsim translate): a .cl kernel runs as C computes it,
its errors name the .cl line, bad input is refused with clang's message, and translation reads
nothing but the kernel's file and its relative includes. Kernels here are written for these
tests; jit=False keeps them cheap (the same generated code, run as Python)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import clsim
from clsim.cli import main as cli_main
from clsim.frontends.opencl_c.load import translate

VADD = """__kernel void vadd(__global const float *a, __global const float *b,
                   __global float *c, int n)
{
    int i = get_global_id(0);
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""


def test_vector_add_runs_as_numpy_computes_it():
    kernel = clsim.load_cl(VADD, "vadd")
    a = np.arange(100, dtype=np.float32)
    b = np.full(100, 0.5, np.float32)
    c = np.zeros(100, np.float32)
    clsim.run(kernel, (128,), (32,), (a, b, c, np.int32(100)), jit=False)
    np.testing.assert_array_equal(c, a + b)


def test_c_conversions_come_from_clang():
    """Unsigned wrap-around, char promotion, integer division toward zero, int to float."""
    src = """__kernel void conv(__global uint *u, __global int *q, __global float *f,
                            __global uchar *c) {
        uint z = 0;
        u[0] = z - 1;                    /* wraps to 4294967295 */
        uchar x = 200, y = 100;
        q[0] = x + y;                    /* promoted to int: 300, not 44 */
        q[1] = -7 / 2;                   /* -3, toward zero */
        c[0] = x + y;                    /* converted back to uchar: 44 */
        f[0] = q[1] * 0.5f;              /* -1.5 */
        size_t g = get_global_id(0);
        q[2] = (g - 1) > 0;              /* size_t: 0 - 1 wraps, so 1 */
    }"""
    kernel = clsim.load_cl(src, "conv")
    u, q = np.zeros(1, np.uint32), np.zeros(3, np.int32)
    f, c = np.zeros(1, np.float32), np.zeros(1, np.uint8)
    clsim.run(kernel, (1,), (1,), (u, q, f, c), jit=False)
    assert u[0] == 2**32 - 1
    assert list(q) == [300, -3, 1]
    assert c[0] == 44 and f[0] == -1.5


def test_out_of_bounds_names_the_cl_file_and_line(tmp_path):
    path = tmp_path / "oob.cl"
    path.write_text("__kernel void oob(__global float *x) {\n"
                    "    int i = get_global_id(0);\n"
                    "    x[i + 1] = 1.0f;\n"
                    "}\n")
    kernel = clsim.load_cl(str(path), "oob")
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(kernel, (4,), (4,), (np.zeros(4, np.float32),), jit=False)
    assert info.value.fields["file"] == str(path)
    assert info.value.fields["line"] == 3
    assert "oob.cl:3" in str(info.value) and "x[i + 1] = 1.0f;" in str(info.value)


def test_unsupported_construct_is_a_compile_error_at_its_line():
    src = "__kernel void sw(__global int *x) {\n  switch (x[0]) { case 1: x[1] = 2; }\n}\n"
    with pytest.raises(clsim.KernelCompileError, match=r"kernel\.cl:2 in sw: 'switch'"):
        clsim.load_cl(src, "sw")


def test_invalid_c_gets_clangs_message_with_line_and_column():
    src = "__kernel void k(__global float *x) {\n  int i = get_global_id(0)\n  x[i] = 1;\n}\n"
    with pytest.raises(clsim.KernelCompileError, match=r"kernel\.cl:2:27: expected ';'"):
        clsim.load_cl(src, "k")


def test_build_options_define_macros():
    src = "__kernel void k(__global int *x) { x[0] = N * 2; }"
    kernel = clsim.load_cl(src, "k", options="-cl-fast-relaxed-math -D N=21")
    x = np.zeros(1, np.int32)
    clsim.run(kernel, (1,), (1,), (x,), jit=False)
    assert x[0] == 42


def test_a_buffer_is_its_bytes():
    src = "__kernel void k(__global float *x) { x[1] = x[0] * 2.0f; }"
    raw = np.zeros(8, np.uint8)
    raw[:4] = np.frombuffer(np.float32(1.5).tobytes(), np.uint8)
    clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (raw,), jit=False)
    assert raw[4:].view(np.float32)[0] == 3.0


def test_relative_include_is_read(tmp_path):
    (tmp_path / "common.h").write_text("#define SCALE 3\n")
    (tmp_path / "k.cl").write_text('#include "common.h"\n'
                                   "__kernel void k(__global int *x) { x[0] = SCALE; }\n")
    x = np.zeros(1, np.int32)
    clsim.run(clsim.load_cl(str(tmp_path / "k.cl"), "k"), (1,), (1,), (x,), jit=False)
    assert x[0] == 3


@pytest.mark.parametrize("include, why", [
    ("<stdio.h>", "only a quoted \"file\" name"),
    ('"/etc/passwd"', "an absolute path"),
    ('"link.h"', "is a link"),
    ('"../outside.h"', "leaves the kernel's folder"),
    ('"pipe.h"', "not a regular file"),
])
def test_includes_outside_the_folder_are_refused_unread(tmp_path, include, why):
    (tmp_path / "outside.h").write_text("#define X 1\n")
    folder = tmp_path / "kernels"
    folder.mkdir()
    os.mkfifo(folder / "pipe.h")  # opening it would block: the check must not open it
    (folder / "link.h").symlink_to(tmp_path / "outside.h")
    (folder / "k.cl").write_text(f"#include {include}\n__kernel void k(__global int *x) {{}}\n")
    with pytest.raises(clsim.KernelCompileError, match=f"k.cl:1: .*{why}"):
        translate(str(folder / "k.cl"))


def test_generated_python_carries_the_cl_lines():
    source = translate(VADD).source
    assert "def vadd(a, b, c, n):" in source
    assert "c[i] = a[i] + b[i]" in source and "# kernel.cl:6" in source
    assert "if i < n:" in source


def test_cli_translate_writes_the_module_and_refuses_bad_c(tmp_path, capsys):
    good, bad = tmp_path / "good.cl", tmp_path / "bad.cl"
    good.write_text(VADD)
    bad.write_text("__kernel void k( {\n")
    out = tmp_path / "good.py"
    assert cli_main(["translate", str(good), "-o", str(out)]) == 0
    assert "@kernel" in out.read_text()
    assert cli_main(["translate", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("clsim: error: bad.cl:1:")


def test_barrier_loop_bound_with_a_numpy_conversion_is_uniform():
    """for (long t = 0; t < K; t += 16) around a barrier: the translation writes
    range(np.int64(0), K, 16), and np.int64(...) of uniform values is uniform."""
    src = """__kernel void tiles(__global float *x, int K) {
        __local float t_[16];
        float acc = 0.0f;
        for (long t = 0; t < K; t += 16) {
            t_[get_local_id(0)] = x[t + get_local_id(0)];
            barrier(CLK_LOCAL_MEM_FENCE);
            acc += t_[15 - get_local_id(0)];
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        x[get_global_id(0)] = acc;
    }"""
    x = np.arange(32, dtype=np.float32)
    want = x[15::-1] + x[31:15:-1]
    clsim.run(clsim.load_cl(src, "tiles"), (16,), (16,), (x, np.int32(32)), jit=False)
    np.testing.assert_array_equal(x[:16], want)


def test_a_pointer_through_void_keeps_its_type():
    """ggml's p = (global void *)((global char *)dst + offsetd) into a global float *p:
    p is a float pointer offsetd bytes further (a byte pointer would write elsewhere)."""
    src = """__kernel void k(__global float *dst, ulong offsetd) {
        global float *p = (global void *)((global char *)dst + offsetd);
        p[1] = 5.0f;
    }"""
    dst = np.zeros(8, np.float32)
    clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (dst, np.uint64(8)), jit=False)
    assert dst[3] == 5.0 and np.count_nonzero(dst) == 1


def test_a_race_names_both_cl_lines():
    src = """__kernel void race(__global float *x) {
      __local float t[64];
      t[get_local_id(0)] = x[get_global_id(0)];
      x[get_global_id(0)] = t[63 - get_local_id(0)];
    }"""
    with pytest.raises(clsim.DataRaceError) as info:
        clsim.run(clsim.load_cl(src, "race"), (64,), (64,), (np.zeros(64, np.float32),),
                  jit=False, checks="all")
    message = str(info.value)
    assert message.startswith("kernel.cl:3 in race") and "load at kernel.cl:4" in message


def test_a_vector_argument_reaches_the_kernel_whole():
    src = """__kernel void k(__global int *out, int4 s) {
        out[0] = s.x * 1000 + s.y * 100 + s.z * 10 + s.w;
    }"""
    out = np.zeros(1, np.int32)
    clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (out, np.array([1, 2, 3, 4], np.int32)),
              jit=False)
    assert out[0] == 1234


def test_null_pointer_parameter():
    """A parameter the host passes as NULL is None; `p != NULL` tests it."""
    src = """__kernel void k(__global float *x, __global const float *bias) {
        x[0] = 1.0f;
        if (bias != NULL) { x[0] += bias[0]; }
    }"""
    kernel = clsim.load_cl(src, "k")
    x = np.zeros(1, np.float32)
    clsim.run(kernel, (1,), (1,), (x, None), jit=False)
    assert x[0] == 1.0
    clsim.run(kernel, (1,), (1,), (x, np.full(1, 2.0, np.float32)), jit=False)
    assert x[0] == 3.0


def test_a_local_scalar_is_one_per_work_group():
    """`__local float s;` (ggml's flash attention broadcasts a score this way): one variable
    the group shares, written by one work-item and read by all after the barrier; a private
    copy per work-item would leave the others reading 0."""
    src = """__kernel void k(__global const float *x, __global float *out) {
        __local float shared;
        __local int count;
        if (get_local_id(0) == 0) { shared = x[get_group_id(0)] * 2.0f; count = 7; }
        barrier(CLK_LOCAL_MEM_FENCE);
        out[get_global_id(0)] = shared + count;
    }"""
    x = np.array([1.5, -3.0], np.float32)
    out = np.zeros(16, np.float32)
    clsim.run(clsim.load_cl(src, "k"), (16,), (8,), (x, out), jit=False, checks="all")
    np.testing.assert_array_equal(out, np.repeat(x * 2 + 7, 8))


def test_a_local_vector_is_one_per_work_group_and_a_local_struct_is_refused():
    src = """__kernel void k(__global const float4 *x, __global float4 *out) {
        __local float4 v;
        if (get_local_id(0) == 0) { v = x[get_group_id(0)]; }
        barrier(CLK_LOCAL_MEM_FENCE);
        out[get_global_id(0)] = v;
    }"""
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(16 * 4, np.float32)
    clsim.run(clsim.load_cl(src, "k"), (16,), (8,), (x, out), jit=False)
    np.testing.assert_array_equal(out.reshape(16, 4), np.repeat(x.reshape(2, 4), 8, axis=0))
    src = """typedef struct { float a; int b; } pair;
    __kernel void k(__global float *out) {
        __local pair p;
        p.a = 1.0f;
        out[0] = p.a;
    }"""
    with pytest.raises(clsim.KernelCompileError, match=r"kernel.cl:3 in k: a __local variable"):
        clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (np.zeros(1, np.float32),), jit=False)


def test_a_constant_condition_keeps_only_the_chosen_side():
    """ggml's REDUCE_PARTIAL: (LANES == 1u) ? x : reduce(...) with a helper holding a barrier,
    which may only be called on a line of its own: C evaluates only the chosen side."""
    src = """#define N 4u
    float red(float x, local float *t, uint lane) {
        t[lane] = x; barrier(CLK_LOCAL_MEM_FENCE);
        float r = t[lane] + t[lane ^ 1]; barrier(CLK_LOCAL_MEM_FENCE); return r; }
    #define R(x, t, l) ((N == 1u) ? (x) : red((x), (t), (l)))
    kernel void k(global float *o) {
        local float t[8]; uint l = get_local_id(0);
        const float v = R((float)l, t, l);
        o[l] = v + ((N > 2u) ? 100.0f : 200.0f);
    }"""
    assert "v = red(np.float32(l), t, l)" in translate(src).source
    o = np.zeros(8, np.float32)
    clsim.run(clsim.load_cl(src, "k"), (8,), (8,), (o,), jit=False)
    assert list(o) == [101, 101, 105, 105, 109, 109, 113, 113]


def test_do_while_zero_is_its_body_once():
    """A macro's do { ... } while (0) is its body (ggml's MOE_DP4A_T, inside a loop with
    barriers, where a 'while True ... break' loop under a varying condition is refused); one
    with a break of its own stays a loop."""
    src = """#define ADD(t) do { int z = (t) * 2; o[t] += z; } while (0)
    kernel void k(global int *o) {
        int i = get_global_id(0);
        ADD(i);
        do { o[i] += 100; if (o[i] > 150) break; } while (0);
    }"""
    source = translate(src).source
    assert source.count("while True:") == 1 and "z = i * 2" in source
    o = np.arange(4, dtype=np.int32) * 20
    clsim.run(clsim.load_cl(src, "k"), (4,), (4,), (o,), jit=False)
    assert list(o) == [20 * i + 2 * i + 100 for i in range(4)]


def test_a_declaration_typed_through_a_macro_keeps_its_initialiser():
    """ggml's `ACC_TYPE m_i = FA_M_INIT;`: the initialiser of a variable whose type is a macro
    was dropped (the variable started at 0) and flash_attn_f32 ran 0.6 off the device."""
    src = """#define T float
    #define INIT (-3.0f)
    __kernel void k(__global float *o, float a) {
        T m = INIT;
        T s = (a + 1.0f) * 2.0f;
        T z;
        z = 5.0f;
        o[0] = m; o[1] = s; o[2] = z;
    }"""
    o = np.zeros(3, np.float32)
    clsim.run(clsim.load_cl(src, "k"), (1,), (1,), (o, np.float32(0.5)), jit=False)
    np.testing.assert_array_equal(o, [-3.0, 3.0, 5.0])
