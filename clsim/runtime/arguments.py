"""Kernel arguments checked before anything compiles, mirroring clSetKernelArg's refusals.

``kernel_arg_types`` turns ``run()``'s argument tuple into the type map the compiler
specialises on and the values the launch passes, and refuses what no device would take (empty
or non-contiguous buffers, unsupported dtypes, non-native byte order, Python scalars) and what
Numba would only refuse with a long typing error (a read-only array the kernel stores to).
``ordered_args`` accepts the arguments as a tuple or as a dict keyed by parameter name. It
does not look at sizes against the ND-range: out-of-bounds accesses are the bounds checks'
concern.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from clsim.compiler import ctypes as ct
from clsim.compiler.structs import struct_of
from clsim.errors import InvalidArgumentError
from clsim.runtime.images import Image

SUPPORTED_DTYPES = frozenset(set(ct.INT_TYPES) | {"float16", "float32", "float64", "bool"})
# Builtins that write through a buffer argument, and which argument: atomics take p[i] or
# (p, i) first, vstoreN(v, offset, p) third.
_WRITTEN_ARGUMENT = {"atomic_": 0, "atom_": 0, "vstore": 2}


@dataclass(frozen=True)
class LocalMem:
    """A ``__local T *`` kernel argument of ``nbytes`` bytes, one block per work-group
    (pyopencl's ``LocalMemory``): the same object for ``clsim.run`` and for devices
    (``verify``). In a Python kernel the parameter is that many local bytes, C's
    ``local uchar *``; ``p = view(p, np.float32)`` makes it C's ``local float *p``."""

    nbytes: int

    def __post_init__(self):
        if isinstance(self.nbytes, bool) or not isinstance(self.nbytes, int | np.integer) \
                or self.nbytes <= 0:
            raise InvalidArgumentError(f"LocalMem({self.nbytes!r}): the size is a positive "
                                       "number of bytes (CL_INVALID_ARG_SIZE)")


def ordered_args(kernel: str, params: list[str], args) -> tuple:
    """``args`` in parameter order: a tuple or list as it is, a dict by parameter name (as
    ``verify.compare`` takes them), refusing missing and unknown names."""
    if not isinstance(args, Mapping):
        return tuple(args)
    unknown = [name for name in args if name not in params]
    missing = [name for name in params if name not in args]
    if unknown or missing:
        what = "; ".join(part for part in (
            f"no parameter named {', '.join(map(repr, unknown))}" if unknown else "",
            f"missing {', '.join(map(repr, missing))}" if missing else "") if part)
        raise InvalidArgumentError(
            f"{kernel}: the arguments dict does not match the parameters ({', '.join(params)})"
            f": {what} (CL_INVALID_KERNEL_ARGS). Key the dict by the kernel's parameter names",
            kernel=kernel, argument=(unknown or missing)[0])
    return tuple(args[name] for name in params)


def kernel_arg_types(kernel: str, params: list[str], args, stored: set[str]
                     ) -> tuple[dict, list]:
    """(types by parameter, values to pass); ``stored``: the buffers the kernel writes."""
    if len(args) != len(params):
        raise InvalidArgumentError(
            f"{kernel} takes {len(params)} arguments ({', '.join(params)}) but got "
            f"{len(args)} (CL_INVALID_KERNEL_ARGS)", kernel=kernel)
    types, values = {}, []
    for name, value in zip(params, args, strict=True):
        if value is None:  # a null pointer (compiler/nulls.py); the code never reads it
            types[name] = "null"
            values.append(np.zeros(1, np.uint8))
        elif isinstance(value, Image):  # its pixels' rows, viewing the user's array
            if value.access == "write_only" and not value.data.flags.writeable:
                raise read_only_error(kernel, [name])
            types[name] = ct.ImageT(value.kind, value.order, value.channel_type, value.access)
            values.append(value.pixels())
        elif isinstance(value, LocalMem):  # allocated per work-group by the kernel
            types[name] = ct.ArrayT("uint8", 1, "local", (int(value.nbytes),))
            values.append(np.zeros(1, np.uint8))
        elif isinstance(value, np.ndarray) and value.ndim > 0:
            _check_buffer(kernel, name, value, name in stored)
            if value.dtype.names is not None:  # a packed struct buffer: its bytes
                types[name] = ct.ArrayT(struct_of(value.dtype, f"{kernel}: buffer '{name}': "),
                                        1, "global")
                values.append(value.reshape(-1).view(np.uint8))
                continue
            types[name] = ct.ArrayT(value.dtype.name, 1, "global")
            # generated code sees a half buffer as its bits (Numba has no float16)
            values.append(value.reshape(-1).view(ct.storage_dtype(value.dtype.name)))
        elif isinstance(value, np.void | np.ndarray) and value.dtype.names is not None:
            # a struct by value (a structured scalar or 0-d record): its bytes, read-only
            _check_byte_order(kernel, "argument", name, value)
            types[name] = struct_of(value.dtype, f"{kernel}: argument '{name}': ")
            values.append(np.frombuffer(value.tobytes(), np.uint8).copy())
        elif isinstance(value, np.generic | np.ndarray):
            scalar = value[()] if isinstance(value, np.ndarray) else value
            if scalar.dtype.name not in SUPPORTED_DTYPES:
                raise InvalidArgumentError(
                    f"{kernel}: scalar '{name}' has dtype {scalar.dtype}", kernel=kernel)
            types[name] = scalar.dtype.name
            values.append(np.dtype(ct.register_dtype(scalar.dtype.name)).type(scalar))
        else:
            hint = "np.int32(...)" if isinstance(value, int) else "np.float32(...)"
            raise InvalidArgumentError(
                f"{kernel}: argument '{name}' is a Python {type(value).__name__}; pass a numpy "
                f"scalar of the type the kernel declares, e.g. {hint}, or a numpy array for a "
                "buffer (CL_INVALID_ARG_SIZE)", kernel=kernel, argument=name)
    return types, values


def _check_buffer(kernel: str, name: str, value: np.ndarray, stored: bool) -> None:
    if value.size == 0:
        raise InvalidArgumentError(
            f"{kernel}: buffer '{name}' is empty; OpenCL buffers need at least one "
            "element (CL_INVALID_BUFFER_SIZE)", kernel=kernel, buffer=name)
    if not value.flags.c_contiguous:
        raise InvalidArgumentError(
            f"{kernel}: buffer '{name}' is not C-contiguous, so results could not be "
            "written back in place. Pass np.ascontiguousarray(...)", kernel=kernel, buffer=name)
    _check_byte_order(kernel, "buffer", name, value)
    if value.dtype.names is None and value.dtype.name not in SUPPORTED_DTYPES:
        raise InvalidArgumentError(
            f"{kernel}: buffer '{name}' has dtype {value.dtype}, which kernels cannot "
            "use yet", kernel=kernel, buffer=name)
    if stored and not value.flags.writeable:
        raise read_only_error(kernel, [name])


def _check_byte_order(kernel: str, what: str, name: str, value) -> None:
    """Generated code reads the bytes in the host's order: a big-endian array would be read as
    garbage and stored back byte-swapped, silently. Refused rather than converted, since a
    converted copy would also have to be converted back into the caller's array."""
    if not value.dtype.isnative:
        raise InvalidArgumentError(
            f"{kernel}: {what} '{name}' has non-native byte order (dtype {value.dtype.str}); "
            "OpenCL devices read memory in the host's byte order. Pass "
            f"{name}.astype({name}.dtype.newbyteorder('=')) and convert results back if "
            "needed", kernel=kernel, argument=name)


def read_only_error(kernel: str, names: list[str]) -> InvalidArgumentError:
    """The kernel stores to a read-only array (``flags.writeable`` False)."""
    which = f"buffer '{names[0]}' is" if len(names) == 1 else \
        f"one of the buffers {', '.join(repr(n) for n in names)} is"
    return InvalidArgumentError(
        f"{kernel}: {which} read-only (flags.writeable is False) and the kernel stores to it "
        "(CL_INVALID_MEM_OBJECT, a CL_MEM_READ_ONLY buffer). Pass a writable copy, "
        "np.array(...), or declare the output writable", kernel=kernel, buffer=names[0])


def stored_buffers(tree: ast.FunctionDef, params: list[str]) -> set[str]:
    """Parameters the kernel body itself stores to: ``p[i] = ...``, ``p[i] += ...``, atomics
    and vstoreN. Stores inside helpers are not seen here; the launch converts Numba's refusal
    of those (see ``read_only_error``)."""
    names = set(params)
    found: set[str] = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call):
            position = _written_argument(node.func)
            if position is not None and position < len(node.args):
                arg = node.args[position]
                targets = [arg.value if isinstance(arg, ast.Subscript) else arg]
        for target in targets:
            while isinstance(target, ast.Attribute | ast.Subscript) and \
                    isinstance(target.value, ast.Attribute | ast.Subscript):
                target = target.value  # x[i].qs[j] = v writes x
            base = target.value if isinstance(target, ast.Subscript) else target
            if isinstance(base, ast.Name) and base.id in names and (
                    isinstance(target, ast.Subscript) or isinstance(node, ast.Call)):
                found.add(base.id)
    return found


def _written_argument(func: ast.expr) -> int | None:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return next((pos for prefix, pos in _WRITTEN_ARGUMENT.items() if name.startswith(prefix)),
                None)
