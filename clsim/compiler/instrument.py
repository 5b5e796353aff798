"""The plug-in interface for analyses compiled into kernels (traffic counting, race checks...).

An instrument contributes code at fixed points of the generated module and owns the state that
code updates. It is compiled in only when enabled, so a plain run pays nothing. Compile-time
hooks receive the emitter (``gen``: a ``codegen.FunctionEmitter``) and return or emit source;
run-time hooks allocate the state arrays before the launch and turn them into results after.

Generated-code conventions an instrument can rely on:
- in a work-item loop, ``_lid`` is the linear local id, ``_lx/_ly/_lz`` the local ids,
  ``_gx/_gy/_gz`` the group ids, ``_L0.._L2`` this group's sizes, ``_NL`` their product;
- ``gen.lid_code()`` is ``"_lid"`` in work-item code and ``"0"`` in group-level code;
- ``gen.helper(name)`` pulls a helper from ``compiler.helpers`` (``register_helper`` adds one);
- state arrays named in ``state_args`` are parameters of every generated function.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LaunchInfo:
    """What a run-time hook knows about the launch."""

    kernel: str
    ndrange: object  # clsim.runtime.ndrange.NDRange
    params: list[str]
    values: list  # kernel argument values (flattened buffers, numpy scalars)
    types: dict
    sites: list  # site tuples: (id, file, line, func, text, buffer, kind, space, dtype, width)
    subgroup_size: int


class Instrument:
    """Base class: every hook does nothing."""

    name = "instrument"
    parallel_safe = True  # may groups run concurrently while this instrument records?

    # -- compile time -----------------------------------------------------------------------
    def state_args(self) -> list[str]:
        """Names of the launch-level state arrays passed to every generated function."""
        return []

    def imports(self) -> list[str]:
        """Import lines the generated module needs at its top (after numpy and numba)."""
        return []

    def key(self) -> tuple:
        """Everything that changes the generated code (part of the compile cache key)."""
        return (self.name,)

    def group_start(self, gen) -> None:
        """Emit per-group allocations at the top of the group function."""

    def region_start(self, gen) -> None:
        """Emit code at the top of each work-item loop body (after ids are decoded)."""

    def region_end(self, gen) -> None:
        """Emit code after each work-item loop (group level)."""

    def barrier(self, gen, stmt, site: int, flags: str) -> None:
        """Emit code at a work-group barrier (group level). ``flags`` is the fence code."""

    def subgroup_barrier(self, gen, stmt, site: int) -> None:
        """Emit code where a sub-group barrier or collective orders the lanes of a sub-group."""

    def access(self, gen, site: int, buffer: str, arrt, codes: list[str], kind: str,
               atomic: bool = False) -> list[str]:
        """Wrap the index codes of one access; the wrapper runs exactly when the access does."""
        return codes

    def flop(self, gen, kind: str, dtype: str) -> None:
        """Count one arithmetic operation of ``kind`` (add, mul, fma, div, sqrt, ...)."""

    # -- run time ---------------------------------------------------------------------------
    def allocate(self, info: LaunchInfo) -> list:
        """The state arrays, aligned with ``state_args()``."""
        return []

    def finalize(self, info: LaunchInfo, state: list, result) -> None:
        """Turn the state into results on ``result`` (``result.traffic``, findings...)."""


_FACTORIES: dict[str, object] = {}


def register_instrument(option: str, factory) -> None:
    """``factory(options: dict) -> Instrument | None`` is asked at every run."""
    _FACTORIES[option] = factory


def build_instruments(options: dict) -> list[Instrument]:
    instruments = []
    for factory in _FACTORIES.values():
        inst = factory(options)
        if inst is not None:
            instruments.append(inst)
    return instruments
