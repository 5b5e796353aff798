// matmul with half inputs through half types (cl_khr_fp16), float accumulation: twin of
// kernels_py/matmul_half.py's matmul_half and matmul_half8 (builds only where the device has
// cl_khr_fp16; the vload_half variants, for devices without it, are in matmul_vec.cl).
// Each loaded half is converted to float before any arithmetic, and each column of C adds its
// products in ascending k from 0.0f, so every result is exact against the simulator. Vector
// components are named (.s0 .. .s7) and a strip is built in a private array and vload8-ed:
// subscripting a vector by a variable is a clang extension, not OpenCL C.
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#define VW8 8

__kernel void matmul_half(__global const half* a, __global const half* b, __global float* c,
                          int M, int N, int K)
{
    long col = get_global_id(0);
    long row = get_global_id(1);
    if (row < M && col < N) {
        float acc = 0.0f;
        for (long k = 0; k < K; k++) {
            acc += (float)a[row * K + k] * (float)b[k * N + col];
        }
        c[row * N + col] = acc;
    }
}

// Columns col0..col0+7 of half B from element off as float8: one half8 vload8 when all eight
// are inside, else a guarded load each, zeros past N.
inline float8 b_strip8_half(__global const half* b, long off, long col0, int N)
{
    if (col0 + VW8 <= N) {
        return convert_float8(vload8(0, b + off));
    }
    float v[VW8] = {0.0f};
    for (long j = 0; j < VW8; j++) {
        if (col0 + j < N) {
            v[j] = (float)b[off + j];
        }
    }
    return vload8(0, v);
}

__kernel void matmul_half8(__global const half* a, __global const half* b, __global float* c,
                           int M, int N, int K)
{
    long col0 = get_global_id(0) * VW8;
    long row = get_global_id(1);
    if (row < M && col0 < N) {
        float8 acc = (float8)(0.0f);
        long k_vec = K - K % VW8;
        for (long k = 0; k < k_vec; k += VW8) {
            float8 a8 = convert_float8(vload8(0, a + row * K + k));
            acc += a8.s0 * b_strip8_half(b, k * N + col0, col0, N);
            acc += a8.s1 * b_strip8_half(b, (k + 1) * N + col0, col0, N);
            acc += a8.s2 * b_strip8_half(b, (k + 2) * N + col0, col0, N);
            acc += a8.s3 * b_strip8_half(b, (k + 3) * N + col0, col0, N);
            acc += a8.s4 * b_strip8_half(b, (k + 4) * N + col0, col0, N);
            acc += a8.s5 * b_strip8_half(b, (k + 5) * N + col0, col0, N);
            acc += a8.s6 * b_strip8_half(b, (k + 6) * N + col0, col0, N);
            acc += a8.s7 * b_strip8_half(b, (k + 7) * N + col0, col0, N);
        }
        for (long k = k_vec; k < K; k++) {
            acc += (float)a[row * K + k] * b_strip8_half(b, k * N + col0, col0, N);
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
