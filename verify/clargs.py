"""Kernel arguments before a device launch: one buffer per host memory, and the ``.cl``
signature checked against the values given.

- ``memory_groups``: arguments that are one numpy array (the same object, views of the same
  memory with the same offset, shape and strides, or contiguous views of the same bytes as
  other dtypes, ``raw`` and ``raw.view(np.float32)``) share one ``cl_mem``, as they share memory
  on the host: OpenCL code may rely on it (ggml passes one buffer for "no mask", and rope binds
  src0's buffer, a ``char*``, again as the ``float*`` src2). Views that overlap otherwise
  (``base[0:256]`` and ``base[1:257]``) are refused with an error naming both: binding the
  second as a sub-buffer would need its offset aligned to the device's base-address alignment
  (CL_DEVICE_MEM_BASE_ADDR_ALIGN, 128 bytes and more), which numpy views do not give.
- ``copy_args``: copies of the arguments that keep that sharing (the verifier gives each side
  its own copy); ``view_as`` re-views one buffer's array as another argument's dtype and shape;
  ``pack_shared``/``unpack_shared`` keep the sharing across the pickling to a worker process.
- ``check_signature``: the number of arguments, each address space, and each element type
  against the kernel's argument info (built with ``-cl-kernel-arg-info``), so a float64 array
  sent to a ``float*`` is an error naming the parameter, not a wrong result.

This module builds and launches nothing (``verify.clrun``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clsim.errors import InvalidArgumentError
from clsim.runtime.images import Image

# OpenCL C scalar type -> (numpy kind class, bytes). Signedness is not checked: the bits are
# the same and kernels pass offsets as either.
_SCALARS = {"char": ("i", 1), "uchar": ("i", 1), "short": ("i", 2), "ushort": ("i", 2),
            "int": ("i", 4), "uint": ("i", 4), "long": ("i", 8), "ulong": ("i", 8),
            "half": ("f", 2), "float": ("f", 4), "double": ("f", 8), "bool": ("i", 1)}
_ANY_POINTEE = {"void", "char", "uchar"}  # byte pointers take any buffer (ggml-style casts)
_VECTOR = re.compile(r"^(char|uchar|short|ushort|int|uint|long|ulong|half|float|double)"
                     r"(2|3|4|8|16)$")
_CLASS = {"f": "f", "i": "i", "u": "i", "b": "i"}
_QUALIFIER_LOCAL = 0x119C
_QUALIFIER_PRIVATE = 0x119E


def _memory(arr: np.ndarray) -> tuple[int, int, int]:
    low, high = np.byte_bounds(arr)
    return low, high, arr.__array_interface__["data"][0]


def _same_view(a: np.ndarray, b: np.ndarray) -> bool:
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype)


def _same_bytes(a: np.ndarray, b: np.ndarray) -> bool:
    """Both C-contiguous over exactly the same bytes, whatever their dtypes and shapes."""
    return (a.flags.c_contiguous and b.flags.c_contiguous and a.nbytes == b.nbytes
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


def view_as(array: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """``array`` (a buffer's host array) seen as ``dtype`` and ``shape``: the argument that
    shares its memory (``memory_groups``) gets its own view of the one copy."""
    if array.dtype == dtype and array.shape == shape:
        return array
    return array.reshape(-1).view(np.uint8).view(dtype).reshape(shape)


@dataclass(frozen=True)
class SharedMemory:
    """An argument sent to a worker process as "argument ``index``'s memory, seen as ``dtype``
    and ``shape``": pickling would make a view an array of its own, two buffers on the device."""
    index: int
    dtype: np.dtype
    shape: tuple[int, ...]


def pack_shared(args: Sequence[Any], kernel_name: str = "kernel") -> list[Any]:
    """``args`` with each argument that shares an earlier one's memory as a SharedMemory."""
    groups = memory_groups(args, kernel_name)
    return [SharedMemory(group, arg.dtype, arg.shape) if group not in (None, index) else arg
            for index, (arg, group) in enumerate(zip(args, groups, strict=True))]


def unpack_shared(args: Sequence[Any]) -> list[Any]:
    """The arguments ``pack_shared`` packed, the shared ones as views again."""
    out: list[Any] = []
    for arg in args:
        out.append(view_as(out[arg.index], arg.dtype, arg.shape)
                   if isinstance(arg, SharedMemory) else arg)
    return out


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return bool(np.shares_memory(a, b, max_work=10**6))
    except np.exceptions.TooHardError:
        return True


def memory_groups(args: Sequence[Any], kernel_name: str = "kernel",
                  names: Sequence[str] | None = None) -> list[int | None]:
    """For each argument, the index of the first argument with the same memory (itself when
    first; None for scalars, 0-d arrays and local memory). Raises InvalidArgumentError when two
    arrays overlap without being the same view."""
    groups: list[int | None] = []
    arrays: list[tuple[int, np.ndarray]] = []
    for index, arg in enumerate(args):
        if not isinstance(arg, np.ndarray) or arg.ndim == 0 or arg.nbytes == 0:
            groups.append(None)
            continue
        group = index
        for other, seen in arrays:
            if _same_view(arg, seen) or _same_bytes(arg, seen):
                group = other
                break
            if _overlap(arg, seen):
                label = names or [f"argument {i}" for i in range(len(args))]
                raise InvalidArgumentError(
                    f"{kernel_name}: {label[other]!s} and {label[index]!s} are overlapping "
                    "views of one array at different offsets (or over different bytes). Pass "
                    "the same array for both (x.view(np.float32) to read it as another type), "
                    "or the whole array once plus an offset argument.", kernel=kernel_name,
                    index=index, other=other)
        groups.append(group)
        if group == index:
            arrays.append((index, arg))
    return groups


def copy_args(args: Sequence[Any]) -> list[Any]:
    """Copies of ``args`` (arrays copied, scalars as they are) in which arguments that shared
    memory share one copy."""
    groups = memory_groups(args)
    copies: list[Any] = []
    for index, arg in enumerate(args):
        group = groups[index]
        if group is not None and group != index:
            copies.append(view_as(copies[group], arg.dtype, arg.shape))
        else:
            copies.append(arg.copy() if isinstance(arg, np.ndarray | Image) else arg)
    return copies


# ---------------------------------------------------------------------------------------------
# Signature


def _scalar_base(dtype: np.dtype) -> np.dtype | None:
    if dtype.fields:  # pyopencl-style vector dtype (a struct of one float type)
        bases = {f[0] for f in dtype.fields.values()}
        return next(iter(bases)) if len(bases) == 1 else None
    return dtype if dtype.kind in "fiub" else None


def _type_mismatch(c_type: str, dtype: np.dtype, pointer: bool) -> str | None:
    """Why a value of ``dtype`` does not fit C type ``c_type`` (the pointee for pointers)."""
    if pointer and c_type in _ANY_POINTEE:
        return None
    vector = _VECTOR.match(c_type)
    scalar = vector.group(1) if vector else c_type
    if scalar not in _SCALARS:
        return None  # a struct or typedef: nothing to compare against
    kind, size = _SCALARS[scalar]
    base = _scalar_base(dtype)
    if pointer or not vector:
        if base is None or _CLASS[base.kind] != kind or base.itemsize != size:
            view = (f"; x.view(np.{np.dtype(kind + str(size)).name}) is the same memory as "
                    f"{scalar} (one buffer, as a pointer cast is)") if pointer else ""
            return f"holds {dtype} but the .cl kernel reads {scalar} ({size} bytes){view}"
        return None
    lanes = int(vector.group(2))
    nbytes = size * (4 if lanes == 3 else lanes)
    if base is None or _CLASS[base.kind] != kind or dtype.itemsize != nbytes:
        return f"is a {dtype} value but the .cl parameter is {c_type} ({nbytes} bytes)"
    return None


def _arg_info(cl: Any, kernel: Any, index: int) -> tuple[str, str, int]:
    info = cl.kernel_arg_info
    return (kernel.get_arg_info(index, info.NAME), kernel.get_arg_info(index, info.TYPE_NAME),
            int(kernel.get_arg_info(index, info.ADDRESS_QUALIFIER)))


def _param_problem(arg: Any, c_type: str, qualifier: int, local_mem: type) -> str | None:
    pointer = c_type.endswith("*")
    base = c_type.rstrip("*").strip()
    if qualifier == _QUALIFIER_LOCAL:
        return None if isinstance(arg, local_mem) else (
            f"is a __local pointer but got {type(arg).__name__}; pass LocalMem(nbytes)")
    if isinstance(arg, local_mem):
        return "got LocalMem but is not a __local pointer"
    image = _image_problem(arg, base)
    if image is not None:
        return image or None
    value = np.asarray(arg)
    if pointer:
        if not isinstance(arg, np.ndarray) or arg.ndim == 0:
            return f"is a pointer but got a scalar {value.dtype}; pass a numpy array"
        return _type_mismatch(base, value.dtype, True)
    if qualifier == _QUALIFIER_PRIVATE and isinstance(arg, np.ndarray) and arg.ndim > 0:
        return f"is a {c_type} value but got a {arg.dtype} array"
    return _type_mismatch(base, value.dtype, False)


def _image_problem(arg: Any, c_type: str) -> str | None:
    """"" (fits) or why not when the parameter or the argument is an image; None when
    neither is."""
    is_image = c_type.startswith("image")
    if not is_image and not isinstance(arg, Image):
        return None
    if not isinstance(arg, Image):
        return f"is an image but got {type(arg).__name__}; pass a clsim.Image"
    if not is_image:
        return f"got a clsim.Image ({arg.kind}) but is not an image"
    if c_type.removesuffix("_t") != arg.kind:
        return f"got a clsim.Image of kind {arg.kind!r}; pass kind={c_type.removesuffix('_t')!r}"
    return ""


_QUALIFIERS = {"__global": 0x119B, "global": 0x119B, "__constant": 0x119D,
               "constant": 0x119D, "__local": _QUALIFIER_LOCAL, "local": _QUALIFIER_LOCAL}
_IGNORED = {"const", "volatile", "restrict", "__restrict", "__read_only", "__write_only",
            "read_only", "write_only", "struct"}


def _parse_param(text: str) -> tuple[str, str, int] | None:
    words = re.findall(r"[A-Za-z_]\w*|\*", text)
    names = [w for w in words if w != "*"]
    if not names:
        return None
    qualifier = next((_QUALIFIERS[w] for w in names if w in _QUALIFIERS), _QUALIFIER_PRIVATE)
    kept = [w for w in names[:-1] if w not in _QUALIFIERS and w not in _IGNORED]
    if kept[:1] == ["unsigned"]:
        kept = ["u" + (kept[1] if len(kept) > 1 else "int")]
    return names[-1], " ".join(kept) + "*" * words.count("*"), qualifier


def source_params(source: str, kernel_name: str) -> list[tuple[str, str, int]] | None:
    """(name, type, address qualifier) of each parameter of ``kernel_name`` as written in the
    source (macros unexpanded), or None when the signature is not found."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.DOTALL)
    match = re.search(r"\b(?:__kernel|kernel)\b[^;{]*?\b" + re.escape(kernel_name)
                      + r"\s*\(([^)]*)\)", text)
    if match is None:
        return None
    body = match.group(1).strip()
    if body in ("", "void"):
        return []
    params = [_parse_param(part) for part in body.split(",")]
    return None if any(p is None for p in params) else params  # type: ignore[return-value]


def check_signature(cl: Any, kernel: Any, device: str, kernel_name: str, args: Sequence[Any],
                    local_mem: type, source: str = "") -> None:
    """Raise InvalidArgumentError naming the first ``.cl`` parameter the arguments do not fit.
    The parameters come from the kernel's argument info, or, where the device gives none (a
    program loaded from pyopencl's binary cache has none on some drivers), from the source."""
    try:
        params = [_arg_info(cl, kernel, i) for i in range(int(kernel.num_args))]
    except Exception:
        params = source_params(source, kernel_name)
        if params is None:  # nothing to check against: set_arg's own errors remain
            return
    where = f"{kernel_name} on {device}"
    if len(params) != len(args):
        listed = ", ".join(f"{t} {n}" for n, t, _ in params) or "none"
        raise InvalidArgumentError(
            f"{where}: the .cl kernel takes {len(params)} arguments ({listed}) but got "
            f"{len(args)}. Make the .cl signature match the Python kernel's parameters, in "
            "order.", kernel=kernel_name, expected=len(params), got=len(args))
    for index, ((name, c_type, qualifier), arg) in enumerate(zip(params, args, strict=True)):
        problem = _param_problem(arg, c_type, qualifier, local_mem)
        if problem is not None:
            raise InvalidArgumentError(
                f"{where}: argument {index} '{name}' ({c_type}) {problem}. Pass the type the "
                ".cl kernel declares (e.g. x.astype(np.float32)), or change the .cl type.",
                kernel=kernel_name, index=index, parameter=name, c_type=c_type)
