// gemv_q4_k_split_subgroup: y = W x with W in the split Q4_K layout (quants, packed scales,
// d and dmin in four buffers), one sub-group per row, a lane per 32-value sub-block. Twin of
// kernels_py/gemv_quant_k_split.py: the sums of gemv_quant_k_split.cl, a shuffle-xor
// butterfly the lanes in a fixed order, so the result is exact against the simulator. Half
// scales through vload_half (no cl_khr_fp16). Ids are long.
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
#define QS (QK_K / 2)
#define K_SCALE_SIZE 12

// The low (high false) or high four bits of a quant byte.
inline int nibble(int byte, int high)
{
    return high ? (byte >> 4) : (byte & 15);
}

// Six-bit scale j (0..7) of the packed scales s[at..+12] (ggml's get_scale_min_k4, its d).
inline int scale_k4_split(__global const uchar* s, long at, long j)
{
    if (j < 4) {
        return (int)s[at + j] & 63;
    }
    return ((int)s[at + j + 4] & 15) | (((int)s[at + j - 4] >> 6) << 4);
}

// Six-bit min j (0..7) of the packed scales s[at..+12] (ggml's get_scale_min_k4, its m).
inline int min_k4_split(__global const uchar* s, long at, long j)
{
    if (j < 4) {
        return (int)s[at + j + 4] & 63;
    }
    return ((int)s[at + j + 4] >> 4) | (((int)s[at + j] >> 6) << 4);
}

// Sub-block j of split super-block k dotted with x[x_at..+32], each x value loaded once for
// both sums. The sums are volatile for the reason given in gemv_quant_k.cl (the Intel CPU
// runtime reassociates the loop otherwise).
inline float q4_k_split_sub_dot(__global const uchar* q, __global const uchar* s,
                                __global const half* d, __global const half* dm, long k,
                                long j, __global const float* x, long x_at)
{
    volatile float sumq = 0.0f;
    volatile float sumx = 0.0f;
    for (long i = 0; i < SUB; i++) {
        int v = nibble((int)q[k * QS + SUB * (j / 2) + i], j % 2 == 1);
        float xi = x[x_at + i];
        sumq += (float)v * xi;
        sumx += xi;
    }
    float scale = vload_half(k, d) * (float)scale_k4_split(s, k * K_SCALE_SIZE, j);
    float offset = vload_half(k, dm) * (float)min_k4_split(s, k * K_SCALE_SIZE, j);
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
__kernel void gemv_q4_k_split_subgroup(__global const uchar* q, __global const uchar* s,
                                       __global const half* d, __global const half* dm,
                                       __global const float* x, __global float* y, int nrows,
                                       int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK_K;
        float acc = 0.0f;
        for (long t = lane; t < nb * SUBS; t += (long)get_sub_group_size()) {
            acc += q4_k_split_sub_dot(q, s, d, dm, row * nb + t / SUBS, t % SUBS, x, t * SUB);
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}
