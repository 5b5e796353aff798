// PLANTED BUG (verifier tests, tests/device/planted_bugs.py): each work-group reverses its
// block through __local memory with no barrier between the writes and the reads, a data race
// on `tile`. Both twins share it, so device and simulator may agree; the simulator's race
// check (on by default in `clsim verify`) must report it.
#define WG 64

__kernel void missing_barrier(__global const float* x, __global float* y, int n)
{
    long i = get_global_id(0);
    long lid = get_local_id(0);
    long wg = get_local_size(0);
    __local float tile[WG];
    tile[lid] = i < n ? x[i] : 0.0f;
    // the barrier(CLK_LOCAL_MEM_FENCE) that belongs here is missing
    if (i < n) {
        y[i] = tile[wg - 1 - lid];
    }
}
