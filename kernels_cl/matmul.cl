// matmul: C = A B in float32, row-major (A: M x K, B: K x N). Twin of kernels_py/matmul.py.
// matmul: naive, one work-item per element. matmul_tiled: TILE x TILE tiles of A and B in
// local memory, zeros past the edges. matmul_regblock: a TM x TN block of C per work-item in
// private memory. All add the products in ascending k, so every result is exact against the
// simulator. The sub-group variant is in matmul_subgroup.cl. Ids are long (int64 in Python).
#pragma OPENCL FP_CONTRACT OFF

#define TILE 16
#define TM 4
#define TN 4

__kernel void matmul(__global const float* a, __global const float* b, __global float* c,
                     int M, int N, int K)
{
    long col = get_global_id(0);
    long row = get_global_id(1);
    if (row < M && col < N) {
        float acc = 0.0f;
        for (long k = 0; k < K; k++) {
            acc += a[row * K + k] * b[k * N + col];
        }
        c[row * N + col] = acc;
    }
}

__kernel void matmul_tiled(__global const float* a, __global const float* b, __global float* c,
                           int M, int N, int K)
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
        a_tile[ty][tx] = row < M && ka < K ? a[row * K + ka] : 0.0f;
        long kb = t + ty;
        b_tile[ty][tx] = kb < K && col < N ? b[kb * N + col] : 0.0f;
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

__kernel void matmul_regblock(__global const float* a, __global const float* b,
                              __global float* c, int M, int N, int K)
{
    long col0 = get_global_id(0) * TN;
    long row0 = get_global_id(1) * TM;
    float acc[TM * TN];
    float a_reg[TM];
    float b_reg[TN];
    for (long z = 0; z < TM * TN; z++) {
        acc[z] = 0.0f;
    }
    for (long k = 0; k < K; k++) {
        for (long i = 0; i < TM; i++) {
            a_reg[i] = row0 + i < M ? a[(row0 + i) * K + k] : 0.0f;
        }
        for (long j = 0; j < TN; j++) {
            b_reg[j] = col0 + j < N ? b[k * N + col0 + j] : 0.0f;
        }
        for (long i = 0; i < TM; i++) {
            for (long j = 0; j < TN; j++) {
                acc[i * TN + j] += a_reg[i] * b_reg[j];
            }
        }
    }
    for (long i = 0; i < TM; i++) {
        for (long j = 0; j < TN; j++) {
            if (row0 + i < M && col0 + j < N) {
                c[(row0 + i) * N + col0 + j] = acc[i * TN + j];
            }
        }
    }
}
