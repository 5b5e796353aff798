"""Pointer expressions used in place: ``view(src, T, off)[i]``, ``(x + k)[i]``,
``view(src, T, off) + k`` passed on or indexed in one expression, loads and stores, scalar,
vector and struct views; and misaligned scalar accesses through views (undefined in
OpenCL C) raise MisalignedAccessError like vector ones."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view

Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (16,))])
JIT = pytest.mark.parametrize("jit", [False, True])


@clsim.func
def first(p):
    return p[0]


@kernel
def views_in_one_expression(src, x, off, out, y):
    i = get_global_id(0)
    out[i] = view(src, np.float32, off)[i] + (x + 2)[i]
    out[i + 4] = first(view(src, np.float32, off) + i) + (view(src, np.float32, off) + 1)[i]
    out[i + 8] = view(src, clsim.float4, off)[i].y + np.float32(view(src, Q4_0, 2)[i].qs[1])
    (y + 4)[i] = out[i]
    view(src, np.float32, off)[i + 16] = x[i]
    (y + 1)[i * 2] += 1.0


@JIT
def test_pointer_expressions_are_indexed_in_place(jit):
    """view(...)[i], (x + k)[i] and view(...) + k read and write as their C spellings
    ((global float *)(src + off))[i] and (x + k)[i]."""
    rng = np.random.default_rng(0)
    f = rng.standard_normal(16).astype(np.float32)
    src = np.zeros(96, np.uint8)
    src[16:80] = f.view(np.uint8)
    x = rng.standard_normal(12).astype(np.float32)
    x0, src0 = x.copy(), src.copy()
    out, y = np.zeros(12, np.float32), np.zeros(9, np.float32)
    clsim.run(views_in_one_expression, (4,), (4,), (src, x, np.int32(16), out, y), jit=jit)
    i = np.arange(4)
    np.testing.assert_array_equal(out[:4], f[i] + x0[i + 2])
    np.testing.assert_array_equal(out[4:8], f[i] + f[i + 1])
    q = src0[2:2 + 4 * 18].view(Q4_0)
    np.testing.assert_array_equal(out[8:], f[4 * i + 1] + q["qs"][:, 1].astype(np.float32))
    want_y = np.zeros(9, np.float32)
    want_y[4:8] = out[:4]
    want_y[1:9:2] += 1.0
    np.testing.assert_array_equal(y, want_y)
    np.testing.assert_array_equal(src[80:96].view(np.float32), x0[:4])


@pytest.mark.parametrize("options", [{"checks": "all"}, {"traffic": True},
                                     {"checks": "none"}])
def test_pointer_expressions_under_instruments(options):
    """The checks, the traffic model and checks="none" see the same accesses (same
    results, no finding)."""
    rng = np.random.default_rng(1)
    src = rng.integers(0, 60, 96, dtype=np.uint8)
    x = rng.standard_normal(12).astype(np.float32)
    results = []
    for opts in ({}, options):
        args = (src.copy(), x.copy(), np.int32(16), np.zeros(12, np.float32),
                np.zeros(9, np.float32))
        clsim.run(views_in_one_expression, (4,), (4,), args, **opts)
        results.append(args)
    for plain, instrumented in zip(*results, strict=True):
        np.testing.assert_array_equal(plain, instrumented)


@kernel
def read_floats_at(src, off, out):
    i = get_global_id(0)
    p = view(src, np.float32, off)
    out[i] = p[i]


@kernel
def write_halves_at(src, off, v):
    i = get_global_id(0)
    view(src, np.float16, off)[i] = v


@kernel
def vload_at(src, off, out):
    i = get_global_id(0)
    out[i] = clsim.vload2(i, view(src, np.float32, off)).y


@JIT
@pytest.mark.parametrize("kern, size, access", [(read_floats_at, 4, "cast"),
                                                (write_halves_at, 2, "store"),
                                                (vload_at, 4, "load")])
def test_misaligned_scalar_access_through_a_view(jit, kern, size, access):
    """A float view at byte 2 (a half view at byte 1) is misaligned: undefined in OpenCL C,
    a MisalignedAccessError naming kernel, buffer, byte offset and line; aligned offsets
    read and write as usual."""
    src = np.zeros(64, np.uint8)
    last = np.float16(1.0) if kern is write_halves_at else np.zeros(4, np.float32)
    off = 1 if size == 2 else 2
    with pytest.raises(clsim.MisalignedAccessError) as info:
        clsim.run(kern, (4,), (4,), (src, np.int32(off), last), jit=jit)
    err = info.value
    assert (err.buffer, err.index, err.length, err.access) == ("src", off, size, access)
    if access == "cast":  # p = view(...): checked where the pointer local is assigned
        assert f"misaligned pointer: a view of 'src' with {size}-byte elements at byte " \
               f"offset {off}" in str(err) and "p = view(src, np.float32, off)" in str(err)
    else:
        assert f"misaligned {access} of {size} bytes through a view of 'src' at byte " \
               f"offset {off}" in str(err)
    assert "test_pointers_expressions.py:" in str(err)
    assert f"in {kern.name}," in str(err)
    clsim.run(kern, (4,), (4,), (src, np.int32(2 * size), last), jit=jit)  # aligned: fine


def test_views_aligned_at_compile_time_carry_no_check():
    """view(x, T) and view(x, T, k) with a constant multiple k of T's size are aligned
    whatever the run: the generated code has no alignment test for them."""
    from types import SimpleNamespace

    from clsim.compiler.frontend import parse
    from clsim.compiler.module import generate
    from clsim.runtime.arguments import kernel_arg_types

    @kernel
    def constant_views(src, out):
        i = get_global_id(0)
        out[i] = view(src, np.float32, 8)[i] + (view(src, np.float32) + 1)[i]

    @kernel
    def runtime_view(src, off, out):
        i = get_global_id(0)
        out[i] = view(src, np.float32, off)[i]

    config = SimpleNamespace(local_size=(4,), jit=False, parallel=False, bounds=True,
                             subgroup_size=32)
    bodies = []
    for kern, args in ((constant_views, (np.zeros(64, np.uint8), np.zeros(4, np.float32))),
                       (runtime_view, (np.zeros(64, np.uint8), np.int32(0),
                                       np.zeros(4, np.float32)))):
        types = kernel_arg_types(kern.name, parse(kern).params, args, set())[0]
        bodies.append(generate(kern, types, config)[0].split("def _group", 1)[1])
    assert "_al(" not in bodies[0]
    assert "_al(" in bodies[1]


def test_pointer_locals_holding_aligned_views_carry_no_check():
    """p = view(y, float4) (and p = p + 1) is aligned whatever the run: no test; a pointer
    local also assigned a view at a run-time offset is tested where that value is assigned
    (C leaves the misaligned conversion undefined), and its accesses need none."""
    from types import SimpleNamespace

    from clsim.compiler.frontend import parse
    from clsim.compiler.module import generate
    from clsim.runtime.arguments import kernel_arg_types

    @kernel
    def aligned_local(y, out, k):
        i = get_global_id(0)
        p = view(y, clsim.float4)
        if k > 0:
            p = p + 1
        out[i] = p[i].x

    @kernel
    def sometimes_runtime(y, out, k):
        i = get_global_id(0)
        p = view(y, clsim.float4)
        if k > 0:
            p = view(y, clsim.float4, k)
        out[i] = p[i].x

    config = SimpleNamespace(local_size=(4,), jit=False, parallel=False, bounds=True,
                             subgroup_size=32)
    args = (np.zeros(32, np.float32), np.zeros(4, np.float32), np.int32(0))
    bodies = [generate(kern, kernel_arg_types(kern.name, parse(kern).params, args, set())[0],
                       config)[0].split("def _group", 1)[1]
              for kern in (aligned_local, sometimes_runtime)]
    assert "_al(" not in bodies[0] and "% 16 != 0" not in bodies[0]
    assert "_al(" not in bodies[1] and bodies[1].count("% 16 != 0") == 1
    with pytest.raises(clsim.MisalignedAccessError):
        clsim.run(sometimes_runtime, (4,), (4,), (np.zeros(32, np.float32),
                                                  np.zeros(4, np.float32), np.int32(4)))
