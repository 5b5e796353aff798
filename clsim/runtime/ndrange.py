"""ND-range validation, mirroring what clEnqueueNDRangeKernel accepts and rejects.

OpenCL 2.0+ allows a global size that is not a multiple of the local size (the last group is
smaller); OpenCL 1.2 does not. ``local_size=None`` picks a legal size the way implementations
do: the largest divisor of each global dimension that keeps the group within the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clsim.errors import InvalidNDRangeError

DEFAULT_MAX_WORK_GROUP_SIZE = 1024
# Work-item ids, group counts and offsets are 64-bit signed in the generated code (negative
# indices are errors there, never wrap-around), so a range must stay below 2**63 work-items.
_MAX_ITEMS = 2**63 - 1
_AUTO_LIMIT = 256  # what implementations typically pick when the user leaves it to them


@dataclass(frozen=True)
class NDRange:
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    offset: tuple[int, int, int]
    work_dim: int

    @property
    def num_groups(self) -> tuple[int, int, int]:
        return tuple(-(-g // local) for g, local in zip(self.global_size, self.local_size,
                                                         strict=True))

    @property
    def total_groups(self) -> int:
        a, b, c = self.num_groups
        return a * b * c

    @property
    def work_items(self) -> int:
        a, b, c = self.global_size
        return a * b * c

    @property
    def group_items(self) -> int:
        a, b, c = self.local_size
        return a * b * c


def _dimension(value, what: str, kernel: str) -> int:
    """One size or offset: an int (or numpy integer), never a bool, float or string, because
    int() would turn 7.9 into 7 and True into 1 without a word."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise InvalidNDRangeError(
            f"{kernel}: {what} has the entry {value!r} ({type(value).__name__}); sizes must be "
            "ints. Pass e.g. 128 or (128, 4)", cl_error="CL_INVALID_WORK_DIMENSION",
            kernel=kernel)
    return int(value)


def _as_tuple(value, what: str, kernel: str) -> tuple[int, ...]:
    if isinstance(value, str | bytes):  # tuple("128") would be the 3-D range (1, 2, 8)
        raise InvalidNDRangeError(
            f"{kernel}: {what} is the string {value!r}; pass an int or a tuple of 1 to 3 ints, "
            "e.g. 128 or (128, 4)", cl_error="CL_INVALID_WORK_DIMENSION", kernel=kernel)
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, tuple | list | np.ndarray):
        value = (value,)
    dims = tuple(_dimension(v, what, kernel) for v in value)
    if not 1 <= len(dims) <= 3:
        raise InvalidNDRangeError(
            f"{kernel}: {what} has {len(dims)} dimensions; OpenCL allows 1 to 3 "
            "(CL_INVALID_WORK_DIMENSION)", cl_error="CL_INVALID_WORK_DIMENSION", kernel=kernel)
    return dims


def _auto_local(global_size: tuple[int, ...], limit: int) -> tuple[int, ...]:
    local = []
    budget = min(limit, _AUTO_LIMIT)
    for g in global_size:
        best = 1
        for d in range(1, min(g, budget) + 1):
            if g % d == 0:
                best = d
        local.append(best)
        budget = max(1, budget // best)
    return tuple(local)


def _check_fits(global_size: tuple[int, ...], offset: tuple[int, ...], kernel: str) -> None:
    items = 1
    for d, (size, start) in enumerate(zip(global_size, offset, strict=True)):
        items *= size
        if start < 0 or size + start > _MAX_ITEMS:
            raise InvalidNDRangeError(
                f"{kernel}: global_size[{d}]={size} with global_offset[{d}]={start} gives "
                "work-item ids outside 0 .. 2**63-1, which clsim's 64-bit ids cannot hold "
                "(CL_INVALID_GLOBAL_WORK_SIZE). Use a smaller range",
                cl_error="CL_INVALID_GLOBAL_WORK_SIZE", kernel=kernel)
    if items > _MAX_ITEMS:
        raise InvalidNDRangeError(
            f"{kernel}: global_size {global_size} is {items:,} work-items, more than the "
            "2**63-1 a 64-bit linear id can count (CL_INVALID_GLOBAL_WORK_SIZE). Use a smaller "
            "range", cl_error="CL_INVALID_GLOBAL_WORK_SIZE", kernel=kernel)


def make_ndrange(global_size, local_size, *, kernel: str, offset=None, opencl_version="3.0",
                 max_work_group_size: int = DEFAULT_MAX_WORK_GROUP_SIZE) -> NDRange:
    g = _as_tuple(global_size, "global_size", kernel)
    if any(v <= 0 for v in g):
        raise InvalidNDRangeError(
            f"{kernel}: global_size {g} has a zero or negative dimension "
            "(CL_INVALID_GLOBAL_WORK_SIZE)", cl_error="CL_INVALID_GLOBAL_WORK_SIZE",
            kernel=kernel)
    if local_size is None:
        local = _auto_local(g, max_work_group_size)
    else:
        local = _as_tuple(local_size, "local_size", kernel)
        if len(local) != len(g):
            raise InvalidNDRangeError(
                f"{kernel}: local_size {local} has {len(local)} dimensions but global_size {g} "
                f"has {len(g)} (CL_INVALID_WORK_GROUP_SIZE)",
                cl_error="CL_INVALID_WORK_GROUP_SIZE", kernel=kernel)
        if any(v <= 0 for v in local):
            raise InvalidNDRangeError(
                f"{kernel}: local_size {local} has a zero or negative dimension "
                "(CL_INVALID_WORK_GROUP_SIZE)", cl_error="CL_INVALID_WORK_GROUP_SIZE",
                kernel=kernel)
    items = 1
    for v in local:
        items *= v
    if items > max_work_group_size:
        raise InvalidNDRangeError(
            f"{kernel}: local_size {local} is {items} work-items, over the device limit of "
            f"{max_work_group_size} (CL_INVALID_WORK_GROUP_SIZE). Use a smaller work-group",
            cl_error="CL_INVALID_WORK_GROUP_SIZE", kernel=kernel)
    if str(opencl_version).startswith("1."):
        for d, (gv, lv) in enumerate(zip(g, local, strict=True)):
            if gv % lv:
                raise InvalidNDRangeError(
                    f"{kernel}: global_size[{d}]={gv} is not a multiple of local_size[{d}]={lv}"
                    f"; OpenCL {opencl_version} requires it (CL_INVALID_WORK_GROUP_SIZE). Round "
                    "the global size up and guard the tail with 'if i < n'",
                    cl_error="CL_INVALID_WORK_GROUP_SIZE", kernel=kernel)
    off = _as_tuple(offset, "global_offset", kernel) if offset is not None else (0,) * len(g)
    if len(off) != len(g):
        raise InvalidNDRangeError(f"{kernel}: global_offset needs {len(g)} dimensions",
                                  cl_error="CL_INVALID_GLOBAL_OFFSET", kernel=kernel)
    _check_fits(g, off, kernel)
    pad = (1,) * (3 - len(g))
    return NDRange(g + pad, local + pad, off + (0,) * (3 - len(g)), len(g))
