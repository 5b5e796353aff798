// gemv_q4_0_split_subgroup, gemv_q8_0_split_subgroup: y = W x with W in the split Q4_0 / Q8_0
// layout (quants and half scales in two buffers), one sub-group per row. Twin of
// kernels_py/gemv_quant_split.py: lanes stride over the row's blocks, a shuffle-xor butterfly
// adds them in a fixed order, so the result is exact against the simulator and gives the
// interleaved sub-group kernels' bits (gemv_quant_subgroup.cl). Half scales through vload_half
// (no cl_khr_fp16 needed). Ids are long.
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
#define QK 32

// Split-layout Q4_0 block k (quants q[16k..+16], scale d[k]) dotted with x[x_at..+32].
inline float q4_0_split_dot(__global const uchar* q, __global const half* d, long k,
                            __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK / 2; j++) {
        int byte = (int)q[k * (QK / 2) + j];
        sumq += (float)((byte & 15) - 8) * x[x_at + j];
        sumq += (float)((byte >> 4) - 8) * x[x_at + j + QK / 2];
    }
    return vload_half(k, d) * sumq;
}

// Split-layout Q8_0 block k (quants q[32k..+32], scale d[k]) dotted with x[x_at..+32].
inline float q8_0_split_dot(__global const char* q, __global const half* d, long k,
                            __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK; j++) {
        sumq += (float)q[k * QK + j] * x[x_at + j];
    }
    return vload_half(k, d) * sumq;
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
__kernel void gemv_q4_0_split_subgroup(__global const uchar* q, __global const half* d,
                                       __global const float* x, __global float* y, int nrows,
                                       int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK;
        float acc = 0.0f;
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            acc += q4_0_split_dot(q, d, row * nb + b, x, b * QK);
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void gemv_q8_0_split_subgroup(__global const char* q, __global const half* d,
                                       __global const float* x, __global float* y, int nrows,
                                       int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK;
        float acc = 0.0f;
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            acc += q8_0_split_dot(q, d, row * nb + b, x, b * QK);
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}
