// PLANTED BUG (verifier tests, tests/device/planted_bugs.py): work-items exchange values
// through the __global buffer `scratch`, separated by barrier(CLK_LOCAL_MEM_FENCE), which
// orders __local memory only (CLK_GLOBAL_MEM_FENCE was needed): a data race on `scratch`
// that the simulator's race check must report, naming the local-fence barrier.
#define WG 64

__kernel void wrong_fence(__global const float* x, __global float* scratch, __global float* y,
                          int n)
{
    long i = get_global_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    long base = get_group_id(0) * wg;
    scratch[i] = i < n ? x[i] * 2.0f : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        y[i] = scratch[base + (lid + 1) % wg];
    }
}
