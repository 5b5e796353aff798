// PLANTED BUG (verifier tests, tests/device/planted_bugs.py): y[i] = x[i] + x[i + 1] under the
// guard i < n, so the last work-item reads x[n], one past the end. The simulator's bounds
// check must report it (the device reads whatever lies there).
__kernel void read_past_end(__global const float* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        y[i] = x[i] + x[i + 1];
    }
}
