"""Integer vector // and %: component-wise C division (truncation toward zero, the remainder
takes the dividend's sign, MIN / -1 wraps) for every integer type and width, and division by
zero is the same DivisionByZeroError as for scalars."""

import numpy as np
import pytest

import clsim
from clsim import get_global_id, vload2, vload4, vload16, vstore2, vstore4, vstore16


@clsim.kernel
def divide2(a, b, q, r):
    i = get_global_id(0)
    vstore2(vload2(i, a) // vload2(i, b), i, q)
    vstore2(vload2(i, a) % vload2(i, b), i, r)


@clsim.kernel
def divide4(a, b, q, r):
    i = get_global_id(0)
    x = vload4(i, a)
    y = vload4(i, b)
    vstore4(x // y, i, q)
    vstore4(x % y, i, r)


@clsim.kernel
def divide16(a, b, q, r):
    i = get_global_id(0)
    x = vload16(i, a)
    vstore16(x // vload16(i, b), i, q)
    vstore16(x % vload16(i, b), i, r)


_KERNELS = {2: divide2, 4: divide4, 16: divide16}
_INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


def _c_division(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C's quotient and remainder, in Python ints and wrapped to the dtype."""
    q, r = [], []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        q.append(quotient)
        r.append(x - quotient * y)
    modulus = 1 << (a.dtype.itemsize * 8)

    def wrap(values):
        return np.array([v % modulus for v in values], np.uint64).astype(a.dtype)

    return wrap(q), wrap(r)


def _operands(dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(n)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b[b == 0] = 3
    edges = [(7, 2), (7, 3), (info.min, 1), (info.max, 7)]
    if info.min < 0:
        edges += [(-7, 2), (7, -2), (-7, -2), (info.min, -1), (-1, 5)]
    for k, (x, y) in enumerate(edges):
        a[k], b[k] = x, y
    return a, b


@pytest.mark.parametrize("width", [2, 4, 16])
@pytest.mark.parametrize("dtype", _INTS)
def test_vector_division_truncates_like_c(dtype, width):
    """Plain Python, every type and width; the JIT for the 4-wide types below."""
    a, b = _operands(dtype, 32)
    q, r = np.zeros_like(a), np.zeros_like(a)
    clsim.run(_KERNELS[width], (32 // width,), None, (a, b, q, r), jit=False)
    want_q, want_r = _c_division(a, b)
    assert np.array_equal(q, want_q) and np.array_equal(r, want_r)


@pytest.mark.parametrize("dtype", ["int8", "uint32", "int32", "int64"])
def test_vector_division_jit_matches(dtype):
    a, b = _operands(dtype, 32)
    q, r = np.zeros_like(a), np.zeros_like(a)
    clsim.run(divide4, (8,), None, (a, b, q, r), jit=True)
    want_q, want_r = _c_division(a, b)
    assert np.array_equal(q, want_q) and np.array_equal(r, want_r)


@pytest.mark.parametrize("jit", [True, False])
def test_vector_division_by_zero_is_an_error(jit):
    a = np.arange(8, dtype=np.int32)
    b = np.array([1, 2, 0, 4, 1, 1, 1, 1], np.int32)
    with pytest.raises(clsim.DivisionByZeroError):
        clsim.run(divide4, (2,), (2,), (a, b, np.zeros_like(a), np.zeros_like(a)), jit=jit)
