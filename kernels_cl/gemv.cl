// gemv: y = W x in float32, W row-major (nrows x ncols). Twin of kernels_py/gemv.py.
// gemv: one work-group per row, local-memory tree (fixed pairwise order) over the partials.
// The sub-group variants are in gemv_subgroup.cl (devices without sub-groups build this one).
// Ids are long because the Python kernels' are int64.
#pragma OPENCL FP_CONTRACT OFF
#define MAX_WG 1024

// The Python kernels' `half` is spelled `half_`: `half` is a type name in OpenCL C.

// Sum scratch[0:wg] into scratch[0] in a fixed pairwise order (same as the Python twin).
inline void tree_reduce_sum(__local float* scratch, long lid, long wg)
{
    long active = wg;
    while (active > 1) {
        long half_ = (active + 1) / 2;
        if (lid < active - half_) {
            scratch[lid] = scratch[lid] + scratch[lid + half_];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        active = half_;
    }
}

__kernel void gemv(__global const float* w, __global const float* x, __global float* y,
                   int nrows, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float scratch[MAX_WG];
    long base = row * ncols;
    float acc = 0.0f;
    for (long c = lid; c < ncols; c += wg) {
        acc += w[base + c] * x[c];
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    if (lid == 0) {
        y[row] = scratch[0];
    }
}

