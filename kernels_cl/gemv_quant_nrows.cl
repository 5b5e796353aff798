// gemv_q4_0_nrows, gemv_q8_0_nrows: y = W x with W in Q4_0 / Q8_0 struct blocks, N_DST rows
// per sub-group (llama.cpp's N_DST), x's 32 values of a block loaded once into a private
// array for all N_DST rows. Twin of kernels_py/gemv_quant_nrows.py: each row's sum is
// gemv_quant_subgroup.cl's, in its order, so the result is exact against the simulator. Rows
// past nrows are never read (llama.cpp guards only the store). Half scales through vload_half
// (no cl_khr_fp16 needed). Ids are long.
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 16
#endif
#define QK 32
#define N_DST 4

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

// Q4_0 block w[ib] dotted with the private xs[x_at..+32].
inline float q4_0_dot(__global const block_q4_0* w, long ib, const float* xs, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK / 2; j++) {
        int byte = (int)w[ib].qs[j];
        sumq += (float)((byte & 15) - 8) * xs[x_at + j];
        sumq += (float)((byte >> 4) - 8) * xs[x_at + j + QK / 2];
    }
    return vload_half(0, &w[ib].d) * sumq;
}

// Q8_0 block w[ib] dotted with the private xs[x_at..+32].
inline float q8_0_dot(__global const block_q8_0* w, long ib, const float* xs, long x_at)
{
    float sumq = 0.0f;
    for (long j = 0; j < QK; j++) {
        sumq += (float)w[ib].qs[j] * xs[x_at + j];
    }
    return vload_half(0, &w[ib].d) * sumq;
}

// x's 32 values of block b into the private array xs (loaded once for N_DST rows).
inline void load_block_x(__global const float* x, long b, float* xs)
{
    for (long k = 0; k < QK; k++) {
        xs[k] = x[b * QK + k];
    }
}

// The sub-group's sum of v in every lane, in a fixed order (see kernels_py/common.py).
inline float subgroup_sum_butterfly(float v)
{
    long mask = get_sub_group_size() / 2;
    while (mask > 0) {
        v = v + sub_group_shuffle_xor(v, (uint)mask);
        mask = mask / 2;
    }
    return v;
}

// Each of the N_DST rows' butterfly sums stored by lane 0, rows past nrows skipped.
inline void store_rows(const float* acc, __global float* y, long first, long nrows, long lane)
{
    long k = 0;
    while (k < N_DST) {
        float total = subgroup_sum_butterfly(acc[k]);
        if (lane == 0 && first + k < nrows) {
            y[first + k] = total;
        }
        k += 1;
    }
}

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void gemv_q4_0_nrows(__global const block_q4_0* blocks, __global const float* x,
                              __global float* y, int nrows, int ncols)
{
    long first = ((long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST;
    long lane = get_sub_group_local_id();
    if (first < nrows) {
        long nb = ncols / QK;
        float acc[N_DST] = {0.0f};
        float xs[QK];
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            load_block_x(x, b, xs);
            for (long r = 0; r < N_DST; r++) {
                if (first + r < nrows) {
                    acc[r] += q4_0_dot(blocks, (first + r) * nb + b, xs, 0);
                }
            }
        }
        store_rows(acc, y, first, nrows, lane);
    }
}

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void gemv_q8_0_nrows(__global const block_q8_0* blocks, __global const float* x,
                              __global float* y, int nrows, int ncols)
{
    long first = ((long)get_group_id(0) * get_num_sub_groups() + get_sub_group_id()) * N_DST;
    long lane = get_sub_group_local_id();
    if (first < nrows) {
        long nb = ncols / QK;
        float acc[N_DST] = {0.0f};
        float xs[QK];
        for (long b = lane; b < nb; b += (long)get_sub_group_size()) {
            load_block_x(x, b, xs);
            for (long r = 0; r < N_DST; r++) {
                if (first + r < nrows) {
                    acc[r] += q8_0_dot(blocks, (first + r) * nb + b, xs, 0);
                }
            }
        }
        store_rows(acc, y, first, nrows, lane);
    }
}
