"""GGUF Q4_K quantizer: ggml's reference algorithm (``quantize_row_q4_K_ref``), one work-item
per 256-value super-block, written to ``block_q4_K`` structs (kernels_py.gguf_structs).

The algorithm, step by step as ggml's C (gguf-py has no Q4_K quantizer, so the reference is the
numpy port in kernels_py.gguf_q4_k_ref, bit for bit; gguf dequantizes the result in the tests):

1. Each 32-value sub-block: weights ``av_x + |x|`` with ``av_x = sqrt(sum(x*x) / 32)``, then
   ``make_qkx2_quants`` (nmax 15, rmin -1, rdelta 0.1, 20 steps): start from the min/max grid,
   try 21 inverse scales ``(rmin + rdelta*is + 15) / (max - min)``, fit scale and min to each
   rounding by weighted least squares, keep the fit of least weighted squared error.
2. The eight scales and mins become six-bit integers against the largest of each
   (``nearest_int(63 / max * s)``), packed as ``get_scale_min_k4`` unpacks them; ``d`` and
   ``dmin`` are ``max / 63`` as halves.
3. Each value is quantized again with the stored (rounded) scale and min:
   ``clamp(nearest_int((x + dm) / d), 0, 15)``; a sub-block whose scale rounds to 0 keeps
   step 1's quants.

``nearest_int`` is ggml's ``1.5 * 2**23`` trick (round to nearest even below 2**22, ggml's own
bits beyond), so huge inputs give ggml's bytes too. Sums run in element order and every
operation is rounded on its own (the twin has ``FP_CONTRACT OFF``); ``sqrt`` and ``/`` are
exact against a device only where they are correctly rounded. NaN inputs are outside the spec
(ggml asserts on them).
"""

import numpy as np

import clsim
from clsim import as_int, fabs, get_global_id, kernel, private_array, sqrt, view
from clsim.spec import EXACT, KernelSpec, Launch, register
from kernels_py.gguf_q4_k_ref import quantize_q4_k_ref
from kernels_py.gguf_structs import BLOCK_Q4_K, QK_K

SUB = 32  # values per sub-block
NSTEP = 20


def fuzz_shapes():
    """The verifier's shapes: one work-item runs ~10**5 operations per block, so a few blocks
    per drawn case keep Oclgrind fast. Built on demand: importing the library must not import
    Hypothesis (about 1 s on every clsim command)."""
    from hypothesis import strategies as st

    return st.builds(lambda b: {"blocks": b}, st.integers(1, 6))


@clsim.func
def nearest_int(f):
    """ggml's nearest_int: the low mantissa bits of f + 1.5 * 2**23."""
    return (as_int(f + 12582912.0) & 0x007FFFFF) - 0x00400000


@clsim.func
def clamp_q(v, top):
    return max(0, min(top, v))


@clsim.func
def sub_block_weights(x, at, weights):
    """ggml's weights for one sub-block: av_x + |x|, av_x the root mean square."""
    sum_x2 = 0.0
    for k in range(SUB):
        sum_x2 += x[at + k] * x[at + k]
    av_x = sqrt(sum_x2 / 32.0)
    for k in range(SUB):
        weights[k] = av_x + fabs(x[at + k])


@clsim.func
def weighted_error(x, at, weights, quants, q_at, scale, offset):
    """sum(w * (scale * q + offset - x)**2) over one sub-block, in element order."""
    err = 0.0
    for k in range(SUB):
        diff = scale * np.float32(quants[q_at + k]) + offset - x[at + k]
        err += weights[k] * (diff * diff)
    return err


@clsim.func
def round_to_grid(x, at, lo, iscale, quants, q_at):
    for k in range(SUB):
        quants[q_at + k] = np.uint8(clamp_q(nearest_int(iscale * (x[at + k] - lo)), 15))


@clsim.func
def make_qkx2_quants(x, at, weights, quants, q_at, laux, mins, j):
    """ggml's make_qkx2_quants(32, 15, ..., rmin -1, rdelta 0.1, nstep 20, use_mad false):
    the sub-block's quants into quants[q_at:], -min into mins[j]; returns the scale."""
    lo = x[at]
    hi = x[at]
    sum_w = weights[0]
    sum_x = sum_w * x[at]
    for k in range(1, SUB):
        lo = x[at + k] if x[at + k] < lo else lo
        hi = x[at + k] if x[at + k] > hi else hi
        sum_w += weights[k]
        sum_x += weights[k] * x[at + k]
    lo = 0.0 if lo > 0.0 else lo
    if hi == lo:
        for k in range(SUB):
            quants[q_at + k] = np.uint8(0)
        mins[j] = -lo
        return 0.0
    iscale = 15.0 / (hi - lo)
    scale = 1.0 / iscale
    round_to_grid(x, at, lo, iscale, quants, q_at)
    best = weighted_error(x, at, weights, quants, q_at, scale, lo)
    for step in range(NSTEP + 1):
        iscale = (-1.0 + 0.1 * np.float32(step) + 15.0) / (hi - lo)
        round_to_grid(x, at, lo, iscale, laux, 0)
        sum_l = 0.0
        sum_l2 = 0.0
        sum_xl = 0.0
        for k in range(SUB):
            wl = weights[k] * np.float32(laux[k])
            sum_l += wl
            sum_l2 += wl * np.float32(laux[k])
            sum_xl += wl * x[at + k]
        det = sum_w * sum_l2 - sum_l * sum_l
        if det > 0.0:
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / det
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det
            if this_min > 0.0:
                this_min = 0.0
                this_scale = sum_xl / sum_l2
            err = weighted_error(x, at, weights, laux, 0, this_scale, this_min)
            if err < best:
                for k in range(SUB):
                    quants[q_at + k] = laux[k]
                best = err
                scale = this_scale
                lo = this_min
    mins[j] = -lo
    return scale


@clsim.func
def pack_scale_min(out, ib, j, ls, lm):
    """Six-bit scale ls and min lm of sub-block j into scales[12] (get_scale_min_k4's
    inverse); sub-blocks 0..3 come first, so 4..7 can OR their top bits in."""
    y = view(out, BLOCK_Q4_K, 0)
    if j < 4:
        y[ib].scales[j] = np.uint8(ls)
        y[ib].scales[j + 4] = np.uint8(lm)
    else:
        y[ib].scales[j + 4] = np.uint8((ls & 15) | ((lm & 15) << 4))
        y[ib].scales[j - 4] = np.uint8(np.int32(y[ib].scales[j - 4]) | ((ls >> 4) << 6))
        y[ib].scales[j] = np.uint8(np.int32(y[ib].scales[j]) | ((lm >> 4) << 6))


@clsim.func
def requantize(x, base, out, ib, six_bit, quants):
    """Step 3: every value again with the stored scale and min of its sub-block (six_bit holds
    the eight six-bit scales, then the eight mins, as packed: ggml unpacks them again)."""
    y = view(out, BLOCK_Q4_K, 0)
    for j in range(QK_K // SUB):
        d = np.float32(y[ib].d) * np.float32(six_bit[j])
        if d != 0.0:
            dm = np.float32(y[ib].dmin) * np.float32(six_bit[8 + j])
            for k in range(SUB):
                q = nearest_int((x[base + SUB * j + k] + dm) / d)
                quants[SUB * j + k] = np.uint8(clamp_q(q, 15))


@kernel
def quantize_q4_k(x, out, nblocks):
    ib = get_global_id(0)
    y = view(out, BLOCK_Q4_K, 0)
    if ib < nblocks:
        base = ib * QK_K
        quants = private_array(QK_K, np.uint8)
        laux = private_array(SUB, np.uint8)
        weights = private_array(SUB, np.float32)
        scales = private_array(QK_K // SUB, np.float32)
        mins = private_array(QK_K // SUB, np.float32)
        six_bit = private_array(2 * (QK_K // SUB), np.int32)
        max_scale = 0.0
        max_min = 0.0
        for j in range(QK_K // SUB):
            sub_block_weights(x, base + SUB * j, weights)
            scales[j] = make_qkx2_quants(x, base + SUB * j, weights, quants, SUB * j, laux,
                                         mins, j)
            max_scale = scales[j] if scales[j] > max_scale else max_scale
            max_min = mins[j] if mins[j] > max_min else max_min
        inv_scale = 63.0 / max_scale if max_scale > 0.0 else 0.0
        inv_min = 63.0 / max_min if max_min > 0.0 else 0.0
        for j in range(QK_K // SUB):
            ls = min(63, nearest_int(inv_scale * scales[j]) & 0xFF)  # ggml's uint8_t, then MIN
            lm = min(63, nearest_int(inv_min * mins[j]) & 0xFF)
            pack_scale_min(out, ib, j, ls, lm)
            six_bit[j] = ls
            six_bit[8 + j] = lm
        y[ib].d = np.float16(max_scale / 63.0)
        y[ib].dmin = np.float16(max_min / 63.0)
        requantize(x, base, out, ib, six_bit, quants)
        for c in range(QK_K // 64):  # 64 values share 32 bytes: low nibble, high nibble
            for k in range(32):
                lo = np.int32(quants[64 * c + k])
                y[ib].qs[32 * c + k] = np.uint8(lo | (np.int32(quants[64 * c + k + 32]) << 4))


def quant_inputs(rng, shape):
    n = shape["blocks"]
    x = (rng.standard_normal((n, QK_K)) * rng.choice([1e-3, 1.0, 1e3], (n, 1))).astype(
        np.float32).reshape(-1)
    return {"x": x, "out": np.zeros(n * BLOCK_Q4_K.itemsize, np.uint8), "nblocks": np.int32(n)}


def launch_quant(inputs, shape, local_size=None):
    local = local_size or (32,)
    n = int(inputs["nblocks"])
    return Launch((max(1, -(-n // local[0])) * local[0],), local,
                  (inputs["x"], inputs["out"], inputs["nblocks"]))


def quant_reference(inputs):
    return {"out": quantize_q4_k_ref(inputs["x"]).view(np.uint8)}


register(KernelSpec(
    name="quantize_q4_k", kernel=quantize_q4_k, make_inputs=quant_inputs, launch=launch_quant,
    reference=quant_reference, outputs={"out": EXACT}, default_shape={"blocks": 32},
    fuzz_shapes=fuzz_shapes, cl_file="gguf_q4_k.cl", family="gguf",
    fuzz_floats={"allow_nan": False, "allow_inf": False},
    description="float32 to Q4_K blocks (block_q4_K structs) by ggml's reference algorithm, "
                "one work-item per 256-value super-block"))
