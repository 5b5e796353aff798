"""``clsim.run``: checks the launch, compiles (or reuses) the kernel, runs it, reports.

Buffers are written in place, like a device buffer read back. Work-groups run in parallel
(on Python threads, ``clsim.runtime.threads``, or in Numba's ``prange`` where an instrument
needs it) unless the kernel needs ordering between groups; the per-work-item state of a
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
from clsim.compiler import constants
from clsim.compiler.diagnostics import internal_compile_error
from clsim.compiler.frontend import forget, parse
from clsim.compiler.module import generate
from clsim.errors import InvalidArgumentError, KernelCompileError, OutOfBoundsError, SlowPathWarning
from clsim.instruments import registry
from clsim.instruments.base import LaunchInfo
from clsim.runtime import jit_limit, launcher_tier, printf, watch
from clsim.runtime import record as rec
from clsim.runtime.arguments import (
    kernel_arg_types,
    ordered_args,
    read_only_error,
)
from clsim.runtime.cache import load_source
from clsim.runtime.config import (
    LaunchConfig,
    check_mode,
    check_reduction,
    check_subgroup_size,
    resolve_device,
)
from clsim.runtime.decode import decode
from clsim.runtime.memory import check_memory
from clsim.runtime.ndrange import NDRange, make_ndrange
from clsim.runtime.record import site_table
from clsim.runtime.threads import run_pieces as threads_run

_CHUNK = 4096  # groups per parallel launch: bounds the error-record memory


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
    # work-groups a JIT launch ran again as plain Python without an error (a lane-major
    # region's range check failed where no access does: a short loop step); said once
    plain_python_groups: int = 0

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
    warmed: set = field(default_factory=set)  # "group": its group function, "warm": launcher
    python_loop_groups: int = 0  # groups its launcher's Python form ran (launcher_tier)
    python_loop_s: float = 0.0  # and the seconds those launches took
    python_loop: Any = None  # that Python form, made on first use


_COMPILED: dict[tuple, _Compiled] = {}


def _jit_default() -> bool:
    return os.environ.get("CLSIM_JIT", "1") not in ("0", "false", "no")


def _compile(kfn, types: dict, config: LaunchConfig, instruments) -> _Compiled | None:
    """The loaded module of ``kfn`` under ``config``; None when it is too large to JIT."""
    nd = config.ndrange
    key = (id(kfn), kfn.fn.__code__, tuple(types.items()), nd.local_size, nd.work_dim,
           config.jit, config.parallel, tuple(inst.key() for inst in instruments),
           config.bounds, config.subgroup_size, constants.fingerprint(parse(kfn)))
    if key in _COMPILED:
        return _COMPILED[key]
    source, sites, _meta = generate(kfn, types, config, instruments=instruments)
    if config.jit and jit_limit.too_large(kfn.name, source):
        _COMPILED[key] = None  # the caller runs it as plain Python
        return None
    module, path = load_source(kfn.name, source)
    compiled = _Compiled(module, site_table(sites), str(path))  # (full paths; _SITES names)
    _COMPILED[key] = compiled
    return compiled


def _has_global_atomics(kfn) -> bool:
    return getattr(parse(kfn), "uses_global_atomics", False)


def run(kernel: KernelFunction, global_size, local_size=None, args=(), *, jit: bool | None = None,
        parallel: bool | None = None, global_offset=None, opencl_version: str = "3.0",
        device=None, max_work_group_size: int | None = None,
        subgroup_size: int | None = None, reduction_order: str | None = None,
        reduction_seed: int = 0, checks: str = "default", timeout_s: float | None = None,
        progress=None, **options) -> RunResult:
    """Run ``kernel`` over the ND-range with OpenCL semantics; buffers are updated in place.

    ``device``: the simulated device, a profile name ("h200", the default; "intel-xe", "cpu"...),
    a ``.toml`` path or a ``DeviceProfile``: its sub-group size, maximum work-group size, local
    memory size and reduction order apply unless ``subgroup_size``, ``max_work_group_size`` or
    ``reduction_order`` override them. ``checks``: "default" (bounds and barrier divergence),
    "all", "races", "uninit", "bounds" or "none" (no checks at all; benchmarking only).
    Instruments take further keywords: ``traffic=True`` fills ``result.traffic``,
    ``report_all=True`` collects ``result.findings`` (see ``clsim.instruments.registry``).
    ``jit=False`` (or ``CLSIM_JIT=0``) runs the same generated code as plain Python, for pdb.
    ``timeout_s``: stop with ``KernelTimeoutError`` when the groups run longer (compilation
    not counted); Ctrl-C stops a run with ``KernelInterrupted`` (see ``clsim.runtime.watch``).
    ``progress``: called as ``progress(stage, done, total)`` with stage "compile" before the
    JIT compiles and "run" with the work-groups completed so far.
    """
    if not isinstance(kernel, KernelFunction) or not kernel.is_kernel:
        raise KernelCompileError(f"{kernel!r} is not a @clsim.kernel")
    known = registry.options()
    unknown = set(options) - set(known)
    if unknown:
        raise InvalidArgumentError(f"run(): unknown options {sorted(unknown)}; run() takes "
                                   f"{', '.join(sorted(known))} besides its named parameters")
    if timeout_s is not None:
        watch.check_timeout(timeout_s)  # before compiling, which can take seconds
    sim = resolve_device(device)
    order, seed = check_reduction(reduction_order or sim.reduction_order, reduction_seed)
    jit = _jit_default() if jit is None else bool(jit)
    parsed = parse(kernel)
    if constants.rebound(parsed):  # SCALE = 3 or TABLE = other since the kernel was parsed
        forget(parsed)
        parsed = parse(kernel)
    nd = make_ndrange(global_size, local_size, kernel=kernel.name, offset=global_offset,
                      opencl_version=opencl_version,
                      max_work_group_size=max_work_group_size or sim.max_work_group_size)
    args = ordered_args(kernel.name, parsed.params, args)
    adapt = getattr(kernel, "adapt_args", None)  # a translated kernel takes a device's bytes
    args = adapt(tuple(args)) if adapt is not None else args
    types, values = kernel_arg_types(kernel.name, parsed.params, args, parsed.stored_params)
    config = LaunchConfig(
        kernel.name, nd, sim,
        check_subgroup_size(sim.subgroup_size if subgroup_size is None else subgroup_size),
        order, seed, check_mode(checks), str(opencl_version), jit, parallel=False,
        options=MappingProxyType({**known, **options}))
    # Without a collective sum every order adds alike: no order instrument, so the launch
    # shares the default order's compiled module (result.config still says what was asked).
    build = config if parsed.has_ordered_sums else replace(config, reduction_order="fixed")
    instruments = registry.build(build)
    config = replace(config, parallel=_parallel(kernel, config, instruments, parallel))
    how = _Watch(parsed.params, timeout_s, progress)
    try:
        return _compile_and_launch(kernel, parsed, types, values, config, instruments, how)
    except rec.ReplayLaunch as replay:  # the buffers are as before the launch
        instruments = registry.build(build)
        for inst in instruments:
            inst.lane_regions = inst.lane_loops = False
        result = _compile_and_launch(kernel, parsed, types, values, config, instruments, how)
        result.compile_s += replay.compile_s
        result.elapsed_s += replay.elapsed_s
        return result


def _compile_and_launch(kernel, parsed, types: dict, values: list, config: LaunchConfig,
                        instruments, how: _Watch) -> RunResult:
    for inst in instruments:
        inst.prepare(kernel, parsed.params, values)
    compiled = _compile(kernel, types, config, instruments)
    if compiled is None:  # too large for Numba (jit_limit, which warned): plain Python
        config = replace(config, jit=False, parallel=False)
        compiled = _compile(kernel, types, config, instruments)
    check_memory(compiled.module, config, _groups_at_once(config))
    info = LaunchInfo(config, parsed.params, values, types, compiled.sites)
    state = [arr for inst in instruments for arr in _allocate(inst, info)]
    printf_sites = getattr(compiled.module, "_PRINTF", None)
    lines = [printf.buffer()] if printf_sites is not None else []
    # a module whose lane-major regions have no usual form asks for the launch again
    # (REPLAY_LAUNCH): what it wrote is undone first
    undo = ([copy for inst in instruments for copy in inst.undo_copies()]
            if getattr(compiled.module, "_REPLAYS_LAUNCH", False) else [])
    try:
        result = _launch(compiled, config, [*values, *state, *lines], how,
                         _group_driver(kernel, config, instruments, info, len(values)),
                         _thread_values(instruments, values, state, lines),
                         lambda: _compile(kernel, types,
                                          replace(config, jit=False, parallel=False),
                                          instruments))
    except rec.ReplayLaunch:
        for value, saved in undo:
            np.copyto(value, saved)
        raise
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


def _allocate(inst, info: LaunchInfo) -> list:
    """An instrument's state arrays; running out of memory is the launch's size, not a bug."""
    try:
        return list(inst.allocate(info))
    except MemoryError as exc:
        need = getattr(exc, "_total_size", None)  # numpy's _ArrayMemoryError knows it
        size = f" ({need / 2**30:,.1f} GiB for one array)" if need else ""
        raise InvalidArgumentError(
            f"{info.config.kernel}: the {inst.name} instrument's state does not fit in "
            f"memory{size} for {info.config.ndrange.work_items:,} work-items. Use a smaller "
            "launch, or fewer checks/instruments", kernel=info.config.kernel) from None


def _parallel(kernel, config: LaunchConfig, instruments, asked: bool | None) -> bool:
    """Groups run in parallel unless asked not to, or unless global atomics (which take effect
    in work-item loop order, docs/subgroups.md) or an instrument need them one at a time."""
    serial = _has_global_atomics(kernel) or any(inst.serial_groups for inst in instruments)
    if watch.stuck_workers():  # a second parallel region beside a stuck one may deadlock
        serial = True
    if asked is None:
        return config.jit and config.ndrange.total_groups > 1 and not serial
    return bool(asked) and not serial


@dataclass(frozen=True)
class _Watch:
    """How ``run()`` was asked to watch the launch, and the parameter names errors cite."""

    params: list
    timeout_s: float | None
    progress: Any


def _group_driver(kernel, config: LaunchConfig, instruments, info: LaunchInfo, first: int):
    """The instrument that runs the launch's groups itself (``Instrument.run_groups``), and
    how many threads it may use: several only with JIT, groups serial, no global atomics
    (they take effect in group order) and every other instrument's state shareable."""
    threads = 1
    if config.jit and not config.parallel and not _has_global_atomics(kernel):
        import numba  # only JIT launches need it

        threads = numba.get_num_threads()
    offset = first
    for inst in instruments:
        count = len(inst.state_args())
        others = [o for o in instruments if o is not inst]
        if inst.drives_groups and all(o.threads_share_state or not o.state_args()
                                      for o in others):
            return inst, offset, count, threads
        offset += count
    return None


def _thread_values(instruments, values: list, state: list, lines: list):
    """The launcher's arguments for each Python thread of a parallel launch: the kernel's,
    then each instrument's ``thread_state`` (worker 0 first)."""
    made: dict[int, list] = {}

    def of(worker: int) -> list:
        if worker not in made:
            own, offset = [], 0
            for inst in instruments:
                count = len(inst.state_args())
                own += inst.thread_state(state[offset:offset + count], worker)
                offset += count
            made[worker] = [*values, *own, *lines]
        return made[worker]

    return of


def _launch(compiled: _Compiled, config: LaunchConfig, values: list, how: _Watch,
            driver=None, thread_values=None, slow=None) -> RunResult:
    """Run every work-group in chunks (clsim.runtime.watch), or as an instrument drives them
    (``Instrument.run_groups``: then the whole launch is one chunk, stopped by a timeout or
    Ctrl-C only when it returns); raise the first error recorded."""
    nd = config.ndrange
    sizes = tuple(np.int64(v) for v in (*nd.num_groups, *nd.global_size, *nd.offset))
    parallel = config.parallel
    rows = min(_CHUNK, nd.total_groups) if parallel else 1
    python_loop = launcher_tier.runs_python_loop(compiled, config)
    launch = launcher_tier.launcher(compiled, python_loop)
    errs = np.zeros((rows, rec.FIELDS), np.int64)
    # a module with lane-major regions under instruments reports nothing itself: any error
    # (REPLAY_LAUNCH included) runs the launch again with the usual forms (lane_emit.py)
    replays = getattr(compiled.module, "_REPLAYS_LAUNCH", False)
    rerun_sites: dict[int, list] = {}  # rows whose error a plain-Python rerun recorded
    reruns = [0]  # groups run again as plain Python that then ran to their end

    # a launcher that is serial although groups may run in parallel: we split its chunks
    threads = (_groups_at_once(config)
               if getattr(compiled.module, "_LAUNCHER", None) == "threads" else 1)

    def piece(first: int, count: int, start: int, worker: int) -> None:
        args = values if thread_values is None else thread_values(worker)
        launch(np.int64(start + first), np.int64(count), *sizes, *args,
               errs[first:first + count])

    def step(start: int, count: int) -> int | None:
        if threads > 1 and count > 1:
            threads_run(lambda first, n, worker: piece(first, n, start, worker), count, threads)
        else:
            launch(np.int64(start), np.int64(count), *sizes, *values, errs)
        return settle(start, count)

    def settle(start: int, count: int) -> int | None:
        """The first row with an error, after running again as plain Python each group that
        stopped with RERUN_GROUP (clsim.compiler.lane_emit), in order."""
        serial = getattr(compiled.module, "_LAUNCHER", None) == "serial"
        while True:
            failed = np.nonzero(errs[:, rec.CODE])[0]
            if not failed.size:
                return None
            row = int(failed[0])
            if replays:
                raise rec.ReplayLaunch
            if errs[row, rec.CODE] != rec.RERUN_GROUP:
                return row
            group = _linear_group(errs[row], nd.num_groups) if serial else start + row
            errs[row] = 0
            plain = slow()
            plain.module._launch(np.int64(group), np.int64(1), *sizes, *values,
                                 errs[row:row + 1])
            if errs[row, rec.CODE] != 0:
                rerun_sites[row] = plain.sites
                return row
            reruns[0] += 1
            if serial and group + 1 < start + count:  # the groups after it
                count, start = start + count - group - 1, group + 1
                launch(np.int64(start), np.int64(count), *sizes, *values, errs)

    def run_driven(start: int, total: int, state=None) -> None:
        """Groups start .. start + total - 1 for the driving instrument, which may call this
        from several threads at once (JIT releases the GIL); ``state`` replaces its arrays."""
        _inst, offset, count, _threads = driver
        args = values if state is None else [*values[:offset], *state,
                                             *values[offset + count:]]
        own = np.zeros((rows, rec.FIELDS), np.int64)
        stop = start + total
        while start < stop:
            count = min(rows if parallel else total, stop - start)
            launch(np.int64(start), np.int64(count), *sizes, *args, own)
            failed = np.nonzero(own[:, rec.CODE])[0]
            if failed.size and replays:
                raise rec.ReplayLaunch
            if failed.size:
                raise decode(own[failed[0]], compiled.sites, config.kernel, nd.local_size,
                             nd.offset, nd.work_dim, registry.decoders())
            start += count

    def driven_step(start: int, count: int) -> int | None:
        if count and not driver[0].run_groups(run_driven, driver[3]):
            return step(start, count)
        return None

    def compile_group() -> None:
        launcher_tier.compile_group_function(
            compiled.module, sizes, values if thread_values is None else thread_values(0), errs)

    compile_s = _warm_up(compiled, config, compile_group if python_loop else lambda: step(0, 0),
                         "group" if python_loop else "warm", how, values)
    if python_loop:
        compiled.python_loop_groups += nd.total_groups
    chunk, first = (rows if parallel else nd.total_groups), (_first_chunk(rows) if parallel else 1)
    if driver is not None:
        chunk = first = max(1, nd.total_groups)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            row = watch.run_groups(step if driver is None else driven_step, nd.total_groups,
                                   chunk, kernel=config.kernel, jit=config.jit,
                                   timeout_s=how.timeout_s, progress=how.progress,
                                   first_chunk=first)
        except ValueError as exc:  # plain Python storing to a read-only array
            raise _read_only(exc, config, how.params, values) from None
        except IndexError as exc:  # plain Python, checks="none": numpy's own bounds check
            raise _unchecked_out_of_bounds(exc, config) from None
        except rec.ReplayLaunch as replay:  # the launch that runs again counts this one too
            replay.compile_s, replay.elapsed_s = compile_s, time.perf_counter() - t0
            raise
    if row is not None:
        raise decode(errs[row], rerun_sites.get(row, compiled.sites), config.kernel,
                     nd.local_size, nd.offset, nd.work_dim, registry.decoders())
    elapsed = time.perf_counter() - t0
    if python_loop:
        compiled.python_loop_s += elapsed
    if reruns[0]:
        _say_plain_python_groups(config.kernel, reruns[0], nd.total_groups)
    return RunResult(config.kernel, nd, elapsed, compile_s, config.jit, parallel, compiled.path,
                     results=registry.result_defaults(), config=config,
                     plain_python_groups=reruns[0])


_SAID_PLAIN_PYTHON: set[str] = set()


def forget_plain_python_notes() -> None:
    """Say the plain-Python rerun again for every kernel (tests)."""
    _SAID_PLAIN_PYTHON.clear()


def _say_plain_python_groups(kernel: str, groups: int, total: int) -> None:
    """Once per kernel and process: some groups of a JIT launch ran as plain Python (correct,
    the no-JIT module's bytes, but far slower), so a slow launch has a named cause."""
    if kernel in _SAID_PLAIN_PYTHON:
        return
    _SAID_PLAIN_PYTHON.add(kernel)
    warnings.warn(SlowPathWarning(
        f"{kernel}: {groups:,} of {total:,} work-groups ran again as plain Python: a "
        "lane-major loop's range check failed where none of its accesses does (a loop step "
        "below 1, or, in a loop that stores, below the lanes of a group or sub-group, "
        "docs/engine.md). The results are exact; the launch is slower"),
        stacklevel=5)  # the caller of clsim.run: this <- _launch <- _compile_and_launch <- run


def _linear_group(row: np.ndarray, num_groups) -> int:
    gx, gy, gz = (int(row[f]) for f in rec.GROUP)
    return gx + num_groups[0] * (gy + num_groups[1] * gz)


def _groups_at_once(config: LaunchConfig) -> int:
    if not config.parallel:
        return 1
    import numba

    return min(config.ndrange.total_groups, numba.get_num_threads())


def _first_chunk(rows: int) -> int:
    import numba

    return min(rows, 4 * numba.get_num_threads())


def _warm_up(compiled: _Compiled, config: LaunchConfig, compile_, stage: str, how: _Watch,
             values) -> float:
    """Compile what the launch runs (``stage`` "warm": the JIT launcher, with an empty launch;
    "group": the group function alone, launcher_tier); its seconds (0.0 when already done)."""
    if not config.jit or stage in compiled.warmed or "warm" in compiled.warmed:
        return 0.0
    from numba.core.errors import TypingError

    if how.progress is not None:
        how.progress("compile", 0, config.ndrange.total_groups)
    t0 = time.perf_counter()
    try:
        compile_()
    except TypingError as exc:  # stores to a read-only array inside a helper
        error = _read_only(exc, config, how.params, values)
        if error is exc:  # any other Numba error is a compile error, never its traceback
            raise internal_compile_error(config.kernel, compiled.path, exc) from None
        raise error from None
    except (RecursionError, MemoryError) as exc:  # a kernel too large under the line limit
        raise jit_limit.compile_failure(config.kernel, compiled.path, exc) from None
    except Exception as exc:
        if type(exc).__module__.startswith("numba."):
            raise internal_compile_error(config.kernel, compiled.path, exc) from None
        raise
    compiled.warmed.add(stage)
    return time.perf_counter() - t0


def _unchecked_out_of_bounds(exc: IndexError, config: LaunchConfig) -> OutOfBoundsError:
    return OutOfBoundsError(
        f"kernel {config.kernel!r}: an access out of bounds ({exc}) under checks='none', "
        "which records no work-item or source line. Rerun with checks='default' (or without "
        "--check none) to see where.")


def _read_only(exc: Exception, config: LaunchConfig, params: list, values: list) -> Exception:
    text = str(exc)
    if "readonly array" not in text and "read-only" not in text:
        return exc
    names = [name for name, value in zip(params, values, strict=False)
             if isinstance(value, np.ndarray) and value.ndim and not value.flags.writeable]
    return read_only_error(config.kernel, names) if names else exc
