// reduce_sum: one partial sum per work-group, sub-group stage then local-memory stage.
// Twin of kernels_py/reduce_sum.py: group g sums its contiguous chunk; sub_group_reduce_add
// per sub-group, lane 0 of each writes local memory, then sub-group 0 alone adds those with a
// second sub_group_reduce_add. The float order inside sub_group_reduce_add is the device's; the
// spec's inputs make every partial sum exact, so the results match bit for bit anyway.
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

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void reduce_sum(__global const float* x, __global float* partial, int n)
{
    long groups = get_num_groups(0);
    long chunk = (n + groups - 1) / groups;
    long start = (long)get_group_id(0) * chunk;
    long stop = min(start + chunk, (long)n);
    float acc = 0.0f;
    for (long i = start + (long)get_local_id(0); i < stop; i += (long)get_local_size(0)) {
        acc += x[i];
    }
    float s = sub_group_reduce_add(acc);

    __local float sums[MAX_SUBGROUPS];
    if (get_sub_group_local_id() == 0) {
        sums[get_sub_group_id()] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    if (get_sub_group_id() == 0) {
        float v = 0.0f;
        for (long k = get_sub_group_local_id(); k < (long)get_num_sub_groups();
             k += (long)get_sub_group_size()) {
            v += sums[k];
        }
        float total = sub_group_reduce_add(v);
        if (get_sub_group_local_id() == 0) {
            partial[get_group_id(0)] = total;
        }
    }
}
