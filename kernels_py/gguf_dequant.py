"""GGUF dequantize kernels on struct blocks (Q4_1, Q5_0, IQ4_NL, Q4_K, Q6_K), bit-exact with
``gguf.quants.dequantize``.

One work-item per output value, reading its block as a packed struct (kernels_py.gguf_structs)
and computing in float32 in gguf's order, every product and sum rounded on its own (the twin
has ``FP_CONTRACT OFF``):

- Q4_1: ``d * q + m``, q the nibble (low nibbles values 0..15, high 16..31).
- Q5_0: ``d * (q - 16)``, q the nibble plus bit j of ``qh`` (little-endian) as its fifth bit.
- IQ4_NL: ``d * kvalues[q]``, the codebook a ``__constant`` table.
- Q4_K: ``(d * sc) * q - dmin * m``: eight 32-value sub-blocks, each with a six-bit scale and
  min unpacked from ``scales[12]`` as ggml's ``get_scale_min_k4``; 64 values share 32 bytes of
  ``qs`` (low nibbles the even sub-block, high the odd one).
- Q6_K: ``(d * scales[r / 16]) * (q - 32)``, q four bits of ``ql`` and two of ``qh``.

The half scales are read as ``np.float32(x[ib].d)``; the twin reads them with ``vload_half``
on the field's address, which every device has (a plain ``(float)x[ib].d`` needs
``cl_khr_fp16``, which PoCL and Oclgrind lack), so the specs require nothing. A NaN or
infinite scale gives what numpy gives (NaN, inf, or NaN for inf * 0).
"""

import gguf
import numpy as np

import clsim
from clsim import get_global_id, kernel
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.gguf_structs import BLOCKS, KVALUES_IQ4NL, QK, QK_K, random_blocks

GGML = gguf.GGMLQuantizationType
LOCAL = 256


@clsim.func
def nibble(byte, high):
    """The low (high false) or high four bits of a quant byte."""
    return (byte >> 4) if high else (byte & 15)


@kernel
def dequantize_q4_1(x, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK
        j = i % QK
        q = nibble(np.int32(x[ib].qs[j % (QK // 2)]), j >= QK // 2)
        y[i] = np.float32(x[ib].d) * np.float32(q) + np.float32(x[ib].m)


@kernel
def dequantize_q5_0(x, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK
        j = i % QK
        low = nibble(np.int32(x[ib].qs[j % (QK // 2)]), j >= QK // 2)
        high = (np.int32(x[ib].qh[j // 8]) >> (j % 8)) & 1
        y[i] = np.float32(x[ib].d) * np.float32((low | (high << 4)) - 16)


@kernel
def dequantize_iq4_nl(x, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK
        j = i % QK
        q = nibble(np.int32(x[ib].qs[j % (QK // 2)]), j >= QK // 2)
        y[i] = np.float32(x[ib].d) * np.float32(KVALUES_IQ4NL[q])


@clsim.func
def scale_k4(x, ib, j):
    """Six-bit scale j (0..7) of Q4_K block ib (ggml's get_scale_min_k4, its d)."""
    if j < 4:
        return np.int32(x[ib].scales[j]) & 63
    return (np.int32(x[ib].scales[j + 4]) & 15) | ((np.int32(x[ib].scales[j - 4]) >> 6) << 4)


@clsim.func
def min_k4(x, ib, j):
    """Six-bit min j (0..7) of Q4_K block ib (ggml's get_scale_min_k4, its m)."""
    if j < 4:
        return np.int32(x[ib].scales[j + 4]) & 63
    return (np.int32(x[ib].scales[j + 4]) >> 4) | ((np.int32(x[ib].scales[j]) >> 6) << 4)


@kernel
def dequantize_q4_k(x, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK_K
        r = i % QK_K
        sub = r // 32
        q = nibble(np.int32(x[ib].qs[32 * (sub // 2) + r % 32]), sub % 2 == 1)
        scale = np.float32(x[ib].d) * np.float32(scale_k4(x, ib, sub))
        offset = np.float32(x[ib].dmin) * np.float32(min_k4(x, ib, sub))
        y[i] = scale * np.float32(q) - offset


@kernel
def dequantize_q6_k(x, y, n):
    i = get_global_id(0)
    if i < n:
        ib = i // QK_K
        r = i % QK_K
        half_at = r // 128  # each 128 values: 64 bytes of ql, 32 of qh
        t = r % 128
        low = nibble(np.int32(x[ib].ql[64 * half_at + t % 64]), t >= 64)
        high = (np.int32(x[ib].qh[32 * half_at + t % 32]) >> (2 * (t // 32))) & 3
        scale = np.float32(x[ib].d) * np.float32(x[ib].scales[r // 16])
        y[i] = scale * np.float32((low | (high << 4)) - 32)


def dequant_inputs(qtype_name):
    def make_inputs(rng, shape):
        n = shape["blocks"]
        per_block = BLOCKS[qtype_name][2]
        return {"x": random_blocks(rng, n, qtype_name),
                "y": np.zeros(n * per_block, np.float32), "n": np.int32(n * per_block)}
    return make_inputs


def launch_dequant(inputs, shape, local_size=None):
    local = local_size or (LOCAL,)
    n = int(inputs["n"])
    return Launch((max(1, -(-n // local[0])) * local[0],), local,
                  (inputs["x"], inputs["y"], inputs["n"]))


def dequant_reference(qtype_name):
    def reference(inputs):
        raw = inputs["x"].view(np.uint8)
        with np.errstate(all="ignore"):  # NaN and inf scales
            return {"y": gguf.quants.dequantize(raw, GGML[qtype_name]).astype(np.float32)}
    return reference


KERNELS = {"Q4_1": dequantize_q4_1, "Q5_0": dequantize_q5_0, "IQ4_NL": dequantize_iq4_nl,
           "Q4_K": dequantize_q4_k, "Q6_K": dequantize_q6_k}
# About 2**20 values per default launch, either block size.
DEFAULT_BLOCKS = {QK: 1 << 15, QK_K: 1 << 12}

for _name, _kernel in KERNELS.items():
    register(KernelSpec(
        name=_kernel.name, kernel=_kernel, make_inputs=dequant_inputs(_name),
        launch=launch_dequant, reference=dequant_reference(_name), outputs={"y": EXACT},
        default_shape={"blocks": DEFAULT_BLOCKS[BLOCKS[_name][2]]}, family="gguf",
        cl_file="gguf_dequant.cl",
        description=f"{_name} blocks ({BLOCKS[_name][1]} structs) to float32, one work-item "
                    "per value"))
