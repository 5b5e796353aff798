// PLANTED BUG (verifier tests): saxpy with FP_CONTRACT ON, so the compiler may fuse
// a * x[i] + y[i] into one fma (one rounding instead of two). PoCL, the Intel CPU runtime and
// Oclgrind all fuse it: the verifier must report the first index where the fused result
// differs from the separately rounded one.
#pragma OPENCL FP_CONTRACT ON

__kernel void saxpy(float a, __global const float* x, __global float* y, int n)
{
    long i = get_global_id(0);
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
