"""Does a translated kernel compile? The simulator's compiler (parse, typing, barrier regions,
code generation: everything but Numba's machine code) run on argument types made from the
``.cl`` signature, without launching anything. The coverage benchmark and ``clsim translate
--check`` use it."""

from __future__ import annotations

import numpy as np

from clsim.compiler.frontend import parse
from clsim.compiler.module import generate
from clsim.errors import SimulationError
from clsim.frontends.opencl_c.ctype import CType
from clsim.instruments import registry
from clsim.runtime.arguments import kernel_arg_types
from clsim.runtime.config import LaunchConfig, resolve_device
from clsim.runtime.images import Image
from clsim.runtime.ndrange import make_ndrange


def sample_args(kernel) -> tuple:
    """One small argument per ``.cl`` parameter, of the type the signature declares."""
    out = []
    for name, t in kernel.cl_params:
        out.append(_sample(kernel, t, name))
    return tuple(out)


# An image's format, by the builtins the kernel uses on it: the formats ggml's host gives its
# images (ggml-opencl.cpp: CL_RGBA/CL_FLOAT for read_imagef, CL_R/CL_UNSIGNED_INT32 for
# read_imageui).
_IMAGE_FORMATS = {"f": ("RGBA", np.float32), "h": ("RGBA", np.float32),
                  "ui": ("R", np.uint32), "i": ("R", np.int32)}


def _sample_image(kernel, t: CType, name: str) -> Image:
    suffixes = kernel.image_suffixes.get(name, set())
    order, dtype = _IMAGE_FORMATS[min(suffixes, default="f")]
    shape = (4, 4, len(order)) if t.name == "image2d" else (16 * len(order),)
    return Image(np.zeros(shape, dtype), order, dtype, kind=t.name, access=t.space)


def _sample(kernel, t: CType, name: str):
    if t.kind == "image":
        return _sample_image(kernel, t, name)
    if t.kind == "scalar":
        return np.dtype(t.name).type(1)
    if t.kind == "pointer" and t.space == "local":
        from verify.clrun import LocalMem  # the object devices take; the simulator's gap
        return LocalMem(256)
    if t.kind == "pointer":
        dtype = kernel._dtype(t.inner)
        if dtype is None:
            dtype = np.dtype(np.float32)
        return np.zeros(64, dtype)
    if t.kind == "struct":
        return np.zeros((), kernel.structs[t.name])[()]
    if t.kind == "vector":
        return np.ones(t.width, t.name)
    return None


def compile_check(kernel, local_size=(64,), args=None) -> None:
    """Raise what the simulator's compiler raises for ``kernel`` (a ``ClKernel``)."""
    args = kernel.adapt_args(sample_args(kernel) if args is None else args)
    parsed = parse(kernel)
    sim = resolve_device(None)
    nd = make_ndrange(tuple(local_size), tuple(local_size), kernel=kernel.name)
    types, _values = kernel_arg_types(kernel.name, parsed.params, args, parsed.stored_params)
    config = LaunchConfig(kernel.name, nd, sim, sim.subgroup_size, sim.reduction_order, 0,
                          "default", "3.0", False, False)
    generate(kernel, types, config, instruments=registry.build(config))


def compiles(kernel, local_size=(64,)) -> str | None:
    """None when the kernel compiles, else the compiler's first line."""
    try:
        compile_check(kernel, local_size)
    except SimulationError as exc:
        return str(exc).splitlines()[0]
    return None
