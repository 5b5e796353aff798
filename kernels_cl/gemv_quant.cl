// Quantized GEMV y = W x (W in Q4_0 / Q8_0 bytes) and the Q4_0 split-layout conversions.
// Twin of kernels_py/gemv_quant.py (helpers: kernels_py/gguf_blocks.py, kernels_py/common.py):
// a block adds d * sum(q_j * x_j) in element order, a work-item its blocks in order, a local
// tree the work-items in a fixed order, so the result is exact against the simulator.
// The sub-group variant is in gemv_quant_subgroup.cl. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define QK 32
#define Q4_0_BYTES (2 + QK / 2)
#define Q8_0_BYTES (2 + QK)
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

// The float value of the IEEE half whose little-endian bytes are lo, hi. One exit and the
// sign as a bit: Oclgrind 21.10's optimiser dropped the e == 0 branch of an early-return form
// for negative subnormals (it returned -2**-15 for 0x8000).
inline float half_to_float(uchar lo, uchar hi)
{
    uint h = (uint)lo | ((uint)hi << 8);
    uint sign = (h & 0x8000) << 16;
    uint e = (h >> 10) & 0x1F;
    uint m = h & 0x3FF;
    uint bits = ((e + 112) << 23) | (m << 13);
    if (e == 0x1F) {
        bits = 0x7F800000 | (m << 13);
    }
    if (e == 0) {
        bits = as_uint((float)m * as_float((uint)0x33800000));  // m * 2**-24, exact
    }
    return as_float(bits | sign);
}

// One Q4_0 block (quants at q[q_at..+16], half scale at d[d_at..+2]) dotted with x[x_at..+32].
inline float q4_0_dot(__global const uchar* q, long q_at, __global const uchar* d, long d_at,
                      __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK / 2; j++) {
        int byte = (int)q[q_at + j];
        sumq += (float)((byte & 15) - 8) * x[x_at + j];
        sumq += (float)((byte >> 4) - 8) * x[x_at + j + QK / 2];
    }
    return half_to_float(d[d_at], d[d_at + 1]) * sumq;
}

// One Q8_0 block at blocks[o..+34] dotted with x[x_at..+32].
inline float q8_0_dot(__global const uchar* blocks, long o, __global const float* x, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK; j++) {
        int q = (int)blocks[o + 2 + j];
        sumq += (float)(q >= 128 ? q - 256 : q) * x[x_at + j];
    }
    return half_to_float(blocks[o], blocks[o + 1]) * sumq;
}

// The work-group's sum of acc (a fixed-order local tree), in every work-item.
inline float group_total(float acc, long lid, long wg, __local float* scratch)
{
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    return scratch[0];
}

__kernel void gemv_q4_0(__global const uchar* blocks, __global const float* x,
                        __global float* y, int nrows, int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK;
    float acc = 0.0f;
    for (long b = lid; b < nb; b += wg) {
        long o = (row * nb + b) * Q4_0_BYTES;
        acc += q4_0_dot(blocks, o + 2, blocks, o, x, b * QK);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

__kernel void gemv_q8_0(__global const uchar* blocks, __global const float* x,
                        __global float* y, int nrows, int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK;
    float acc = 0.0f;
    for (long b = lid; b < nb; b += wg) {
        acc += q8_0_dot(blocks, (row * nb + b) * Q8_0_BYTES, x, b * QK);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

__kernel void gemv_q4_0_split(__global const uchar* q, __global const uchar* d,
                              __global const float* x, __global float* y, int nrows, int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK;
    float acc = 0.0f;
    for (long b = lid; b < nb; b += wg) {
        long k = row * nb + b;
        acc += q4_0_dot(q, k * (QK / 2), d, k * 2, x, b * QK);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

__kernel void gemv_q4_0_split_lanes(__global const uchar* q, __global const uchar* d,
                                    __global const float* x, __global float* y, int nrows,
                                    int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK;
    float acc = 0.0f;
    for (long k = lid; k < nb * (QK / 2); k += wg) {  // neighbouring work-items, neighbouring bytes
        long b = k / (QK / 2);
        long xo = b * QK + k % (QK / 2);
        int byte = (int)q[row * nb * (QK / 2) + k];
        float s = (float)((byte & 15) - 8) * x[xo] + (float)((byte >> 4) - 8) * x[xo + QK / 2];
        long dk = (row * nb + b) * 2;
        acc += half_to_float(d[dk], d[dk + 1]) * s;
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

__kernel void convert_block_q4_0(__global const uchar* blocks, __global uchar* q,
                                 __global uchar* d, int nblocks)
{
    long b = get_global_id(0);
    if (b < nblocks) {
        long o = b * Q4_0_BYTES;
        d[2 * b] = blocks[o];
        d[2 * b + 1] = blocks[o + 1];
        for (long j = 0; j < QK / 2; j++) {
            q[b * (QK / 2) + j] = blocks[o + 2 + j];
        }
    }
}

__kernel void restore_block_q4_0(__global const uchar* q, __global const uchar* d,
                                 __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    if (b < nblocks) {
        long o = b * Q4_0_BYTES;
        blocks[o] = d[2 * b];
        blocks[o + 1] = d[2 * b + 1];
        for (long j = 0; j < QK / 2; j++) {
            blocks[o + 2 + j] = q[b * (QK / 2) + j];
        }
    }
}
