"""clsim.to_cl prints OpenCL C from the typed kernel AST: C's spelling of Python's operators,
exact literals, the Python line of every statement, the pragmas and extensions the features
need, and a KernelCompileError naming what cannot be printed. (That the output builds and
agrees with the simulator on devices: tests/device/test_to_cl_round_trip.py.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import clsim
import kernels_py  # noqa: F401  (registers the library's specs)
from clsim import (
    atomic_add,
    atomic_fetch_add_explicit,
    get_global_id,
    get_local_id,
    get_sub_group_local_id,
    local_array,
    memory_order_relaxed,
    memory_scope_device,
    printf,
    sub_group_shuffle_xor,
    vload_half,
)
from clsim.backends.opencl_c import to_cl
from clsim.backends.opencl_c.names import float_literal
from clsim.cli import main as cli_main
from clsim.errors import InvalidArgumentError, KernelCompileError
from clsim.spec import KernelSpec, get_spec
from verify.cli import _heading
from verify.pairs import spec_pair

SCALE = np.float32(0.1)
TABLE = np.array([3, -1, 4, 1], np.int8)


@clsim.kernel
def int_ops(x, y, n):
    i = get_global_id(0)
    if i < n:
        y[i] = x[i] // 3 + x[i] % 3 + (x[i] >> 1)
        y[i] = y[i] * np.int32(SCALE * 10.0)


def test_integer_division_and_remainder_are_cs():
    """Python's // and % on ints are C's / and % (both truncate, as the simulator does)."""
    src = to_cl(int_ops, (np.zeros(4, np.int32), np.zeros(4, np.int32), np.int32(4)))
    assert "x[i] / 3 + x[i] % 3 + (x[i] >> 1)" in src
    assert "#pragma OPENCL FP_CONTRACT OFF" in src
    assert "#define SCALE 0.1f" in src
    assert "/* test_to_cl.py:" in src  # each statement names its Python line
    assert "long i;" in src and "(long)get_global_id(0)" in src  # ids are int64 in clsim


@clsim.func
def shadows(x):
    SCALE = x * 2.0  # a local named like the module constant: no #define may rename it
    return SCALE


@clsim.kernel
def constant_and_local(y):
    i = get_global_id(0)
    y[i] = shadows(y[i]) + SCALE


def test_module_constants_never_rename_a_variable():
    src = to_cl(constant_and_local, (np.zeros(4, np.float32),))
    assert "#define SCALE" not in src and "float SCALE;" in src
    assert "+ 0.1f;" in src


@clsim.kernel
def table_read(y, n):
    i = get_global_id(0)
    if i < n:
        y[i] = np.float32(TABLE[i % 4])


def test_module_arrays_are_constant_tables():
    src = to_cl(table_read, (np.zeros(4, np.float32), np.int32(4)))
    assert "__constant char TABLE[4] = {3, -1, 4, 1};" in src


@clsim.kernel
def half_read(h, y):
    i = get_global_id(0)
    y[i] = np.float32(h[i]) + vload_half(i, h)


@clsim.kernel
def half_math(h, y):
    i = get_global_id(0)
    y[i] = np.float32(h[i] * h[i])


def test_half_needs_fp16_only_when_it_computes_with_half():
    """A half read converted to float is vload_half (every device); half arithmetic needs
    cl_khr_fp16, enabled and named in the header."""
    args = (np.zeros(4, np.float16), np.zeros(4, np.float32))
    plain = to_cl(half_read, args)
    assert "vload_half(0, &h[i])" in plain and "cl_khr_fp16" not in plain
    fp16 = to_cl(half_math, args)
    assert "#pragma OPENCL EXTENSION cl_khr_fp16 : enable" in fp16
    assert "Needs cl_khr_fp16" in fp16


@clsim.kernel
def butterfly(x, y):
    i = get_global_id(0)
    v = x[i]
    v = v + sub_group_shuffle_xor(v, get_sub_group_local_id() & 1)
    y[i] = v


def test_subgroups_bring_their_extensions():
    src = to_cl(butterfly, (np.zeros(16, np.float32), np.zeros(16, np.float32)),
                subgroup_size=16)
    assert "#pragma OPENCL EXTENSION cl_khr_subgroups : enable" in src
    assert "#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable" in src
    assert "intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)" in src
    assert "#define CLSIM_SUBGROUP_SIZE 16" in src
    assert "sub_group_shuffle_xor(v, (uint)" in src  # C declares the mask uint


@clsim.kernel
def atomics(c, d, n):
    i = get_global_id(0)
    if i < n:
        atomic_add(c[0], 1)
        atomic_fetch_add_explicit(d[0], 1, memory_order_relaxed, memory_scope_device)
        printf("i=%d\n", i)


def test_atomics_take_addresses_and_c11_atomics_their_atomic_type():
    src = to_cl(atomics, (np.zeros(1, np.int32), np.zeros(1, np.int32), np.int32(1)))
    assert "atomic_add(&c[0], 1)" in src
    assert ("atomic_fetch_add_explicit((volatile __global atomic_int*)&d[0], 1, "
            "memory_order_relaxed, memory_scope_device)") in src
    assert "-cl-std=CL2.0" in src  # C11 atomics: noted in the header
    assert 'printf("i=%d\\n", i)' in src


@clsim.func
def scratch_copy(v, lid):
    s = local_array(64, np.float32)
    s[lid] = v
    return s[lid]


@clsim.kernel
def uses_local_in_helper(x):
    lid = get_local_id(0)
    x[lid] = scratch_copy(x[lid], lid)


def test_what_c_cannot_express_is_a_compile_error_naming_it():
    """OpenCL C allows __local arrays only in kernels: the error names the array, the helper
    and the line."""
    with pytest.raises(KernelCompileError) as err:
        to_cl(uses_local_in_helper, (np.zeros(64, np.float32),), local_size=(64,))
    assert "'s' is a local array in helper scratch_copy()" in str(err.value)
    assert "test_to_cl.py:" in str(err.value)


def test_argument_types_come_from_args_or_the_spec():
    with pytest.raises(InvalidArgumentError, match="argument types are unknown"):
        to_cl(int_ops)
    by_spec = to_cl(get_spec("softmax"))
    assert by_spec == to_cl(get_spec("softmax").kernel)
    assert "__local float scratch[1024];" in by_spec
    assert "for (long c = lid; " in by_spec  # the loop variables keep their Python names


@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float_literals_are_exact(value):
    """The decimal printed converts to the very float32 the simulator uses."""
    text = float_literal(value, "float32").strip("()").removesuffix("f")
    assert np.float32(text) == np.float32(value)
    assert np.signbit(np.float32(text)) == np.signbit(np.float32(value))


def test_translate_command_writes_the_file(tmp_path, capsys):
    out = tmp_path / "softmax.cl"
    assert cli_main(["translate", "softmax", "--to", "cl", "-o", str(out)]) == 0
    assert out.read_text().startswith("/* OpenCL C printed by clsim.to_cl")
    assert cli_main(["translate", "kernels_py/vector_add.py::vector_add"]) == 0
    assert "__kernel void vector_add(" in capsys.readouterr().out
    assert cli_main(["translate", "no_such_kernel"]) == 2
    assert "no kernel named 'no_such_kernel'" in capsys.readouterr().err


def test_translate_direction_follows_the_source(tmp_path, capsys):
    """One command, two directions: a .cl file goes to Python, a Python kernel to OpenCL C;
    a --to that contradicts the source is one line and exit 2, nothing written."""
    out = tmp_path / "never.cl"
    assert cli_main(["translate", "softmax", "--to", "py", "-o", str(out)]) == 2
    assert "a Python kernel translates to OpenCL C (--to cl)" in capsys.readouterr().err
    source = tmp_path / "k.cl"
    source.write_text("kernel void k(global float *x) { x[get_global_id(0)] = 1.0f; }\n")
    assert cli_main(["translate", str(source), "--to", "cl", "-o", str(out)]) == 2
    assert "a .cl file translates to Python (--to py)" in capsys.readouterr().err
    assert not out.exists()


def test_a_spec_without_cl_file_is_verified_against_to_cl():
    library = get_spec("softmax")
    spec = KernelSpec(**{**library.__dict__, "name": "softmax_no_twin", "cl_file": None})
    pair = spec_pair(spec)
    assert pair.generated and pair.source == to_cl(spec)
    assert "clsim.to_cl" in pair.cl_origin
    # clsim verify's heading line names the source the devices run
    assert " on OpenCL C printed by clsim.to_cl (the spec has no cl_file), against" in \
        _heading(pair, 5)
    assert not spec_pair(library).generated
    assert spec_pair(library).cl_origin.endswith("softmax.cl")
