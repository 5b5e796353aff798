"""Pointer comparison as in C: ``==`` and ``!=`` compare addresses, also between pointers
into different buffers (ggml's ``src1 != src0`` tells "no mask" by passing src0 twice), and
between a typed view and an element pointer; ``<`` between different buffers is undefined in
C and a compile error here, while ``p < q`` into one buffer compares offsets."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, kernel, view
from clsim.errors import KernelCompileError


@kernel
def compare_pointers(src0, src1, out):
    i = get_global_id(0)
    p = src0 + 1
    q = src1 + 1
    out[0] = 1 if src1 != src0 else 0
    out[1] = 1 if p == q else 0
    out[2] = 1 if view(src0, np.uint8, 4) == p else 0  # (char *)src0 + 4 == src0 + 1
    out[3] = 1 if view(src1, np.float32, 8) == view(src0, np.float32, 8) else 0
    out[4] = 1 if p < src0 + 2 else 0
    out[5] = 1 if i >= 0 and q != src1 else 0


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_pointers_into_different_buffers_compare_by_address(jit):
    a, b = np.zeros(8, np.float32), np.zeros(8, np.float32)
    out = np.zeros(6, np.int32)
    clsim.run(compare_pointers, (1,), (1,), (a, b, out), jit=jit)
    assert out.tolist() == [1, 0, 1, 0, 1, 1]


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_one_buffer_passed_twice_gives_equal_pointers(jit):
    a = np.zeros(8, np.float32)
    out = np.zeros(6, np.int32)
    clsim.run(compare_pointers, (1,), (1,), (a, a, out), jit=jit)
    assert out.tolist() == [0, 1, 1, 1, 1, 1]


def test_less_than_between_different_buffers_is_refused():
    @kernel
    def ordered(src0, src1, out):
        out[0] = 1 if src0 + 1 < src1 else 0

    with pytest.raises(KernelCompileError, match=r"different buffers compare with == and !="):
        clsim.run(ordered, (1,), (1,), (np.zeros(4, np.float32), np.zeros(4, np.float32),
                                        np.zeros(1, np.int32)))
