"""ggml's OpenCL kernel launches, as ggml-opencl.cpp makes them (Intel path), with data at a real
model's shapes: for bench_ggml_devices.py. Each function returns a ``Launch``: the ``.cl`` file
and kernel, the -D options the host adds, global and local sizes, the arguments in the host's
clSetKernelArg order, which argument is the output, and how agreement is judged.

Quantised weights are valid GGUF blocks: gguf quantises Q4_0 and Q8_0 from normal data;
gguf has no Q6_K quantiser, so Q6_K blocks are random bytes with a realistic scale d (every
byte pattern of ql, qh and scales is a valid block). Sums of |terms| for the magnitude policy
come from gguf's dequantisation. Shapes follow Llama-2/3 7-8B (hidden 4096, head 128); where
the simulator would take minutes the row count is smaller (``shape`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gguf
import numpy as np

from clsim import Image
from verify.clrun import LocalMem
from verify.policy import EXACT, Policy, magnitude, ulp

GGML = gguf.GGMLQuantizationType
u64, i32, f32 = np.uint64, np.int32, np.float32
SUBGROUP = 16  # ggml's LocalMem sizes for reductions assume Intel's sub-group of 16


@dataclass
class Launch:
    file: str
    kernel: str
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    args: list
    out: int | tuple[int, ...]  # the argument(s) compared
    shape: str  # what the shape is, for the table
    # verify.policy's policy per build ("ggml", "plain"), the reason, and the magnitude
    # policy's scale per output element (sum |terms|, or what ``scale_of`` names)
    policies: dict[str, Policy] = field(default_factory=lambda: {"ggml": EXACT, "plain": EXACT})
    why: str = "the arithmetic is fixed by the source"
    scale: np.ndarray | None = None
    scale_of: str = "sum\\|terms\\|"
    defines: str = ""
    # Options for the device build only: a compiler's strictness the simulator does not share.
    device_options: str = ""
    # The host picks this from the device (clGetKernelWorkGroupInfo): fills the launch in.
    needs_kernel_wg: bool = False


def _quantize(x: np.ndarray, qtype: GGML) -> np.ndarray:
    return gguf.quants.quantize(x, qtype)


def _dot_scale(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum |w_i x_i| per (vector, row): the magnitude a reordered dot product is judged by."""
    return np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T


def _mag(k: float) -> Policy:
    """verify.policy's magnitude policy; its scale is computed here, from the data."""
    return magnitude(k, scale=None)


def _dot_policy(terms_per_lane: int, lanes: int, fast_ulp: int = 0) -> dict[str, Policy]:
    """A dot product each lane sums in order, then a sub-group tree: any order of that shape
    errs by at most (terms per lane + log2 lanes) eps sum|terms| (twice that between two
    orders); -cl-mad-enable may fuse, which only removes roundings."""
    k = 2 * (terms_per_lane + int(np.log2(lanes)) + 1)
    return {"ggml": _mag(k + fast_ulp), "plain": _mag(k)}


DOT_WHY = "reduction order (each lane's sum, then the sub-group's tree) and mad fusion"


def _sum_ulps(terms_per_lane: int, lanes: int) -> int:
    """ULPs between two orders of a sum of positive terms of that shape (relative error at most
    (terms per lane + log2 lanes) eps each)."""
    return 2 * (terms_per_lane + int(np.log2(lanes)) + 1)


def soft_max(rng, ne00=1000, ne01=8, ne02=4) -> Launch:
    """ggml_cl_soft_max with a mask (src1) and attention sinks (src2), each its own buffer."""
    x = (rng.standard_normal((ne02, ne01, ne00)) * 3).astype(np.float32)
    mask = rng.standard_normal((ne01, ne00)).astype(np.float32)
    sinks = rng.standard_normal(ne02).astype(np.float32)
    dst = np.zeros_like(x)
    nb01, nb02 = ne00 * 4, ne00 * ne01 * 4
    nb03 = nb02 * ne02
    nth = min(32, ne00)
    args = [x, u64(0), mask, u64(0), sinks, u64(0), dst, u64(0), i32(ne00), u64(nb01), u64(nb02),
            u64(nb03), i32(1), i32(1), u64(nb01), u64(0), u64(0), u64(nb01), u64(nb02), u64(nb03),
            f32(0.125), f32(0.0), f32(1.0), f32(1.0), i32(4)]
    # exp: 3 ULP, or 3 + floor(|2x|) under -cl-unsafe-math-optimizations (x down to about -40
    # here); the sum of exps, then a multiplication by its reciprocal.
    sums = _sum_ulps(-(-ne00 // nth), nth)
    return Launch("softmax_f32.cl", "kernel_soft_max", (ne01 * nth, ne02, 1), (nth, 1, 1), args,
                  6, f"{ne02}x{ne01} rows of {ne00}, mask, sinks",
                  {"ggml": ulp(sums + 3 + 80 + 3), "plain": ulp(sums + 3 + 1)},
                  "exp's error (3 ULP; 3 + 2\\|x\\| with fast-relaxed math) and the order of "
                  "the sum of exps")


def rms_norm(rng, ne00=4096, ne01=8, ne02=2) -> Launch:
    x = rng.standard_normal((ne02, ne01, ne00)).astype(np.float32)
    dst = np.zeros_like(x)
    nth = min(64, ne00)
    nb01, nb02 = ne00 * 4, ne00 * ne01 * 4
    args = [x, u64(0), dst, u64(0), i32(ne00), i32(ne01), i32(ne02), i32(1), u64(nb01),
            u64(nb02), u64(nb02 * ne02), f32(1e-6), LocalMem(4 * nth // SUBGROUP)]
    bound = ulp(_sum_ulps(ne00 // nth, nth) // 2 + 4)  # sqrt halves the sum's error
    return Launch("rms_norm.cl", "kernel_rms_norm", (ne01 * nth, ne02, 1), (nth, 1, 1), args, 2,
                  f"{ne02}x{ne01} rows of {ne00}", {"ggml": bound, "plain": bound},
                  "the order of the sum of squares, and rsqrt/division (2-3 ULP with "
                  "fast-relaxed math)")


def norm(rng, ne00=4096, ne01=8, ne02=2) -> Launch:
    x = rng.standard_normal((ne02, ne01, ne00)).astype(np.float32)
    dst = np.zeros_like(x)
    nth = 64
    nb01, nb02 = ne00 * 4, ne00 * ne01 * 4
    args = [x, u64(0), dst, u64(0), i32(ne00), i32(ne01), i32(ne02), i32(1), u64(4), u64(nb01),
            u64(nb02), u64(nb02 * ne02), f32(1e-5), LocalMem(4 * nth)]
    bound = ulp(_sum_ulps(ne00 // nth, nth) + 4)  # the mean's error, the variance's, sqrt
    return Launch("norm.cl", "kernel_norm", (ne01 * nth, ne02, 1), (nth, 1, 1), args, 2,
                  f"{ne02}x{ne01} rows of {ne00}", {"ggml": bound, "plain": bound},
                  "the order of the sums (mean, variance), sqrt and division")


def rope_norm(rng, head=128, heads=32, tokens=4, n_past=100) -> Launch:
    """ggml_cl_rope, mode 0 (Llama), no frequency factors: the host passes src0 again as src2
    (the kernel tests src2 != src0), so both get the same array, one buffer on both sides."""
    x = rng.standard_normal((tokens, heads, head)).astype(np.float32)
    pos = np.arange(n_past, n_past + tokens, dtype=np.int32)
    dst = np.zeros_like(x)
    nth = min(64, head)
    nb = [4, head * 4, head * heads * 4, head * heads * tokens * 4]
    dims = [i32(head), i32(heads), i32(tokens), i32(1)]
    args = [x, u64(0), pos, u64(0), x, u64(0), dst, u64(0), *dims, *map(u64, nb), *dims,
            *map(u64, nb), i32(n_past), i32(head), i32(4096), f32(10000.0), f32(1.0), f32(0.0),
            f32(1.0), f32(32.0), f32(1.0), i32(0)]
    # rope.cl's f16 multi and vision kernels assign a float* to a half* parameter: a warning in
    # clang, an error in the Intel CPU runtime's compiler unless demoted.
    # Each output is x0 cos(t) -+ x1 sin(t), t = pos * base^(-i/d): pow's relative error e
    # moves the angle by e*t, so errors scale with (|x0| + |x1|) (1 + t). OpenCL allows pow 16
    # ULP and sin/cos 4 ULP; with -cl-unsafe-math-optimizations pow 8192 ULP and sin/cos an
    # absolute 2^-11 (4096 eps) on [-pi, pi].
    theta = pos[:, None].astype(np.float64) * 10000.0 ** (-np.arange(0, head, 2) / head)
    pair = np.abs(x[..., 0::2]).astype(np.float64) + np.abs(x[..., 1::2])
    scale = np.repeat(pair * (1 + theta[:, None, :]), 2, axis=-1)
    return Launch("rope.cl", "kernel_rope_norm_f32", (heads * nth, tokens, 1), (nth, 1, 1), args,
                  6, f"{tokens} tokens x {heads} heads x {head}, positions {n_past}..",
                  {"ggml": _mag(2 * (8192 + 4096 + 4)), "plain": _mag(2 * (16 + 4 + 4))},
                  "pow, sin and cos within OpenCL's bounds (full profile; unsafe-math for the "
                  "ggml build), amplified by the angle", scale, "(\\|x0\\|+\\|x1\\|)(1+θ)",
                  device_options="-Wno-error=incompatible-pointer-types")


def get_rows_f16(rng, ne00=4096, vocab=2048, ne10=8) -> Launch:
    """ggml_cl_get_rows on an F16 embedding table (vocab rows of 4096; Llama's 32000 rows cut
    to 2048). nth is the smallest power of two >= ne00 within the kernel's work-group limit,
    which the host asks the device for: filled in by the runner."""
    table = (rng.standard_normal((vocab, ne00)) * 0.02).astype(np.float16)
    ids = rng.integers(0, vocab, ne10).astype(np.int32)
    dst = np.zeros((ne10, ne00), np.float32)
    args = [table, u64(0), ids, u64(0), dst, u64(0), i32(ne00), u64(ne00 * 2),
            u64(ne00 * 2 * vocab), u64(ne00 * 2 * vocab), i32(ne10), u64(4), u64(ne10 * 4),
            u64(ne10 * 4), u64(ne00 * 4), u64(ne00 * 4 * ne10), u64(ne00 * 4 * ne10)]
    return Launch("get_rows.cl", "kernel_get_rows_f16", (ne10, 1, 1), (1, 1, 1), args, 4,
                  f"{ne10} tokens from {vocab}x{ne00} f16", why="half to float is exact",
                  needs_kernel_wg=True)


def convert_q4_0(rng, rows=4096, cols=4096) -> Launch:
    """ggml_backend_opencl_buffer_set_tensor: a Q4_0 weight split into quants and scales
    (GGML_OPENCL_SOA_Q), one work-item per block, 64 per group."""
    blocks = _quantize(rng.standard_normal((rows, cols)).astype(np.float32), GGML.Q4_0)
    nblocks = rows * cols // 32
    q = np.zeros(nblocks * 16, np.uint8)
    d = np.zeros(nblocks, np.float16)
    return Launch("cvt.cl", "kernel_convert_block_q4_0", (nblocks, 1, 1), (64, 1, 1),
                  [blocks.reshape(-1), q, d], (1, 2), f"{rows}x{cols} Q4_0 weight",
                  why="byte copies")


def mul_mv_f32(rng, ne00=4096, ne01=64, ne11=4) -> Launch:
    """ggml_cl_mul_mat, F32 x F32 (nrows 4, nth0 32 on Intel): W (ne01 x ne00), ne11 vectors."""
    w = rng.standard_normal((ne01, ne00)).astype(np.float32)
    x = rng.standard_normal((ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne11, ne01), np.float32)
    nb01, nb11 = ne00 * 4, ne00 * 4
    args = [w, u64(0), x, u64(0), dst, u64(0), i32(ne00), i32(ne01), i32(1), u64(4), u64(nb01),
            u64(nb01 * ne01), u64(nb01 * ne01), i32(ne00), i32(ne11), i32(1), u64(4), u64(nb11),
            u64(nb11 * ne11), u64(nb11 * ne11), i32(ne01), i32(ne11), i32(1), i32(1)]
    ny = (ne11 + 3) // 4
    return Launch("mul_mv_f32_f32.cl", "kernel_mul_mat_f32_f32", (ne01 * 32, ny, 1), (32, 1, 1),
                  args, 4, f"{ne01}x{ne00} by {ne11} vectors", _dot_policy(ne00 // 8, 8), DOT_WHY,
                  _dot_scale(w, x))


def mul_mv_f16(rng, head=128, n_kv=256, heads=8, tokens=4) -> Launch:
    """ggml_cl_mul_mat F16 x F32 as attention's KQ (K cache f16, head 128, n_kv keys; 4 query
    tokens): ne00 >= 128, ne01 >= 8, ne11 > 1 picks kernel_mul_mat_f16_f32_l4 with nrows =
    ne11, nth0 32; global (ne01*32, 1, ne12)."""
    k = (rng.standard_normal((heads, n_kv, head))).astype(np.float16)
    q = rng.standard_normal((heads, tokens, head)).astype(np.float32)
    dst = np.zeros((heads, tokens, n_kv), np.float32)
    nb01, nb11 = head * 2, head * 4
    args = [k, u64(0), q, u64(0), dst, u64(0), i32(head), i32(n_kv), i32(heads), u64(2),
            u64(nb01), u64(nb01 * n_kv), u64(nb01 * n_kv * heads), i32(head), i32(tokens),
            i32(heads), u64(4), u64(nb11), u64(nb11 * tokens), u64(nb11 * tokens * heads),
            i32(n_kv), i32(tokens), i32(1), i32(1)]
    scale = np.stack([_dot_scale(k[h].astype(np.float32), q[h]) for h in range(heads)])
    return Launch("mul_mv_f16_f32_l4.cl", "kernel_mul_mat_f16_f32_l4", (n_kv * 32, 1, heads),
                  (32, 1, 1), args, 4, f"KQ: {heads} heads, {n_kv} keys x {head}, {tokens} "
                  "queries", _dot_policy(head // 8, 8), DOT_WHY, scale)


def mul_mv_q4_0(rng, ne00=4096, ne01=4096, ne11=1) -> Launch:
    """ggml_cl_mul_mat Q4_0 x F32, blocks as stored (no GGML_OPENCL_SOA_Q): Intel path nth0 16,
    N_DST 4; global ((ne01+3)/4*16, ne11, 1)."""
    w = rng.standard_normal((ne01, ne00)).astype(np.float32)
    blocks = _quantize(w, GGML.Q4_0)
    x = rng.standard_normal((ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne11, ne01), np.float32)
    args = [blocks.reshape(-1), u64(0), x, u64(0), dst, u64(0), i32(ne00), i32(ne01), i32(1),
            i32(ne00), i32(1), i32(ne01), i32(ne11), i32(1), i32(1)]
    scale = _dot_scale(gguf.quants.dequantize(blocks, GGML.Q4_0), x)
    return Launch("mul_mv_q4_0_f32.cl", "kernel_mul_mat_q4_0_f32",
                  ((ne01 + 3) // 4 * 16, ne11, 1), (16, 1, 1), args, 4,
                  f"{ne01}x{ne00} Q4_0 by {ne11} vector", _dot_policy(ne00 // 16, 16), DOT_WHY,
                  scale)


def mul_mv_q8_0_flat(rng, ne00=4096, ne01=4096, ne11=1) -> Launch:
    """ggml_cl_mul_mat Q8_0 x F32 with GGML_OPENCL_SOA_Q (the default build): quants and scales
    in two buffers, as kernel_convert_block_q8_0 leaves them; Intel nth0 16, nth1 2, ndst 8."""
    w = rng.standard_normal((ne01, ne00)).astype(np.float32)
    blocks = _quantize(w, GGML.Q8_0)
    raw = blocks.reshape(-1, 34)
    d = raw[:, :2].copy().view(np.float16).reshape(-1)
    qs = raw[:, 2:].copy().reshape(-1)
    x = rng.standard_normal((ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne11, ne01), np.float32)
    nb01 = ne00 // 32 * 34
    nb11 = ne00 * 4
    args = [qs, d, x, u64(0), dst, u64(0), i32(ne00), i32(ne01), u64(nb01), u64(nb01 * ne01),
            u64(nb01 * ne01), i32(1), u64(nb11), u64(nb11 * ne11), u64(nb11 * ne11), i32(ne01),
            i32(ne11), i32(1), i32(1)]
    scale = _dot_scale(gguf.quants.dequantize(blocks, GGML.Q8_0), x)
    return Launch("mul_mv_q8_0_f32_flat.cl", "kernel_mul_mv_q8_0_f32_flat",
                  ((ne01 + 7) // 8 * 16, ne11 * 2, 1), (16, 2, 1), args, 4,
                  f"{ne01}x{ne00} Q8_0 (SoA) by {ne11} vector", _dot_policy(ne00 // 16, 16),
                  DOT_WHY, scale)


def mul_mv_q6_K(rng, ne00=4096, ne01=4096, ne11=1) -> Launch:
    """ggml_cl_mul_mat Q6_K x F32, blocks as stored: Intel nth0 16, nth1 2 (one row per
    sub-group); global ((ne01+1)/2*16, ne11*2, 1)."""
    nb = ne00 // 256
    raw = rng.integers(0, 256, (ne01 * nb, 210), dtype=np.uint8)
    d = (rng.uniform(0.5, 1.5, ne01 * nb) * 2e-3).astype(np.float16)
    raw[:, 208:] = d.view(np.uint8).reshape(-1, 2)
    w = gguf.quants.dequantize(raw.reshape(ne01, nb * 210), GGML.Q6_K)
    x = rng.standard_normal((ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne11, ne01), np.float32)
    args = [raw.reshape(-1), u64(0), x, u64(0), dst, u64(0), i32(ne00), i32(ne01), i32(1),
            i32(ne00), i32(1), i32(ne01), i32(ne11), i32(1), i32(1)]
    return Launch("mul_mv_q6_k_f32.cl", "kernel_mul_mv_q6_K_f32",
                  ((ne01 + 1) // 2 * 16, ne11 * 2, 1), (16, 2, 1), args, 4,
                  f"{ne01}x{ne00} Q6_K by {ne11} vector", _dot_policy(ne00 // 16, 16), DOT_WHY,
                  _dot_scale(w, x))


def gemv_img_y8_gqa(rng, head=128, n_kv=256, kv_heads=4, gqa=8) -> Launch:
    """Adreno's image GEMV for attention's KQV (kernel_mul_mat_f16_f32_l4_y8_gqa_img): V (f16,
    transposed: head rows of n_kv) read through an image1d_buffer of RGBA half pixels, softmax(KQ)
    of one token for gqa query heads per KV head. The host: nth0 64, nth1 1, global
    (ceil(ne01/8)*64, 1, ne02*ne13)."""
    v = (rng.standard_normal((kv_heads, head, n_kv))).astype(np.float16)
    p = rng.random((kv_heads * gqa, 1, n_kv)).astype(np.float32)
    p /= p.sum(axis=-1, keepdims=True)
    dst = np.zeros((kv_heads * gqa, 1, head), np.float32)
    nb01, nb11 = n_kv * 2, n_kv * 4
    img = Image(v.reshape(-1, 4), "RGBA", np.float16, kind="image1d_buffer")
    args = [img, p, u64(0), dst, u64(0), i32(n_kv), i32(head), i32(kv_heads), u64(nb01),
            u64(nb01 * head), u64(nb01 * head * kv_heads), i32(n_kv), i32(1),
            i32(kv_heads * gqa), u64(4), u64(nb11), u64(nb11), u64(nb11 * kv_heads * gqa),
            i32(head), i32(1), i32(gqa), i32(1)]
    vv = v.astype(np.float64)
    scale = np.stack([np.abs(p[h, 0].astype(np.float64)) @ np.abs(vv[h // gqa]).T
                      for h in range(kv_heads * gqa)])[:, None, :]
    return Launch("mul_mv_f16_f32_l4.cl", "kernel_mul_mat_f16_f32_l4_y8_gqa_img",
                  ((head + 7) // 8 * 64, 1, kv_heads), (64, 1, 1), args, 3,
                  f"KQV: {kv_heads} KV heads x {gqa} query heads, {n_kv} keys x {head}",
                  _dot_policy(n_kv // 16, 16), DOT_WHY, scale)


def flash_attn_f32(rng, d=128, n_q=64, n_kv=256, heads=8, block=32) -> Launch:
    """ggml_cl_flash_attn, F32 Q/K/V prefill (n_q > 1): flash_attn_f32 built with the host's
    -D DK, DV, BLOCK_M, BLOCK_N and FA_SG=32 (Intel); BLOCK_M/N come from fa_tune.h, which is
    not in the folder: 32 each here. Global ((n_q+BM-1)/BM*BM, heads), local (BM, 1); a causal
    f16 mask and attention sinks, each its own buffer. Output o is [n_q][heads][DV]."""
    q = rng.standard_normal((heads, n_q, d)).astype(np.float32)
    k = rng.standard_normal((heads, n_kv, d)).astype(np.float32)
    v = rng.standard_normal((heads, n_kv, d)).astype(np.float32)
    o = np.zeros((n_q, heads, d), np.float32)
    causal = np.arange(n_kv)[None, :] > (n_kv - n_q + np.arange(n_q))[:, None]
    mask = np.where(causal, -np.inf, 0.0).astype(np.float16)
    sinks = rng.standard_normal(heads).astype(np.float32)
    row = d * 4
    args = [q, u64(0), k, u64(0), v, u64(0), o, u64(0), f32(1 / np.sqrt(d)), i32(n_q),
            i32(n_kv), i32(0), i32(heads), u64(row), u64(row * n_q), u64(row * n_q * heads),
            u64(row), u64(row * n_kv), u64(row * n_kv * heads), u64(row), u64(row * n_kv),
            u64(row * n_kv * heads), u64(row), u64(row * heads), u64(row * heads * n_q),
            f32(0.0), f32(1.0), f32(1.0), i32(8), f32(0.0), i32(heads), mask, u64(0),
            u64(n_kv * 2), u64(0), u64(0), i32(1), i32(1), sinks, u64(0)]
    # o is a weighted mean of V's rows: its error scales with max |v| (exp and native_exp's
    # relative error on the weights; native_exp's is the implementation's, taken as half_exp's
    # 8192 ULP bound).
    scale = np.broadcast_to(np.abs(v).max(axis=1)[None, :, :], o.shape)
    # The host gives FA_SG=32, Intel GPUs' sub-group; the kernel skips a barrier when the group
    # is one sub-group (WG_SIZE <= FA_SG), which races on the Intel CPU runtime's sub-groups of
    # 8-16 (and in the simulator): FA_SG=8, no larger than any sub-group it picks.
    defines = f"-D DK={d} -D DV={d} -D BLOCK_M={block} -D BLOCK_N={block} -D FA_SG=8"
    return Launch("flash_attn_f32.cl", "flash_attn_f32", (-(-n_q // block) * block, heads),
                  (block, 1), args, 6, f"{heads} heads, {n_q} queries x {n_kv} keys x {d}",
                  {"ggml": _mag(2 * (8192 + d)), "plain": _mag(2 * (8192 + d))},
                  "exp/native_exp on the softmax weights and the order of the weighted sums",
                  scale, "max\\|v\\|", defines)


def gemm_img_q4_0(rng, m=4096, k=4096, n=8) -> Launch:
    """Adreno's image GEMM (kernel_gemm_noshuffle_q4_0_f32, ggml_cl_mul_mat_q4_0_f32_adreno):
    Q4_0 weights as the host leaves them after kernel_convert_block_q4_0_noshuffle and the
    transposes (4 nibbles of 4 consecutive k per ushort, [K/4][M]; scales [K/32][M]), the
    activations transposed to [K][N] halves in an RGBA half image1d_buffer (kernel_transpose_32_16).
    Global (ceil(N/8), ceil(M/4)), local (1, 128); C is [N][M]. The kernel accumulates in
    half8 registers."""
    w = rng.standard_normal((m, k)).astype(np.float32)
    blocks = _quantize(w, GGML.Q4_0).reshape(m, k // 32, 18)
    d = blocks[:, :, :2].copy().view(np.float16)[:, :, 0]  # [M][K/32]
    qs = blocks[:, :, 2:]
    nib = np.concatenate([qs & 0xF, qs >> 4], axis=2).reshape(m, k).astype(np.uint16)
    packed = nib[:, 0::4] | nib[:, 1::4] << 4 | nib[:, 2::4] << 8 | nib[:, 3::4] << 12
    src0_q = np.ascontiguousarray(packed.T)  # [K/4][M]
    src0_d = np.ascontiguousarray(d.T)  # [K/32][M]
    x = rng.standard_normal((n, k)).astype(np.float32)
    b_t = np.ascontiguousarray(x.T.astype(np.float16))  # [K][N], N a multiple of 8 here
    img = Image(b_t.reshape(-1, 4), "RGBA", np.float16, kind="image1d_buffer")
    dst = np.zeros((n, m), np.float32)
    wq = (nib.astype(np.float32) - 8) * np.repeat(d.astype(np.float32), 32, axis=1)
    scale = _dot_scale(wq, b_t.T.astype(np.float32))
    return Launch("gemm_noshuffle_q4_0_f32.cl", "kernel_gemm_noshuffle_q4_0_f32",
                  (-(-n // 8), -(-m // 4), 1), (1, 128, 1),
                  [src0_q, src0_d, img, dst, i32(m), i32(n), i32(k), i32(n)], 3,
                  f"{m}x{k} Q4_0 by {n} activations (prefill)",
                  {"ggml": _mag(2 * k * 8192), "plain": _mag(2 * k * 8192)},
                  "half8 accumulators: each of K steps rounds to half (eps 2^-10 = 8192 float "
                  "eps); any fusion (-cl-mad-enable) changes those roundings", scale)


def flash_attn_q1_local_tile(rng, d=128, n_kv=512, heads=32, kv_heads=8) -> Launch:
    """Decode flash attention (one query token), Adreno's path for DK = DV = 128
    (flash_attn_f32_f16_q1_local_tile): Q f32, K/V f16 caches, an f16 mask row and sinks;
    global (128, heads, 1), local (128, 1, 1); the program built with the F32_F16 variant's
    -D options (BLOCK_M/N from fa_tune.h are not in the folder: 32). GQA 4 (Llama-3 8B)."""
    q = rng.standard_normal((heads, 1, d)).astype(np.float32)
    k = rng.standard_normal((kv_heads, n_kv, d)).astype(np.float16)
    v = rng.standard_normal((kv_heads, n_kv, d)).astype(np.float16)
    o = np.zeros((1, heads, d), np.float32)
    mask = np.zeros((1, n_kv), np.float16)
    mask[0, -7:] = -np.inf  # the cache's unused tail
    sinks = rng.standard_normal(heads).astype(np.float32)
    qrow, krow = d * 4, d * 2
    args = [q, u64(0), k, u64(0), v, u64(0), o, u64(0), f32(1 / np.sqrt(d)), i32(1), i32(n_kv),
            i32(0), i32(heads), u64(qrow), u64(qrow), u64(qrow * heads), u64(krow),
            u64(krow * n_kv), u64(krow * n_kv * kv_heads), u64(krow), u64(krow * n_kv),
            u64(krow * n_kv * kv_heads), u64(qrow), u64(qrow * heads), u64(qrow * heads),
            f32(0.0), f32(1.0), f32(1.0), i32(32), f32(0.0), i32(kv_heads), mask, u64(0),
            u64(n_kv * 2), u64(0), u64(0), i32(1), i32(1), sinks, u64(0)]
    # o is a weighted mean of V's rows: its error scales with max |v| (native_exp's relative
    # error on the weights: the implementation's, taken as half_exp's 8192 ULP bound); the
    # dot products are a fixed local-memory tree on both sides.
    scale = np.broadcast_to(np.abs(v.astype(np.float32)).max(axis=1)[None, :, :]
                            .repeat(heads // kv_heads, axis=1), o.shape)
    defines = f"-D DK={d} -D DV={d} -D BLOCK_M=32 -D BLOCK_N=32 -D FA_K_LDS_T"
    return Launch("flash_attn_f32_f16.cl", "flash_attn_f32_f16_q1_local_tile",
                  (128, heads, 1), (128, 1, 1), args, 6,
                  f"decode: {heads} heads (GQA {heads // kv_heads}), {n_kv} keys x {d}",
                  {"ggml": _mag(2 * 8192 + 16), "plain": _mag(2 * 8192 + 16)},
                  "native_exp's error on the softmax weights (implementation-defined)",
                  scale, "max\\|v\\|", defines)


CASES = {
    "soft_max": soft_max, "rms_norm": rms_norm, "norm": norm, "rope_norm": rope_norm,
    "mul_mv_f32": mul_mv_f32, "mul_mv_f16": mul_mv_f16, "mul_mv_q4_0": mul_mv_q4_0,
    "mul_mv_q8_0": mul_mv_q8_0_flat, "mul_mv_q6_K": mul_mv_q6_K, "get_rows": get_rows_f16,
    "convert_q4_0": convert_q4_0, "gemv_image": gemv_img_y8_gqa,
    "gemm_image": gemm_img_q4_0, "flash_attn_q1": flash_attn_q1_local_tile,
    "flash_attn": flash_attn_f32,
}
