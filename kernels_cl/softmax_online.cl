// softmax_online: row softmax with a running maximum and a rescaled running sum (2 passes).
// Twin of kernels_py/softmax_online.py: each work-item folds its columns into (m, s), a
// local-memory tree combines the pairs with the same rescaling, then y = exp(x - m) / s.
// Ids are long because the Python kernel's are int64.
#pragma OPENCL FP_CONTRACT OFF

#define MAX_WG 1024

// The Python kernels' `half` is spelled `half_`: `half` is a type name in OpenCL C.

// s * exp(m_old - m_new): a sum of exp(x - m_old) re-expressed against m_new >= m_old.
inline float rescaled(float s, float m_old, float m_new)
{
    if (m_old == m_new) {
        return s;
    }
    if (m_old == -INFINITY) {
        return 0.0f * s;  // not 0.0f: a NaN sum (a NaN in the row) must still propagate
    }
    return s * exp(m_old - m_new);
}

__kernel void softmax_online(__global const float* x, __global float* y, int ncols)
{
    long row = get_group_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long base = row * ncols;
    __local float maxima[MAX_WG];
    __local float sums[MAX_WG];

    float m = -INFINITY;
    float s = 0.0f;
    for (long c = lid; c < ncols; c += wg) {
        float v = x[base + c];
        if (v > m) {
            s = rescaled(s, m, v) + 1.0f;
            m = v;
        } else {
            s += rescaled(1.0f, v, m);
        }
    }
    maxima[lid] = m;
    sums[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    long active = wg;
    while (active > 1) {
        long half_ = (active + 1) / 2;
        if (lid < active - half_) {
            float m1 = maxima[lid];
            float m2 = maxima[lid + half_];
            float top = fmax(m1, m2);
            sums[lid] = rescaled(sums[lid], m1, top) + rescaled(sums[lid + half_], m2, top);
            maxima[lid] = top;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        active = half_;
    }
    m = maxima[0];
    s = sums[0];

    for (long c = lid; c < ncols; c += wg) {
        y[base + c] = exp(x[base + c] - m) / s;
    }
}
