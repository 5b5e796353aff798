"""GGUF quantisation blocks as numpy structured dtypes (ggml-common.h), written once for the
kernels, their ``.cl`` twins (``clsim.cstruct`` prints each typedef; a test checks the twin
holds it verbatim) and the tests.

Every dtype is packed, as ggml's structs are, and its size is ggml's: Q8_0 34 bytes, Q4_0 18,
Q4_1 20, Q5_0 22, IQ4_NL 18, Q4_K 144, Q6_K 210. ggml's ``dm`` unions (``half2`` or
``{d, m}``) are spelled as their two half fields. This module holds layouts and tables only,
no kernels.
"""

import gguf
import numpy as np

import clsim

QK = 32  # values per block of the 32-element formats (Q4_1, Q5_0, IQ4_NL)
QK_K = 256  # values per super-block of the K formats (Q4_K, Q6_K)
K_SCALE_SIZE = 12  # bytes of Q4_K's packed six-bit scales and mins

BLOCK_Q8_0 = np.dtype([("d", np.float16), ("qs", np.int8, (QK,))])
BLOCK_Q4_0 = np.dtype([("d", np.float16), ("qs", np.uint8, (QK // 2,))])
BLOCK_Q4_1 = np.dtype([("d", np.float16), ("m", np.float16), ("qs", np.uint8, (QK // 2,))])
BLOCK_Q5_0 = np.dtype([("d", np.float16), ("qh", np.uint8, (4,)), ("qs", np.uint8, (QK // 2,))])
BLOCK_IQ4_NL = np.dtype([("d", np.float16), ("qs", np.uint8, (QK // 2,))])
BLOCK_Q4_K = np.dtype([("d", np.float16), ("dmin", np.float16),
                       ("scales", np.uint8, (K_SCALE_SIZE,)), ("qs", np.uint8, (QK_K // 2,))])
BLOCK_Q6_K = np.dtype([("ql", np.uint8, (QK_K // 2,)), ("qh", np.uint8, (QK_K // 4,)),
                       ("scales", np.int8, (QK_K // 16,)), ("d", np.float16)])

# The non-linear 4-bit codebook of IQ4_NL (ggml's kvalues_iq4nl), a __constant table.
KVALUES_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89,
                          113], np.int8)

GGML = gguf.GGMLQuantizationType


# By gguf type name: (dtype, C type name, values per block).
BLOCKS = {
    "Q8_0": (BLOCK_Q8_0, "block_q8_0", QK),
    "Q4_0": (BLOCK_Q4_0, "block_q4_0", QK),
    "Q4_1": (BLOCK_Q4_1, "block_q4_1", QK),
    "Q5_0": (BLOCK_Q5_0, "block_q5_0", QK),
    "IQ4_NL": (BLOCK_IQ4_NL, "block_iq4_nl", QK),
    "Q4_K": (BLOCK_Q4_K, "block_q4_K", QK_K),
    "Q6_K": (BLOCK_Q6_K, "block_q6_K", QK_K),
}


def typedef(qtype_name: str) -> str:
    """The packed C typedef of one block (what the .cl twin pastes)."""
    dtype, c_name, _ = BLOCKS[qtype_name]
    return clsim.cstruct(dtype, c_name)


def random_blocks(rng: np.random.Generator, nblocks: int, qtype_name: str) -> np.ndarray:
    """Blocks of random bytes: every byte pattern is a valid block, so every half pattern
    (NaN, inf, subnormal, -0.0) can be a scale."""
    dtype = BLOCKS[qtype_name][0]
    return rng.integers(0, 256, nblocks * dtype.itemsize, dtype=np.uint8).view(dtype)
