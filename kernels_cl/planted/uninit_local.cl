// PLANTED BUG (verifier tests, tests/device/planted_bugs.py): work-item 0 never writes its
// slot of `tile`, which work-item wg-1 reads after the barrier: an uninitialised read of
// __local memory that the simulator's check must report.
#define WG 64

__kernel void uninit_local(__global const float* x, __global float* y, int n)
{
    long i = get_global_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float tile[WG];
    if (lid != 0) {
        tile[lid] = i < n ? x[i] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) {
        y[i] = tile[wg - 1 - lid];
    }
}
