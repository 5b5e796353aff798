// argmax_subgroup: argmax by one work-group with sub-group collectives.
// Twin of kernels_py/argmax_subgroup.py: each work-item's best (value, index) pair (beats():
// lowest index on ties, first NaN wins), then per sub-group sub_group_any (a NaN?),
// sub_group_reduce_max (largest non-NaN) and sub_group_reduce_min (lowest index holding the
// winner): exact in any lane order. Sub-group 0 reduces the sub-groups' pairs the same way.
#pragma OPENCL FP_CONTRACT OFF
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 16
#endif
#define MAX_SUBGROUPS 1024

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

// The index of the sub-group's best (value, index) pair, in every lane.
inline long subgroup_best_index(float value, long index, long empty)
{
    int has_nan = sub_group_any(isnan(value) ? 1 : 0);
    float top = sub_group_reduce_max(isnan(value) ? -INFINITY : value);
    bool chosen = has_nan != 0 ? isnan(value) : value == top;
    return sub_group_reduce_min(chosen ? index : empty);
}

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void argmax_subgroup(__global const float* x, __global int* out, int n)
{
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long lane = get_sub_group_local_id();
    __local float sg_values[MAX_SUBGROUPS];
    __local int sg_indices[MAX_SUBGROUPS];
    float best_value = -INFINITY;
    long best_index = n;
    for (long i = lid; i < n; i += wg) {
        float v = x[i];
        if (beats(v, i, best_value, best_index)) {
            best_value = v;
            best_index = i;
        }
    }
    long index = subgroup_best_index(best_value, best_index, n);
    if (lane == 0) {
        sg_values[get_sub_group_id()] = index < n ? x[index] : -INFINITY;
        sg_indices[get_sub_group_id()] = (int)index;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_sub_group_id() == 0) {
        float value = -INFINITY;
        long k = n;
        for (long s = lane; s < (long)get_num_sub_groups(); s += (long)get_sub_group_size()) {
            if (beats(sg_values[s], sg_indices[s], value, k)) {
                value = sg_values[s];
                k = sg_indices[s];
            }
        }
        long winner = subgroup_best_index(value, k, n);
        if (lane == 0) {
            out[0] = (int)winner;
        }
    }
}
