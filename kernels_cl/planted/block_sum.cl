// Baseline for the planted reduction-order bug (verifier tests): each work-group sums its
// block of x into out[group] with the fixed pairwise tree of kernels_py/common.py
// (tree_reduce_sum). Twin of the `block_sum` kernel in tests/device/test_verifier.py.
#pragma OPENCL FP_CONTRACT OFF

#define MAX_WG 256

__kernel void block_sum(__global const float* x, __global float* out, int n)
{
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long i = get_global_id(0);
    __local float scratch[MAX_WG];
    scratch[lid] = i < n ? x[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    long active = wg;
    while (active > 1) {
        long half_ = (active + 1) / 2;
        if (lid < active - half_) {
            scratch[lid] = scratch[lid] + scratch[lid + half_];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        active = half_;
    }
    if (lid == 0) {
        out[get_group_id(0)] = scratch[0];
    }
}
