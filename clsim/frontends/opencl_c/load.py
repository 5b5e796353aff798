"""``load_cl``: a ``.cl`` file (or its text) to ``KernelFunction``s the simulator runs.

The generated module is executed from memory under a name no file has, with its source in
``linecache`` (so the Python front end reads it as it reads any kernel) and a line map on every
kernel and helper, so that compile errors, run-time errors and check findings name the ``.cl``
file and line. Arguments are taken as a device takes them: a buffer's bytes, whatever the
numpy dtype, reinterpreted as the parameter's pointee type.
"""

from __future__ import annotations

import hashlib
import linecache
from pathlib import Path

import numpy as np

from clsim.api import KernelFunction
from clsim.errors import InvalidArgumentError, KernelCompileError
from clsim.frontends.opencl_c.ctype import CType
from clsim.frontends.opencl_c.emit import Translation, translate_parsed
from clsim.frontends.opencl_c.parse import parse_cl
from clsim.runtime.images import Image


class ClKernel(KernelFunction):
    """A kernel translated from OpenCL C: its ``.cl`` signature decides how arguments are
    taken (``adapt_args``)."""

    def __init__(self, fn, params: list[tuple[str, CType]], structs: dict, path: str,
                 image_suffixes: dict[str, set[str]] | None = None):
        super().__init__(fn, is_kernel=True)
        self.cl_params, self.structs, self.cl_path = params, structs, path
        # image parameter -> the read/write suffixes used on it (f, h, i, ui)
        self.image_suffixes = image_suffixes or {}

    def adapt_args(self, args) -> tuple:
        if len(args) != len(self.cl_params):
            return tuple(args)  # run() reports the count
        out = []
        for (name, t), value in zip(self.cl_params, args, strict=True):
            if t.kind == "vector":
                out += self._components(name, t, value)
            else:
                out.append(self._adapt(name, t, value))
        return tuple(out)

    def _components(self, name: str, t: CType, value) -> list:
        """A vector argument (pyopencl's cltypes.int4 record, or an array of its components)
        as the scalars the generated kernel takes."""
        if isinstance(value, np.void | np.ndarray) and value.dtype.names:
            parts = [value[n] for n in value.dtype.names]
        elif isinstance(value, np.ndarray):
            parts = list(value.reshape(-1))
        else:
            parts = []
        if len(parts) < t.width:
            raise InvalidArgumentError(
                f"{self.name}: argument '{name}' must be a {t} (pyopencl.cltypes.make_{t}(...) "
                f"or an array of {t.width} values)", kernel=self.name, argument=name)
        return [np.dtype(t.name).type(v) for v in parts[:t.width]]

    def _adapt(self, name: str, t: CType, value):
        if t.kind == "image":
            return self._image(name, t, value)
        if t.kind == "pointer" and t.space in ("global", "constant") and \
                isinstance(value, np.ndarray) and value.dtype.fields is None or \
                t.kind == "pointer" and isinstance(value, np.ndarray) and t.inner.kind == "struct":
            want = self._dtype(t.inner)
            if want is None or value.dtype == want:
                return value
            if not value.flags.c_contiguous:
                return value  # run() refuses it with its own message
            flat = value.reshape(-1).view(np.uint8)
            if flat.size % want.itemsize:
                raise InvalidArgumentError(
                    f"{self.name}: buffer '{name}' has {flat.size} bytes, not a whole number of "
                    f"{t.inner} ({want.itemsize} bytes each), as the .cl parameter declares",
                    kernel=self.name, buffer=name)
            return flat.view(want)
        if t.kind == "scalar" and isinstance(value, np.generic) and \
                value.dtype.name != t.name and t.name != "bool":
            converted = np.dtype(t.name).type(value)
            if converted != value:
                raise InvalidArgumentError(
                    f"{self.name}: argument '{name}' is {value!r}, which the .cl parameter's "
                    f"type {t} cannot hold; pass np.{t.name}(...)", kernel=self.name,
                    argument=name)
            return converted
        return value

    def _image(self, name: str, t: CType, value) -> Image:
        """An image argument as the .cl declares it: a clsim.Image of the parameter's kind and
        access (the device side binds it with the same flags, so they must agree)."""
        if isinstance(value, Image) and (value.kind, value.access) == (t.name, t.space):
            return value
        got = repr(value) if isinstance(value, Image) else type(value).__name__
        raise InvalidArgumentError(
            f"{self.name}: argument '{name}' is a {t} in the .cl, got {got}; pass "
            f"clsim.Image(data, order, dtype, kind={t.name!r}, access={t.space!r})",
            kernel=self.name, argument=name)

    def _dtype(self, t: CType):
        if t.kind == "scalar":
            return np.dtype(t.name)
        if t.kind == "struct":
            return self.structs.get(t.name)
        if t.kind == "vector":  # the kernel views it as vectors (emit._retype_parameter)
            return np.dtype(t.name)
        return None


def translate(path_or_source, options: str = "") -> Translation:
    """The Python module for a ``.cl`` file (a path) or OpenCL C text."""
    source, path = _read(path_or_source)
    return translate_parsed(parse_cl(source, path, options))


def load_cl(path_or_source, kernel_name: str | None = None, *, options: str = ""):
    """The kernel ``kernel_name`` of a ``.cl`` file or OpenCL C text, as a KernelFunction
    ``clsim.run`` takes; every kernel (a dict by name) when ``kernel_name`` is None.
    ``options``: the device build's option string (its -D and -U apply)."""
    translation = translate(path_or_source, options)
    kernels = translated_kernels(translation)
    for name in [kernel_name] if kernel_name else translation.kernel_names:
        failure = translation.failure_of(name)
        if failure is not None:
            raise KernelCompileError(failure.message(Path(translation.path).name),
                                     file=translation.path, line=failure.line, kernel=name)
        if name not in kernels:
            raise KernelCompileError(
                f"{Path(translation.path).name}: no kernel named '{name}' (kernels: "
                f"{', '.join(translation.kernel_names) or 'none'})", kernel=name)
    return kernels[kernel_name] if kernel_name else kernels


def translated_kernels(translation: Translation) -> dict[str, ClKernel]:
    """Every kernel the translation could write, by name (the others are in ``failures``)."""
    namespace = execute(translation)
    out = {}
    for name in translation.kernels:
        fn = namespace[name]
        params = translation.params[name]
        images = {p: translation.image_suffixes(name, i) for i, (p, t) in enumerate(params)
                  if t.kind == "image"}
        out[name] = ClKernel(fn.fn, params, _structs(namespace), translation.path, images)
        out[name].line_map = fn.line_map
    return out


def execute(translation: Translation) -> dict:
    """Run the generated module's definitions (decorators and dtypes; no kernel runs) and
    give every function its line map."""
    digest = hashlib.sha1(translation.source.encode()).hexdigest()[:12]
    filename = f"<clsim translation of {Path(translation.path).name} {digest}>"
    linecache.cache[filename] = (len(translation.source), None,
                                 translation.source.splitlines(True), filename)
    namespace: dict = {"__name__": f"clsim_cl_{digest}"}
    exec(compile(translation.source, filename, "exec"), namespace)  # our own generated code
    cl_lines = _cl_lines(translation)
    line_map = {py: (translation.path, cl, cl_lines.get(cl, "")) for py, cl in
                translation.line_map.items()}
    for value in namespace.values():
        if isinstance(value, KernelFunction):
            value.line_map = line_map
    return namespace


def _cl_lines(t: Translation) -> dict[int, str]:
    return dict(enumerate(t.cl_text.splitlines(), start=1))


def _structs(namespace: dict) -> dict:
    return {k: v for k, v in namespace.items() if isinstance(v, np.dtype) and v.names}


def _read(path_or_source) -> tuple[str, str | None]:
    if isinstance(path_or_source, Path) or (
            isinstance(path_or_source, str) and "\n" not in path_or_source
            and path_or_source.endswith((".cl", ".h", ".clh"))):
        path = Path(path_or_source)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise KernelCompileError(f"{path}: cannot read the kernel file ({exc.strerror})",
                                     file=str(path)) from exc
    if not isinstance(path_or_source, str):
        raise KernelCompileError("load_cl() takes a .cl path or OpenCL C source text")
    return path_or_source, None
