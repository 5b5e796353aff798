// GGUF Q4_K quantizer, ggml's reference algorithm (quantize_row_q4_K_ref with
// make_qkx2_quants), one work-item per 256-value super-block. Twin of kernels_py/gguf_q4_k.py;
// the typedef is clsim.cstruct's output for kernels_py/gguf_structs.py's BLOCK_Q4_K. Half
// fields are read and written with vload_half / vstore_half (round to nearest even), so no
// cl_khr_fp16 is needed. Ids are long because the Python kernels' are int64.
#pragma OPENCL FP_CONTRACT OFF

#define QK_K 256
#define SUB 32
#define NSTEP 20

// Division and square root correctly rounded, as the simulator's (ggml's reference runs on a
// CPU's IEEE float): through double where the device has it (the double result rounded to
// float is the correctly rounded float, 53 >= 2 * 24 + 2 bits), else the device's own, exact
// only where it builds with -cl-fp32-correctly-rounded-divide-sqrt (the Intel CPU runtime's is
// not). The sums over a sub-block are volatile: the Intel CPU runtime reassociates (vectorises)
// a per-work-item float loop even with FP_CONTRACT OFF, which changed the least-squares fit of
// a constant sub-block (measured: 54.084557 everywhere gave another d).
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define DIV(a, b) ((float)((double)(a) / (double)(b)))
#define SQRT(a) ((float)sqrt((double)(a)))
#else
#define DIV(a, b) ((a) / (b))
#define SQRT(a) sqrt(a)
#endif

typedef struct __attribute__((packed)) {
    half d;
    half dmin;
    uchar scales[12];
    uchar qs[128];
} block_q4_K;
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K: size");
_Static_assert(__builtin_offsetof(block_q4_K, d) == 0, "block_q4_K: offset of d");
_Static_assert(__builtin_offsetof(block_q4_K, dmin) == 2, "block_q4_K: offset of dmin");
_Static_assert(__builtin_offsetof(block_q4_K, scales) == 4, "block_q4_K: offset of scales");
_Static_assert(__builtin_offsetof(block_q4_K, qs) == 16, "block_q4_K: offset of qs");

// ggml's nearest_int: the low mantissa bits of f + 1.5 * 2**23.
inline int nearest_int(float f)
{
    return (as_int(f + 12582912.0f) & 0x007FFFFF) - 0x00400000;
}

inline int clamp_q(int v, int top)
{
    return max(0, min(top, v));
}

// ggml's weights for one sub-block: av_x + |x|, av_x the root mean square.
inline void sub_block_weights(__global const float* x, long at, float* weights)
{
    volatile float sum_x2 = 0.0f;
    for (int k = 0; k < SUB; k++) {
        sum_x2 += x[at + k] * x[at + k];
    }
    float av_x = SQRT(DIV(sum_x2, 32.0f));
    for (int k = 0; k < SUB; k++) {
        weights[k] = av_x + fabs(x[at + k]);
    }
}

// sum(w * (scale * q + offset - x)**2) over one sub-block, in element order.
inline float weighted_error(__global const float* x, long at, const float* weights,
                            const uchar* quants, float scale, float offset)
{
    volatile float err = 0.0f;
    for (int k = 0; k < SUB; k++) {
        float diff = scale * (float)quants[k] + offset - x[at + k];
        err += weights[k] * (diff * diff);
    }
    return err;
}

inline void round_to_grid(__global const float* x, long at, float lo, float iscale,
                          uchar* quants)
{
    for (int k = 0; k < SUB; k++) {
        quants[k] = (uchar)clamp_q(nearest_int(iscale * (x[at + k] - lo)), 15);
    }
}

// ggml's make_qkx2_quants(32, 15, ..., rmin -1, rdelta 0.1, nstep 20, use_mad false): the
// sub-block's quants into quants, -min into *the_min; returns the scale.
float make_qkx2_quants(__global const float* x, long at, const float* weights, uchar* quants,
                       uchar* laux, float* the_min)
{
    float lo = x[at];
    float hi = x[at];
    volatile float sum_w = weights[0];
    volatile float sum_x = sum_w * x[at];
    for (int k = 1; k < SUB; k++) {
        lo = x[at + k] < lo ? x[at + k] : lo;
        hi = x[at + k] > hi ? x[at + k] : hi;
        sum_w += weights[k];
        sum_x += weights[k] * x[at + k];
    }
    lo = lo > 0.0f ? 0.0f : lo;
    if (hi == lo) {
        for (int k = 0; k < SUB; k++) {
            quants[k] = 0;
        }
        *the_min = -lo;
        return 0.0f;
    }
    float iscale = DIV(15.0f, hi - lo);
    float scale = DIV(1.0f, iscale);
    round_to_grid(x, at, lo, iscale, quants);
    float best = weighted_error(x, at, weights, quants, scale, lo);
    for (int step = 0; step < NSTEP + 1; step++) {
        iscale = DIV(-1.0f + 0.1f * (float)step + 15.0f, hi - lo);
        round_to_grid(x, at, lo, iscale, laux);
        volatile float sum_l = 0.0f;
        volatile float sum_l2 = 0.0f;
        volatile float sum_xl = 0.0f;
        for (int k = 0; k < SUB; k++) {
            float wl = weights[k] * (float)laux[k];
            sum_l += wl;
            sum_l2 += wl * (float)laux[k];
            sum_xl += wl * x[at + k];
        }
        float det = sum_w * sum_l2 - sum_l * sum_l;
        if (det > 0.0f) {
            float this_scale = DIV(sum_w * sum_xl - sum_x * sum_l, det);
            float this_min = DIV(sum_l2 * sum_x - sum_l * sum_xl, det);
            if (this_min > 0.0f) {
                this_min = 0.0f;
                this_scale = DIV(sum_xl, sum_l2);
            }
            float err = weighted_error(x, at, weights, laux, this_scale, this_min);
            if (err < best) {
                for (int k = 0; k < SUB; k++) {
                    quants[k] = laux[k];
                }
                best = err;
                scale = this_scale;
                lo = this_min;
            }
        }
    }
    *the_min = -lo;
    return scale;
}

// Six-bit scale ls and min lm of sub-block j into scales[12] (get_scale_min_k4's inverse);
// sub-blocks 0..3 come first, so 4..7 can OR their top bits in.
inline void pack_scale_min(__global block_q4_K* y, long ib, int j, int ls, int lm)
{
    if (j < 4) {
        y[ib].scales[j] = (uchar)ls;
        y[ib].scales[j + 4] = (uchar)lm;
    } else {
        y[ib].scales[j + 4] = (uchar)((ls & 15) | ((lm & 15) << 4));
        y[ib].scales[j - 4] = (uchar)((int)y[ib].scales[j - 4] | ((ls >> 4) << 6));
        y[ib].scales[j] = (uchar)((int)y[ib].scales[j] | ((lm >> 4) << 6));
    }
}

// Step 3: every value again with the stored scale and min of its sub-block (six_bit holds the
// eight six-bit scales, then the eight mins, as packed: ggml unpacks them again).
inline void requantize(__global const float* x, long base, __global block_q4_K* y, long ib,
                       const int* six_bit, uchar* quants)
{
    for (int j = 0; j < QK_K / SUB; j++) {
        float d = vload_half(0, &y[ib].d) * (float)six_bit[j];
        if (d != 0.0f) {
            float dm = vload_half(0, &y[ib].dmin) * (float)six_bit[8 + j];
            for (int k = 0; k < SUB; k++) {
                int q = nearest_int(DIV(x[base + SUB * j + k] + dm, d));
                quants[SUB * j + k] = (uchar)clamp_q(q, 15);
            }
        }
    }
}

__kernel void quantize_q4_k(__global const float* x, __global uchar* out, int nblocks)
{
    long ib = get_global_id(0);
    __global block_q4_K* y = (__global block_q4_K*)out;
    if (ib < nblocks) {
        long base = ib * QK_K;
        uchar quants[QK_K];
        uchar laux[SUB];
        float weights[SUB];
        float scales[QK_K / SUB];
        float mins[QK_K / SUB];
        int six_bit[2 * (QK_K / SUB)];
        float max_scale = 0.0f;
        float max_min = 0.0f;
        for (int j = 0; j < QK_K / SUB; j++) {
            sub_block_weights(x, base + SUB * j, weights);
            scales[j] = make_qkx2_quants(x, base + SUB * j, weights, quants + SUB * j, laux,
                                         &mins[j]);
            max_scale = scales[j] > max_scale ? scales[j] : max_scale;
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }
        float inv_scale = max_scale > 0.0f ? DIV(63.0f, max_scale) : 0.0f;
        float inv_min = max_min > 0.0f ? DIV(63.0f, max_min) : 0.0f;
        for (int j = 0; j < QK_K / SUB; j++) {
            int ls = min(63, nearest_int(inv_scale * scales[j]) & 0xFF);  // ggml's uint8_t
            int lm = min(63, nearest_int(inv_min * mins[j]) & 0xFF);
            pack_scale_min(y, ib, j, ls, lm);
            six_bit[j] = ls;
            six_bit[8 + j] = lm;
        }
        vstore_half(DIV(max_scale, 63.0f), 0, &y[ib].d);
        vstore_half(DIV(max_min, 63.0f), 0, &y[ib].dmin);
        requantize(x, base, y, ib, six_bit, quants);
        for (int c = 0; c < QK_K / 64; c++) {  // 64 values share 32 bytes: low, high nibble
            for (int k = 0; k < 32; k++) {
                int lo = (int)quants[64 * c + k];
                y[ib].qs[32 * c + k] = (uchar)(lo | ((int)quants[64 * c + k + 32] << 4));
            }
        }
    }
}
