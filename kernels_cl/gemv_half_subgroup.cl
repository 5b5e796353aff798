// gemv_half_subgroup, gemv_half_nrows: y = W x with half W read through half types
// (cl_khr_fp16; compiled only where the device has it), float32 x and y. Twin of
// kernels_py/gemv_half.py. gemv_half_subgroup: a row per sub-group; gemv_half_nrows: N_DST
// rows per sub-group, rows past nrows never read (as gemv_nrows in gemv_subgroup.cl). Lanes
// are added by a shuffle-xor butterfly (fixed order, so exact). Their vload_half twins, which
// need no fp16, are in gemv_half_vload_subgroup.cl. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 16
#endif
#define N_DST 4

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

#ifdef cl_khr_fp16
#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void gemv_half_subgroup(__global const half* w, __global const float* x,
                                 __global float* y, int nrows, int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    long width = get_sub_group_size();
    if (row < nrows) {
        long base = row * ncols;
        float acc = 0.0f;
        for (long c = lane; c < ncols; c += width) {
            acc += (float)w[base + c] * x[c];
        }
        float total = subgroup_sum_butterfly(acc);
        if (lane == 0) {
            y[row] = total;
        }
    }
}
#endif

#ifdef cl_khr_fp16
#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void gemv_half_nrows(__global const half* w, __global const float* x,
                              __global float* y, int nrows, int ncols)
{
    long first = ((long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST;
    long lane = get_sub_group_local_id();
    long width = get_sub_group_size();
    if (first < nrows) {
        float acc[N_DST];
        for (long z = 0; z < N_DST; z++) {
            acc[z] = 0.0f;
        }
        for (long c = lane; c < ncols; c += width) {
            float xc = x[c];
            for (long r = 0; r < N_DST; r++) {
                if (first + r < nrows) {
                    acc[r] += (float)w[(first + r) * ncols + c] * xc;
                }
            }
        }
        long k = 0;
        while (k < N_DST) {
            float total = subgroup_sum_butterfly(acc[k]);
            if (lane == 0 && first + k < nrows) {
                y[first + k] = total;
            }
            k += 1;
        }
    }
}
#endif
