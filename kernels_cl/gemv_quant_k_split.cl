// gemv_q4_k_split, gemv_q4_k_split_lanes, convert_block_q4_k, restore_block_q4_k: Q4_K on
// the split layout (quants, packed scales, d and dmin in four buffers, as llama.cpp's
// kernel_convert_block_q4_K makes them). Twin of kernels_py/gemv_quant_k_split.py. In
// gemv_q4_k_split a sub-block adds (d*sc)*sum(q*x) - (dm*m)*sum(x) in element order, a
// work-item its sub-blocks in order; in gemv_q4_k_split_lanes work-item k takes quant byte k
// of the row; a local tree adds the work-items in a fixed order, so both are exact against
// the simulator. Halves are read with vload_half and copied as their 16 bits through ushort
// pointers (a copy through float would change a NaN's payload), so nothing needs
// cl_khr_fp16. The sub-group variant is in gemv_quant_k_split_subgroup.cl. Ids are long
// (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define QK_K 256
#define SUB 32
#define SUBS (QK_K / SUB)
#define QS (QK_K / 2)
#define K_SCALE_SIZE 12
#define MAX_WG 1024

typedef struct __attribute__((packed)) {
    half d;
    half dmin;
    uchar scales[12];
    uchar qs[128];
} block_q4_K;
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K: size");
_Static_assert(__builtin_offsetof(block_q4_K, d) == 0, "block_q4_K: offset of d");
_Static_assert(__builtin_offsetof(block_q4_K, dmin) == 2, "block_q4_K: offset of dmin");
_Static_assert(__builtin_offsetof(block_q4_K, scales) == 4, "block_q4_K: offset of scales");
_Static_assert(__builtin_offsetof(block_q4_K, qs) == 16, "block_q4_K: offset of qs");

// The low (high false) or high four bits of a quant byte.
inline int nibble(int byte, int high)
{
    return high ? (byte >> 4) : (byte & 15);
}

// Six-bit scale j (0..7) of the packed scales s[at..+12] (ggml's get_scale_min_k4, its d).
inline int scale_k4_split(__global const uchar* s, long at, long j)
{
    if (j < 4) {
        return (int)s[at + j] & 63;
    }
    return ((int)s[at + j + 4] & 15) | (((int)s[at + j - 4] >> 6) << 4);
}

// Six-bit min j (0..7) of the packed scales s[at..+12] (ggml's get_scale_min_k4, its m).
inline int min_k4_split(__global const uchar* s, long at, long j)
{
    if (j < 4) {
        return (int)s[at + j + 4] & 63;
    }
    return ((int)s[at + j + 4] >> 4) | (((int)s[at + j] >> 6) << 4);
}

// Sub-block j of split super-block k dotted with x[x_at..+32], each x value loaded once for
// both sums. The sums are volatile for the reason given in gemv_quant_k.cl (the Intel CPU
// runtime reassociates the loop otherwise).
inline float q4_k_split_sub_dot(__global const uchar* q, __global const uchar* s,
                                __global const half* d, __global const half* dm, long k,
                                long j, __global const float* x, long x_at)
{
    volatile float sumq = 0.0f;
    volatile float sumx = 0.0f;
    for (long i = 0; i < SUB; i++) {
        int v = nibble((int)q[k * QS + SUB * (j / 2) + i], j % 2 == 1);
        float xi = x[x_at + i];
        sumq += (float)v * xi;
        sumx += xi;
    }
    float scale = vload_half(k, d) * (float)scale_k4_split(s, k * K_SCALE_SIZE, j);
    float offset = vload_half(k, dm) * (float)min_k4_split(s, k * K_SCALE_SIZE, j);
    return scale * sumq - offset * sumx;
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

// The work-group's sum of acc (a fixed-order local tree), in every work-item.
inline float group_total(float acc, long lid, long wg, __local float* scratch)
{
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    return scratch[0];
}

__kernel void gemv_q4_k_split(__global const uchar* q, __global const uchar* s,
                              __global const half* d, __global const half* dm,
                              __global const float* x, __global float* y, int nrows, int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK_K;
    float acc = 0.0f;
    for (long t = lid; t < nb * SUBS; t += wg) {
        acc += q4_k_split_sub_dot(q, s, d, dm, row * nb + t / SUBS, t % SUBS, x, t * SUB);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

// Quant byte k (0..127) of split super-block blk dotted with its two x values (the low nibble
// is value 64c + i of sub-block 2c, the high one value 64c + 32 + i, c = k / 32, i = k % 32).
inline float q4_k_split_byte_dot(__global const uchar* q, __global const uchar* s,
                                 __global const half* d, __global const half* dm, long row_at,
                                 long blk, long k, __global const float* x, long x_at)
{
    long c = k / SUB;
    float x_lo = x[x_at + 2 * SUB * c + k % SUB];
    float x_hi = x[x_at + 2 * SUB * c + k % SUB + SUB];
    int byte = (int)q[row_at + k];
    float scale = vload_half(blk, d);
    float offset = vload_half(blk, dm);
    long at = blk * K_SCALE_SIZE;
    float lo = (scale * (float)scale_k4_split(s, at, 2 * c)) * ((float)(byte & 15) * x_lo)
               - (offset * (float)min_k4_split(s, at, 2 * c)) * x_lo;
    float hi = (scale * (float)scale_k4_split(s, at, 2 * c + 1)) * ((float)(byte >> 4) * x_hi)
               - (offset * (float)min_k4_split(s, at, 2 * c + 1)) * x_hi;
    return lo + hi;
}

__kernel void gemv_q4_k_split_lanes(__global const uchar* q, __global const uchar* s,
                                    __global const half* d, __global const half* dm,
                                    __global const float* x, __global float* y, int nrows,
                                    int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK_K;
    float acc = 0.0f;
    for (long k = lid; k < nb * QS; k += wg) {  // neighbouring work-items, neighbouring bytes
        long b = k / QS;
        acc += q4_k_split_byte_dot(q, s, d, dm, (row * nb + b) * QS, row * nb + b, k % QS, x,
                                   b * QK_K);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}

__kernel void convert_block_q4_k(__global const block_q4_K* blocks, __global uchar* q,
                                 __global uchar* s, __global half* d, __global half* dm,
                                 int nblocks)
{
    long b = get_global_id(0);
    if (b < nblocks) {
        ((__global ushort*)d)[b] = *(__global const ushort*)&blocks[b].d;
        ((__global ushort*)dm)[b] = *(__global const ushort*)&blocks[b].dmin;
        for (long j = 0; j < K_SCALE_SIZE; j++) {
            s[b * K_SCALE_SIZE + j] = blocks[b].scales[j];
        }
        for (long j = 0; j < QS; j++) {
            q[b * QS + j] = blocks[b].qs[j];
        }
    }
}

__kernel void restore_block_q4_k(__global const uchar* q, __global const uchar* s,
                                 __global const half* d, __global const half* dm,
                                 __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    __global block_q4_K* y = (__global block_q4_K*)blocks;
    if (b < nblocks) {
        *(__global ushort*)&y[b].d = ((__global const ushort*)d)[b];
        *(__global ushort*)&y[b].dmin = ((__global const ushort*)dm)[b];
        for (long j = 0; j < K_SCALE_SIZE; j++) {
            y[b].scales[j] = s[b * K_SCALE_SIZE + j];
        }
        for (long j = 0; j < QS; j++) {
            y[b].qs[j] = q[b * QS + j];
        }
    }
}
