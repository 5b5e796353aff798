"""From a command line to one launch of a KernelSpec: the spec by name, the shape, the
work-group size, the generated inputs and the arguments in parameter order.

``clsim run``, ``clsim report`` and the traffic launch that ``clsim run`` starts in a child
process (``clsim.commands.traffic_launch``) build their launches here, so each builds the same
one from the same words. This module runs nothing.
"""

from __future__ import annotations

import numpy as np

from clsim.commands.options import local_size
from clsim.compiler.frontend import parse
from clsim.errors import SimulationError
from clsim.runtime.images import Image
from clsim.spec import get_spec


def load_spec(name: str):
    """A library spec by name, or ``path/file.py::NAME`` from a file the user names (imported,
    so only name your own files; the same loader as ``clsim verify``)."""
    if "::" not in name:
        return get_spec(name)
    from verify.replay import load_spec_ref  # the verifier is optional for library names

    return load_spec_ref(name)[0]


def parse_shape(text: str | None, defaults: dict) -> dict:
    shape = dict(defaults)
    if not text:
        return shape
    keys = list(defaults)
    if "=" not in text:
        values = text.lower().replace("x", ",").split(",")
        if len(values) != len(keys):
            raise SimulationError(f"--shape {text}: this kernel's shape is "
                                  f"{'x'.join(keys)}, e.g. --shape {'x'.join('64' for _ in keys)}")
        pairs = zip(keys, values, strict=True)
    else:
        pairs = (item.split("=", 1) for item in text.split(","))
    for key, value in pairs:
        key = key.strip()
        if key not in defaults:
            raise SimulationError(f"--shape: unknown key {key!r}; this kernel takes "
                                  f"{', '.join(keys)}")
        try:
            shape[key] = int(value)
        except ValueError:
            raise SimulationError(f"--shape: {key}={value!r} is not an integer") from None
        if shape[key] <= 0:
            raise SimulationError(f"--shape: {key} must be positive")
    return shape


def parse_local(text):
    """A --local-size value: None, a tuple (already parsed by argparse) or text."""
    if text is None or isinstance(text, tuple):
        return text
    try:
        return local_size(text)
    except Exception as exc:  # argparse.ArgumentTypeError: the same words, as our error
        raise SimulationError(f"--local-size {exc}") from None


def make_inputs(spec, shape: dict, seed: int) -> dict:
    """The spec's generated inputs; a shape too large for memory is a SimulationError."""
    try:
        return spec.make_inputs(np.random.default_rng(seed), shape)
    except MemoryError as exc:
        need = getattr(exc, "_total_size", None)  # numpy's _ArrayMemoryError knows it
        size = f" ({need / 2**30:,.1f} GiB for one array)" if need else ""
        shape_text = ",".join(f"{k}={v}" for k, v in shape.items())
        raise SimulationError(
            f"{spec.name} --shape {shape_text}: the inputs do not fit in memory{size}. "
            "Use a smaller --shape") from None


def fresh(inputs: dict) -> dict:
    """Copies of the arrays and images (scalars as they are): one launch must not see
    another's output."""
    return {k: (v.copy() if isinstance(v, np.ndarray | Image) else v) for k, v in inputs.items()}


def run_args(spec, inputs: dict, work: dict) -> tuple:
    """The kernel's arguments in parameter order: arrays and images from ``work``, scalars
    from ``inputs``."""
    return tuple(work[name] if isinstance(inputs[name], np.ndarray | Image) else inputs[name]
                 for name in parse(spec.kernel).params)
