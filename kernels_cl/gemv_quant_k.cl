// gemv_q4_k: y = W x with W in Q4_K struct blocks, one work-group per row, a work-item per
// 32-value sub-block. Twin of kernels_py/gemv_quant_k.py (helpers: kernels_py/gguf_dequant.py,
// kernels_py/gemv_quant.py): a sub-block adds (d*sc)*sum(q*x) - (dmin*m)*sum(x) in element
// order, a work-item its sub-blocks in order, a local tree the work-items in a fixed order, so
// the result is exact against the simulator. Half scales through vload_half (no cl_khr_fp16).
// The typedef is clsim.cstruct's output for kernels_py/gguf_structs.py's BLOCK_Q4_K. Ids are
// long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define QK_K 256
#define SUB 32
#define SUBS (QK_K / SUB)
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

// Six-bit scale j (0..7) of Q4_K block ib (ggml's get_scale_min_k4, its d).
inline int scale_k4(__global const block_q4_K* x, long ib, long j)
{
    if (j < 4) {
        return (int)x[ib].scales[j] & 63;
    }
    return ((int)x[ib].scales[j + 4] & 15) | (((int)x[ib].scales[j - 4] >> 6) << 4);
}

// Six-bit min j (0..7) of Q4_K block ib (ggml's get_scale_min_k4, its m).
inline int min_k4(__global const block_q4_K* x, long ib, long j)
{
    if (j < 4) {
        return (int)x[ib].scales[j + 4] & 63;
    }
    return ((int)x[ib].scales[j + 4] >> 4) | (((int)x[ib].scales[j] >> 6) << 4);
}

// Sub-block j of Q4_K block w[ib] dotted with x[x_at..+32], each x value loaded once for
// both sums. The sums are volatile: the Intel CPU runtime vectorised (reassociated) this loop
// despite FP_CONTRACT OFF (up to 24576 ulp apart at 4096 x 4096, measured), as it did
// gguf_q4_k.cl's sub-block sums.
inline float q4_k_sub_dot(__global const block_q4_K* w, long ib, long j,
                          __global const float* x, long x_at)
{
    volatile float sumq = 0.0f;
    volatile float sumx = 0.0f;
    for (long k = 0; k < SUB; k++) {
        int q = nibble((int)w[ib].qs[SUB * (j / 2) + k], j % 2 == 1);
        float xk = x[x_at + k];
        sumq += (float)q * xk;
        sumx += xk;
    }
    float scale = vload_half(0, &w[ib].d) * (float)scale_k4(w, ib, j);
    float offset = vload_half(0, &w[ib].dmin) * (float)min_k4(w, ib, j);
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

__kernel void gemv_q4_k(__global const block_q4_K* blocks, __global const float* x,
                        __global float* y, int nrows, int ncols)
{
    __local float scratch[MAX_WG];
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long nb = ncols / QK_K;
    float acc = 0.0f;
    for (long t = lid; t < nb * SUBS; t += wg) {
        acc += q4_k_sub_dot(blocks, row * nb + t / SUBS, t % SUBS, x, t * SUB);
    }
    float total = group_total(acc, lid, wg, scratch);
    if (lid == 0) {
        y[row] = total;
    }
}
