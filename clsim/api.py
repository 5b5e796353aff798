"""The names a kernel author writes: decorators, builtin stand-ins and OpenCL constants.

Builtins here are markers: the compiler recognises them by identity and emits code for them, so
they do nothing when called from plain Python (they raise and say so). One marker exists per
public entry of the builtin table (``clsim.compiler.builtins``), which holds their semantics.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from clsim.compiler.builtins import PUBLIC_NAMES
from clsim.compiler.builtins import atomics_c11 as _atomics_c11
from clsim.errors import KernelCompileError
from clsim.runtime import images as _images


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


# One marker per public builtin of the table (clsim.compiler.builtins).
BUILTIN_NAMES = PUBLIC_NAMES

_builtins = {name: Builtin(name) for name in BUILTIN_NAMES}
globals().update(_builtins)


def builtin_by_identity(obj) -> str | None:
    """The builtin's name when ``obj`` is one of clsim's builtin markers."""
    if isinstance(obj, Builtin) and _builtins.get(obj.name) is obj:
        return obj.name
    return None


# Fence flags are bits, as in OpenCL, so they can be or-ed.
CLK_LOCAL_MEM_FENCE = 1
CLK_GLOBAL_MEM_FENCE = 2
CLK_IMAGE_MEM_FENCE = 4
# Sampler bits (a module-level SMP = CLK_... | CLK_... is a const sampler_t).
globals().update(_images.SAMPLER_CONSTANTS)

# memory_order_* and memory_scope_* of the OpenCL 2.0 atomics (values as clang defines them).
atomic_constant_names = tuple(_atomics_c11.CONSTANTS)
globals().update({k: np.int32(v) for k, v in _atomics_c11.CONSTANTS.items()})

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
