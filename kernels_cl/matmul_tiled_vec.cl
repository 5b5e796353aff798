// matmul with local tiles, register blocks and float4 loads and arithmetic: twin of
// kernels_py/matmul_tiled_vec.py (matmul_regblock_float4). A 16 x 16 work-group computes a
// 64 x 64 block of C, each work-item a 4 x 4 block in four float4 accumulators; per 16 steps of
// K the group stages a 64 x 16 tile of A (transposed) and a 16 x 64 tile of B in local memory,
// one float4 of each per work-item. A float4 crossing the end of a row is loaded one element
// at a time with zeros past it. Every element of C adds its products in ascending k from 0.0f,
// so the result is exact against the simulator. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define VW 4
#define LX 16
#define LY 16
#define BM (LY * VW)
#define BN (LX * VW)
#define BK 16

// p[off .. off+3] when inside >= 4 of them lie inside the row, else the first inside of them
// and zeros (a vload4 there would read past the row).
inline float4 load_float4(__global const float* p, long off, long inside)
{
    if (inside >= VW) {
        return vload4(0, p + off);
    }
    return (float4)(inside > 0 ? p[off] : 0.0f, inside > 1 ? p[off + 1] : 0.0f,
                    inside > 2 ? p[off + 2] : 0.0f, inside > 3 ? p[off + 3] : 0.0f);
}

// Row row of C from column col0: one vstore4 when all four columns are inside, else the
// columns inside one at a time; nothing for a row past M.
inline void store_float4(__global float* c, float4 acc, long row, long col0, int M, int N)
{
    if (row < M) {
        long off = row * N + col0;
        if (col0 + VW <= N) {
            vstore4(acc, 0, c + off);
        } else {
            if (col0 < N) {
                c[off] = acc.s0;
            }
            if (col0 + 1 < N) {
                c[off + 1] = acc.s1;
            }
            if (col0 + 2 < N) {
                c[off + 2] = acc.s2;
            }
        }
    }
}

__kernel void matmul_regblock_float4(__global const float* a, __global const float* b,
                                     __global float* c, int M, int N, int K)
{
    long tx = get_local_id(0);
    long ty = get_local_id(1);
    long lin = ty * LX + tx;
    long row_blk = (long)get_group_id(1) * BM;
    long col_blk = (long)get_group_id(0) * BN;
    __local float a_t[BK * BM];  // A's tile transposed: a_t[k * BM + m]
    __local float b_t[BK * BN];  // B's tile: b_t[k * BN + n]
    long a_m = lin / (BK / VW);
    long a_q = lin % (BK / VW);
    long b_k = lin / (BN / VW);
    long b_q = lin % (BN / VW);
    float4 acc0 = (float4)(0.0f);
    float4 acc1 = (float4)(0.0f);
    float4 acc2 = (float4)(0.0f);
    float4 acc3 = (float4)(0.0f);
    for (long t = 0; t < K; t += BK) {
        long a_row = row_blk + a_m;
        long a_col = t + a_q * VW;
        float4 a4 = load_float4(a, a_row * K + a_col, a_row < M ? K - a_col : 0);
        a_t[(a_q * VW) * BM + a_m] = a4.s0;
        a_t[(a_q * VW + 1) * BM + a_m] = a4.s1;
        a_t[(a_q * VW + 2) * BM + a_m] = a4.s2;
        a_t[(a_q * VW + 3) * BM + a_m] = a4.s3;
        long b_row = t + b_k;
        long b_col = col_blk + b_q * VW;
        float4 b4 = load_float4(b, b_row * N + b_col, b_row < K ? N - b_col : 0);
        vstore4(b4, b_k * (BN / VW) + b_q, b_t);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long kk = 0; kk < BK; kk++) {
            float4 av = vload4(kk * (BM / VW) + ty, a_t);
            float4 bv = vload4(kk * (BN / VW) + tx, b_t);
            acc0 += av.s0 * bv;
            acc1 += av.s1 * bv;
            acc2 += av.s2 * bv;
            acc3 += av.s3 * bv;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    long row0 = row_blk + ty * VW;
    long col0 = col_blk + tx * VW;
    store_float4(c, acc0, row0, col0, M, N);
    store_float4(c, acc1, row0 + 1, col0, M, N);
    store_float4(c, acc2, row0 + 2, col0, M, N);
    store_float4(c, acc3, row0 + 3, col0, M, N);
}
