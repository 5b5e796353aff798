// gemv_q4_0_subgroup: y = W x with W in Q4_0 bytes, one sub-group per row. Twin of
// kernels_py/gemv_quant.py: lanes stride over the row's blocks, a shuffle-xor butterfly adds
// them in a fixed order, so the result is exact against the simulator. Ids are long.
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
#define Q4_0_BYTES (2 + QK / 2)
#define Q8_0_BYTES (2 + QK)
#define MAX_WG 1024

// The float value of the IEEE half whose little-endian bytes are lo, hi. One exit and the
// sign as a bit: Oclgrind 21.10's optimiser dropped the e == 0 branch of an early-return form
// for negative subnormals (it returned -2**-15 for 0x8000).
inline float half_to_float(uchar lo, uchar hi)
{
    uint h = (uint)lo | ((uint)hi << 8);
    uint sign = (h & 0x8000) << 16;
    uint e = (h >> 10) & 0x1F;
    uint m = h & 0x3FF;
    uint bits = ((e + 112) << 23) | (m << 13);
    if (e == 0x1F) {
        bits = 0x7F800000 | (m << 13);
    }
    if (e == 0) {
        bits = as_uint((float)m * as_float((uint)0x33800000));  // m * 2**-24, exact
    }
    return as_float(bits | sign);
}

// One Q4_0 block (quants at q[q_at..+16], half scale at d[d_at..+2]) dotted with x[x_at..+32].
inline float q4_0_dot(__global const uchar* q, long q_at, __global const uchar* d, long d_at,
                      __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK / 2; j++) {
        int byte = (int)q[q_at + j];
        sumq += (float)((byte & 15) - 8) * x[x_at + j];
        sumq += (float)((byte >> 4) - 8) * x[x_at + j + QK / 2];
    }
    return half_to_float(d[d_at], d[d_at + 1]) * sumq;
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
__kernel void gemv_q4_0_subgroup(__global const uchar* blocks, __global const float* x,
                                 __global float* y, int nrows, int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (row < nrows) {
        long nb = ncols / QK;
        float acc = 0.0f;
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            long o = (row * nb + b) * Q4_0_BYTES;
            acc += q4_0_dot(blocks, o + 2, blocks, o, x, b * QK);
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}
