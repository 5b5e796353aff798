// gemv_vload_half, gemv_vload_half8: y = W x with half W read through vload_half /
// vload_half8 (no fp16 arithmetic needed), float32 x and y, a row per work-group. Twin of
// kernels_py/gemv_half.py (gemv_vload_half) and gemv_half8.py (gemv_vload_half8). No fp16
// pragma here: this file builds on devices without cl_khr_fp16 (PoCL, Oclgrind). Every
// weight is converted to float before it is used and every sum has a fixed order, so both
// are exact. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF
#define MAX_WG 1024
#define VW 8

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

// The eight components of v added pairwise in a fixed order.
inline float fold8(float8 v)
{
    return ((v.s0 + v.s1) + (v.s2 + v.s3)) + ((v.s4 + v.s5) + (v.s6 + v.s7));
}

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

__kernel void gemv_vload_half8(__global const half* w, __global const float* x,
                               __global float* y, int nrows, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float scratch[MAX_WG];
    long base = row * ncols;
    long c_vec = ncols - ncols % VW;
    float8 acc8 = (float8)(0.0f);
    for (long c = lid * VW; c < c_vec; c += wg * VW) {
        acc8 += vload_half8(0, w + base + c) * vload8(0, x + c);
    }
    float acc = fold8(acc8);
    for (long c = c_vec + lid; c < ncols; c += wg) {
        acc += vload_half(base + c, w) * x[c];
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    if (lid == 0) {
        y[row] = scratch[0];
    }
}
