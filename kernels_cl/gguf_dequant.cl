// GGUF dequantize kernels on packed struct blocks: Q4_1, Q5_0, IQ4_NL, Q4_K, Q6_K. Twin of
// kernels_py/gguf_dequant.py; the typedefs are clsim.cstruct's output for the dtypes of
// kernels_py/gguf_structs.py (tests/kernels/test_gguf_dequant.py checks they are verbatim).
// The half scales are read with vload_half on the field's address, so no kernel needs
// cl_khr_fp16 (reading a half field directly does). Ids are long because the Python kernels'
// are int64.
#pragma OPENCL FP_CONTRACT OFF

#define QK 32
#define QK_K 256

typedef struct __attribute__((packed)) {
    half d;
    half m;
    uchar qs[16];
} block_q4_1;
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1: size");
_Static_assert(__builtin_offsetof(block_q4_1, d) == 0, "block_q4_1: offset of d");
_Static_assert(__builtin_offsetof(block_q4_1, m) == 2, "block_q4_1: offset of m");
_Static_assert(__builtin_offsetof(block_q4_1, qs) == 4, "block_q4_1: offset of qs");

typedef struct __attribute__((packed)) {
    half d;
    uchar qh[4];
    uchar qs[16];
} block_q5_0;
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0: size");
_Static_assert(__builtin_offsetof(block_q5_0, d) == 0, "block_q5_0: offset of d");
_Static_assert(__builtin_offsetof(block_q5_0, qh) == 2, "block_q5_0: offset of qh");
_Static_assert(__builtin_offsetof(block_q5_0, qs) == 6, "block_q5_0: offset of qs");

typedef struct __attribute__((packed)) {
    half d;
    uchar qs[16];
} block_iq4_nl;
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl: size");
_Static_assert(__builtin_offsetof(block_iq4_nl, d) == 0, "block_iq4_nl: offset of d");
_Static_assert(__builtin_offsetof(block_iq4_nl, qs) == 2, "block_iq4_nl: offset of qs");

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

typedef struct __attribute__((packed)) {
    uchar ql[128];
    uchar qh[64];
    char scales[16];
    half d;
} block_q6_K;
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K: size");
_Static_assert(__builtin_offsetof(block_q6_K, ql) == 0, "block_q6_K: offset of ql");
_Static_assert(__builtin_offsetof(block_q6_K, qh) == 128, "block_q6_K: offset of qh");
_Static_assert(__builtin_offsetof(block_q6_K, scales) == 192, "block_q6_K: offset of scales");
_Static_assert(__builtin_offsetof(block_q6_K, d) == 208, "block_q6_K: offset of d");

__constant char kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1, 13, 25, 38, 53, 69, 89, 113};

// The low (high false) or high four bits of a quant byte.
inline int nibble(int byte, int high)
{
    return high ? (byte >> 4) : (byte & 15);
}

__kernel void dequantize_q4_1(__global const block_q4_1* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK;
        long j = i % QK;
        int q = nibble((int)x[ib].qs[j % (QK / 2)], j >= QK / 2);
        y[i] = vload_half(0, &x[ib].d) * (float)q + vload_half(0, &x[ib].m);
    }
}

__kernel void dequantize_q5_0(__global const block_q5_0* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK;
        long j = i % QK;
        int low = nibble((int)x[ib].qs[j % (QK / 2)], j >= QK / 2);
        int high = ((int)x[ib].qh[j / 8] >> (j % 8)) & 1;
        y[i] = vload_half(0, &x[ib].d) * (float)((low | (high << 4)) - 16);
    }
}

__kernel void dequantize_iq4_nl(__global const block_iq4_nl* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK;
        long j = i % QK;
        int q = nibble((int)x[ib].qs[j % (QK / 2)], j >= QK / 2);
        y[i] = vload_half(0, &x[ib].d) * (float)kvalues_iq4nl[q];
    }
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

__kernel void dequantize_q4_k(__global const block_q4_K* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK_K;
        long r = i % QK_K;
        long sub = r / 32;
        int q = nibble((int)x[ib].qs[32 * (sub / 2) + r % 32], sub % 2 == 1);
        float scale = vload_half(0, &x[ib].d) * (float)scale_k4(x, ib, sub);
        float offset = vload_half(0, &x[ib].dmin) * (float)min_k4(x, ib, sub);
        y[i] = scale * (float)q - offset;
    }
}

__kernel void dequantize_q6_k(__global const block_q6_K* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK_K;
        long r = i % QK_K;
        long half_at = r / 128;  // each 128 values: 64 bytes of ql, 32 of qh
        long t = r % 128;
        int low = nibble((int)x[ib].ql[64 * half_at + t % 64], t >= 64);
        int high = ((int)x[ib].qh[32 * half_at + t % 32] >> (2 * (t / 32))) & 3;
        float scale = vload_half(0, &x[ib].d) * (float)x[ib].scales[r / 16];
        y[i] = scale * (float)((low | (high << 4)) - 32);
    }
}
