// argmax_two_phase: argmax over many work-groups in two launches, the host waiting between.
// Twin of kernels_py/argmax_two_phase.py. argmax_partials: work-group g reduces its contiguous
// chunk of x to one (value, index) pair with the beats() order (ties: lowest index; NaN beats
// every number, the first NaN wins); argmax_final: one work-group reduces those pairs. Ids are
// long because the Python kernels' are int64.
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

__kernel void argmax_partials(__global const float* x, __global float* part_values,
                              __global int* part_indices, int n)
{
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long groups = get_num_groups(0);
    long chunk = (n + groups - 1) / groups;
    long start = (long)get_group_id(0) * chunk;
    long stop = min(start + chunk, (long)n);
    __local float values[MAX_WG];
    __local int indices[MAX_WG];
    float best_value = -INFINITY;
    long best_index = n;
    for (long i = start + lid; i < stop; i += wg) {
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
        part_values[get_group_id(0)] = values[0];
        part_indices[get_group_id(0)] = indices[0];
    }
}

__kernel void argmax_final(__global const float* part_values, __global const int* part_indices,
                           __global int* out, int ngroups)
{
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float values[MAX_WG];
    __local int indices[MAX_WG];
    float best_value = -INFINITY;
    int best_index = 2147483647;
    for (long g = lid; g < ngroups; g += wg) {
        if (beats(part_values[g], part_indices[g], best_value, best_index)) {
            best_value = part_values[g];
            best_index = part_indices[g];
        }
    }
    values[lid] = best_value;
    indices[lid] = best_index;
    barrier(CLK_LOCAL_MEM_FENCE);
    tree_reduce_argmax(values, indices, lid, wg);
    if (lid == 0) {
        out[0] = indices[0];
    }
}
