// GGUF Q8_0 / Q4_0 dequantize and quantize on byte buffers. Twin of kernels_py/gguf_quants.py
// and its helpers in kernels_py/gguf_blocks.py: the half scale is decoded and encoded by hand
// with integer operations (round to nearest even, as numpy's astype(float16)), so the bits are
// the same on every device; blocks should become structs once the Python language has them.
// Ids are long because the Python kernels' are int64.
#pragma OPENCL FP_CONTRACT OFF

#define QK 32
#define Q8_0_BYTES (2 + QK)
#define Q4_0_BYTES (2 + QK / 2)

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

// The IEEE half bits of float f, rounded to nearest even (numpy's astype(float16)).
inline uint float_to_half(float f)
{
    uint bits = as_uint(f);
    uint sign = (bits >> 16) & 0x8000;
    uint a = bits & 0x7FFFFFFF;
    if (a > 0x7F800000) {
        return sign | 0x7E00 | ((a >> 13) & 0x3FF);
    }
    if (a >= 0x477FF000) {  // 65520 and up round to inf
        return sign | 0x7C00;
    }
    if (a >= 0x38800000) {  // a normal half: rebias, round the 13 dropped bits to even
        return sign | ((a - 0x38000000 + 0xFFF + ((a >> 13) & 1)) >> 13);
    }
    // a subnormal half (or zero): f * 2**24 is exact, rint rounds to even
    return sign | (uint)rint(fabs(f) * as_float((uint)0x4B800000));
}

// (int)v, with NaN and infinities as 0 (numpy's cast on x86 once narrowed to 8 bits).
inline int c_int(float v)
{
    return isfinite(v) ? (int)v : 0;
}

__kernel void dequantize_q8_0(__global const uchar* blocks, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long o = (i / QK) * Q8_0_BYTES;
        float d = half_to_float(blocks[o], blocks[o + 1]);
        int q = (int)blocks[o + 2 + i % QK];
        q = q >= 128 ? q - 256 : q;
        y[i] = (float)q * d;
    }
}

__kernel void dequantize_q4_0(__global const uchar* blocks, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        long o = (i / QK) * Q4_0_BYTES;
        float d = half_to_float(blocks[o], blocks[o + 1]);
        long j = i % QK;
        int byte = (int)blocks[o + 2 + j % (QK / 2)];
        int q = j < QK / 2 ? (byte & 15) : (byte >> 4);
        y[i] = d * (float)(q - 8);
    }
}

__kernel void quantize_q8_0(__global const float* x, __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    if (b < nblocks) {
        long base = b * QK;
        long o = b * Q8_0_BYTES;
        float amax = 0.0f;
        for (long j = 0; j < QK; j++) {
            amax = max(amax, fabs(x[base + j]));
        }
        float d = amax / 127.0f;
        float inv = d == 0.0f ? 0.0f : 1.0f / d;
        uint h = float_to_half(d);
        blocks[o] = (uchar)(h & 0xFF);
        blocks[o + 1] = (uchar)(h >> 8);
        for (long k = 0; k < QK; k++) {
            int q = c_int(round(x[base + k] * inv));
            blocks[o + 2 + k] = (uchar)(q & 0xFF);
        }
    }
}

__kernel void quantize_q4_0(__global const float* x, __global uchar* blocks, int nblocks)
{
    long b = get_global_id(0);
    if (b < nblocks) {
        long base = b * QK;
        long o = b * Q4_0_BYTES;
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
        uint h = float_to_half(d);
        blocks[o] = (uchar)(h & 0xFF);
        blocks[o + 1] = (uchar)(h >> 8);
        for (long k = 0; k < QK / 2; k++) {
            int lo = min(c_int(trunc(x[base + k] * inv + 8.5f)), 15);
            int hi = min(c_int(trunc(x[base + k + QK / 2] * inv + 8.5f)), 15);
            blocks[o + 2 + k] = (uchar)(lo | (hi << 4));
        }
    }
}
