// GGUF Q8_0 / Q4_0 dequantize and quantize on packed struct blocks. Twin of
// kernels_py/gguf_quants.py; the typedefs are clsim.cstruct's output for the dtypes of
// kernels_py/gguf_structs.py (tests/kernels/test_gguf_kernels.py checks they are verbatim).
// Quantizers write a byte buffer through a block pointer (as ggml casts its destination).
// The half scale is read with vload_half and written with vstore_half (round to nearest even,
// as numpy's astype(float16)) on the field's address, so no kernel needs cl_khr_fp16.
// Ids are long because the Python kernels' are int64.
#pragma OPENCL FP_CONTRACT OFF

#define QK 32

typedef struct __attribute__((packed)) {
    half d;
    char qs[32];
} block_q8_0;
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0: size");
_Static_assert(__builtin_offsetof(block_q8_0, d) == 0, "block_q8_0: offset of d");
_Static_assert(__builtin_offsetof(block_q8_0, qs) == 2, "block_q8_0: offset of qs");

typedef struct __attribute__((packed)) {
    half d;
    uchar qs[16];
} block_q4_0;
_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0: size");
_Static_assert(__builtin_offsetof(block_q4_0, d) == 0, "block_q4_0: offset of d");
_Static_assert(__builtin_offsetof(block_q4_0, qs) == 2, "block_q4_0: offset of qs");

// (int)v, with NaN and infinities as 0 (numpy's cast on x86 once narrowed to 8 bits).
inline int c_int(float v)
{
    return isfinite(v) ? (int)v : 0;
}

__kernel void dequantize_q8_0(__global const block_q8_0* blocks, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK;
        y[i] = (float)blocks[ib].qs[i % QK] * vload_half(0, &blocks[ib].d);
    }
}

__kernel void dequantize_q4_0(__global const block_q4_0* blocks, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long ib = i / QK;
        long j = i % QK;
        int byte = (int)blocks[ib].qs[j % (QK / 2)];
        int q = j < QK / 2 ? (byte & 15) : (byte >> 4);
        y[i] = vload_half(0, &blocks[ib].d) * (float)(q - 8);
    }
}

__kernel void quantize_q8_0(__global const float* x, __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    __global block_q8_0* y = (__global block_q8_0*)blocks;
    if (b < nblocks) {
        long base = b * QK;
        float amax = 0.0f;
        for (long j = 0; j < QK; j++) {
            amax = max(amax, fabs(x[base + j]));
        }
        float d = amax / 127.0f;
        float inv = d == 0.0f ? 0.0f : 1.0f / d;
        vstore_half(d, 0, &y[b].d);
        for (long k = 0; k < QK; k++) {
            y[b].qs[k] = (char)c_int(round(x[base + k] * inv));
        }
    }
}

__kernel void quantize_q4_0(__global const float* x, __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    __global block_q4_0* y = (__global block_q4_0*)blocks;
    if (b < nblocks) {
        long base = b * QK;
        float mx = x[base];
        float amax = fabs(mx);
        for (long j = 1; j < QK; j++) {
            if (fabs(x[base + j]) > amax) {
                amax = fabs(x[base + j]);
                mx = x[base + j];
            }
        }
        float d = mx * -0.125f;
        float inv = d == 0.0f ? 0.0f : 1.0f / d;
        vstore_half(d, 0, &y[b].d);
        for (long k = 0; k < QK / 2; k++) {
            int lo = min(c_int(trunc(x[base + k] * inv + 8.5f)), 15);
            int hi = min(c_int(trunc(x[base + k + QK / 2] * inv + 8.5f)), 15);
            y[b].qs[k] = (uchar)(lo | (hi << 4));
        }
    }
}
