"""numpy port of ggml's ``quantize_row_q4_K_ref`` (the reference of the quantize_q4_k kernel):
the same float32 operations in the same order as the C code, vectorised over sub-blocks (each
loop over a sub-block's 32 values stays a loop, so every sum is an element-order left fold).
The algorithm is described in kernels_py/gguf_q4_k.py. Returns ``block_q4_K`` structs.
"""

import numpy as np

from kernels_py.gguf_structs import BLOCK_Q4_K, QK_K

F = np.float32
SUB = 32


def nearest_int(f: np.ndarray) -> np.ndarray:
    """ggml's nearest_int: the low mantissa bits of f + 1.5 * 2**23."""
    return ((f + F(12582912.0)).view(np.int32) & 0x007FFFFF) - 0x00400000


def _grid(x, lo, iscale):
    return np.clip(nearest_int(iscale[:, None] * (x - lo[:, None])), 0, 15).astype(np.uint8)


def _error(x, w, quants, scale, offset):
    err = np.zeros(x.shape[0], F)
    for k in range(SUB):
        diff = scale * quants[:, k].astype(F) + offset - x[:, k]
        err = err + w[:, k] * (diff * diff)
    return err


def _fold(values):
    total = values[:, 0].copy()
    for k in range(1, SUB):
        total = total + values[:, k]
    return total


def make_qkx2_quants(x: np.ndarray, w: np.ndarray):
    """Rows of 32 values and weights: (scale, -min, quants) per row (nmax 15, rmin -1,
    rdelta 0.1, 20 steps, squared error)."""
    lo, hi = x[:, 0].copy(), x[:, 0].copy()
    for k in range(1, SUB):
        lo = np.where(x[:, k] < lo, x[:, k], lo)
        hi = np.where(x[:, k] > hi, x[:, k], hi)
    sum_w, sum_x = _fold(w), _fold(w * x)
    lo = np.where(lo > 0, F(0), lo)
    flat = hi == lo
    width = np.where(flat, F(1), hi - lo)
    iscale = F(15) / width
    scale = F(1) / iscale
    quants = _grid(x, lo, iscale)
    best = _error(x, w, quants, scale, lo)
    for step in range(21):
        # ggml divides by max - min with min as the best fit so far, not the data's min
        iscale = (F(-1) + F(0.1) * F(step) + F(15)) / np.where(flat, F(1), hi - lo)
        laux = _grid(x, lo, iscale)
        wl = w * laux.astype(F)
        sum_l, sum_l2, sum_xl = _fold(wl), _fold(wl * laux.astype(F)), _fold(wl * x)
        det = sum_w * sum_l2 - sum_l * sum_l
        fit = det > 0
        safe = np.where(fit, det, F(1))
        this_scale = (sum_w * sum_xl - sum_x * sum_l) / safe
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / safe
        clipped = this_min > 0
        this_min = np.where(clipped, F(0), this_min)
        this_scale = np.where(clipped, sum_xl / np.where(clipped, sum_l2, F(1)), this_scale)
        err = _error(x, w, laux, this_scale, this_min)
        better = fit & (err < best) & ~flat
        quants = np.where(better[:, None], laux, quants)
        best = np.where(better, err, best)
        scale = np.where(better, this_scale, scale)
        lo = np.where(better, this_min, lo)
    quants[flat] = 0
    return np.where(flat, F(0), scale), -lo, quants


def _pack(blocks, ls, lm):
    for j in range(8):
        if j < 4:
            blocks["scales"][:, j] = ls[:, j]
            blocks["scales"][:, j + 4] = lm[:, j]
        else:
            blocks["scales"][:, j + 4] = (ls[:, j] & 15) | ((lm[:, j] & 15) << 4)
            blocks["scales"][:, j - 4] |= (ls[:, j] >> 4) << 6
            blocks["scales"][:, j] |= (lm[:, j] >> 4) << 6


def _unpack(scales, j):
    if j < 4:
        return scales[:, j] & 63, scales[:, j + 4] & 63
    return ((scales[:, j + 4] & 15) | ((scales[:, j - 4] >> 6) << 4),
            (scales[:, j + 4] >> 4) | ((scales[:, j] >> 6) << 4))


def quantize_q4_k_ref(values: np.ndarray) -> np.ndarray:
    """float32 values (a multiple of 256) to Q4_K blocks, as ggml's reference quantizer."""
    with np.errstate(all="ignore"):  # overflow to inf for huge inputs, as in C
        x = values.astype(F).reshape(-1, 8, SUB)
        nb = x.shape[0]
        rows = x.reshape(-1, SUB)
        sum_x2 = _fold(rows * rows)
        av_x = np.sqrt(sum_x2 / F(32))
        scales, mins, quants = make_qkx2_quants(rows, av_x[:, None] + np.abs(rows))
        scales, mins, quants = scales.reshape(nb, 8), mins.reshape(nb, 8), quants.reshape(nb, -1)
        max_scale, max_min = np.zeros(nb, F), np.zeros(nb, F)
        for j in range(8):
            max_scale = np.where(scales[:, j] > max_scale, scales[:, j], max_scale)
            max_min = np.where(mins[:, j] > max_min, mins[:, j], max_min)
        inv_scale = np.where(max_scale > 0, F(63) / np.where(max_scale > 0, max_scale, F(1)), F(0))
        inv_min = np.where(max_min > 0, F(63) / np.where(max_min > 0, max_min, F(1)), F(0))
        ls = np.minimum(63, nearest_int(inv_scale[:, None] * scales) & 0xFF).astype(np.uint8)
        lm = np.minimum(63, nearest_int(inv_min[:, None] * mins) & 0xFF).astype(np.uint8)
        blocks = np.zeros(nb, BLOCK_Q4_K)
        _pack(blocks, ls, lm)
        blocks["d"] = (max_scale / F(63)).astype(np.float16)
        blocks["dmin"] = (max_min / F(63)).astype(np.float16)
        for j in range(8):
            sc, m = _unpack(blocks["scales"], j)
            d = blocks["d"].astype(F) * sc.astype(F)
            dm = blocks["dmin"].astype(F) * m.astype(F)
            part = x[:, j, :]
            q = np.clip(nearest_int((part + dm[:, None]) / d[:, None]), 0, 15).astype(np.uint8)
            keep = d != 0
            quants[keep, SUB * j:SUB * (j + 1)] = q[keep]
        for c in range(QK_K // 64):
            blocks["qs"][:, 32 * c:32 * (c + 1)] = (quants[:, 64 * c:64 * c + 32]
                                                    | (quants[:, 64 * c + 32:64 * c + 64] << 4))
    return blocks
