"""Helpers for GGUF block formats on byte buffers: IEEE half <-> float and C's float-to-int.

The language has no ``half`` type and no structs yet, so a block is read from a ``uint8``
buffer at byte offsets and its half scale is decoded from two bytes here; once the compiler
offers struct dtypes and ``half``, the quantization kernels should read ``block_q4_0`` etc. as
structs and these helpers go away. Every helper is integer and exact float arithmetic only, so
it gives the same bits on every device (and numpy's ``astype(np.float16)``: round to nearest
even, overflow to inf, subnormals kept).
"""

import numpy as np

import clsim
from clsim import as_float, as_uint, fabs, isfinite, rint

QK = 32  # elements per Q4_0 / Q8_0 block
Q8_0_BYTES = 2 + QK
Q4_0_BYTES = 2 + QK // 2
BLOCK_BYTES = {"Q8_0": Q8_0_BYTES, "Q4_0": Q4_0_BYTES}  # by gguf.GGMLQuantizationType name


@clsim.func
def half_to_float(lo, hi):
    """The float value of the IEEE half whose little-endian bytes are lo, hi."""
    h = np.uint32(lo) | (np.uint32(hi) << 8)
    sign = (h & 0x8000) << 16
    e = (h >> 10) & 0x1F
    m = h & 0x3FF
    # One exit and the sign as a bit: Oclgrind 21.10's optimiser dropped the e == 0 branch
    # of an early-return form for negative subnormals (it returned -2**-15 for 0x8000).
    bits = ((e + 112) << 23) | (m << 13)
    if e == 0x1F:
        bits = np.uint32(0x7F800000) | (m << 13)
    if e == 0:
        bits = as_uint(np.float32(m) * as_float(np.uint32(0x33800000)))  # m * 2**-24, exact
    return as_float(bits | sign)


@clsim.func
def float_to_half(f):
    """The IEEE half bits (as uint) of float f, rounded to nearest even (numpy's astype)."""
    bits = as_uint(f)
    sign = (bits >> 16) & 0x8000
    a = bits & 0x7FFFFFFF
    if a > 0x7F800000:
        return sign | 0x7E00 | ((a >> 13) & 0x3FF)
    if a >= 0x477FF000:  # 65520 and up round to inf
        return sign | 0x7C00
    if a >= 0x38800000:  # a normal half: rebias, round the 13 dropped bits to even
        return sign | ((a - 0x38000000 + 0xFFF + ((a >> 13) & 1)) >> 13)
    # a subnormal half (or zero): f * 2**24 is exact, rint rounds to even
    return sign | np.uint32(rint(fabs(f) * as_float(np.uint32(0x4B800000))))


@clsim.func
def c_int(v):
    """(int)v as numpy's astype does it on x86 for a NaN or an infinity (0 once narrowed to 8
    bits: cvttss2si gives INT_MIN); C leaves those undefined, so the kernels state it."""
    return np.int32(v) if isfinite(v) else 0


def half_bytes(values: np.ndarray) -> np.ndarray:
    """numpy: float16 bytes of float32 values, for tests and references."""
    return values.astype(np.float16).view(np.uint8)
