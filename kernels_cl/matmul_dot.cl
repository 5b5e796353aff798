// matmul with dot: twin of kernels_py/matmul_dot.py (matmul_dot_vload_half). C (float) = A B
// from half A (M x K) and half B transposed (N x K), read with vload_half4 / vload_half (no
// cl_khr_fp16 needed); one float4 dot per four k, the rest one k at a time. The order inside
// dot is the device's (PoCL and the Intel CPU runtime: (p0 + p1) + (p2 + p3), as the
// simulator; Oclgrind: in double), hence the spec's magnitude policy. Ids are long.
#pragma OPENCL FP_CONTRACT OFF

#define VW 4

__kernel void matmul_dot_vload_half(__global const half* a, __global const half* bt,
                                    __global float* c, int M, int N, int K)
{
    long col = get_global_id(0);
    long row = get_global_id(1);
    if (row < M && col < N) {
        float acc = 0.0f;
        long k_vec = K - K % VW;
        for (long k = 0; k < k_vec; k += VW) {
            acc += dot(vload_half4(0, a + row * K + k), vload_half4(0, bt + col * K + k));
        }
        for (long k = k_vec; k < K; k++) {
            acc += vload_half(row * K + k, a) * vload_half(col * K + k, bt);
        }
        c[row * N + col] = acc;
    }
}
