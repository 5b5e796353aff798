// PLANTED BUG (verifier tests): vector_add with an off-by-one tail guard.
// Twin of kernels_py/vector_add.py except that the guard reads `i < n - 1`, so the last element
// is never written: the verifier must report buffer 'c' at index n - 1.
#pragma OPENCL FP_CONTRACT OFF

__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         int n)
{
    long i = get_global_id(0);
    if (i < n - 1) {
        c[i] = a[i] + b[i];
    }
}
