"""The names a kernel author writes: decorators, builtin stand-ins and OpenCL constants.

Builtins here are markers: the compiler recognises them by identity and emits code for them, so
they do nothing when called from plain Python (they raise and say so). Their semantics live in
``clsim.compiler.builtins`` (typing, code) and ``clsim.compiler.helpers`` (runtime source).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from clsim.errors import KernelCompileError


class Builtin:
    """Stand-in for an OpenCL builtin; only meaningful inside a kernel."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise KernelCompileError(
            f"clsim.{self.name}() can only be called inside a @clsim.kernel or @clsim.func. "
            "Run the kernel with clsim.run(...)"
        )

    def __repr__(self) -> str:
        return f"<clsim builtin {self.name}>"


class KernelFunction:
    """A Python function marked as an OpenCL kernel (``@kernel``) or helper (``@func``)."""

    def __init__(self, fn, is_kernel: bool):
        if not inspect.isfunction(fn):
            raise KernelCompileError(f"@clsim.{'kernel' if is_kernel else 'func'} needs a function")
        self.fn = fn
        self.name = fn.__name__
        self.is_kernel = is_kernel
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args, **kwargs):
        kind = "kernel" if self.is_kernel else "helper"
        raise KernelCompileError(
            f"{self.name} is a clsim {kind}; launch kernels with clsim.run({self.name}, "
            "global_size=..., local_size=..., args=...) and call helpers only from kernels"
        )

    def __repr__(self) -> str:
        return f"<clsim {'kernel' if self.is_kernel else 'func'} {self.name}>"


def kernel(fn) -> KernelFunction:
    """Mark ``fn`` as an OpenCL kernel written in Python."""
    return KernelFunction(fn, is_kernel=True)


def func(fn) -> KernelFunction:
    """Mark ``fn`` as a helper callable from kernels (may contain barriers; then it is inlined)."""
    return KernelFunction(fn, is_kernel=False)


BUILTIN_NAMES = (
    # work-items
    "get_global_id", "get_local_id", "get_group_id", "get_global_size", "get_local_size",
    "get_enqueued_local_size", "get_num_groups", "get_work_dim", "get_global_offset",
    "get_global_linear_id", "get_local_linear_id",
    # synchronisation and memory
    "barrier", "work_group_barrier", "mem_fence", "local_array", "private_array",
    # math
    "sqrt", "rsqrt", "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc",
    "floor", "ceil", "trunc", "round", "rint", "fabs", "pow", "powr", "fmax", "fmin", "fma",
    "mad", "native_exp", "native_log", "native_sqrt", "native_rsqrt", "native_recip",
    "native_divide", "native_sin", "native_cos", "half_exp", "isnan", "isinf", "isfinite",
    "signbit", "copysign", "min", "max", "clamp", "abs", "select", "mix", "sign",
    # conversions and reinterpretation
    "convert_char", "convert_uchar", "convert_short", "convert_ushort", "convert_int",
    "convert_uint", "convert_long", "convert_ulong", "convert_float", "convert_double",
    "as_int", "as_uint", "as_float", "as_long", "as_ulong", "as_double",
    # vectors
    "vload2", "vload4", "vload8", "vstore2", "vstore4", "vstore8",
    # sub-groups (cl_khr_subgroups and the cl_khr_subgroup_* extensions; docs/subgroups.md)
    "get_sub_group_size", "get_max_sub_group_size", "get_num_sub_groups",
    "get_enqueued_num_sub_groups", "get_sub_group_id", "get_sub_group_local_id",
    "sub_group_barrier", "sub_group_reduce_add", "sub_group_reduce_min", "sub_group_reduce_max",
    "sub_group_scan_inclusive_add", "sub_group_scan_inclusive_min",
    "sub_group_scan_inclusive_max", "sub_group_scan_exclusive_add",
    "sub_group_scan_exclusive_min", "sub_group_scan_exclusive_max", "sub_group_broadcast",
    "sub_group_any", "sub_group_all", "sub_group_shuffle", "sub_group_shuffle_xor",
    "sub_group_shuffle_up", "sub_group_shuffle_down", "sub_group_clustered_reduce_add",
    "sub_group_clustered_reduce_min", "sub_group_clustered_reduce_max",
    "sub_group_ballot", "sub_group_ballot_bit_count", "sub_group_ballot_bit_extract",
    "sub_group_ballot_inclusive_scan", "sub_group_ballot_exclusive_scan",
    "sub_group_ballot_find_lsb", "sub_group_ballot_find_msb",
    # work-group collectives (OpenCL 2.0 work-group functions)
    "work_group_reduce_add", "work_group_reduce_min", "work_group_reduce_max",
    "work_group_broadcast", "work_group_scan_inclusive_add", "work_group_scan_inclusive_min",
    "work_group_scan_inclusive_max", "work_group_scan_exclusive_add",
    "work_group_scan_exclusive_min", "work_group_scan_exclusive_max", "work_group_any",
    "work_group_all",
    # atomics on global buffers and local arrays (docs/subgroups.md#atomics)
    "atomic_add", "atomic_sub", "atomic_xchg", "atomic_min", "atomic_max", "atomic_and",
    "atomic_or", "atomic_xor", "atomic_inc", "atomic_dec", "atomic_cmpxchg",
)

_builtins = {name: Builtin(name) for name in BUILTIN_NAMES}
globals().update(_builtins)


def builtin_by_identity(obj) -> str | None:
    """The builtin's name when ``obj`` is one of clsim's builtin markers."""
    if isinstance(obj, Builtin) and _builtins.get(obj.name) is obj:
        return obj.name
    return None


def register_builtin(name: str) -> Builtin:
    """Add a builtin marker (used by extensions such as sub-groups and atomics)."""
    if name not in _builtins:
        _builtins[name] = Builtin(name)
    return _builtins[name]


# Fence flags are bits, as in OpenCL, so they can be or-ed.
CLK_LOCAL_MEM_FENCE = 1
CLK_GLOBAL_MEM_FENCE = 2
CLK_IMAGE_MEM_FENCE = 4

INFINITY = np.float32(np.inf)
NAN = np.float32(np.nan)
HUGE_VALF = np.float32(np.inf)
MAXFLOAT = FLT_MAX = np.float32(np.finfo(np.float32).max)
FLT_MIN = np.float32(np.finfo(np.float32).tiny)
FLT_EPSILON = np.float32(np.finfo(np.float32).eps)
DBL_MAX = np.float64(np.finfo(np.float64).max)
DBL_MIN = np.float64(np.finfo(np.float64).tiny)
DBL_EPSILON = np.float64(np.finfo(np.float64).eps)
M_PI_F = np.float32(math.pi)
M_E_F = np.float32(math.e)
M_LN2_F = np.float32(math.log(2))
M_LOG2E_F = np.float32(math.log2(math.e))
M_SQRT2_F = np.float32(math.sqrt(2))
M_PI = np.float64(math.pi)
M_E = np.float64(math.e)
CHAR_MAX, CHAR_MIN = np.int8(127), np.int8(-128)
SHRT_MAX, SHRT_MIN = np.int16(32767), np.int16(-32768)
INT_MAX, INT_MIN = np.int32(2**31 - 1), np.int32(-(2**31))
UINT_MAX = np.uint32(2**32 - 1)
LONG_MAX, LONG_MIN = np.int64(2**63 - 1), np.int64(-(2**63))
ULONG_MAX = np.uint64(2**64 - 1)
