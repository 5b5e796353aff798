"""``clsim.Image`` arguments on a device: pyopencl images of the same format, and back.

``bind_image`` makes the device image for one argument (an ``image1d_buffer_t`` over a
buffer holding the pixels, the other kinds as images copied from the host array, x varying
fastest as numpy's C order already stores them) and returns how to read it back into an
array shaped like the argument's ``data``; ``image_support`` says whether a device takes
images of that format at all, so tests and the verifier can skip with the reason.

This module launches nothing; ``verify.clrun`` binds and reads back through it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from clsim.errors import DeviceError
from clsim.runtime.images import Image

def _format(cl: Any, image: Image) -> Any:
    return cl.ImageFormat(getattr(cl.channel_order, image.order),
                          getattr(cl.channel_type, image.format.cl.removeprefix("CL_")))


def _mem_type(cl: Any, image: Image) -> Any:
    return {"image1d_buffer": cl.mem_object_type.IMAGE1D_BUFFER,
            "image1d": cl.mem_object_type.IMAGE1D,
            "image2d": cl.mem_object_type.IMAGE2D}[image.kind]


def image_support(cl: Any, context: Any, image: Image) -> str | None:
    """None when the device of ``context`` takes ``image``'s kind and format, else why not."""
    device = context.devices[0]
    if not device.image_support:
        return f"{device.name} has no image support (CL_DEVICE_IMAGE_SUPPORT is false)"
    flags = cl.mem_flags.READ_ONLY if image.access == "read_only" else cl.mem_flags.WRITE_ONLY
    try:
        formats = cl.get_supported_image_formats(context, flags, _mem_type(cl, image))
    except cl.Error as err:
        return f"{device.name} lists no {image.kind} formats ({err})"
    want = _format(cl, image)
    if not any(f.channel_order == want.channel_order and
               f.channel_data_type == want.channel_data_type for f in formats):
        return (f"{device.name} does not support {image.kind} images of "
                f"CL_{image.order}/{image.format.cl}")
    return None


def bind_image(cl: Any, context: Any, image: Image, kernel_name: str, index: int
               ) -> tuple[Any, np.ndarray, Callable[[Any, np.ndarray], None]]:
    """(memory object to set as the argument, host array for the read-back, read(queue,
    out))."""
    why = image_support(cl, context, image)
    if why is not None:
        raise DeviceError(f"{kernel_name}: argument {index} ({image!r}): {why}. Verify on a "
                          "device with images (clsim devices)", kernel=kernel_name,
                          index=index)
    flags = cl.mem_flags
    access = flags.READ_ONLY if image.access == "read_only" else flags.WRITE_ONLY
    host = np.ascontiguousarray(image.data)
    fmt = _format(cl, image)
    if image.kind == "image1d_buffer":
        buf = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=host)
        mem = cl.create_image(context, access, fmt, shape=(image.width,), buffer=buf)
        mem._clsim_buffer = buf  # the image views the buffer: keep it alive with it

        def read(queue: Any, out: np.ndarray) -> None:
            cl.enqueue_copy(queue, out, buf)

        return mem, host, read
    shape = (image.width,) if image.kind == "image1d" else (image.width, image.height)
    mem = cl.create_image(context, access | flags.COPY_HOST_PTR, fmt, shape=shape,
                          hostbuf=host)

    def read_image(queue: Any, out: np.ndarray) -> None:
        if image.access == "read_only":  # the kernel cannot change it
            out[...] = host
        elif image.kind == "image2d":
            cl.enqueue_copy(queue, out, mem, origin=(0, 0), region=shape)
        else:  # enqueue_copy knows 2-D and 3-D images only; its own reader takes any
            cl._cl._enqueue_read_image(queue, mem, (0,), shape, out).wait()

    return mem, host, read_image
