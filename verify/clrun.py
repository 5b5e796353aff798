"""Run one ``.cl`` kernel launch on a real OpenCL device and bring every buffer back.

``run_cl`` checks the device's features first (so a missing feature is a clear
DeviceLacksFeature, never a cryptic build error), builds the program with the options that
bit-exact comparison needs, copies numpy arrays in, launches once with profiling, and reads
every array argument back. Contexts, profiling queues and built programs are cached per
(device, source, options) for the life of the process.

This module compares nothing and knows no kernel specs: the verifier does that. It runs one
launch at a time and is not thread-safe (kernel arguments are set on a shared object).
"""

from __future__ import annotations

import math
import re
import shlex
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from clsim.cl_includes import resolve_includes
from clsim.errors import DeviceError, InvalidArgumentError
from clsim.runtime.arguments import LocalMem  # noqa: F401  (one class: clsim.LocalMem)
from clsim.runtime.images import Image
from verify.cl_cache import cache_dir
from verify.clargs import check_signature, memory_groups, unpack_shared, view_as
from verify.climages import bind_image
from verify.devices import WORKING_POCL_HINT, DeviceInfo, get_device, import_pyopencl
from verify.features import (  # noqa: F401  (re-exported: the launch API's feature names)
    CL2_FEATURES,
    FEATURES,
    check_features,
    launch_features,
    missing_feature,
    needs_cl2,
    non_uniform,
)
from verify.probe import health

_STD_OPTION = re.compile(r"-cl-std=")


@dataclass(frozen=True)
class ClRun:
    """The outcome of one launch: array arguments read back (None for scalars and local
    memory, aligned with the arguments), kernel time from profiling events, sub-group size."""

    device: str
    buffers: list[np.ndarray | None]
    time_ns: int | None
    subgroup_size: int | None
    options: tuple[str, ...]


_queues: dict[str, tuple[Any, Any]] = {}
_programs: dict[tuple[str, str, tuple[str, ...]], Any] = {}


# ---------------------------------------------------------------------------------------------
# Contexts and programs


def _status(cl: Any, err: Exception) -> str:
    code = getattr(err, "code", None)
    try:
        return "CL_" + cl.status_code.to_string(code)
    except Exception:
        return f"CL error {code}"


def _queue(info: DeviceInfo) -> tuple[Any, Any]:
    if info.short_name not in _queues:
        cl = import_pyopencl()
        context = cl.Context([info.cl_device])
        queue = cl.CommandQueue(
            context, info.cl_device, properties=cl.command_queue_properties.PROFILING_ENABLE)
        _queues[info.short_name] = (context, queue)
    return _queues[info.short_name]


def exact_options(info: DeviceInfo) -> tuple[str, ...]:
    """Build options every launch gets so results can match the simulator bit for bit.

    The simulator divides and takes square roots correctly rounded; OpenCL allows 2.5/3 ulp
    unless this flag is given, and the build fails with it on a device that does not report
    CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT, so it is added only where supported. Contraction is
    turned off by ``#pragma OPENCL FP_CONTRACT OFF`` in each ``.cl`` file.
    """
    return ("-cl-fp32-correctly-rounded-divide-sqrt",) if info.correctly_rounded_divide_sqrt \
        else ()



def build_options(info: DeviceInfo, options: str | Sequence[str] = (),
                  subgroup_size: int | None = None, cl2: bool = False) -> tuple[str, ...]:
    """Every build option ``run_cl`` uses: the caller's, ``-DCLSIM_SUBGROUP_SIZE=n`` when a
    sub-group size is required, the ``-cl-std`` the device's probe found for OpenCL C 2.0 when
    ``cl2`` (unless the caller gave a ``-cl-std``), ``-cl-kernel-arg-info`` (arguments are
    checked against the signature), then ``exact_options``."""
    user = tuple(shlex.split(options) if isinstance(options, str) else options)
    defines = (f"-DCLSIM_SUBGROUP_SIZE={subgroup_size}",) if subgroup_size else ()
    std: tuple[str, ...] = ()
    if cl2 and not any(_STD_OPTION.match(o) for o in user):
        option = health(info).cl2_option
        std = (option,) if option else ()
    return user + defines + std + ("-cl-kernel-arg-info",) + exact_options(info)


def _build_log(cl: Any, context: Any, info: DeviceInfo, source: str, options: str) -> str | None:
    # pyopencl's cached build replaces the program object, so the failed one's log is gone; a
    # second, uncached build of the same source on the raw program object recovers it.
    try:
        raw = cl._cl._Program(context, source)
        raw.build(options.encode(), [info.cl_device])
    except cl.Error:
        try:
            return raw.get_build_info(info.cl_device, cl.program_build_info.LOG)
        except Exception:
            return None
    except Exception:
        return None
    return None


def _build_error(cl: Any, err: Exception, info: DeviceInfo, source: str,
                 options: tuple[str, ...], kernel_name: str) -> DeviceError:
    context, _ = _queue(info)
    joined = " ".join(options)
    log = _build_log(cl, context, info, source, joined) or str(err)
    with tempfile.NamedTemporaryFile("w", prefix=f"clsim-{kernel_name}-", suffix=".cl",
                                     delete=False) as handle:
        handle.write(source)
    status = _status(cl, err)
    verdict = health(info)
    fix = "Fix the OpenCL C source" if verdict.usable else (
        f"The device is the cause, not the source: {info.short_name} fails its health probe "
        f"({verdict.reason}). Use another device (clsim devices); {WORKING_POCL_HINT}")
    return DeviceError(
        f"{kernel_name} on {info.short_name}: {status} (options: {joined or '(none)'}; source "
        f"saved as {handle.name}). {fix}; build log:\n{log.strip()}",
        device=info.short_name, kernel=kernel_name, status=status, build_log=log,
        options=options, source_path=handle.name, device_unusable=not verdict.usable)


def build_program(info: DeviceInfo, source: str, options: tuple[str, ...],
                  kernel_name: str = "<program>") -> Any:
    """The built ``pyopencl.Program`` for (device, source, options), cached."""
    key = (info.short_name, source, options)
    if key not in _programs:
        # Files were inlined when the source was read (verify.pairs.read_source); an include
        # left now would be read by the device compiler, so it is refused.
        resolve_includes(source, None, f"<source of {kernel_name}>")
        cl = import_pyopencl()
        context, _ = _queue(info)
        try:
            with warnings.catch_warnings():
                # Intel's runtime logs "Compilation started" on every build; not a warning.
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(context, source).build(
                    options=list(options), devices=[info.cl_device], cache_dir=cache_dir())
        except cl.Error as err:
            raise _build_error(cl, err, info, source, options, kernel_name) from err
        _programs[key] = program
    return _programs[key]


# ---------------------------------------------------------------------------------------------
# Launch


def _as_tuple(size: int | Sequence[int] | None) -> tuple[int, ...] | None:
    if size is None:
        return None
    return (int(size),) if isinstance(size, int | np.integer) else tuple(int(s) for s in size)


def _check_args(args: Sequence[Any], kernel_name: str) -> None:
    # Before building: a Python int has no C type, and guessing one hides width bugs.
    for index, arg in enumerate(args):
        if not isinstance(arg, np.ndarray | np.generic | LocalMem | Image):
            raise InvalidArgumentError(
                f"{kernel_name}: argument {index} is a {type(arg).__name__}; pass a numpy array, "
                "a numpy scalar (np.int32(n), np.float32(x): the C type must be explicit) or "
                "LocalMem(nbytes) (or a clsim.Image).", kernel=kernel_name, index=index)


def _set_arg(cl: Any, kernel: Any, index: int, value: Any, info: DeviceInfo,
             kernel_name: str) -> None:
    try:
        kernel.set_arg(index, value)
    except cl.Error as err:  # e.g. INVALID_ARG_SIZE where the device gave no argument info
        raise InvalidArgumentError(
            f"{kernel_name} on {info.short_name}: argument {index} does not fit its .cl "
            f"parameter ({_status(cl, err)}). Pass the type the .cl kernel declares.",
            kernel=kernel_name, index=index, status=_status(cl, err)) from err


def _bind(cl: Any, kernel: Any, context: Any, args: Sequence[Any], info: DeviceInfo,
          kernel_name: str) -> list[tuple | None]:
    """Set every argument; returns (buffer, host array) per array argument, (image, host
    array, read-back) per image (``verify.climages``), else None.
    Arguments that are one host array get one buffer (``verify.clargs.memory_groups``)."""
    flags = cl.mem_flags
    groups = memory_groups(args, kernel_name)
    bound: list[tuple[Any, np.ndarray] | None] = []
    for index, arg in enumerate(args):
        group = groups[index]
        if group is not None and group != index:  # the same buffer, read back as this arg
            bound.append((bound[group][0], view_as(bound[group][1], arg.dtype, arg.shape)))
            kernel.set_arg(index, bound[group][0])
        elif isinstance(arg, Image):
            mem, host, read = bind_image(cl, context, arg, kernel_name, index)
            kernel.set_arg(index, mem)
            bound.append((mem, host, read))
        elif isinstance(arg, np.ndarray) and arg.ndim > 0:
            host = np.ascontiguousarray(arg)  # C order: what a flat __global pointer sees
            if host.nbytes:
                buf = cl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=host)
            else:  # OpenCL has no empty buffers; nothing is read back from this one
                buf = cl.Buffer(context, flags.READ_WRITE, max(host.itemsize, 1))
            kernel.set_arg(index, buf)
            bound.append((buf, host))
        elif isinstance(arg, np.generic | np.ndarray):
            _set_arg(cl, kernel, index, np.asarray(arg)[()], info, kernel_name)
            bound.append(None)
        else:  # LocalMem, checked by _check_args
            kernel.set_arg(index, cl.LocalMemory(arg.nbytes))
            bound.append(None)
    return bound


def _read_back(cl: Any, queue: Any, bound: list[tuple | None]) -> list[np.ndarray | None]:
    # One read per buffer: aliased arguments get the same array back.
    read: dict[int, np.ndarray] = {}
    buffers: list[np.ndarray | None] = []
    for item in bound:
        if item is None:
            buffers.append(None)
            continue
        buf, host = item[:2]
        if id(buf) not in read:
            out = np.empty_like(host)
            if len(item) == 3:  # an image: its own read-back
                item[2](queue, out)
            elif out.nbytes:
                cl.enqueue_copy(queue, out, buf)
            read[id(buf)] = out
        buffers.append(view_as(read[id(buf)], host.dtype, host.shape))
    return buffers


def _kernel_subgroup_size(cl: Any, kernel: Any, info: DeviceInfo,
                          local: tuple[int, ...] | None) -> int | None:
    if not info.has_subgroups or local is None:
        return None
    try:
        return int(kernel.get_sub_group_info(
            info.cl_device, cl.kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE, local))
    except (AttributeError, cl.Error):
        return None


def _make_kernel(cl: Any, program: Any, info: DeviceInfo, kernel_name: str) -> Any:
    try:
        return cl.Kernel(program, kernel_name)
    except cl.Error as err:
        names = program.get_info(cl.program_info.KERNEL_NAMES) or "(none)"
        raise DeviceError(
            f"{kernel_name} on {info.short_name}: {_status(cl, err)} creating the kernel "
            f"(program has: {names}). Check the kernel name and that every function it calls "
            "exists on this device.", device=info.short_name, kernel=kernel_name,
            status=_status(cl, err)) from err


def build_kernel(info: DeviceInfo, source: str, options: tuple[str, ...], kernel_name: str
                 ) -> Any:
    """Build (cached) and create ``kernel_name``: raises DeviceError with the build log, or
    naming the kernels the program has, before anything is launched."""
    program = build_program(info, source, options, kernel_name)
    return _make_kernel(import_pyopencl(), program, info, kernel_name)


def _launch(cl: Any, queue: Any, kernel: Any, info: DeviceInfo, kernel_name: str,
            global_size: tuple[int, ...], local: tuple[int, ...] | None) -> Any:
    try:
        event = cl.enqueue_nd_range_kernel(queue, kernel, global_size, local)
        event.wait()
        return event
    except cl.Error as err:
        status = _status(cl, err)
        raise DeviceError(
            f"{kernel_name} on {info.short_name}: {status} launching global={global_size}, "
            f"local={local}. Check the sizes (global a multiple of local, local within "
            f"{info.max_work_group_size}) and the arguments.",
            device=info.short_name, kernel=kernel_name, status=status) from err


def _elapsed_ns(event: Any) -> int | None:
    try:
        return int(event.profile.end - event.profile.start)
    except Exception:  # a device without profiling support
        return None


def run_cl(device: str | DeviceInfo, source: str, kernel_name: str,
           global_size: int | Sequence[int], local_size: int | Sequence[int] | None,
           args: Sequence[Any], *, options: str | Sequence[str] = (),
           required_features: Sequence[str] = (), subgroup_size: int | None = None,
           profile: bool = True, prepare_only: bool = False) -> ClRun | None:
    """Build ``source`` for ``device``, launch ``kernel_name`` once, read every array back.

    Arrays become read-write buffers (copied in, multi-dimensional ones flattened in C order
    and read back in their shape; the caller's arrays are not modified); numpy scalars are
    passed with their own dtype; ``LocalMem(n)`` is a ``__local`` pointer of n bytes.
    ``subgroup_size`` requires that size, defines ``CLSIM_SUBGROUP_SIZE`` for the source's
    ``intel_reqd_sub_group_size`` attribute, and raises DeviceError if the kernel would run
    with another size. Missing features raise DeviceLacksFeature before anything is built.
    Queues always profile; ``profile=False`` only leaves ``time_ns`` None. ``prepare_only``
    does every check and the build, launches nothing and returns None (``verify.worker`` does
    this first, so a launch's time limit does not include the build).
    """
    info = device if isinstance(device, DeviceInfo) else get_device(device)
    args = unpack_shared(args)  # views of one array, as verify.worker sent them
    global_tuple, local = _as_tuple(global_size), _as_tuple(local_size)
    assert global_tuple is not None
    features = list(required_features)
    if subgroup_size is not None:
        features.append(f"subgroup_size:{subgroup_size}")
    if local is not None:
        features.append(f"work_group_size:{math.prod(local)}")
    cl2 = launch_features(source, global_tuple, local)
    check_features(info, features + cl2)
    cl2 += [f for f in features if f in CL2_FEATURES]
    _check_args(args, kernel_name)

    all_options = build_options(info, options, subgroup_size,
                                any(f in CL2_FEATURES for f in cl2))
    cl = import_pyopencl()
    program = build_program(info, source, all_options, kernel_name)
    context, queue = _queue(info)
    kernel = _make_kernel(cl, program, info, kernel_name)
    check_signature(cl, kernel, info.short_name, kernel_name, args, LocalMem, source)
    if prepare_only:
        return None
    bound = _bind(cl, kernel, context, args, info, kernel_name)

    actual = _kernel_subgroup_size(cl, kernel, info, local)
    if subgroup_size is not None and actual is not None and actual != subgroup_size:
        raise DeviceError(
            f"{kernel_name} on {info.short_name}: would run with sub-group size {actual}, not "
            f"{subgroup_size}. Add __attribute__((intel_reqd_sub_group_size("
            "CLSIM_SUBGROUP_SIZE))) to the kernel.",
            device=info.short_name, kernel=kernel_name, subgroup_size=actual)

    event = _launch(cl, queue, kernel, info, kernel_name, global_tuple, local)
    buffers = _read_back(cl, queue, bound)
    queue.finish()
    return ClRun(device=info.short_name, buffers=buffers,
                 time_ns=_elapsed_ns(event) if profile else None,
                 subgroup_size=actual, options=all_options)
