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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clsim.api import KernelFunction
from clsim.compiler import ctypes as ct
from clsim.compiler import helpers as hp
from clsim.compiler.frontend import parse
from clsim.compiler.instrument import LaunchInfo, build_instruments
from clsim.compiler.module import generate
from clsim.errors import InvalidArgumentError, KernelCompileError
from clsim.runtime.cache import load_source
from clsim.runtime.decode import decode
from clsim.runtime.ndrange import DEFAULT_MAX_WORK_GROUP_SIZE, NDRange, make_ndrange

_CHUNK = 4096  # groups per parallel launch: bounds the error-record memory
_SUPPORTED = set(ct.INT_TYPES) | {"float32", "float64", "bool"}


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
    traffic: Any = None
    findings: list = field(default_factory=list)

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
            if value.dtype.name not in _SUPPORTED:
                raise InvalidArgumentError(
                    f"{kfn.name}: buffer '{name}' has dtype {value.dtype}, which kernels cannot "
                    "use yet", kernel=kfn.name, buffer=name)
            types[name] = ct.ArrayT(value.dtype.name, 1, "global")
            values.append(value.reshape(-1))
        elif isinstance(value, np.generic | np.ndarray):
            scalar = value[()] if isinstance(value, np.ndarray) else value
            if scalar.dtype.name not in _SUPPORTED:
                raise InvalidArgumentError(
                    f"{kfn.name}: scalar '{name}' has dtype {scalar.dtype}", kernel=kfn.name)
            types[name] = scalar.dtype.name
            values.append(scalar)
        else:
            hint = "np.int32(...)" if isinstance(value, int) else "np.float32(...)"
            raise InvalidArgumentError(
                f"{kfn.name}: argument '{name}' is a Python {type(value).__name__}; pass a numpy "
                f"scalar of the type the kernel declares, e.g. {hint}, or a numpy array for a "
                "buffer (CL_INVALID_ARG_SIZE)", kernel=kfn.name, argument=name)
    return types, values


def _compile(kfn, types: dict, nd: NDRange, jit: bool, parallel: bool, instruments, bounds,
             subgroup_size) -> _Compiled:
    key = (id(kfn), kfn.fn.__code__, tuple(types.items()), nd.local_size, nd.work_dim, jit,
           parallel, tuple(inst.key() for inst in instruments), bounds, subgroup_size)
    hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    source, _sites, _meta = generate(kfn, types, nd.local_size[: nd.work_dim], jit=jit,
                                    parallel=parallel, instruments=instruments, bounds=bounds,
                                    subgroup_size=subgroup_size)
    module, path = load_source(kfn.name, source)
    compiled = _Compiled(module, module._SITES, str(path))
    _COMPILED[key] = compiled
    return compiled


def _has_global_atomics(kfn) -> bool:
    return getattr(parse(kfn), "uses_global_atomics", False)


DEFAULT_SUBGROUP_SIZE = 32
CHECK_MODES = ("default", "all", "races", "uninit", "bounds", "none")
# Options consumed by instruments (traffic, race checks...); run() accepts them by name.
INSTRUMENT_OPTIONS = {"report_all", "uninit", "reduction_order", "reduction_seed", "simd_width",
                      "profile"}


def run(kernel: KernelFunction, global_size, local_size=None, args=(), *, jit: bool | None = None,
        parallel: bool | None = None, global_offset=None, opencl_version: str = "3.0",
        max_work_group_size: int = DEFAULT_MAX_WORK_GROUP_SIZE,
        subgroup_size: int | None = None, traffic: bool = False, checks: str = "default",
        **options) -> RunResult:
    """Run ``kernel`` over the ND-range with OpenCL semantics; buffers are updated in place.

    ``checks``: "default" (bounds and barrier divergence), "all", "races", "uninit", "bounds"
    or "none" (benchmarking only). ``traffic=True`` fills ``result.traffic``. ``subgroup_size``
    (1-128, default 32) shapes sub-groups. ``jit=False`` (or ``CLSIM_JIT=0``) runs the same
    generated code as plain Python, for pdb.
    """
    if not isinstance(kernel, KernelFunction) or not kernel.is_kernel:
        raise KernelCompileError(f"{kernel!r} is not a @clsim.kernel")
    unknown = set(options) - INSTRUMENT_OPTIONS
    if unknown:
        raise InvalidArgumentError(f"run(): unknown options {sorted(unknown)}")
    if checks not in CHECK_MODES:
        raise InvalidArgumentError(f"run(): checks={checks!r}; use one of {CHECK_MODES}")
    sg = DEFAULT_SUBGROUP_SIZE if subgroup_size is None else int(subgroup_size)
    if not 1 <= sg <= 128:
        raise InvalidArgumentError(f"run(): subgroup_size={subgroup_size} must be 1 to 128")
    instruments = build_instruments(
        {"traffic": traffic, "checks": checks, "subgroup_size": sg, **options})
    jit = _jit_default() if jit is None else bool(jit)
    parsed = parse(kernel)
    nd = make_ndrange(global_size, local_size, kernel=kernel.name, offset=global_offset,
                      opencl_version=opencl_version, max_work_group_size=max_work_group_size)
    types, values = _arg_types(kernel, parsed.params, tuple(args))
    if parallel is None:
        parallel = (jit and not _has_global_atomics(kernel) and nd.total_groups > 1
                    and all(inst.parallel_safe for inst in instruments))
    elif parallel and _has_global_atomics(kernel):
        parallel = False  # atomics take effect in work-item loop order (docs/subgroups.md)
    elif parallel and not all(inst.parallel_safe for inst in instruments):
        parallel = False  # e.g. race checks: shadow memory assumes groups run one at a time
    compiled = _compile(kernel, types, nd, jit, parallel, instruments, checks != "none", sg)
    info = LaunchInfo(kernel.name, nd, parsed.params, values, types, compiled.sites, sg)
    state = [arr for inst in instruments for arr in inst.allocate(info)]
    values = [*values, *state]
    ng = nd.num_groups
    sizes = (*ng, *nd.global_size, *nd.offset)
    sizes = tuple(np.int64(v) for v in sizes)
    rows = min(_CHUNK, nd.total_groups) if parallel else 1
    errs = np.zeros((rows, hp.ERR_FIELDS), np.int64)
    launch = compiled.module._launch
    compile_s = 0.0
    if jit and "warm" not in compiled.warmed:
        t0 = time.perf_counter()
        launch(np.int64(0), np.int64(0), *sizes, *values, errs)
        compile_s = time.perf_counter() - t0
        compiled.warmed.add("warm")
    t0 = time.perf_counter()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        start = 0
        while start < nd.total_groups:
            count = min(rows if parallel else nd.total_groups, nd.total_groups - start)
            launch(np.int64(start), np.int64(count), *sizes, *values, errs)
            failed = np.nonzero(errs[:, 0])[0]
            if failed.size:
                record = errs[failed[0]]
                raise decode(record, compiled.sites, kernel.name, nd.local_size, nd.offset,
                             nd.work_dim)
            start += count
    elapsed = time.perf_counter() - t0
    result = RunResult(kernel.name, nd, elapsed, compile_s, jit, parallel, compiled.path)
    offset = 0
    for inst in instruments:
        count = len(inst.state_args())
        inst.finalize(info, state[offset:offset + count], result)
        offset += count
    return result
