// vector_add: c = a + b, one work-item per element, guarded tail.
// Twin of kernels_py/vector_add.py; ids are long because the Python kernel's are int64.
#pragma OPENCL FP_CONTRACT OFF

__kernel void vector_add(__global const float* a, __global const float* b, __global float* c,
                         int n)
{
    long i = get_global_id(0);
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
