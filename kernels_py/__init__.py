"""The library's kernels: Python kernels line for line as in OpenCL C, with numpy references.

Importing this package registers every spec with ``clsim.spec``; each module holds one kernel
family (kernel body, reference, input generator, launch plan). Their ``.cl`` twins live in
``kernels_cl/`` under the same names.
"""

from kernels_py import (  # noqa: F401
    argmax,
    argmax_subgroup,
    argmax_two_phase,
    gemv,
    gemv_half,
    gemv_half8,
    gemv_quant,
    gemv_quant_k,
    gemv_quant_k_split,
    gemv_quant_nrows,
    gemv_quant_split,
    gguf_dequant,
    gguf_q4_k,
    gguf_quants,
    matmul,
    matmul_dot,
    matmul_half,
    matmul_tiled_vec,
    matmul_vec,
    prefix_sum,
    reduce_sum,
    softmax,
    softmax_ggml,
    softmax_ggml_4,
    softmax_online,
    softmax_subgroup,
    softmax_vec,
    vector_add,
)
