// softmax over rows: one work-group per row, numerically stable three-pass form.
// Twin of kernels_py/softmax.py (and the tree reductions of kernels_py/common.py): pass 1 finds
// the row maximum, pass 2 sums exp(x - max), pass 3 writes exp(x - max) / sum; both reductions
// are local-memory trees in the same fixed pairwise order. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define MAX_WG 1024

// The Python kernels' `half` is spelled `half_`: `half` is a type name in OpenCL C.

// fmax over scratch[0:wg] into scratch[0]; works for any wg, not only powers of two.
inline void tree_reduce_max(__local float* scratch, long lid, long wg)
{
    long active = wg;
    while (active > 1) {
        long half_ = (active + 1) / 2;
        if (lid < active - half_) {
            scratch[lid] = fmax(scratch[lid], scratch[lid + half_]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        active = half_;
    }
}

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

__kernel void softmax(__global const float* x, __global float* y, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long base = row * ncols;
    __local float scratch[MAX_WG];

    float row_max = -INFINITY;
    for (long c = lid; c < ncols; c += wg) {
        row_max = fmax(row_max, x[base + c]);
    }
    scratch[lid] = row_max;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_max(scratch, lid, wg);
    row_max = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);

    float total = 0.0f;
    for (long c = lid; c < ncols; c += wg) {
        total += exp(x[base + c] - row_max);
    }
    scratch[lid] = total;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    total = scratch[0];

    for (long c = lid; c < ncols; c += wg) {
        y[base + c] = exp(x[base + c] - row_max) / total;
    }
}
