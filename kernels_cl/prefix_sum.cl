// prefix_sum: inclusive scan of int values by one work-group, tile by tile.
// Twin of kernels_py/prefix_sum.py: work_group_scan_inclusive_add per tile plus the running
// carry, work_group_broadcast of the tile's last value as the next carry. Work-group functions
// need OpenCL C 2.0 (-cl-std=CL2.0); built as OpenCL C 1.2 (the default on the Intel CPU
// runtime) the same scan is done with sub_group_scan_inclusive_add and local memory. Integer
// sums are exact in any order, so both paths give the simulator's bits.
#ifdef cl_intel_subgroups
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#else
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif

#ifndef CLSIM_SUBGROUP_SIZE
#define CLSIM_SUBGROUP_SIZE 16
#endif
#define MAX_SUBGROUPS 1024

#if __OPENCL_C_VERSION__ >= 200
#define SCAN(v) work_group_scan_inclusive_add(v)
#define LAST(s, wg) work_group_broadcast(s, (size_t)(wg - 1))
#else
// Inclusive scan over the work-group from sub-group scans: each sub-group adds the totals of
// the sub-groups before it.
inline int wg_scan(int v, __local int* totals)
{
    int s = sub_group_scan_inclusive_add(v);
    if (get_sub_group_local_id() == get_sub_group_size() - 1) {
        totals[get_sub_group_id()] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 0; k < get_sub_group_id(); k++) {
        s += totals[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

inline int wg_last(int s, long wg, __local int* totals)
{
    if (get_local_id(0) == wg - 1) {
        totals[0] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int last = totals[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return last;
}
#define SCAN(v) wg_scan(v, totals)
#define LAST(s, wg) wg_last(s, wg, totals)
#endif

#ifdef cl_intel_required_subgroup_size
__attribute__((intel_reqd_sub_group_size(CLSIM_SUBGROUP_SIZE)))
#endif
__kernel void prefix_sum(__global const int* x, __global int* y, int n)
{
#if __OPENCL_C_VERSION__ < 200
    __local int totals[MAX_SUBGROUPS];
#endif
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    int carry = 0;
    for (long base = 0; base < n; base += wg) {
        long i = base + lid;
        int v = 0;
        if (i < n) {
            v = x[i];
        }
        int s = SCAN(v) + carry;
        if (i < n) {
            y[i] = s;
        }
        carry = LAST(s, wg);
    }
}
