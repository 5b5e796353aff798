// matmul_subgroup: C = A B in float32, one sub-group per element of C.
// Twin of kernels_py/matmul.py's matmul_subgroup: the lanes split K (consecutive k in
// consecutive lanes) and a shuffle-xor butterfly adds their partial dot products in a fixed
// order, so the result is exact against the simulator. Ids are long (int64 in Python).
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
__kernel void matmul_subgroup(__global const float* a, __global const float* b,
                              __global float* c, int M, int N, int K)
{
    long out = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    if (out < (long)M * N) {
        long row = out / N;
        long col = out % N;
        float acc = 0.0f;
        for (long k = lane; k < K; k += (long)get_sub_group_size()) {
            acc += a[row * K + k] * b[k * N + col];
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            c[out] = total;
        }
    }
}
