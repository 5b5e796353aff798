"""Kernel specs: everything needed to run, check and verify one kernel besides its body.

A spec ties a Python kernel to its numpy reference, its input generator, its launch plan and the
matching ``.cl`` twin. The CLI (``clsim run``), the verifier and the traffic report all work from
specs, so a kernel written once is runnable, checkable and verifiable everywhere. This module
holds only the records and the registry; it runs nothing and imports no kernel library: a
library registers its specs when imported (``import kernels_py``; the ``clsim`` command does
that for the shipped one), a user's file when loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clsim.errors import SimulationError

KERNELS_CL_DIR = Path(__file__).resolve().parent.parent / "kernels_cl"


@dataclass(frozen=True)
class Policy:
    """How one output must agree with the simulator: bitwise, or within ``ulps`` ULPs."""

    kind: str  # "exact", "ulp" or "magnitude"
    ulps: float = 0.0

    def __str__(self) -> str:
        return "exact" if self.kind == "exact" else f"ulp({self.ulps:g})"


EXACT = Policy("exact")


def ulp(n: float) -> Policy:
    return Policy("ulp", float(n))


@dataclass(frozen=True)
class MagnitudePolicy(Policy):
    """``|expected - actual| <= k * eps * scale(inputs)`` per element (``k`` is kept in
    ``ulps``). ``scale`` maps the launch's inputs by parameter name (values before the launch)
    to an array broadcastable to the output: the sum of |terms| of each output element. The
    condition-number form ``k * eps * cond * |result|`` with ``cond = sum|terms| / |sum|`` is
    the same bound. None (a policy parsed from text) cannot compare: pass the function."""

    scale: Callable[[Mapping[str, Any]], Any] | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"magnitude({self.ulps:g})"


def magnitude(k: float, scale: Callable[[Mapping[str, Any]], Any]) -> MagnitudePolicy:
    """Agreement within ``k`` machine epsilons of the sum of the magnitudes of the terms."""
    return MagnitudePolicy("magnitude", float(k), scale)


@dataclass(frozen=True)
class Launch:
    """One ND-range launch: sizes plus the kernel arguments in parameter order."""

    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    args: tuple[Any, ...]


@dataclass(frozen=True)
class KernelSpec:
    """A runnable, verifiable kernel.

    ``make_inputs(rng, shape)`` returns every buffer and scalar by kernel parameter name
    (outputs included, pre-filled). ``launch(inputs, shape, local_size)`` returns the
    ``Launch`` (``local_size`` overrides the default when not None). ``reference(inputs)``
    returns the expected value of each output buffer. ``outputs`` maps each output buffer to
    its agreement policy against a device, ``tolerance`` is (rtol, atol) against the numpy
    reference, which is not bit-exact for transcendentals or reordered sums.

    A multi-launch plan (the host waits for one launch before the next, as a two-phase
    reduction needs) is several specs sharing a ``pipeline`` name, one launch each, run in
    ``stage`` order on one inputs dict (``run_pipeline``). Every stage stays an ordinary
    one-launch spec, so the verifier, ``clsim run`` and the report handle each stage alone; a
    later stage's ``make_inputs`` builds the earlier stages' outputs on the host, so it can be
    verified without running them.

    ``fuzz_floats`` (keyword arguments of ``verify.strategies.float_arrays``, e.g.
    ``{"allow_nan": False}``) and ``fuzz_shapes`` (a Hypothesis strategy of shape dicts, or a
    function returning one) narrow what the verifier draws for this kernel (docs/verifying.md).
    """

    name: str
    description: str
    kernel: Any
    cl_file: str | None  # None: verified against the OpenCL C clsim.to_cl prints
    make_inputs: Callable[[np.random.Generator, Mapping[str, int]], dict[str, Any]]
    launch: Callable[[Mapping[str, Any], Mapping[str, int], tuple[int, ...] | None], Launch]
    reference: Callable[[Mapping[str, Any]], dict[str, np.ndarray]]
    outputs: Mapping[str, Policy]
    default_shape: Mapping[str, int]
    tolerance: tuple[float, float] = (0.0, 0.0)
    cl_kernel: str | None = None
    family: str | None = None
    subgroup_size: int | None = None
    requires: frozenset[str] = field(default_factory=frozenset)
    pipeline: str | None = None
    stage: int = 0
    fuzz_floats: Mapping[str, bool] | None = None
    fuzz_shapes: Any = None

    @property
    def cl_kernel_name(self) -> str:
        return self.cl_kernel or self.kernel.name

    @property
    def cl_path(self) -> Path | None:
        return KERNELS_CL_DIR / self.cl_file if self.cl_file else None

    @property
    def family_name(self) -> str:
        return self.family or self.name


_REGISTRY: dict[str, KernelSpec] = {}


def differing_elements(got: np.ndarray, want: np.ndarray) -> int:
    """Elements whose bytes differ: exact for integers and structs (a struct holding a NaN
    half equals itself here, where ``==`` on records would say it differs)."""
    g = np.ascontiguousarray(got).reshape(-1)
    w = np.ascontiguousarray(want, dtype=got.dtype).reshape(-1)
    if g.shape != w.shape:
        return max(g.size, w.size)
    rows = (g.view(np.uint8).reshape(g.size, -1) != w.view(np.uint8).reshape(w.size, -1))
    return int(np.count_nonzero(rows.any(axis=1))) if g.size else 0


def matches_reference(got: np.ndarray, want: np.ndarray, tolerance: tuple[float, float]) -> bool:
    """A kernel output against its reference: integers and structs byte for byte, floats
    within the spec's (rtol, atol), NaN where the reference has NaN."""
    if np.issubdtype(want.dtype, np.integer) or want.dtype.names:
        return differing_elements(got, want) == 0
    rtol, atol = tolerance
    return bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))


def register(spec: KernelSpec) -> KernelSpec:
    _REGISTRY[spec.name] = spec
    return spec


def all_specs() -> dict[str, KernelSpec]:
    """Every registered spec, by name."""
    return dict(sorted(_REGISTRY.items()))


def get_spec(name: str) -> KernelSpec:
    specs = all_specs()
    if name not in specs:
        known = ", ".join(specs) or "none (import a kernel library first, e.g. kernels_py)"
        raise SimulationError(f"no kernel named {name!r}. Known kernels: {known}")
    return specs[name]


def pipeline_stages(name: str) -> list[KernelSpec]:
    """The specs of pipeline ``name`` in launch order."""
    stages = sorted((s for s in _REGISTRY.values() if s.pipeline == name), key=lambda s: s.stage)
    if not stages:
        known = sorted({s.pipeline for s in _REGISTRY.values() if s.pipeline})
        raise SimulationError(f"no pipeline named {name!r}. Known pipelines: "
                              f"{', '.join(known) or 'none'}")
    return stages


def run_pipeline(name: str, inputs: dict[str, Any], shape: Mapping[str, int],
                 local_size: tuple[int, ...] | None = None, **run_options: Any) -> list[Any]:
    """Run every stage of pipeline ``name`` on the simulator, one launch after the other, on
    the same ``inputs`` dict (the first stage's ``make_inputs``); returns each run's result.
    ``run_options`` go to ``clsim.run`` (the stage's sub-group size unless given)."""
    from clsim.runtime.launch import run  # spec.py stays importable without the engine

    results = []
    for spec in pipeline_stages(name):
        launch = spec.launch(inputs, shape, local_size)
        options = {"subgroup_size": spec.subgroup_size, **run_options}
        results.append(run(spec.kernel, launch.global_size, launch.local_size, launch.args,
                           **options))
    return results
