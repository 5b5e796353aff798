// gemv_q4_0_subgroup, gemv_q8_0_subgroup: y = W x with W in Q4_0 / Q8_0 struct blocks, one
// sub-group per row. Twin of kernels_py/gemv_quant.py: lanes stride over the row's blocks, a
// shuffle-xor butterfly adds them in a fixed order, so the result is exact against the
// simulator. Half scales through vload_half (no cl_khr_fp16 needed). Ids are long.
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

typedef struct __attribute__((packed)) {
    half d;
    char qs[32];
} block_q8_0;
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0: size");
_Static_assert(__builtin_offsetof(block_q8_0, d) == 0, "block_q8_0: offset of d");
_Static_assert(__builtin_offsetof(block_q8_0, qs) == 2, "block_q8_0: offset of qs");

typedef struct __attribute__((packed)) {
    half d;
    uchar qs[16];
} block_q4_0;
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0: size");
_Static_assert(__builtin_offsetof(block_q4_0, d) == 0, "block_q4_0: offset of d");
_Static_assert(__builtin_offsetof(block_q4_0, qs) == 2, "block_q4_0: offset of qs");

// Q4_0 block w[ib] dotted with x[x_at..+32].
inline float q4_0_dot(__global const block_q4_0* w, long ib, __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK / 2; j++) {
        int byte = (int)w[ib].qs[j];
        sumq += (float)((byte & 15) - 8) * x[x_at + j];
        sumq += (float)((byte >> 4) - 8) * x[x_at + j + QK / 2];
    }
    return vload_half(0, &w[ib].d) * sumq;
}

// Q8_0 block w[ib] dotted with x[x_at..+32].
inline float q8_0_dot(__global const block_q8_0* w, long ib, __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK; j++) {
        sumq += (float)w[ib].qs[j] * x[x_at + j];
    }
    return vload_half(0, &w[ib].d) * sumq;
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
__kernel void gemv_q4_0_subgroup(__global const block_q4_0* blocks, __global const float* x,
                                 __global float* y, int nrows, int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK;
        float acc = 0.0f;
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            acc += q4_0_dot(blocks, row * nb + b, x, b * QK);
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
__kernel void gemv_q8_0_subgroup(__global const block_q8_0* blocks, __global const float* x,
                                 __global float* y, int nrows, int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK;
        float acc = 0.0f;
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            acc += q8_0_dot(blocks, row * nb + b, x, b * QK);
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}
