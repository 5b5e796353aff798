// softmax_ggml_4: softmax_ggml with float4 loads and arithmetic (llama.cpp's
// kernel_soft_max_4), one sub-group per row. Twin of kernels_py/softmax_ggml_4.py. Each lane
// takes a float4 of the row per step (vload4: element alignment is enough, so any ncols),
// folds its float4 maximum and sum into one float, and adds the ncols % 4 last columns one at
// a time (llama.cpp's kernel drops them). The order of the float sum inside
// sub_group_reduce_add is the device's, hence the ulp policy. Ids are long.
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 32
#endif
#define VW 4

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void softmax_ggml_4(__global const float* x, __global const float* mask,
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
        long n4 = ncols / VW;
        long tail = n4 * VW;

        float4 lmax4 = (float4)(-INFINITY);
        for (long i = lane; i < n4; i += width) {
            float4 bias = (float4)(0.0f);
            if (has_mask) {
                bias = slope * vload4(0, mask + mrow + VW * i);
            }
            lmax4 = fmax(lmax4, vload4(0, x + start + VW * i) * scale + bias);
        }
        float lmax = fmax(fmax(lmax4.s0, lmax4.s1), fmax(lmax4.s2, lmax4.s3));
        for (long c = tail + lane; c < ncols; c += width) {
            lmax = fmax(lmax, x[start + c] * scale + (has_mask ? slope * mask[mrow + c] : 0.0f));
        }
        float row_max = sub_group_reduce_max(lmax);

        float4 lsum4 = (float4)(0.0f);
        for (long i = lane; i < n4; i += width) {
            float4 bias = (float4)(0.0f);
            if (has_mask) {
                bias = slope * vload4(0, mask + mrow + VW * i);
            }
            float4 e4 = exp((vload4(0, x + start + VW * i) * scale + bias) - row_max);
            lsum4 += e4;
            vstore4(e4, 0, y + start + VW * i);
        }
        float lsum = lsum4.s0 + lsum4.s1 + lsum4.s2 + lsum4.s3;
        for (long c = tail + lane; c < ncols; c += width) {
            float e = exp((x[start + c] * scale + (has_mask ? slope * mask[mrow + c] : 0.0f))
                          - row_max);
            lsum += e;
            y[start + c] = e;
        }
        float total = sub_group_reduce_add(lsum);

        for (long i = lane; i < n4; i += width) {
            vstore4(vload4(0, y + start + VW * i) / total, 0, y + start + VW * i);
        }
        for (long c = tail + lane; c < ncols; c += width) {
            y[start + c] = y[start + c] / total;
        }
    }
}
