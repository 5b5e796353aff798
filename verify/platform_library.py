"""Which ICD library an OpenCL platform was loaded from, so that two drivers of one kind (the
wheel's PoCL and Debian's) get the same short names on every machine and every run.

The ICD loader (ocl-icd) reads its vendors folder in directory order, which depends on the file
system, so numbering platforms as enumerated would make ``pocl`` the wheel's on one machine and
Debian's on another. An ICD driver's platform handle starts with a pointer to its dispatch
table, a static table inside the driver's own library (the cl_khr_icd layout), so ``dladdr`` on
that pointer names the library file.

This module only reads handles; discovery and naming live in ``verify.devices``.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from typing import Any


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def platform_library(platform: Any) -> str:
    """The path of the library holding the platform's dispatch table; "" when not found (a
    driver that is not an ICD, or a libc without dladdr)."""
    try:
        dispatch = ctypes.c_void_p.from_address(platform.int_ptr).value
        if not dispatch:
            return ""
        libc = ctypes.CDLL(None)
        info = _DlInfo()
        if not libc.dladdr(ctypes.c_void_p(dispatch), ctypes.byref(info)):
            return ""
    except (OSError, AttributeError, ValueError):
        return ""
    return os.fsdecode(info.dli_fname or b"")


def library_rank(library: str, entries: Sequence[tuple[str, str]]) -> int:
    """The position of ``library`` among the ICD entries (verify.devices.icd_entries: the
    wheels' drivers first, then the user's, then the system's); len(entries) when absent."""
    if library:
        real = os.path.realpath(library)
        names = {os.path.basename(library), os.path.basename(real)}
        for index, (_, lib) in enumerate(entries):
            # a system .icd may name its library bare (libpocl.so.2.10.0), for dlopen to find
            if os.path.realpath(lib) == real if os.path.isabs(lib) else lib in names:
                return index
    return len(entries)
