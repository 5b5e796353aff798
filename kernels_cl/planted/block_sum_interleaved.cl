// PLANTED BUG (verifier tests): block_sum with the wrong reduction order. It pairs neighbours
// (interleaved addressing: lid with lid + stride, stride 1, 2, 4, ...) where the simulator's
// kernel folds halves (lid with lid + half, kernels_py/common.py tree_reduce_sum), so float
// rounding differs: the verifier must report out[g] for the first group g where the two
// orders round differently.
// (A left-to-right loop by work-item 0 would be a wrong order too, but the Intel CPU runtime
// vectorises such a loop over __local memory 8 lanes wide, so its order is not the source's.)
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
    for (long stride = 1; stride < wg; stride *= 2) {
        if (lid % (2 * stride) == 0 && lid + stride < wg) {
            scratch[lid] = scratch[lid] + scratch[lid + stride];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        out[get_group_id(0)] = scratch[0];
    }
}
