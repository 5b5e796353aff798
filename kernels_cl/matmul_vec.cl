// matmul with vector loads: twin of kernels_py/matmul_vec.py (matmul_float4) and of the
// vload_half variants of kernels_py/matmul_half.py (matmul_vload_half, matmul_vload_half8),
// which need no cl_khr_fp16: half data is read as float by vload_half / vload_half8 (and
// matmul_tiled_vload_half).
// Each column of C adds its products in ascending k from 0.0f, as the naive matmul, so every
// result is exact against the simulator. Ids are long (int64 in Python). Vector components
// are named (.s0 .. .s7) and a strip is built in a private array and vload8-ed: subscripting a
// vector by a variable is a clang extension, not OpenCL C (the Python twins do the same).
#pragma OPENCL FP_CONTRACT OFF

#define VW4 4
#define VW8 8

// Columns col0..col0+3 of B from element off: one vload4 when all four are inside, else a
// guarded load each, zeros past N (a vload4 there would read past the row).
inline float4 b_strip4(__global const float* b, long off, long col0, int N)
{
    if (col0 + VW4 <= N) {
        return vload4(0, b + off);
    }
    return (float4)(col0 < N ? b[off] : 0.0f, col0 + 1 < N ? b[off + 1] : 0.0f,
                    col0 + 2 < N ? b[off + 2] : 0.0f, col0 + 3 < N ? b[off + 3] : 0.0f);
}

__kernel void matmul_float4(__global const float* a, __global const float* b,
                            __global float* c, int M, int N, int K)
{
    long col0 = get_global_id(0) * VW4;
    long row = get_global_id(1);
    if (row < M && col0 < N) {
        float4 acc = (float4)(0.0f);
        long k_vec = K - K % VW4;
        for (long k = 0; k < k_vec; k += VW4) {
            float4 a4 = vload4(0, a + row * K + k);
            acc += a4.s0 * b_strip4(b, k * N + col0, col0, N);
            acc += a4.s1 * b_strip4(b, (k + 1) * N + col0, col0, N);
            acc += a4.s2 * b_strip4(b, (k + 2) * N + col0, col0, N);
            acc += a4.s3 * b_strip4(b, (k + 3) * N + col0, col0, N);
        }
        for (long k = k_vec; k < K; k++) {
            acc += a[row * K + k] * b_strip4(b, k * N + col0, col0, N);
        }
        float out[VW4];
        vstore4(acc, 0, out);
        for (long j = 0; j < VW4; j++) {
            if (col0 + j < N) {
                c[row * N + col0 + j] = out[j];
            }
        }
    }
}

__kernel void matmul_vload_half(__global const half* a, __global const half* b,
                                __global float* c, int M, int N, int K)
{
    long col = get_global_id(0);
    long row = get_global_id(1);
    if (row < M && col < N) {
        float acc = 0.0f;
        for (long k = 0; k < K; k++) {
            acc += vload_half(row * K + k, a) * vload_half(k * N + col, b);
        }
        c[row * N + col] = acc;
    }
}

// Columns col0..col0+7 of half B from element off as float8: one vload_half8 when all eight
// are inside, else a guarded vload_half each, zeros past N.
inline float8 b_strip8_vload_half(__global const half* b, long off, long col0, int N)
{
    if (col0 + VW8 <= N) {
        return vload_half8(0, b + off);
    }
    float v[VW8] = {0.0f};
    for (long j = 0; j < VW8; j++) {
        if (col0 + j < N) {
            v[j] = vload_half(off + j, b);
        }
    }
    return vload8(0, v);
}

__kernel void matmul_vload_half8(__global const half* a, __global const half* b,
                                 __global float* c, int M, int N, int K)
{
    long col0 = get_global_id(0) * VW8;
    long row = get_global_id(1);
    if (row < M && col0 < N) {
        float8 acc = (float8)(0.0f);
        long k_vec = K - K % VW8;
        for (long k = 0; k < k_vec; k += VW8) {
            float8 a8 = vload_half8(0, a + row * K + k);
            acc += a8.s0 * b_strip8_vload_half(b, k * N + col0, col0, N);
            acc += a8.s1 * b_strip8_vload_half(b, (k + 1) * N + col0, col0, N);
            acc += a8.s2 * b_strip8_vload_half(b, (k + 2) * N + col0, col0, N);
            acc += a8.s3 * b_strip8_vload_half(b, (k + 3) * N + col0, col0, N);
            acc += a8.s4 * b_strip8_vload_half(b, (k + 4) * N + col0, col0, N);
            acc += a8.s5 * b_strip8_vload_half(b, (k + 5) * N + col0, col0, N);
            acc += a8.s6 * b_strip8_vload_half(b, (k + 6) * N + col0, col0, N);
            acc += a8.s7 * b_strip8_vload_half(b, (k + 7) * N + col0, col0, N);
        }
        for (long k = k_vec; k < K; k++) {
            acc += vload_half(row * K + k, a) * b_strip8_vload_half(b, k * N + col0, col0, N);
        }
        float out[VW8];
        vstore8(acc, 0, out);
        for (long j = 0; j < VW8; j++) {
            if (col0 + j < N) {
                c[row * N + col0 + j] = out[j];
            }
        }
    }
}

#define TILE 16

// matmul_tiled's traffic at half the global bytes: half A and B read with vload_half into
// float tiles in local memory, zeros past the edges.
__kernel void matmul_tiled_vload_half(__global const half* a, __global const half* b,
                                      __global float* c, int M, int N, int K)
{
    long tx = get_local_id(0);
    long ty = get_local_id(1);
    long col = (long)get_group_id(0) * TILE + tx;
    long row = (long)get_group_id(1) * TILE + ty;
    __local float a_tile[TILE][TILE];
    __local float b_tile[TILE][TILE];
    float acc = 0.0f;
    for (long t = 0; t < K; t += TILE) {
        long ka = t + tx;
        float av = 0.0f;
        if (row < M && ka < K) {
            av = vload_half(row * K + ka, a);
        }
        a_tile[ty][tx] = av;
        long kb = t + ty;
        float bv = 0.0f;
        if (kb < K && col < N) {
            bv = vload_half(kb * N + col, b);
        }
        b_tile[ty][tx] = bv;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long kk = 0; kk < TILE; kk++) {
            acc += a_tile[ty][kk] * b_tile[kk][tx];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < M && col < N) {
        c[row * N + col] = acc;
    }
}
