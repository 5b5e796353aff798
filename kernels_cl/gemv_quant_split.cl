// gemv_q8_0_split and the Q8_0 split-layout conversions. Twin of kernels_py/gemv_quant_split.py
// (helpers: kernels_py/common.py, kernels_py/gemv_quant.py): a block adds d * sum(q_j * x_j)
// in element order, a work-item its blocks in order, a local tree the work-items in a fixed
// order, so the result is exact against the simulator and gives gemv_q8_0's bits. Half scales
// are read with vload_half and copied as their 16 bits through ushort pointers (a copy through
// float would change a NaN's payload), so no kernel needs cl_khr_fp16. The sub-group forms are
// in gemv_quant_split_subgroup.cl. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define QK 32
#define MAX_WG 1024

typedef struct __attribute__((packed)) {
    half d;
    char qs[32];
} block_q8_0;
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0: size");
_Static_assert(__builtin_offsetof(block_q8_0, d) == 0, "block_q8_0: offset of d");
_Static_assert(__builtin_offsetof(block_q8_0, qs) == 2, "block_q8_0: offset of qs");

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

// The work-group's sum of acc (a fixed-order local tree), in every work-item.
inline float group_total(float acc, long lid, long wg, __local float* scratch)
{
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    return scratch[0];
}

// Split-layout Q8_0 block k (quants q[32k..+32], scale d[k]) dotted with x[x_at..+32].
inline float q8_0_split_dot(__global const char* q, __global const half* d, long k,
                            __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK; j++) {
        sumq += (float)q[k * QK + j] * x[x_at + j];
    }
    return vload_half(k, d) * sumq;
}

__kernel void gemv_q8_0_split(__global const char* q, __global const half* d,
                              __global const float* x, __global float* y, int nrows, int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK;
    float acc = 0.0f;
    for (long b = lid; b < nb; b += wg) {
        acc += q8_0_split_dot(q, d, row * nb + b, x, b * QK);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

__kernel void convert_block_q8_0(__global const block_q8_0* blocks, __global char* q,
                                 __global half* d, int nblocks)
{
    long b = get_global_id(0);
    if (b < nblocks) {
        ((__global ushort*)d)[b] = *(__global const ushort*)&blocks[b].d;
        for (long j = 0; j < QK; j++) {
            q[b * QK + j] = blocks[b].qs[j];
        }
    }
}

__kernel void restore_block_q8_0(__global const char* q, __global const half* d,
                                 __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    __global block_q8_0* y = (__global block_q8_0*)blocks;
    if (b < nblocks) {
        *(__global ushort*)&y[b].d = ((__global const ushort*)d)[b];
        for (long j = 0; j < QK; j++) {
            y[b].qs[j] = q[b * QK + j];
        }
    }
}
