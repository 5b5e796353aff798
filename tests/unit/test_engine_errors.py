"""Every error the engine raises, triggered by a small bad kernel, with its fields checked."""

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    barrier,
    get_global_id,
    get_local_id,
    get_local_size,
    kernel,
    local_array,
)


@kernel
def copy_no_guard(src, dst):
    i = get_global_id(0)
    dst[i] = src[i]


@kernel
def load_no_guard(src, dst, n):
    i = get_global_id(0)
    v = src[i + 1]
    if i < n:
        dst[i] = v


@kernel
def negative_index(src, dst):
    i = get_global_id(0)
    dst[i] = src[i - 1]


def test_store_past_the_end_names_buffer_index_gid_and_line():
    """A store past the end raises OutOfBoundsError naming buffer, index, length, gid, line."""
    src = np.zeros(100, np.float32)
    dst = np.zeros(100, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(copy_no_guard, (128,), (64,), (src, dst), jit=False)
    err = info.value
    assert (err.buffer, err.index, err.length) == ("src", 100, 100)
    assert err.gid == (100,) and err.lid == (36,)
    assert err.line == copy_no_guard.fn.__code__.co_firstlineno + 3
    assert "src[100] out of bounds (len 100)" in str(err)
    assert "gid=(100,)" in str(err) and "test_engine_errors.py" in str(err)


def test_out_of_bounds_load_is_reported_in_jit_mode_too():
    """The compiled kernel reports the first bad access of the lowest group, like no-JIT."""
    src = np.zeros(64, np.float32)
    dst = np.zeros(64, np.float32)
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(load_no_guard, (64,), (32,), (src, dst, np.int32(64)), jit=True)
    assert (info.value.buffer, info.value.index, info.value.gid) == ("src", 64, (63,))
    assert info.value.access == "load"


def test_negative_index_is_out_of_bounds_not_wraparound():
    """src[-1] is an error, never the last element."""
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(negative_index, (8,), (8,), (np.ones(8, np.float32), np.zeros(8, np.float32)),
                  jit=False)
    assert info.value.index == -1 and "negative index" in str(info.value)


@kernel
def local_overflow(out):
    lid = get_local_id(0)
    tile = local_array(16, np.float32)
    tile[lid] = 1.0
    barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = tile[lid]


def test_local_array_overflow():
    """Local arrays are bounds-checked like buffers."""
    with pytest.raises(clsim.OutOfBoundsError) as info:
        clsim.run(local_overflow, (32,), (32,), (np.zeros(32, np.float32),), jit=False)
    assert info.value.buffer == "tile" and info.value.index == 16


@kernel
def divergent_barrier(out):
    lid = get_local_id(0)
    if lid < 3:
        barrier(CLK_LOCAL_MEM_FENCE)
    out[lid] = 1.0


@kernel
def divergent_loop(out, counts):
    lid = get_local_id(0)
    k = 0
    while k < counts[lid]:
        barrier(CLK_LOCAL_MEM_FENCE)
        k += 1
    out[lid] = 1.0


@kernel
def early_return(out, n):
    i = get_global_id(0)
    if i >= n:
        return
    out[i] = 1.0
    barrier(CLK_LOCAL_MEM_FENCE)


@pytest.mark.parametrize("jit", [False, True])
def test_barrier_in_divergent_branch(jit):
    """A barrier reached by some work-items only: group, line and how many went which way."""
    with pytest.raises(clsim.BarrierDivergenceError) as info:
        clsim.run(divergent_barrier, (16,), (8,), (np.zeros(16, np.float32),), jit=jit)
    err = info.value
    assert err.group == (0,) and (err.taken, err.not_taken) == (3, 5)
    assert err.line == divergent_barrier.fn.__code__.co_firstlineno + 3
    assert "true for 3 work-items and false for 5" in str(err)


def test_loop_around_barrier_with_varying_trip_count():
    """A while loop containing a barrier whose condition differs between work-items."""
    counts = np.array([2, 2, 2, 3], np.int32)
    with pytest.raises(clsim.BarrierDivergenceError) as info:
        clsim.run(divergent_loop, (4,), (4,), (np.zeros(4, np.float32), counts), jit=False)
    assert (info.value.taken, info.value.not_taken) == (1, 3)


def test_return_before_barrier_in_part_of_a_group():
    """Work-items that return early while others reach the barrier."""
    with pytest.raises(clsim.BarrierDivergenceError) as info:
        clsim.run(early_return, (8,), (8,), (np.zeros(8, np.float32), np.int32(5)), jit=False)
    assert "3 work-items returned before this barrier and 5 reached it" in str(info.value)


def test_return_by_a_whole_group_is_fine():
    """A whole group returning before a barrier never reaches it: not divergence."""
    out = np.zeros(16, np.float32)
    clsim.run(early_return, (16,), (8,), (out, np.int32(8)), jit=False)
    assert out.tolist() == [1.0] * 8 + [0.0] * 8


@kernel
def int_division(a, out):
    i = get_global_id(0)
    out[i] = 10 // a[i]


def test_integer_division_by_zero():
    """Integer division by zero is undefined in OpenCL C (SIGFPE on CPUs): reported."""
    with pytest.raises(clsim.DivisionByZeroError) as info:
        clsim.run(int_division, (4,), (4,), (np.array([1, 2, 0, 3], np.int32),
                                              np.zeros(4, np.int32)), jit=False)
    assert info.value.gid == (2,)


def _compile_error(fn_source_kernel, *args):
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(fn_source_kernel, (4,), (4,), args, jit=False)
    return str(info.value)


@kernel
def uses_list(out):
    i = get_global_id(0)
    vals = [1.0, 2.0]
    out[i] = vals[0]


@kernel
def int_true_division(a, out):
    i = get_global_id(0)
    out[i] = a[i] / 2


@kernel
def unknown_name(out):
    i = get_global_id(0)
    out[i] = some_undefined_thing  # noqa: F821


@kernel
def int_float_mix(a, out):
    i = get_global_id(0)
    acc = 0
    acc = a[i]
    out[i] = acc


def test_compile_errors_say_where_and_what_to_write():
    """Unsupported constructs give file:line and the fix."""
    msg = _compile_error(uses_list, np.zeros(4, np.float32))
    assert "lists do not exist in OpenCL C" in msg and "private_array" in msg
    assert f"test_engine_errors.py:{uses_list.fn.__code__.co_firstlineno + 3}" in msg
    msg = _compile_error(int_true_division, np.zeros(4, np.int32), np.zeros(4, np.int32))
    assert "write '//'" in msg
    msg = _compile_error(unknown_name, np.zeros(4, np.float32))
    assert "'some_undefined_thing' is not defined" in msg
    msg = _compile_error(int_float_mix, np.zeros(4, np.float32), np.zeros(4, np.float32))
    assert "'acc' holds int elsewhere but float here" in msg


def test_ndrange_errors_mirror_opencl_status_names():
    """InvalidNDRangeError carries the CL status it mirrors."""
    out = np.zeros(100, np.float32)
    args = (np.zeros(100, np.float32), out)
    with pytest.raises(clsim.InvalidNDRangeError) as info:
        clsim.run(copy_no_guard, (100,), (64,), args, opencl_version="1.2", jit=False)
    assert info.value.cl_error == "CL_INVALID_WORK_GROUP_SIZE" and "multiple" in str(info.value)
    with pytest.raises(clsim.InvalidNDRangeError) as info:
        clsim.run(copy_no_guard, (4096,), (2048,), args, jit=False)
    assert "over the device limit of 1024" in str(info.value)
    with pytest.raises(clsim.InvalidNDRangeError) as info:
        clsim.run(copy_no_guard, (64, 2), (64,), args, jit=False)
    assert info.value.cl_error == "CL_INVALID_WORK_GROUP_SIZE"
    with pytest.raises(clsim.InvalidNDRangeError) as info:
        clsim.run(copy_no_guard, (1, 1, 1, 1), None, args, jit=False)
    assert info.value.cl_error == "CL_INVALID_WORK_DIMENSION"


def test_bad_arguments():
    """Python scalars, wrong counts and empty buffers are rejected with the parameter name."""
    with pytest.raises(clsim.InvalidArgumentError, match=r"np\.int32"):
        clsim.run(load_no_guard, (4,), (4,), (np.zeros(8, np.float32), np.zeros(4, np.float32),
                                               4), jit=False)
    with pytest.raises(clsim.InvalidArgumentError, match="takes 2 arguments"):
        clsim.run(copy_no_guard, (4,), (4,), (np.zeros(4, np.float32),), jit=False)
    with pytest.raises(clsim.InvalidArgumentError, match="empty"):
        clsim.run(copy_no_guard, (4,), (4,), (np.zeros(0, np.float32),
                                               np.zeros(4, np.float32)), jit=False)


def test_every_error_is_a_simulation_error():
    """One hierarchy: callers can catch clsim.SimulationError."""
    for cls in (clsim.KernelCompileError, clsim.InvalidNDRangeError, clsim.OutOfBoundsError,
                clsim.BarrierDivergenceError, clsim.DataRaceError,
                clsim.UninitializedReadError, clsim.InvalidArgumentError,
                clsim.MisalignedAccessError):
        assert issubclass(cls, clsim.SimulationError)


def test_builtins_refuse_to_run_outside_kernels():
    """Calling a builtin from plain Python explains how to launch instead."""
    with pytest.raises(clsim.KernelCompileError, match="only be called inside"):
        get_local_size(0)


class _RefusedLauncher:
    """A module whose launcher Numba refuses to compile."""

    _LOCAL_BYTES = 0

    @staticmethod
    def _launch(*a):
        from numba.core.errors import TypingError

        raise TypingError("No implementation of function Function(<built-in>)")


class _RefusedGroup:
    """A module of a small launch (clsim.runtime.launcher_tier), whose group function Numba
    refuses to compile; its launcher's Python form calls the group function."""

    _LOCAL_BYTES = 0
    _LAUNCHER = "serial"

    class _group:
        typeof_pyval = staticmethod(type)

        @staticmethod
        def compile(signature):
            from numba.core.errors import TypingError

            raise TypingError("No implementation of function Function(<built-in>)")

    class _launch:
        signatures = []

        @staticmethod
        def py_func(*args):
            _group(*args)  # noqa: F821 (the module's, as in a generated launcher)


@pytest.mark.parametrize("module", [_RefusedLauncher, _RefusedGroup],
                         ids=["launcher", "group-function"])
def test_numba_failure_is_a_one_paragraph_compile_error(monkeypatch, module):
    """Generated code that Numba refuses (a clsim bug) is a KernelCompileError naming the
    kernel and the generated module, never Numba's traceback."""
    from clsim.runtime import launch as launch_mod

    real = launch_mod._compile

    def broken(*args, **kwargs):
        compiled = real(*args, **kwargs)
        return launch_mod._Compiled(module, compiled.sites, compiled.path)

    monkeypatch.setattr(launch_mod, "_compile", broken)
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(numba_refuses, (4,), (4,), (np.zeros(4, np.float32),))
    msg = str(info.value)
    assert "numba_refuses: internal error: Numba could not compile" in msg
    assert "No implementation of function" in msg and "clsim_gen_numba_refuses" in msg


@kernel
def numba_refuses(x):
    x[get_global_id(0)] = 1.0


@kernel
def matmul_operator(out):
    out[0] = out[0] @ out[1]


@kernel
def membership_test(out):
    if 1.0 in out:
        out[0] = 1.0


@pytest.mark.parametrize("kern, words", [
    (matmul_operator, "'@' is not supported; write the loops"),
    (membership_test, "'in' is not supported: compare element by element"),
])
def test_operators_without_a_c_counterpart_name_the_line(kern, words):
    """Operators the front end refuses carry the line (an operator node has none itself)."""
    msg = _compile_error(kern, np.zeros(4, np.float32))
    assert words in msg
    assert f"test_engine_errors.py:{kern.fn.__code__.co_firstlineno + 2}" in msg
