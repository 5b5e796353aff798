"""Device health probe: can this device build and run a trivial kernel, and build OpenCL C 2.0?

A listed device proves nothing: the PoCL in pyopencl's wheel (3.0-rc2, LLVM 14) lists itself on
an AMD EPYC (family 26) and then fails every build with ``unknown target CPU 'generic'``. So
each device is probed once: a child process (``verify.probe.main NAME``, so a driver that
crashes takes only the child down; ``main`` is its entry) builds and runs a tiny kernel and
checks its output, then
tries ``-cl-std=CL2.0`` / ``CL3.0`` builds with a non-uniform launch (global 3, local 2). The
verdict is a ``Health`` cached on disk (``$XDG_CACHE_HOME/clsim/probe/``) by device identity
(platform, device and driver versions), the CPU model and ``PROBE_VERSION``, and in memory.

``CLSIM_PROBE_FAULT=pocl,oclgrind`` (a test hook) makes the named devices' probe build a
source with an error, as a broken driver would fail: tests use it to see an unusable device
reported and skipped with its reason.

This module runs no user kernels (``verify.clrun``) and formats no tables (``verify.devices``).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verify.devices import DeviceInfo, child_env, get_device, import_pyopencl
from clsim.lifeline import spawn

PROBE_VERSION = 2
FAULT_ENV = "CLSIM_PROBE_FAULT"
PROBE_TIMEOUT_S = 180
# Not "-m verify.probe": the verify package imports this module first (runpy would warn).
# die_with_parent first: a probe stuck in a driver must not outlive a killed verifier.
_CHILD = ("import sys; from clsim.lifeline import die_with_parent; die_with_parent(); "
          "from verify.probe import main; sys.exit(main())")
PROBE_SOURCE = """__kernel void clsim_probe(__global int* out)
{
    size_t i = get_global_id(0);
    out[i] = (int)(i * 3u + 1u);
}
"""
BROKEN_SOURCE = "__kernel void clsim_probe(__global int* out) { out[0] = not_declared; }\n"
NON_UNIFORM_SOURCE = """__kernel void clsim_probe(__global int* out)
{
    out[get_global_id(0)] = (int)get_local_size(0);
}
"""
BUILTINS_SOURCE = """__kernel void clsim_probe(__global int* out)
{
    int s = work_group_reduce_add((int)get_local_id(0) + 1);
    out[get_global_id(0)] = work_group_broadcast(s, (size_t)0);
}
"""
# Tried in order; the first that builds and runs a non-uniform launch right is the one used.
CL2_STDS = ("-cl-std=CL2.0", "-cl-std=CL3.0")


@dataclass(frozen=True)
class Health:
    """A device's probe verdict. ``reason`` says why it is unusable ("" when usable);
    ``cl2_option`` is the ``-cl-std`` option that runs non-uniform work-groups right on it
    (None: none does, ``cl2_reason`` says what the probe saw); ``cl2_builtins`` whether the
    work-group functions of OpenCL C 2.0 also build and run with it (Oclgrind: no)."""

    usable: bool
    reason: str = ""
    cl2_option: str | None = None
    cl2_reason: str = ""
    cl2_builtins: bool = False


_memory: dict[tuple[str, bool], Health] = {}  # (device, fault injected) -> verdict


def reset() -> None:
    """Forget the verdicts held in memory (the disk cache stays)."""
    _memory.clear()


# ---------------------------------------------------------------------------------------------
# The probe itself (runs in the child)


def _run(cl: Any, info: DeviceInfo, source: str, options: list[str], global_size: int,
         local_size: int) -> np.ndarray:
    context = cl.Context([info.cl_device])
    queue = cl.CommandQueue(context, info.cl_device)
    program = cl.Program(context, source).build(options=options, devices=[info.cl_device])
    out = np.full(global_size, -1, np.int32)
    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=out)
    kernel = cl.Kernel(program, "clsim_probe")
    kernel.set_arg(0, buf)
    cl.enqueue_nd_range_kernel(queue, kernel, (global_size,), (local_size,)).wait()
    cl.enqueue_copy(queue, out, buf)
    queue.finish()
    return out


def _error_text(err: Exception) -> str:
    text = str(err).strip()
    # pyopencl puts the build log after the status; the log's first error line is the news.
    errors = [line.strip() for line in text.splitlines() if "error" in line.lower()]
    line = errors[-1] if errors else text.splitlines()[0] if text else type(err).__name__
    # "/tmp/.../tempfile_x.cl:1:57: error: ..." names a temporary file: drop it, keep the news.
    return re.sub(r"\S+\.cl:\d+:\d+:\s*", "", line)[:300]


def _cl2(cl: Any, info: DeviceInfo) -> tuple[str | None, str]:
    seen = []
    for option in CL2_STDS:
        try:
            out = _run(cl, info, NON_UNIFORM_SOURCE, [option], 3, 2)
        except Exception as err:
            seen.append(f"{option}: {_error_text(err)}")
            continue
        if out.tolist() == [2, 2, 1]:
            return option, ""
        seen.append(f"{option}: local sizes {out.tolist()}, expected [2, 2, 1]")
    return None, "; ".join(seen)


def probe_here(info: DeviceInfo, broken: bool = False) -> Health:
    """Probe ``info`` in this process (``health`` runs this in a child). ``broken`` builds a
    source with an error instead of the probe kernel (the CLSIM_PROBE_FAULT hook)."""
    cl = import_pyopencl()
    try:
        out = _run(cl, info, BROKEN_SOURCE if broken else PROBE_SOURCE, [], 4, 2)
    except Exception as err:
        return Health(False, f"cannot build or run a trivial kernel: {_error_text(err)}")
    expected = [1, 4, 7, 10]
    if out.tolist() != expected:
        return Health(False, f"a trivial kernel gave {out.tolist()}, expected {expected}")
    option, why = _cl2(cl, info)
    builtins = False
    if option is not None:
        try:
            builtins = _run(cl, info, BUILTINS_SOURCE, [option], 4, 2).tolist() == [3] * 4
        except Exception as err:
            why = f"{option}: work-group functions: {_error_text(err)}"
    return Health(True, "", option, why, builtins)


def main(argv: list[str] | None = None) -> int:
    """The child's entry (argv: a device short name): print its Health as one JSON line."""
    (name,) = sys.argv[1:] if argv is None else argv
    info = get_device(name)
    health = probe_here(info, broken=name in _faulty())
    print(json.dumps(asdict(health)), flush=True)
    return 0


# ---------------------------------------------------------------------------------------------
# Verdicts, cached


def _faulty() -> set[str]:
    return {n.strip() for n in os.environ.get(FAULT_ENV, "").split(",") if n.strip()}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def identity(info: DeviceInfo) -> dict[str, Any]:
    """What the verdict depends on: the device, its driver, the CPU it compiles for."""
    return {"probe": PROBE_VERSION, "platform": info.platform, "vendor": info.vendor,
            "platform_version": info.platform_version, "device": info.full_name,
            "device_version": info.device_version, "driver": info.driver_version,
            "cpu": _cpu_model(), "machine": platform.machine(),
            "fault": info.short_name in _faulty()}


def _cache_file(info: DeviceInfo) -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    key = hashlib.sha256(json.dumps(identity(info), sort_keys=True).encode()).hexdigest()[:20]
    return Path(xdg) / "clsim" / "probe" / f"{key}.json"


def _read_cache(info: DeviceInfo) -> Health | None:
    try:
        data = json.loads(_cache_file(info).read_text())
        return Health(**data["health"]) if data.get("identity") == identity(info) else None
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _write_cache(info: DeviceInfo, health: Health) -> None:
    path = _cache_file(info)
    try:  # atomic replace: concurrent probes (pytest-xdist) write the same verdict
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump({"identity": identity(info), "health": asdict(health)}, handle)
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs a probe per process


def _start(info: DeviceInfo) -> subprocess.Popen:
    return spawn([sys.executable, "-c", _CHILD, info.short_name], stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True, env=child_env())


def _verdict(proc: subprocess.Popen) -> tuple[Health, bool]:
    """(Health, whether to cache it) from a finished or hung probe child."""
    try:
        out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return Health(False, f"the health probe did not finish in {PROBE_TIMEOUT_S} s"), True
    if proc.returncode < 0:
        return Health(False, f"the health probe crashed the driver (signal "
                             f"{_signal_name(-proc.returncode)})"), True
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if proc.returncode == 0 and lines:
        return Health(**json.loads(lines[-1])), True
    tail = (err.strip().splitlines() or ["no output"])[-1]
    return Health(False, f"the health probe could not run ({tail})"), False


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def health_all(devices: Iterable[DeviceInfo]) -> dict[str, Health]:
    """The verdict for each device by short name: from memory, the disk cache, or a probe
    (uncached devices are probed in parallel, each in its own child process)."""
    result: dict[str, Health] = {}
    pending = {}
    faulty = _faulty()
    for info in devices:
        key = (info.short_name, info.short_name in faulty)  # a fault asked for is a new probe
        if key in _memory:
            result[info.short_name] = _memory[key]
        elif (cached := _read_cache(info)) is not None:
            result[info.short_name] = _memory[key] = cached
        else:
            pending[info.short_name] = (info, key, _start(info))
    for name, (info, key, proc) in pending.items():
        health, keep = _verdict(proc)
        if keep:
            _write_cache(info, health)
        result[name] = _memory[key] = health
    return result


def health(info: DeviceInfo) -> Health:
    """The probe verdict for one device (see ``health_all``)."""
    return health_all([info])[info.short_name]


def health_fields(info: DeviceInfo) -> dict[str, Any]:
    """The verdict as plain fields (``usable``, ``reason``, ``cl2_option``...), for JSON."""
    return asdict(health(info))


if __name__ == "__main__":
    sys.exit(main())
