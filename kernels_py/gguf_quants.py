"""GGUF Q8_0 and Q4_0 (de)quantization on struct blocks, bit-exact with ``gguf.quants``.

Blocks (ggml-common.h, dtypes in kernels_py.gguf_structs): ``block_q8_0`` is a half scale ``d``
then 32 int8 quants (34 bytes), ``block_q4_0`` a half ``d`` then 16 bytes whose low nibbles are
elements 0..15 and high nibbles 16..31, each minus 8 (18 bytes). Dequantizers take the blocks
as a struct array and read ``x[ib].d`` as a half and ``x[ib].qs[j]``; quantizers write into a
byte buffer viewed as blocks (``y = view(blocks, BLOCK_Q8_0, 0)``, as ggml casts its ``char *``
destination), ``y[ib].d = np.float16(d)`` (round to nearest even, numpy's ``astype``). The twins
read and write the half with ``vload_half``/``vstore_half`` on the field's address, so no device
needs ``cl_khr_fp16``.

- dequantize: one work-item per element, ``q * d`` in float32 as gguf's numpy code does.
- quantize Q8_0: d = amax / 127, q = roundf(x / d) as x * (1 / d) (C's roundf: half away from
  zero, the ``round`` builtin; gguf's ``np_roundf`` is the same), one work-item per block.
- quantize Q4_0: the first element of largest magnitude ``mx``, d = mx / -8 (written
  ``mx * -0.125``: the same bits, and no division), q = min(trunc(x / d + 8.5), 15) with
  ``x * (1 / d)``; the sign of ``mx`` is kept, so a negative extreme maps to 0 and the most
  positive quant is clipped. No contraction: ``x * id + 8.5`` is two roundings on both sides.

A NaN or infinite product (inputs with NaN or inf, or a scale so small that 1 / d overflows) is
converted to 0, as numpy's cast does on x86; finite inputs never produce one otherwise.
``1 / d`` is a division: exact against a device only where it is correctly rounded.
"""

import gguf
import numpy as np

import clsim
from clsim import fabs, get_global_id, isfinite, kernel, trunc, view
from clsim import round as c_round
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.gguf_structs import BLOCK_Q4_0, BLOCK_Q8_0, BLOCKS, QK, random_blocks

GGML = gguf.GGMLQuantizationType
LOCAL = 256


@clsim.func
def c_int(v):
    """(int)v as numpy's astype does it on x86 for a NaN or an infinity (0 once narrowed to 8
    bits: cvttss2si gives INT_MIN); C leaves those undefined, so the kernels state it."""
    return np.int32(v) if isfinite(v) else 0


@kernel
def dequantize_q8_0(blocks, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK
        y[i] = np.float32(blocks[ib].qs[i % QK]) * np.float32(blocks[ib].d)


@kernel
def dequantize_q4_0(blocks, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK
        j = i % QK
        byte = np.int32(blocks[ib].qs[j % (QK // 2)])
        q = (byte & 15) if j < QK // 2 else (byte >> 4)
        y[i] = np.float32(blocks[ib].d) * np.float32(q - 8)


@kernel
def quantize_q8_0(x, blocks, nblocks):
    b = get_global_id(0)
    y = view(blocks, BLOCK_Q8_0, 0)
    if b < nblocks:
        base = b * QK
        amax = 0.0
        for j in range(QK):
            amax = max(amax, fabs(x[base + j]))
        d = amax / 127.0
        inv = 0.0 if d == 0.0 else 1.0 / d
        y[b].d = np.float16(d)
        for k in range(QK):
            y[b].qs[k] = np.int8(c_int(c_round(x[base + k] * inv)))


@kernel
def quantize_q4_0(x, blocks, nblocks):
    b = get_global_id(0)
    y = view(blocks, BLOCK_Q4_0, 0)
    if b < nblocks:
        base = b * QK
        mx = x[base]
        amax = fabs(mx)
        for j in range(1, QK):
            if fabs(x[base + j]) > amax:
                amax = fabs(x[base + j])
                mx = x[base + j]
        d = mx * -0.125
        inv = 0.0 if d == 0.0 else 1.0 / d
        y[b].d = np.float16(d)
        for k in range(QK // 2):
            lo = min(c_int(trunc(x[base + k] * inv + 8.5)), 15)
            hi = min(c_int(trunc(x[base + k + QK // 2] * inv + 8.5)), 15)
            y[b].qs[k] = np.uint8(lo | (hi << 4))


def dequant_inputs(qtype):
    def make_inputs(rng, shape):
        n = shape["blocks"]
        return {"blocks": random_blocks(rng, n, qtype.name), "y": np.zeros(n * QK, np.float32),
                "n": np.int32(n * QK)}
    return make_inputs


def quant_inputs(qtype):
    def make_inputs(rng, shape):
        n = shape["blocks"]
        x = (rng.standard_normal(n * QK) * rng.choice([1e-3, 1.0, 1e3], n * QK)).astype(
            np.float32)
        nbytes = n * BLOCKS[qtype.name][0].itemsize
        return {"x": x, "blocks": np.zeros(nbytes, np.uint8), "nblocks": np.int32(n)}
    return make_inputs


def launch_dequant(inputs, shape, local_size=None):
    local = local_size or (LOCAL,)
    n = int(inputs["n"])
    return Launch((max(1, -(-n // local[0])) * local[0],), local,
                  (inputs["blocks"], inputs["y"], inputs["n"]))


def launch_quant(inputs, shape, local_size=None):
    local = local_size or (64,)
    n = int(inputs["nblocks"])
    return Launch((max(1, -(-n // local[0])) * local[0],), local,
                  (inputs["x"], inputs["blocks"], inputs["nblocks"]))


def dequant_reference(qtype):
    def reference(inputs):
        with np.errstate(all="ignore"):  # NaN scales times quants
            raw = inputs["blocks"].view(np.uint8)
            return {"y": gguf.quants.dequantize(raw, qtype).astype(np.float32)}
    return reference


def quant_reference(qtype):
    def reference(inputs):
        with np.errstate(all="ignore"):
            return {"blocks": gguf.quants.quantize(inputs["x"], qtype).reshape(-1)}
    return reference


_COMMON = dict(cl_file="gguf_quants.cl", default_shape={"blocks": 1 << 15}, family="gguf")
_QUANT = dict(_COMMON, fuzz_floats={"allow_nan": False, "allow_inf": False})

for _qtype, _dq, _q in ((GGML.Q8_0, dequantize_q8_0, quantize_q8_0),
                        (GGML.Q4_0, dequantize_q4_0, quantize_q4_0)):
    register(KernelSpec(
        name=_dq.name, kernel=_dq, make_inputs=dequant_inputs(_qtype), launch=launch_dequant,
        reference=dequant_reference(_qtype), outputs={"y": EXACT},
        description=f"{_qtype.name} blocks ({BLOCKS[_qtype.name][1]} structs) to float32, one "
                    "work-item per element",
        **_COMMON))
    register(KernelSpec(
        name=_q.name, kernel=_q, make_inputs=quant_inputs(_qtype), launch=launch_quant,
        reference=quant_reference(_qtype), outputs={"blocks": EXACT},
        description=f"float32 to {_qtype.name} blocks (a byte buffer viewed as "
                    f"{BLOCKS[_qtype.name][1]} structs), one work-item per block",
        **_QUANT))
