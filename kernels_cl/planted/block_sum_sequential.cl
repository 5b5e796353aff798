// PLANTED BUG (verifier tests): block_sum with the wrong reduction order. Work-item 0 adds the
// block left to right instead of the pairwise tree the simulator's kernel uses, so float
// rounding differs: the verifier must report out[g] for the first group g where the two
// orders round differently.
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
    if (lid == 0) {
        float total = 0.0f;
        for (long k = 0; k < wg; k++) {
            total = total + scratch[k];
        }
        out[get_group_id(0)] = total;
    }
}
