"""clsim: OpenCL kernels written in Python, run with exact OpenCL semantics, checked and counted.

Write a kernel with ``@clsim.kernel`` using the OpenCL builtin names exported here, then launch
it with ``clsim.run(kernel, global_size, local_size, args)``. See README.md for a guide.
"""

from clsim import api as _api
from clsim.api import *  # noqa: F403
from clsim.api import func, kernel
from clsim.compiler.structs import cstruct
from clsim.errors import (
    BarrierDivergenceError,
    DataRaceError,
    DeviceError,
    DivisionByZeroError,
    InvalidArgumentError,
    InvalidNDRangeError,
    KernelCompileError,
    KernelInterrupted,
    KernelTimeoutError,
    MisalignedAccessError,
    OutOfBoundsError,
    ProfileError,
    SimulationError,
    SlowPathWarning,
    SubGroupError,
    UninitializedReadError,
    VerificationError,
)
from clsim.runtime.arguments import LocalMem
from clsim.runtime.images import Image
from clsim.runtime.launch import RunResult, run

__version__ = "0.1.0"


def load_cl(path_or_source, kernel_name=None, *, options: str = ""):
    """The kernels of an OpenCL C file (or text) as clsim kernels (docs/opencl-c.md): the
    kernel named ``kernel_name``, or a dict of every kernel by name."""
    # Imported here so that `import clsim` does not load libclang (~100 MB) for Python kernels.
    from clsim.frontends.opencl_c import load_cl as _load_cl
    return _load_cl(path_or_source, kernel_name, options=options)


def to_cl(kernel, args=None, *, local_size=None, subgroup_size=None) -> str:
    """OpenCL C source of a Python kernel (docs/to_cl.md); see
    ``clsim.backends.opencl_c.to_cl`` (imported on first use: ``import clsim`` stays light)."""
    from clsim.backends.opencl_c import to_cl as print_cl

    return print_cl(kernel, args, local_size=local_size, subgroup_size=subgroup_size)


__all__ = [
    "BarrierDivergenceError", "DataRaceError", "Image", "DeviceError", "DivisionByZeroError",
    "InvalidArgumentError", "InvalidNDRangeError", "KernelCompileError", "KernelInterrupted",
    "KernelTimeoutError", "LocalMem", "MisalignedAccessError", "OutOfBoundsError",
    "ProfileError", "RunResult", "SimulationError", "SubGroupError", "UninitializedReadError",
    "VerificationError", "cstruct", "func", "kernel", "load_cl", "run", "to_cl",
    *_api.BUILTIN_NAMES,
    *_api.atomic_constant_names,
    *[n for n in dir(_api) if n.isupper()],
]
