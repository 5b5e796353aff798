// The OpenCL C twin of my_kernels.saxpy (docs/verifying.md). FP_CONTRACT OFF: a*x+y rounded
// twice, as numpy and the simulator do.
#pragma OPENCL FP_CONTRACT OFF

__kernel void saxpy(float a, __global const float *x, __global float *y, int n) {
    int i = get_global_id(0);
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
