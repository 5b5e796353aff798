// softmax_ggml: row softmax with ggml's options (scale, optional mask, ALiBi slope), one
// sub-group per row. Twin of kernels_py/softmax_ggml.py (llama.cpp's kernel_soft_max shape).
// The mask is optional through has_mask plus a dummy buffer (the Python language has no null
// pointers); the slope is base**power by repeated multiplication, the same bits everywhere.
// The order of the float sum inside sub_group_reduce_add is the device's, hence the ulp
// policy. Ids are long because the Python kernel's are int64.
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
__kernel void softmax_ggml(__global const float* x, __global const float* mask,
                           __global float* y, int nrows, int ncols, int rows_per_head,
                           int has_mask, float scale, float max_bias, float m0, float m1,
                           int n_head_log2)
{
    long row = (long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id();
    long lane = get_sub_group_local_id();
    long width = get_sub_group_size();
    if (row < nrows) {
        long head = row / rows_per_head;
        long mrow = (row % rows_per_head) * ncols;
        float slope = 1.0f;
        if (max_bias > 0.0f) {
            float base = head < n_head_log2 ? m0 : m1;
            long power = head < n_head_log2 ? head + 1 : 2 * (head - n_head_log2) + 1;
            for (long i = 0; i < power; i++) {
                slope = slope * base;
            }
        }
        long start = row * ncols;
        float lmax = -INFINITY;
        for (long c = lane; c < ncols; c += width) {
            lmax = fmax(lmax, x[start + c] * scale + (has_mask ? slope * mask[mrow + c] : 0.0f));
        }
        float row_max = sub_group_reduce_max(lmax);

        float lsum = 0.0f;
        for (long c = lane; c < ncols; c += width) {
            float e = exp((x[start + c] * scale + (has_mask ? slope * mask[mrow + c] : 0.0f))
                          - row_max);
            lsum += e;
            y[start + c] = e;
        }
        float total = sub_group_reduce_add(lsum);

        for (long c = lane; c < ncols; c += width) {
            y[start + c] = y[start + c] / total;
        }
    }
}
