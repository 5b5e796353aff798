// softmax_subgroup: row softmax, one sub-group per row (ggml's kernel_soft_max shape).
// Twin of kernels_py/softmax_subgroup.py: a work-group holds get_num_sub_groups() rows; each
// sub-group strides over its row for the maximum (sub_group_reduce_max), writes exp(x - max)
// while summing it (sub_group_reduce_add), then divides in place. The order of the float sum
// inside sub_group_reduce_add is the device's (the simulator folds in lane order), hence the
// spec's ulp policy. Ids are long because the Python kernel's are int64.
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 32
#endif

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void softmax_subgroup(__global const float* x, __global float* y, int nrows, int ncols)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    long width = get_sub_group_size();
    if (row < nrows) {
        long base = row * ncols;
        float lmax = -INFINITY;
        for (long c = lane; c < ncols; c += width) {
            lmax = fmax(lmax, x[base + c]);
        }
        float row_max = sub_group_reduce_max(lmax);

        float lsum = 0.0f;
        for (long c = lane; c < ncols; c += width) {
            float e = exp(x[base + c] - row_max);
            lsum += e;
            y[base + c] = e;
        }
        float total = sub_group_reduce_add(lsum);

        for (long c = lane; c < ncols; c += width) {
            y[base + c] = y[base + c] / total;
        }
    }
}
