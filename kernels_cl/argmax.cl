// argmax: index of the largest element, one work-group, local-memory tree reduction.
// Twin of kernels_py/argmax.py. Ties go to the lowest index; NaN counts as larger than every
// number (numpy.argmax's policy), so the first NaN wins. Ids are long because the Python
// kernel's are int64; `indices` holds int32 like the Python local array.
#pragma OPENCL FP_CONTRACT OFF

#define MAX_WG 1024

// The Python kernels' `half` is spelled `half_`: `half` is a type name in OpenCL C.

// True when (value, index) should replace (best_value, best_index) under the NaN policy.
inline bool beats(float value, long index, float best_value, long best_index)
{
    if (isnan(best_value)) {
        return isnan(value) && index < best_index;
    }
    if (isnan(value)) {
        return true;
    }
    return value > best_value || (value == best_value && index < best_index);
}

// The best (value, index) pair of values/indices[0:wg] into slot 0, any wg.
inline void tree_reduce_argmax(__local float* values, __local int* indices, long lid, long wg)
{
    long active = wg;
    while (active > 1) {
        long half_ = (active + 1) / 2;
        if (lid < active - half_) {
            if (beats(values[lid + half_], indices[lid + half_], values[lid], indices[lid])) {
                values[lid] = values[lid + half_];
                indices[lid] = indices[lid + half_];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        active = half_;
    }
}

__kernel void argmax(__global const float* x, __global int* out, int n)
{
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float values[MAX_WG];
    __local int indices[MAX_WG];
    float best_value = -INFINITY;
    long best_index = n;
    for (long i = lid; i < n; i += wg) {
        float v = x[i];
        if (beats(v, i, best_value, best_index)) {
            best_value = v;
            best_index = i;
        }
    }
    values[lid] = best_value;
    indices[lid] = (int)best_index;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_argmax(values, indices, lid, wg);
    if (lid == 0) {
        out[0] = indices[0];
    }
}
