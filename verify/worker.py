"""Device launches in a child process per device, with a time limit, so a crash or a hang in a
``.cl`` kernel (or its driver) cannot take the verifier down or stall it forever.

One persistent worker per device (a child running ``verify.worker.main``), started on first
use and reused for every launch, so fuzzing pays the start-up (imports, device discovery)
once and the programs the child builds stay cached in it. Requests and results travel pickled
over the child's stdin/stdout; the child moves its own stdout to stderr first, so driver chatter and
kernel ``printf`` never corrupt the protocol. The child inherits our ICD folder in
``OCL_ICD_VENDORS`` (``verify.devices.child_env``) before it imports pyopencl.

- The child died from a signal: ``DeviceCrashed`` (the worker restarts on the next launch).
- No answer within ``timeout_s`` (default ``DEFAULT_TIMEOUT_S``, or ``CLSIM_DEVICE_TIMEOUT_S``):
  the child is killed, ``DeviceTimedOut``.
- Ctrl-C in the parent kills the child and propagates.
- The parent killed (even by SIGKILL): the child dies too (``clsim.lifeline``).
- The child's data memory is capped (``RLIMIT_DATA``, half of physical memory, or
  ``CLSIM_WORKER_MEMORY_MB``; 0 for none): a runaway driver fails there, not in the OOM killer.

``CLSIM_TEST_DEVICE_CRASH=<kernel name>`` (a test hook, read per launch) makes the child kill
itself with SIGSEGV instead of launching that kernel: a deterministic crash for tests.

This module compares and saves nothing (``verify.runner``, ``verify.fuzz``).
"""

from __future__ import annotations

import atexit
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from clsim.errors import DeviceError
from clsim.interrupts import raise_if_interrupted
from verify.clargs import pack_shared
from verify.devices import DeviceInfo, child_env
from verify.errors import DeviceCrashed, DeviceTimedOut
from verify.features import non_uniform
from clsim.lifeline import die_with_parent, spawn

DEFAULT_TIMEOUT_S = 300.0
TIMEOUT_ENV = "CLSIM_DEVICE_TIMEOUT_S"
CRASH_ENV = "CLSIM_TEST_DEVICE_CRASH"
_POLL_S = 0.5
STARTUP_TIMEOUT_S = 180.0
MEMORY_ENV = "CLSIM_WORKER_MEMORY_MB"
MEMORY_SHARE = 0.5  # of physical memory, a worker's data limit unless MEMORY_ENV says
# Not "-m verify.worker": the verify package imports this module first, and runpy would then
# run a second copy of it.
_CHILD = "import sys; from verify.worker import main; sys.exit(main())"


@dataclass(frozen=True)
class _Request:
    op: str  # "run" (verify.clrun.run_cl) or "build" (verify.clrun.build_kernel)
    kwargs: dict[str, Any] = field(default_factory=dict)
    crash: bool = False


def default_timeout() -> float:
    value = os.environ.get(TIMEOUT_ENV)
    return float(value) if value else DEFAULT_TIMEOUT_S


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class DeviceWorker:
    """The child process that runs one device's launches."""

    def __init__(self, device: str):
        self.device = device
        self.proc: subprocess.Popen | None = None
        self.to_child: Connection | None = None
        self.from_child: Connection | None = None
        self.starts = 0
        self.prepared: set[Any] = set()  # launches already built in this child

    def _start(self) -> None:
        memory_limit()  # a bad setting is an error here, not a worker dying at start
        self.proc = spawn([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=child_env())
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.to_child = Connection(os.dup(self.proc.stdin.fileno()), readable=False)
        self.from_child = Connection(os.dup(self.proc.stdout.fileno()), writable=False)
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.starts += 1
        self.prepared = set()
        # Start-up (imports, device discovery) is not part of any launch's time limit.
        try:
            self._answer(self._wait(STARTUP_TIMEOUT_S, f"starting the {self.device} worker"))
        except BaseException:  # Ctrl-C, or a start-up error: no half-started child is kept
            self.close()
            raise

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        """Kill the child (if any) and forget it; the next call starts a fresh one."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
        for conn in (self.to_child, self.from_child):
            if conn is not None:
                conn.close()
        self.proc = self.to_child = self.from_child = None

    def _crashed(self, what: str) -> DeviceCrashed:
        assert self.proc is not None
        try:  # the pipe closed: the child is dying, or wedged after closing it
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.close()
        how = f"died from {_signal_name(-code)}" if code < 0 else f"exited with status {code}"
        return DeviceCrashed(
            f"{what}: device crashed: the worker process {how}. An out-of-bounds access in "
            "the .cl kernel is the usual cause; run the case on oclgrind, which reports it.",
            device=self.device, signal=_signal_name(-code) if code < 0 else None,
            exit_code=code)

    def call(self, request: _Request, timeout_s: float, what: str) -> Any:
        """Send one request, wait for its answer; raise what the child raised, or a fault."""
        if not self.alive():
            self.close()
            self._start()
        assert self.to_child is not None and self.from_child is not None
        try:
            try:
                self.to_child.send(request)
            except OSError as err:  # BrokenPipeError: it died since the last answer
                raise self._crashed(what) from err
            answer = self._wait(timeout_s, what)
        except BaseException:  # Ctrl-C: a child stuck in a kernel must not outlive the wait
            if self.alive():
                self.close()
            raise
        return self._answer(answer)

    @staticmethod
    def _answer(answer: tuple[str, Any]) -> Any:
        status, value = answer
        if status == "ok":
            return value
        raise value

    def _wait(self, timeout_s: float, what: str) -> tuple[str, Any]:
        assert self.from_child is not None and self.proc is not None
        deadline = time.monotonic() + timeout_s
        while True:
            raise_if_interrupted()  # a Ctrl-C dropped elsewhere (clsim.interrupts)
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise DeviceTimedOut(
                    f"{what}: device timed out: no result after {timeout_s:g} s; the worker "
                    "was killed. Look for a loop whose exit condition never holds (or raise "
                    f"the limit: timeout_s=..., {TIMEOUT_ENV}).",
                    device=self.device, timeout_s=timeout_s)
            try:
                if self.from_child.poll(min(left, _POLL_S)):
                    return self.from_child.recv()
            except (EOFError, OSError) as err:
                raise self._crashed(what) from err
            if self.proc.poll() is not None:
                raise self._crashed(what)


_workers: dict[str, DeviceWorker] = {}


def worker(device: str) -> DeviceWorker:
    if device not in _workers:
        _workers[device] = DeviceWorker(device)
    return _workers[device]


@atexit.register
def shutdown() -> None:
    """Stop every worker (also run at exit)."""
    for item in _workers.values():
        item.close()


def _what(kernel_name: str, device: str, global_size: Any, local_size: Any) -> str:
    return f"{kernel_name} on {device} (global {global_size}, local {local_size})"


def run_isolated(info: DeviceInfo, source: str, kernel_name: str, global_size: Any,
                 local_size: Any, args: Sequence[Any], *, timeout_s: float | None = None,
                 **options: Any) -> Any:
    """``verify.clrun.run_cl`` in the device's worker; returns its ClRun. Raises DeviceCrashed
    or DeviceTimedOut for a fault, and whatever run_cl raised (DeviceError...) otherwise."""
    kwargs = dict(device=info.short_name, source=source, kernel_name=kernel_name,
                  global_size=global_size, local_size=local_size,
                  args=pack_shared(args, kernel_name), **options)
    what = _what(kernel_name, info.short_name, global_size, local_size)
    child = worker(info.short_name)
    if not child.alive():
        child.close()
        child._start()
    # The build (and every check) first, under the default limit, once per program: the
    # launch's own limit then times the kernel alone.
    key = (source, kernel_name, repr(sorted(options.items())),
           non_uniform(_sizes(global_size), _sizes(local_size)))
    if key not in child.prepared:
        child.call(_Request("run", {**kwargs, "prepare_only": True}), default_timeout(),
                   "preparing " + what)
        child.prepared.add(key)
    crash = os.environ.get(CRASH_ENV) == kernel_name
    return child.call(_Request("run", kwargs, crash), timeout_s or default_timeout(), what)


def _sizes(size: Any) -> tuple[int, ...] | None:
    if size is None:
        return None
    return (int(size),) if isinstance(size, int) else tuple(int(s) for s in size)


def build_isolated(info: DeviceInfo, source: str, options: tuple[str, ...], kernel_name: str,
                   timeout_s: float | None = None) -> None:
    """Build (cached in the worker) and create the kernel, raising the build error if any."""
    kwargs = dict(device=info.short_name, source=source, options=options,
                  kernel_name=kernel_name)
    worker(info.short_name).call(_Request("build", kwargs), timeout_s or default_timeout(),
                                 f"building {kernel_name} on {info.short_name}")


# ---------------------------------------------------------------------------------------------
# The child


def _serve(reader: Connection, writer: Connection) -> int:
    from verify import clrun
    from verify.devices import get_device, list_devices

    list_devices()
    writer.send(("ok", None))  # ready
    while True:
        try:
            request: _Request = reader.recv()
        except EOFError:  # the parent is gone or closed us
            return 0
        if request.crash:  # drivers install SIGSEGV handlers of their own: restore the default
            signal.signal(signal.SIGSEGV, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGSEGV)
        kwargs = dict(request.kwargs)
        try:
            info = get_device(kwargs.pop("device"))
            if request.op == "run":
                answer: tuple[str, Any] = ("ok", clrun.run_cl(info, **kwargs))
            else:
                clrun.build_kernel(info, **kwargs)
                answer = ("ok", None)
        except Exception as err:
            answer = ("error", err)
        try:
            writer.send(answer)
        except Exception as err:  # an exception whose fields do not pickle
            writer.send(("error", DeviceError(f"{type(answer[1]).__name__}: {answer[1]}"
                                              if answer[0] == "error" else str(err))))


def memory_limit() -> int | None:
    """The most data memory a worker may hold, in bytes (None: no limit)."""
    value = os.environ.get(MEMORY_ENV)
    if value is not None:
        try:
            megabytes = float(value)
        except ValueError:
            megabytes = math.nan
        if not math.isfinite(megabytes):
            raise DeviceError(f"{MEMORY_ENV}={value!r}: not a number of megabytes. Give the "
                              "most memory a device worker may use, or 0 for no limit")
        return int(megabytes * 2**20) if megabytes > 0 else None
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * MEMORY_SHARE)


def _limit(resource_id: int, value: int) -> None:
    import resource

    try:
        hard = resource.getrlimit(resource_id)[1]
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(resource_id, (soft, hard))
    except (ValueError, OSError):
        pass  # a system that refuses the limit still runs the launch


def main() -> int:
    die_with_parent()  # a worker stuck in a kernel must not outlive a killed verifier
    import resource

    _limit(resource.RLIMIT_CORE, 0)  # a driver crash should leave no core file behind
    limit = memory_limit()
    if limit is not None:
        # RLIMIT_DATA, not RLIMIT_AS: GPU drivers reserve address space far beyond memory.
        _limit(resource.RLIMIT_DATA, limit)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    return _serve(Connection(os.dup(0), writable=False),
                  Connection(protocol_out, readable=False))


if __name__ == "__main__":
    sys.exit(main())
