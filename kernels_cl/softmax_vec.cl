// softmax_vec: the three-pass row softmax with float4 loads and arithmetic.
// Twin of kernels_py/softmax_vec.py: vload4 per step (element-aligned rows), float4 partials
// folded as (x + y) + (z + w), the columns past the last float4 one by one, the same
// local-memory trees as softmax.cl. Ids are long because the Python kernel's are int64.
#pragma OPENCL FP_CONTRACT OFF

#define MAX_WG 1024

// The Python kernels' `half` is spelled `half_`: `half` is a type name in OpenCL C.

// fmax over scratch[0:wg] into scratch[0]; works for any wg, not only powers of two.
inline void tree_reduce_max(__local float* scratch, long lid, long wg)
{
    long active = wg;
    while (active > 1) {
        long half_ = (active + 1) / 2;
        if (lid < active - half_) {
            scratch[lid] = fmax(scratch[lid], scratch[lid + half_]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        active = half_;
    }
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

__kernel void softmax_vec(__global const float* x, __global float* y, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __global const float* xr = x + row * ncols;
    __global float* yr = y + row * ncols;
    long n4 = ncols / 4;
    __local float scratch[MAX_WG];

    float4 m4 = (float4)(-INFINITY);
    for (long c = lid; c < n4; c += wg) {
        m4 = fmax(m4, vload4(c, xr));
    }
    float row_max = fmax(fmax(m4.x, m4.y), fmax(m4.z, m4.w));
    for (long c = 4 * n4 + lid; c < ncols; c += wg) {
        row_max = fmax(row_max, xr[c]);
    }
    scratch[lid] = row_max;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_max(scratch, lid, wg);
    row_max = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);

    float4 s4 = (float4)(0.0f);
    for (long c = lid; c < n4; c += wg) {
        s4 += exp(vload4(c, xr) - row_max);
    }
    float total = (s4.x + s4.y) + (s4.z + s4.w);
    for (long c = 4 * n4 + lid; c < ncols; c += wg) {
        total += exp(xr[c] - row_max);
    }
    scratch[lid] = total;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_sum(scratch, lid, wg);
    total = scratch[0];

    for (long c = lid; c < n4; c += wg) {
        vstore4(exp(vload4(c, xr) - row_max) / total, c, yr);
    }
    for (long c = 4 * n4 + lid; c < ncols; c += wg) {
        yr[c] = exp(xr[c] - row_max) / total;
    }
}
