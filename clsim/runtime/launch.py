"""``clsim.run``: checks the launch, compiles (or reuses) the kernel, runs it, reports.

Buffers are written in place, like a device buffer read back. Work-groups run in parallel
(``prange``) unless the kernel needs ordering between groups; the per-work-item state of a
group exists only while that group runs, and groups are launched in chunks, so memory does not
grow with the global size.
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from clsim.api import KernelFunction
from clsim.compiler import ctypes as ct
from clsim.compiler.diagnostics import internal_compile_error
from clsim.compiler.frontend import parse
from clsim.compiler.module import generate
from clsim.compiler.structs import struct_of
from clsim.errors import InvalidArgumentError, KernelCompileError
from clsim.instruments import registry
from clsim.instruments.base import LaunchInfo
from clsim.runtime import printf
from clsim.runtime import record as rec
from clsim.runtime.cache import load_source
from clsim.runtime.config import (
    LaunchConfig,
    check_mode,
    check_reduction,
    check_subgroup_size,
    resolve_device,
)
from clsim.runtime.decode import decode
from clsim.runtime.ndrange import NDRange, make_ndrange
from clsim.runtime.record import site_table

_CHUNK = 4096  # groups per parallel launch: bounds the error-record memory
_SUPPORTED = set(ct.INT_TYPES) | {"float16", "float32", "float64", "bool"}


@dataclass
class RunResult:
    """What ran and how long it took. Buffers were updated in place."""

    kernel: str
    ndrange: NDRange
    elapsed_s: float
    compile_s: float
    jit: bool
    parallel: bool
    module_path: str
    results: dict = field(default_factory=dict)  # each instrument's result, by its name
    config: Any = None  # the LaunchConfig it ran with

    def __getattr__(self, name: str):
        # result.traffic, result.findings...: the fields instruments declare (registry)
        results = self.__dict__.get("results", {})
        if name in results:
            return results[name]
        raise AttributeError(f"RunResult has no attribute {name!r}")

    @property
    def global_size(self):
        return self.ndrange.global_size[: self.ndrange.work_dim]

    @property
    def local_size(self):
        return self.ndrange.local_size[: self.ndrange.work_dim]

    @property
    def work_items(self) -> int:
        return self.ndrange.work_items

    @property
    def work_groups(self) -> int:
        return self.ndrange.total_groups

    @property
    def work_items_per_s(self) -> float:
        return self.work_items / self.elapsed_s if self.elapsed_s > 0 else float("inf")


@dataclass
class _Compiled:
    module: Any
    sites: list
    path: str
    compile_s: float = 0.0
    warmed: set = field(default_factory=set)


_COMPILED: dict[tuple, _Compiled] = {}


def _jit_default() -> bool:
    return os.environ.get("CLSIM_JIT", "1") not in ("0", "false", "no")


def _arg_types(kfn: KernelFunction, params: list[str], args) -> tuple[dict, list]:
    if len(args) != len(params):
        raise InvalidArgumentError(
            f"{kfn.name} takes {len(params)} arguments ({', '.join(params)}) but got "
            f"{len(args)} (CL_INVALID_KERNEL_ARGS)", kernel=kfn.name)
    types, values = {}, []
    for name, value in zip(params, args, strict=True):
        if value is None:  # a null pointer (compiler/nulls.py); the code never reads it
            types[name] = "null"
            values.append(np.zeros(1, np.uint8))
            continue
        if isinstance(value, np.ndarray) and value.ndim > 0:
            if value.size == 0:
                raise InvalidArgumentError(
                    f"{kfn.name}: buffer '{name}' is empty; OpenCL buffers need at least one "
                    "element (CL_INVALID_BUFFER_SIZE)", kernel=kfn.name, buffer=name)
            if not value.flags.c_contiguous:
                raise InvalidArgumentError(
                    f"{kfn.name}: buffer '{name}' is not C-contiguous, so results could not be "
                    "written back in place. Pass np.ascontiguousarray(...)",
                    kernel=kfn.name, buffer=name)
            if value.dtype.names is not None:  # a packed struct buffer: its bytes
                types[name] = ct.ArrayT(struct_of(value.dtype, f"{kfn.name}: buffer '{name}': "),
                                        1, "global")
                values.append(value.reshape(-1).view(np.uint8))
                continue
            if value.dtype.name not in _SUPPORTED:
                raise InvalidArgumentError(
                    f"{kfn.name}: buffer '{name}' has dtype {value.dtype}, which kernels cannot "
                    "use yet", kernel=kfn.name, buffer=name)
            types[name] = ct.ArrayT(value.dtype.name, 1, "global")
            # generated code sees a half buffer as its bits (Numba has no float16)
            values.append(value.reshape(-1).view(ct.storage_dtype(value.dtype.name)))
        elif isinstance(value, np.generic | np.ndarray):
            scalar = value[()] if isinstance(value, np.ndarray) else value
            if scalar.dtype.name not in _SUPPORTED:
                raise InvalidArgumentError(
                    f"{kfn.name}: scalar '{name}' has dtype {scalar.dtype}", kernel=kfn.name)
            types[name] = scalar.dtype.name
            values.append(np.dtype(ct.register_dtype(scalar.dtype.name)).type(scalar))
        else:
            hint = "np.int32(...)" if isinstance(value, int) else "np.float32(...)"
            raise InvalidArgumentError(
                f"{kfn.name}: argument '{name}' is a Python {type(value).__name__}; pass a numpy "
                f"scalar of the type the kernel declares, e.g. {hint}, or a numpy array for a "
                "buffer (CL_INVALID_ARG_SIZE)", kernel=kfn.name, argument=name)
    return types, values


def _compile(kfn, types: dict, config: LaunchConfig, instruments) -> _Compiled:
    nd = config.ndrange
    key = (id(kfn), kfn.fn.__code__, tuple(types.items()), nd.local_size, nd.work_dim,
           config.jit, config.parallel, tuple(inst.key() for inst in instruments),
           config.bounds, config.subgroup_size)
    hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    source, _sites, _meta = generate(kfn, types, config, instruments=instruments)
    module, path = load_source(kfn.name, source)
    compiled = _Compiled(module, site_table(module._SITES), str(path))
    _COMPILED[key] = compiled
    return compiled


def _has_global_atomics(kfn) -> bool:
    return getattr(parse(kfn), "uses_global_atomics", False)


def run(kernel: KernelFunction, global_size, local_size=None, args=(), *, jit: bool | None = None,
        parallel: bool | None = None, global_offset=None, opencl_version: str = "3.0",
        device=None, max_work_group_size: int | None = None,
        subgroup_size: int | None = None, reduction_order: str | None = None,
        reduction_seed: int = 0, checks: str = "default", **options) -> RunResult:
    """Run ``kernel`` over the ND-range with OpenCL semantics; buffers are updated in place.

    ``device``: the simulated device, a profile name ("h200", the default; "intel-xe", "cpu"...),
    a ``.toml`` path or a ``DeviceProfile``: its sub-group size, maximum work-group size, local
    memory size and reduction order apply unless ``subgroup_size``, ``max_work_group_size`` or
    ``reduction_order`` override them. ``checks``: "default" (bounds and barrier divergence),
    "all", "races", "uninit", "bounds" or "none" (no checks at all; benchmarking only).
    Instruments take further keywords: ``traffic=True`` fills ``result.traffic``,
    ``report_all=True`` collects ``result.findings`` (see ``clsim.instruments.registry``).
    ``jit=False`` (or ``CLSIM_JIT=0``) runs the same generated code as plain Python, for pdb.
    """
    if not isinstance(kernel, KernelFunction) or not kernel.is_kernel:
        raise KernelCompileError(f"{kernel!r} is not a @clsim.kernel")
    known = registry.options()
    unknown = set(options) - set(known)
    if unknown:
        raise InvalidArgumentError(f"run(): unknown options {sorted(unknown)}; run() takes "
                                   f"{', '.join(sorted(known))} besides its named parameters")
    sim = resolve_device(device)
    order, seed = check_reduction(reduction_order or sim.reduction_order, reduction_seed)
    jit = _jit_default() if jit is None else bool(jit)
    parsed = parse(kernel)
    nd = make_ndrange(global_size, local_size, kernel=kernel.name, offset=global_offset,
                      opencl_version=opencl_version,
                      max_work_group_size=max_work_group_size or sim.max_work_group_size)
    types, values = _arg_types(kernel, parsed.params, tuple(args))
    config = LaunchConfig(
        kernel.name, nd, sim,
        check_subgroup_size(sim.subgroup_size if subgroup_size is None else subgroup_size),
        order, seed, check_mode(checks), str(opencl_version), jit, parallel=False,
        options=MappingProxyType({**known, **options}))
    instruments = registry.build(config)
    config = replace(config, parallel=_parallel(kernel, config, instruments, parallel))
    compiled = _compile(kernel, types, config, instruments)
    _check_local_memory(compiled, config)
    info = LaunchInfo(config, parsed.params, values, types, compiled.sites)
    state = [arr for inst in instruments for arr in inst.allocate(info)]
    printf_sites = getattr(compiled.module, "_PRINTF", None)
    lines = [printf.buffer()] if printf_sites is not None else []
    result = _launch(compiled, config, [*values, *state, *lines])
    if lines:  # printf's output, after the launch, by work-item
        result.results["printf"] = printf.emit(lines[0], printf_sites)
    offset = 0
    for inst in instruments:
        count = len(inst.state_args())
        value = inst.finalize(info, state[offset:offset + count], result)
        if inst.result:
            result.results[inst.result] = value
        offset += count
    return result


def _check_local_memory(compiled: _Compiled, config: LaunchConfig) -> None:
    used, limit = compiled.module._LOCAL_BYTES, config.device.local_mem_bytes
    if limit is not None and used > limit:
        raise InvalidArgumentError(
            f"{config.kernel}: its local arrays take {used:,} bytes of local memory, more than "
            f"the {limit:,} bytes of device {config.device.name!r} (CL_OUT_OF_RESOURCES). Use "
            "smaller local arrays, or run(..., device=...) with a device that has more",
            kernel=config.kernel)


def _parallel(kernel, config: LaunchConfig, instruments, asked: bool | None) -> bool:
    """Groups run in parallel unless asked not to, or unless global atomics (which take effect
    in work-item loop order, docs/subgroups.md) or an instrument need them one at a time."""
    serial = _has_global_atomics(kernel) or any(inst.serial_groups for inst in instruments)
    if asked is None:
        return config.jit and config.ndrange.total_groups > 1 and not serial
    return bool(asked) and not serial


def _launch(compiled: _Compiled, config: LaunchConfig, values: list) -> RunResult:
    """Run every work-group (in chunks when parallel); raise the first error recorded."""
    nd = config.ndrange
    sizes = tuple(np.int64(v) for v in (*nd.num_groups, *nd.global_size, *nd.offset))
    parallel = config.parallel
    rows = min(_CHUNK, nd.total_groups) if parallel else 1
    errs = np.zeros((rows, rec.FIELDS), np.int64)
    launch = compiled.module._launch
    compile_s = 0.0
    if config.jit and "warm" not in compiled.warmed:
        t0 = time.perf_counter()
        try:
            launch(np.int64(0), np.int64(0), *sizes, *values, errs)
        except Exception as exc:  # a Numba error is a compile error, never its traceback
            if type(exc).__module__.startswith("numba."):  # (importing numba here costs 1 s)
                raise internal_compile_error(config.kernel, compiled.path, exc) from None
            raise
        compile_s = time.perf_counter() - t0
        compiled.warmed.add("warm")
    t0 = time.perf_counter()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        start = 0
        while start < nd.total_groups:
            count = min(rows if parallel else nd.total_groups, nd.total_groups - start)
            launch(np.int64(start), np.int64(count), *sizes, *values, errs)
            failed = np.nonzero(errs[:, rec.CODE])[0]
            if failed.size:
                raise decode(errs[failed[0]], compiled.sites, config.kernel, nd.local_size,
                             nd.offset, nd.work_dim, registry.decoders())
            start += count
    elapsed = time.perf_counter() - t0
    return RunResult(config.kernel, nd, elapsed, compile_s, config.jit, parallel, compiled.path,
                     results=registry.result_defaults(), config=config)
