"""A KernelSpec with only a ``.cl`` kernel (``kernel=None``): its kernel is the translation of
``cl_file``, so ``clsim run``, ``verify`` and ``report`` simulate the same source the devices
build (docs/kernelspec.md)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from clsim.errors import SimulationError
from clsim.frontends.opencl_c.load import load_cl


def with_translated_kernel(spec, base_dir: Path | None):
    """``spec`` itself when it has a Python kernel; else the same spec whose kernel is
    ``cl_kernel`` of its ``cl_file`` (beside ``base_dir`` for a user's spec)."""
    if spec.kernel is not None:
        return spec
    path = spec.cl_path
    if not path.is_file() and base_dir is not None:
        path = (base_dir / spec.cl_file).resolve()
    kernels = load_cl(path)
    name = spec.cl_kernel
    if name is None:
        if len(kernels) != 1:
            raise SimulationError(
                f"{spec.name}: {path.name} has {len(kernels)} kernels "
                f"({', '.join(kernels)}); name one with cl_kernel=...")
        name = next(iter(kernels))
    if name not in kernels:
        raise SimulationError(f"{spec.name}: {path.name} has no kernel '{name}' (kernels: "
                              f"{', '.join(kernels)})")
    return replace(spec, kernel=kernels[name], cl_kernel=name)
