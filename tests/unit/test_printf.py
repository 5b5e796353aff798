"""printf: each work-item's lines are collected and printed after the launch, by global
linear id (each work-item's lines in program order), with C's formatting; mistakes in the
format are compile errors."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, get_local_id, kernel, printf

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
