"""Running compiled kernels: ND-range checks, arguments, the module cache, error decoding."""
