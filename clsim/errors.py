"""The clsim exception hierarchy.

Every error a user can cause is a ``SimulationError`` subclass carrying structured fields
(kernel, line, work-item ids, buffer, index) so tests and tools can inspect them, and a message
of the shape ``<where>: <what>. <how to fix>``. Libraries raise; only the CLI turns these into a
single line and an exit code.
"""

from __future__ import annotations


class SimulationError(Exception):
    """Base of every error clsim raises on purpose."""

    def __init__(self, message: str, **fields):
        super().__init__(message)
        self.message = message
        self.fields = fields
        for key, value in fields.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        return self.message


class KernelCompileError(SimulationError):
    """The kernel uses a Python construct the OpenCL subset does not have."""


class IncludeRefused(KernelCompileError):
    """An OpenCL C ``#include`` that could read a file outside the kernel's folder
    (``clsim.cl_includes``)."""


class InvalidNDRangeError(SimulationError):
    """The ND-range is illegal; ``cl_error`` names the OpenCL status it mirrors."""


class InvalidArgumentError(SimulationError):
    """A kernel argument does not fit the kernel (mirrors CL_INVALID_KERNEL_ARGS and friends)."""


class OutOfBoundsError(SimulationError):
    """A load or store outside a buffer or local/private array."""


class MisalignedAccessError(SimulationError):
    """A vector access through a cast pointer (a view) at a byte offset that is not a multiple
    of the vector's size (undefined behaviour in OpenCL C)."""


class BarrierDivergenceError(SimulationError):
    """Work-items of one group disagree about a barrier or a collective."""


class SubGroupError(SimulationError):
    """A sub-group builtin was called with an argument the spec forbids (lane out of range...)."""


class DataRaceError(SimulationError):
    """Two work-items access one element without ordering, at least one a plain write."""


class UninitializedReadError(SimulationError):
    """A load of local or private memory that no work-item of the group has written."""


class DivisionByZeroError(SimulationError):
    """Integer division or remainder by zero (undefined behaviour in OpenCL C)."""


class ProfileError(SimulationError):
    """A device profile is missing or malformed."""


class DeviceError(SimulationError):
    """An OpenCL device is missing, lacks a feature, or failed to build or run a kernel."""


class DeviceUnavailable(DeviceError):
    """The requested device is not present on this machine."""


class DeviceLacksFeature(DeviceError):
    """The device exists but cannot run this kernel (sub-groups, fp16, work-group size...)."""


class VerificationError(SimulationError):
    """The simulator and a device disagree beyond the stated policy."""



# -- A launch stopped from outside (clsim.runtime.watch) -------------------------------------
# Fields: kernel, groups_done, total_groups, elapsed_s, still_running (a work-group that compiled
# code could not leave is still running in a background thread).


class KernelTimeoutError(SimulationError, TimeoutError):
    """The launch ran past ``run(..., timeout_s=...)``."""


class KernelInterrupted(SimulationError, KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped the launch. Also a KeyboardInterrupt, so code that catches
    Exception does not swallow it."""


class LibraryImportError(SimulationError):
    """A module of a kernel library (or a command) failed to import: ``module`` names it and
    ``package`` the missing package, when one is missing."""


# -- Warnings: nothing wrong, but worth knowing ------------------------------------------------


class SlowPathWarning(UserWarning):
    """A launch took a correct but much slower path than usual (e.g. work-groups of a JIT
    launch run again as plain Python); the message names the kernel and why."""
