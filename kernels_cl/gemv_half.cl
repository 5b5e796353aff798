// gemv_half, gemv_vload_half: y = W x with half W, float32 x and y, a row per work-group.
// Twin of kernels_py/gemv_half.py. gemv_half reads W through half types and is compiled only
// where the device has cl_khr_fp16; gemv_vload_half reads it with vload_half (no fp16 needed),
// so this file builds everywhere. Every weight is converted to float before it is used and the
// local tree has a fixed order, so both are exact. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_khr_fp16
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif
#define MAX_WG 1024

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

#ifdef cl_khr_fp16
__kernel void gemv_half(__global const half* w, __global const float* x, __global float* y,
                        int nrows, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float scratch[MAX_WG];
    long base = row * ncols;
    float acc = 0.0f;
    for (long c = lid; c < ncols; c += wg) {
        acc += (float)w[base + c] * x[c];
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    if (lid == 0) {
        y[row] = scratch[0];
    }
}
#endif

__kernel void gemv_vload_half(__global const half* w, __global const float* x,
                              __global float* y, int nrows, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float scratch[MAX_WG];
    long base = row * ncols;
    float acc = 0.0f;
    for (long c = lid; c < ncols; c += wg) {
        acc += vload_half(base + c, w) * x[c];
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    if (lid == 0) {
        y[row] = scratch[0];
    }
}
