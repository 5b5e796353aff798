"""fabs, copysign, abs() on floats and unary minus touch only the sign bit (IEEE 754-2008
5.5.1): a NaN keeps its payload and gets the sign asked for, as on every device measured (PoCL
3.0 and 3.1, Oclgrind, the Intel CPU runtime: copysign(as_float(0x7FC00000), -1.0f) is
0xFFC00000, fabs(as_float(-1)) is 0x7FFFFFFF). Float, double and half; JIT and no-JIT give the
same bits."""

import numpy as np
import pytest

import clsim
from clsim import (
    as_double,
    as_float,
    as_float4,
    as_half,
    as_uint,
    as_uint4,
    as_ulong,
    as_ushort,
    copysign,
    fabs,
    get_global_id,
    vload4,
    vstore4,
)


@clsim.kernel
def signs32(bits, out):
    i = get_global_id(0)
    x = as_float(bits[i])
    out[5 * i] = as_uint(fabs(x))
    out[5 * i + 1] = as_uint(copysign(x, np.float32(-1.0)))
    out[5 * i + 2] = as_uint(copysign(x, np.float32(1.0)))
    out[5 * i + 3] = as_uint(-x)
    out[5 * i + 4] = as_uint(abs(x))


@clsim.kernel
def signs64(bits, out):
    i = get_global_id(0)
    x = as_double(bits[i])
    out[5 * i] = as_ulong(fabs(x))
    out[5 * i + 1] = as_ulong(copysign(x, -1.0))
    out[5 * i + 2] = as_ulong(copysign(x, 1.0))
    out[5 * i + 3] = as_ulong(-x)
    out[5 * i + 4] = as_ulong(abs(x))


@clsim.kernel
def signs16(bits, out):
    i = get_global_id(0)
    x = as_half(bits[i])
    out[5 * i] = as_ushort(fabs(x))
    out[5 * i + 1] = as_ushort(copysign(x, np.float16(-1.0)))
    out[5 * i + 2] = as_ushort(copysign(x, np.float16(1.0)))
    out[5 * i + 3] = as_ushort(-x)
    out[5 * i + 4] = as_ushort(abs(x))


@clsim.kernel
def signs_vector(bits, out):
    v = as_float4(vload4(0, bits))
    vstore4(as_uint4(fabs(v)), 0, out)
    vstore4(as_uint4(copysign(v, -v)), 1, out)


_BITS = {  # type -> (kernel, NaNs with payloads and both signs, then -1.0 and 1.0)
    "float": (signs32, np.uint32, 32,
              [0x7FC00000, 0xFFC00000, 0xFFFFFFFF, 0x7FC12345, 0xBF800000, 0x3F800000]),
    "double": (signs64, np.uint64, 64,
               [0x7FF8000000000000, 0xFFFFFFFFFFFFFFFF, 0x7FF8000000012345,
                0xBFF0000000000000, 0x3FF0000000000000]),
    "half": (signs16, np.uint16, 16, [0x7E00, 0xFE00, 0xFFFF, 0x7E15, 0xBC00, 0x3C00]),
}


def _expected(values: list[int], bits: int) -> list[int]:
    sign = 1 << (bits - 1)
    out = []
    for v in values:
        out += [v & ~sign, v | sign, v & ~sign, v ^ sign, v & ~sign]
    return out


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
@pytest.mark.parametrize("kind", list(_BITS))
def test_sign_operations_keep_the_nan_payload(kind, jit):
    kern, dtype, bits, values = _BITS[kind]
    data = np.array(values, dtype)
    out = np.zeros(5 * len(values), dtype)
    clsim.run(kern, (len(values),), (1,), (data, out), jit=jit)
    assert [hex(v) for v in out.tolist()] == [hex(v) for v in _expected(values, bits)]


@pytest.mark.parametrize("jit", [False, True], ids=["nojit", "jit"])
def test_vector_sign_operations_are_per_component_bit_operations(jit):
    data = np.array([0xFFC00000, 0x7FC12345, 0x80000000, 0x3F800000], np.uint32)
    out = np.zeros(8, np.uint32)
    clsim.run(signs_vector, (1,), (1,), (data, out), jit=jit)
    assert out[:4].tolist() == (data & 0x7FFFFFFF).tolist()
    assert out[4:].tolist() == (data ^ 0x80000000).tolist()
