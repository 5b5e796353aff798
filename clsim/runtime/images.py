"""OpenCL images on the host: ``clsim.Image``, the formats it accepts, the sampler constants.

An ``Image`` is a numpy array plus what ``cl_image_format`` and ``cl_image_desc`` say on a
device: channel order (``R``, ``RG``, ``RGBA``), channel type (``float32`` for CL_FLOAT,
``float16`` for CL_HALF_FLOAT, ``uint32`` for CL_UNSIGNED_INT32, ``unorm_int8``...), kind
(``image1d_buffer``, ``image1d``, ``image2d``) and the kernel's access qualifier
(``read_only``, ``write_only``). ``run()`` passes a kernel its pixels as a 2-D array (rows,
width x channels) viewing the user's array, so writes land in place; ``verify`` makes a
pyopencl image of the same format (``verify.images``).

The sampler constants have clang's values (opencl-c-base.h), so a sampler is one int that a
kernel's module-level constant holds and the ``.cl`` twin spells the same way.
Here: formats and the host object. Reads and writes inside kernels are
``clsim.compiler.builtins.images``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clsim.errors import InvalidArgumentError

# Channel orders: name -> channels stored per pixel.
ORDERS = {"R": 1, "RG": 2, "RGBA": 4}
KINDS = ("image1d_buffer", "image1d", "image2d")
ACCESS = ("read_only", "write_only")


@dataclass(frozen=True)
class ChannelType:
    """One ``cl_channel_type``: how a channel is stored and which read family returns it.

    ``family``: "f" (read_imagef/read_imageh, write_imagef/write_imageh), "i" (read_imagei,
    write_imagei) or "ui" (read_imageui, write_imageui). ``scale``: the normalised types'
    divisor (255 for CL_UNORM_INT8), 0 for the others.
    """

    name: str  # clsim's spelling (the ``dtype=`` of ``Image``)
    cl: str  # OpenCL's name, for messages and pyopencl
    storage: str  # numpy dtype the pixels are stored as (half: its bits, uint16)
    family: str
    scale: int = 0


CHANNEL_TYPES = {t.name: t for t in (
    ChannelType("float32", "CL_FLOAT", "float32", "f"),
    ChannelType("float16", "CL_HALF_FLOAT", "uint16", "f"),
    ChannelType("unorm_int8", "CL_UNORM_INT8", "uint8", "f", 255),
    ChannelType("unorm_int16", "CL_UNORM_INT16", "uint16", "f", 65535),
    ChannelType("int8", "CL_SIGNED_INT8", "int8", "i"),
    ChannelType("int16", "CL_SIGNED_INT16", "int16", "i"),
    ChannelType("int32", "CL_SIGNED_INT32", "int32", "i"),
    ChannelType("uint8", "CL_UNSIGNED_INT8", "uint8", "ui"),
    ChannelType("uint16", "CL_UNSIGNED_INT16", "uint16", "ui"),
    ChannelType("uint32", "CL_UNSIGNED_INT32", "uint32", "ui"),
)}
# What the user's array holds for each channel type (the normalised types: their integers).
_ARRAY_DTYPE = {"unorm_int8": "uint8", "unorm_int16": "uint16"}

# Sampler bits (clang's opencl-c-base.h values).
SAMPLER_CONSTANTS = {
    "CLK_NORMALIZED_COORDS_FALSE": 0, "CLK_NORMALIZED_COORDS_TRUE": 1,
    "CLK_ADDRESS_NONE": 0, "CLK_ADDRESS_CLAMP_TO_EDGE": 2, "CLK_ADDRESS_CLAMP": 4,
    "CLK_ADDRESS_REPEAT": 6, "CLK_ADDRESS_MIRRORED_REPEAT": 8,
    "CLK_FILTER_NEAREST": 0x10, "CLK_FILTER_LINEAR": 0x20,
}
ADDRESS_MASK, NORMALIZED_MASK, FILTER_MASK = 0xE, 0x1, 0x30


def channel_type_name(dtype) -> str:
    """``dtype=`` of ``Image`` (a numpy dtype or a normalised type's name) -> its table key."""
    if isinstance(dtype, str) and dtype.lower() in CHANNEL_TYPES:
        return dtype.lower()
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    if name not in CHANNEL_TYPES:
        raise InvalidArgumentError(
            f"clsim.Image: channel type {name!r} is not supported; use one of "
            f"{', '.join(CHANNEL_TYPES)}")
    return name


class Image:
    """An OpenCL image argument: ``data`` (a C-contiguous numpy array) and its format.

    ``Image(data, order="RGBA", dtype=np.float32, kind="image1d_buffer")``: ``data`` holds
    ``width`` pixels of ``len(order)`` channels (shape ``(width, channels)`` or flat) for the
    1-D kinds, ``(height, width, channels)`` (or ``(height, width)`` for one channel) for
    ``image2d``. ``dtype`` is the channel type (default: ``data``'s dtype); the normalised
    types ``"unorm_int8"``/``"unorm_int16"`` take uint8/uint16 data. ``access`` is the
    kernel parameter's qualifier: ``read_only`` (the default, as in OpenCL C) or
    ``write_only``; the kernel's writes land in ``data``.
    """

    def __init__(self, data, order: str = "RGBA", dtype=None, kind: str | None = None,
                 access: str = "read_only"):
        if not isinstance(data, np.ndarray):
            raise InvalidArgumentError("clsim.Image: data must be a numpy array")
        self.order = _one_of("order", order.upper().removeprefix("CL_"), tuple(ORDERS))
        self.channel_type = channel_type_name(data.dtype if dtype is None else dtype)
        self.kind = _one_of("kind", kind or ("image2d" if data.ndim == 3 else
                                             "image1d_buffer"), KINDS)
        self.access = _one_of("access", access, ACCESS)
        self.data = data
        self.width, self.height = self._shape()

    @property
    def channels(self) -> int:
        return ORDERS[self.order]

    @property
    def format(self) -> ChannelType:
        return CHANNEL_TYPES[self.channel_type]

    def _shape(self) -> tuple[int, int]:
        data, nch = self.data, self.channels
        want = _ARRAY_DTYPE.get(self.channel_type, self.channel_type)
        where = f"clsim.Image ({self.kind}, {self.order}, {self.channel_type})"
        if data.dtype.name != want:
            raise InvalidArgumentError(
                f"{where}: data has dtype {data.dtype}, the channel type needs {want}")
        if not data.flags.c_contiguous or data.size == 0:
            raise InvalidArgumentError(
                f"{where}: data must be a non-empty C-contiguous array "
                "(np.ascontiguousarray(...))")
        if self.kind == "image2d":
            ok = data.ndim == 3 and data.shape[2] == nch or data.ndim == 2 and nch == 1
            if not ok:
                raise InvalidArgumentError(
                    f"{where}: data has shape {data.shape}; an image2d of {self.order} takes "
                    f"(height, width, {nch})" + (" or (height, width)" if nch == 1 else ""))
            return data.shape[1], data.shape[0]
        if data.size % nch or not (data.ndim == 1 or data.ndim == 2 and data.shape[1] == nch):
            raise InvalidArgumentError(
                f"{where}: data has shape {data.shape}; a 1-D image of {self.order} takes "
                f"(width, {nch}) or a flat array of width * {nch} values")
        return data.size // nch, 1

    def pixels(self) -> np.ndarray:
        """What a kernel receives: rows of ``width * channels`` stored values, viewing
        ``data`` (half: its bits)."""
        flat = self.data.reshape(self.height, self.width * self.channels)
        return flat.view(self.format.storage)

    def copy(self) -> Image:
        """The same image over a copy of ``data`` (what the verifier gives each side)."""
        return Image(self.data.copy(), self.order, self.channel_type, self.kind, self.access)

    def __repr__(self) -> str:
        size = f"{self.width}x{self.height}" if self.kind == "image2d" else str(self.width)
        return (f"Image({self.kind}, {self.order}, {self.channel_type}, {size}, "
                f"{self.access})")


def _one_of(what: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidArgumentError(
            f"clsim.Image: {what} {value!r} is not one of {', '.join(allowed)}")
    return value
