// Baseline for the planted contraction bugs (verifier tests): y[i] = a * x[i] + y[i], multiply
// and add rounded separately, as the simulator computes them (FP_CONTRACT OFF).
// Twin of the `saxpy` kernel in tests/device/test_verifier.py.
#pragma OPENCL FP_CONTRACT OFF

__kernel void saxpy(float a, __global const float* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
