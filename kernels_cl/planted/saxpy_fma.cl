// PLANTED BUG (verifier tests): saxpy with an explicit fma(), which rounds once where the
// simulator's `a * x[i] + y[i]` rounds twice. Contraction is OFF; the fma is in the source.
#pragma OPENCL FP_CONTRACT OFF

__kernel void saxpy(float a, __global const float* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        y[i] = fma(a, x[i], y[i]);
    }
}
