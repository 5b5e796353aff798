// gemv_q4_k_subgroup: y = W x with W in Q4_K struct blocks, one sub-group per row, a lane per
// 32-value sub-block. Twin of kernels_py/gemv_quant_k.py: a sub-block adds
// (d*sc)*sum(q*x) - (dmin*m)*sum(x) in element order, a lane its sub-blocks in order, a
// shuffle-xor butterfly the lanes in a fixed order, so the result is exact against the
// simulator. Half scales through vload_half (no cl_khr_fp16). Ids are long.
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 16
#endif
#define QK_K 256
#define SUB 32
#define SUBS (QK_K / SUB)

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

// The low (high false) or high four bits of a quant byte.
inline int nibble(int byte, int high)
{
    return high ? (byte >> 4) : (byte & 15);
}

// Six-bit scale j (0..7) of Q4_K block ib (ggml's get_scale_min_k4, its d).
inline int scale_k4(__global const block_q4_K* x, long ib, long j)
{
    if (j < 4) {
        return (int)x[ib].scales[j] & 63;
    }
    return ((int)x[ib].scales[j + 4] & 15) | (((int)x[ib].scales[j - 4] >> 6) << 4);
}

// Six-bit min j (0..7) of Q4_K block ib (ggml's get_scale_min_k4, its m).
inline int min_k4(__global const block_q4_K* x, long ib, long j)
{
    if (j < 4) {
        return (int)x[ib].scales[j + 4] & 63;
    }
    return ((int)x[ib].scales[j + 4] >> 4) | (((int)x[ib].scales[j] >> 6) << 4);
}

// Sub-block j of Q4_K block w[ib] dotted with x[x_at..+32], each x value loaded once for
// both sums. The sums are volatile: the Intel CPU runtime vectorised (reassociated) this loop
// despite FP_CONTRACT OFF (up to 24576 ulp apart at 4096 x 4096, measured), as it did
// gguf_q4_k.cl's sub-block sums.
inline float q4_k_sub_dot(__global const block_q4_K* w, long ib, long j,
                          __global const float* x, long x_at)
{
    volatile float sumq = 0.0f;
    volatile float sumx = 0.0f;
    for (long k = 0; k < SUB; k++) {
        int q = nibble((int)w[ib].qs[SUB * (j / 2) + k], j % 2 == 1);
        float xk = x[x_at + k];
        sumq += (float)q * xk;
        sumx += xk;
    }
    float scale = vload_half(0, &w[ib].d) * (float)scale_k4(w, ib, j);
    float offset = vload_half(0, &w[ib].dmin) * (float)min_k4(w, ib, j);
    return scale * sumq - offset * sumx;
}

// The sub-group's sum of v in every lane, in a fixed order (see kernels_py/common.py).
inline float subgroup_sum_butterfly(float v)
{
    long mask = get_sub_group_size() / 2;
    while (mask > 0) {
        v = v + sub_group_shuffle_xor(v, (uint)mask);
        mask = mask / 2;
    }
    return v;
}

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void gemv_q4_k_subgroup(__global const block_q4_K* blocks, __global const float* x,
                                 __global float* y, int nrows, int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK_K;
        float acc = 0.0f;
        for (long t = lane; t < nb * SUBS; t += (long)get_sub_group_size()) {
            acc += q4_k_sub_dot(blocks, row * nb + t / SUBS, t % SUBS, x, t * SUB);
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}
