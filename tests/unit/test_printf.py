"""printf: each work-item's lines are collected and printed after the launch, by global
linear id (each work-item's lines in program order), with C's formatting; mistakes in the
format are compile errors."""

import numpy as np
import pytest

import clsim
from clsim import float4, get_global_id, get_local_id, int2, kernel, printf, uchar4

JIT = pytest.mark.parametrize("jit", [False, True])


@kernel
def hello(x, n):
    i = get_global_id(0)
    if i < n:
        printf("item %d: x=%.2f hex=%x u=%u\n", i, x[i], np.int32(-1), np.uint32(7))
    if get_local_id(0) == 0:
        printf("100%% of group, first item %3d\n", i)


@JIT
def test_lines_come_out_by_work_item_in_program_order(jit, capsys):
    x = np.arange(8, dtype=np.float32) / 3
    result = clsim.run(hello, (8,), (4,), (x, np.int32(5)), jit=jit)
    want = ["item 0: x=0.00 hex=ffffffff u=7\n", "100% of group, first item   0\n",
            "item 1: x=0.33 hex=ffffffff u=7\n", "item 2: x=0.67 hex=ffffffff u=7\n",
            "item 3: x=1.00 hex=ffffffff u=7\n", "item 4: x=1.33 hex=ffffffff u=7\n",
            "100% of group, first item   4\n"]
    assert result.printf == want
    assert capsys.readouterr().out == "".join(want)


@JIT
def test_printf_with_instruments(jit):
    """The printf buffer travels after the instruments' state."""
    x = np.arange(8, dtype=np.float32)
    result = clsim.run(hello, (8,), (4,), (x, np.int32(2)), jit=jit, traffic=True)
    assert len(result.printf) == 4 and result.traffic is not None


@kernel
def too_few(x):
    printf("%d %d\n", get_global_id(0))


@kernel
def float_as_int(x):
    printf("%d\n", x[0])


@pytest.mark.parametrize("kern, words", [(too_few, "2 conversions but 1 arguments"),
                                         (float_as_int, "%d with a float argument")])
def test_format_mistakes_are_compile_errors(kern, words):
    with pytest.raises(clsim.KernelCompileError, match=words):
        clsim.run(kern, (1,), (1,), (np.zeros(1, np.float32),))


@kernel
def strings_and_vectors(x):
    i = get_global_id(0)
    v = float4(x[i], 1.5, -2.0, 0.25)
    printf("%s=%d [%v4hlf] <%5.1v4hlf> %v2hld %-6s| %v4hhu 100%%\n", "item", i, v, v,
           int2(i, -i), "a%b", uchar4(250))


@JIT
def test_literal_strings_and_vector_specifiers(jit):
    """%s with a literal string (flags and width apply; a % in it is printed as is) and
    OpenCL's vector specifier %vN with its length modifier (hh/h/hl/l): the components in
    the conversion's format, joined by commas."""
    result = clsim.run(strings_and_vectors, (2,), (2,), (np.float32([3, 4]),), jit=jit)
    assert result.printf == [
        "item=0 [3.000000,1.500000,-2.000000,0.250000] <  3.0,  1.5, -2.0,  0.2> 0,0 a%b   "
        "| 250,250,250,250 100%\n",
        "item=1 [4.000000,1.500000,-2.000000,0.250000] <  4.0,  1.5, -2.0,  0.2> 1,-1 a%b   "
        "| 250,250,250,250 100%\n"]


@kernel
def vector_width_mismatch(x):
    printf("%v2hlf\n", float4(x[0]))


@kernel
def vector_length_mismatch(x):
    printf("%v4hf\n", float4(x[0]))


@kernel
def vector_without_length(x):
    printf("%v2d\n", int2(1, 2))


@kernel
def string_from_a_variable(x):
    printf("%s\n", x[0])


@pytest.mark.parametrize("kern, words", [
    (vector_width_mismatch, "%v2hlf needs a 2-component vector, got float4"),
    (vector_without_length, "write %v2hld for a int2"),
    (vector_length_mismatch, "'h' says 16-bit components, the argument is a float4"),
    (string_from_a_variable, "%s takes a literal string")])
def test_vector_and_string_mistakes_are_compile_errors(kern, words):
    with pytest.raises(clsim.KernelCompileError, match=words) as info:
        clsim.run(kern, (1,), (1,), (np.zeros(1, np.float32),))
    assert "test_printf.py:" in str(info.value)
