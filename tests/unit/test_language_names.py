"""Names and initialisers as OpenCL C has them (issue 22): C keywords and type names refused
as variable names (a twin must not drift from its .cl), a block-local variable shadowing a
builtin only in its block, and private arrays initialised with any scalar expressions."""

import numpy as np
import pytest

import clsim
from clsim import exp, get_global_id, kernel, private_array
from clsim.compiler.keywords import RESERVED

JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def named_half(x):
    half = get_global_id(0) // 2
    x[0] = half


@kernel
def named_local(local, x):
    x[0] = local[0]


@pytest.mark.parametrize("kern, args, words", [
    (named_half, (np.zeros(1, np.int32),), "'half' is a reserved word of OpenCL C"),
    (named_local, (np.zeros(1, np.int32), np.zeros(1, np.int32)),
     "'local' is a reserved word of OpenCL C"),
])
def test_c_keywords_are_not_variable_names(kern, args, words):
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(kern, (1,), (1,), args)
    assert words in str(info.value) and "test_language_names.py:" in str(info.value)


def test_the_reserved_table_has_c_types_and_qualifiers():
    assert {"half", "int", "float", "char", "uint", "global", "local", "kernel", "constant",
            "private", "struct", "union", "void", "float4", "uchar16"} <= RESERVED


@kernel
def shadows_exp(x, y):
    i = get_global_id(0)
    if i > 1:
        exp = 3  # C: { int exp = 3; ... } while exp() is called elsewhere
        y[i] = np.float32(exp + i)
    else:
        y[i] = exp(x[i])


@JIT
def test_a_block_local_name_shadows_a_builtin(jit):
    x = np.ones(4, np.float32)
    y = np.zeros(4, np.float32)
    clsim.run(shadows_exp, (4,), (4,), (x, y), jit=jit)
    np.testing.assert_allclose(y[:2], np.e, rtol=1e-6)  # the builtin exp
    np.testing.assert_array_equal(y[2:], [5.0, 6.0])  # the block's int exp = 3


@kernel
def initialised(x, y):
    i = get_global_id(0)
    a = x[i]
    t = private_array(4, np.float32, fill=(a, a * 2.0, 1.5, np.float32(i)))
    h = private_array(3, np.float16, fill=a + 0.1)
    s = np.float32(0)
    for j in range(4):
        s += t[j]
    y[i] = s + np.float32(h[2])


@JIT
@pytest.mark.parametrize("options", [{}, {"checks": "all"}, {"traffic": True}])
def test_non_constant_initialisers(jit, options):
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    clsim.run(initialised, (4,), (4,), (x, y), jit=jit, **options)
    half = (x + np.float32(0.1)).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(y, (x + x * 2 + 1.5 + np.arange(4)) + half)


@kernel
def float_into_int(x):
    t = private_array(2, np.int32, fill=(x[0], 1))
    x[1] = np.float32(t[0])


def test_a_float_initialiser_of_an_int_array_is_refused():
    with pytest.raises(clsim.KernelCompileError) as info:
        clsim.run(float_into_int, (1,), (1,), (np.zeros(2, np.float32),))
    assert "a float value for an int array" in str(info.value)
