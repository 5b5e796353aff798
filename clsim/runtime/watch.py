"""Running a launch's work-groups so that a deadline and Ctrl-C can stop it.

Compiled (Numba) code never looks at signals, so a JIT launch runs in a worker thread (one
long-lived thread per process, replaced when one is left stuck), in chunks of work-groups
that grow until one takes about ``_TARGET_S``; the calling thread waits in short slices,
reports progress, and on ``timeout_s`` or Ctrl-C tells the worker to stop after its chunk and
raises ``KernelTimeoutError`` / ``KernelInterrupted`` naming the kernel and how
many groups completed. A work-group that never returns (an endless loop in the kernel) cannot be
stopped inside compiled code: its thread is left behind (daemon, so the process can still exit),
the error says so, and later launches run their groups serially so that the thread is never
joined by a second parallel region.

Plain-Python launches (``jit=False``) stay in the calling thread so pdb can step into the
generated code; Ctrl-C interrupts them natively, and a deadline is enforced between chunks and,
for a group that never returns, by an asynchronous exception from a timer.

This module does not know what a work-group computes: ``step(start, count)`` runs groups
``start .. start+count-1`` and returns an error row index or None.
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from clsim import interrupts
from clsim.errors import InvalidArgumentError, KernelInterrupted, KernelTimeoutError

_TARGET_S = 0.05  # a chunk this long keeps stop latency and call overhead both small
_POLL_S = 0.1  # how often the waiting thread looks at the clock and reports progress
_GRACE_S = 1.0  # how long a stopped worker may take to finish its chunk before it is abandoned
_STUCK: list[threading.Event] = []  # finish flags of abandoned workers still in a group

Step = Callable[[int, int], "int | None"]
Progress = Callable[[str, int, int], None]


@dataclass
class _Tally:
    """Shared between the worker and the waiting thread (plain attribute writes are atomic)."""

    done: int = 0
    failed_row: int | None = None
    error: BaseException | None = None
    # Set by the worker when it returns. Waiting on it, never Thread.join(), because a join
    # interrupted by Ctrl-C can leave the thread marked as stopped (Python < 3.13).
    finished: threading.Event = field(default_factory=threading.Event)


def stuck_workers() -> int:
    """How many abandoned work-group threads are still running in this process."""
    _STUCK[:] = [t for t in _STUCK if not t.is_set()]
    return len(_STUCK)


def run_groups(step: Step, total: int, max_chunk: int, *, kernel: str, jit: bool,
               timeout_s: float | None = None, progress: Progress | None = None,
               first_chunk: int = 1) -> int | None:
    """Run all ``total`` groups through ``step``; the error row of the first failing chunk, or
    None. Raises ``KernelTimeoutError`` past ``timeout_s`` and ``KernelInterrupted`` on Ctrl-C."""
    deadline = None if timeout_s is None else time.monotonic() + check_timeout(timeout_s)
    if progress is not None:
        progress("run", 0, total)
    if jit:
        return _threaded(step, total, max_chunk, first_chunk, kernel, deadline, timeout_s,
                         progress)
    return _inline(step, total, max_chunk, first_chunk, kernel, deadline, timeout_s, progress)


def check_timeout(timeout_s) -> float:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or \
            not timeout_s > 0:
        raise InvalidArgumentError(f"run(): timeout_s={timeout_s!r} must be a positive number "
                                   "of seconds (or None for no limit)")
    return float(timeout_s)


def _chunks(total: int, max_chunk: int, first: int, tally: _Tally, stop: threading.Event):
    """Yield (start, count) until done or stopped; count doubles while chunks are quick."""
    count = max(1, min(first, max_chunk))
    while tally.done < total and not stop.is_set():
        this = min(count, total - tally.done)
        t0 = time.perf_counter()
        yield tally.done, this
        if time.perf_counter() - t0 < _TARGET_S:
            count = min(count * 2, max_chunk)


def _work(step: Step, total: int, max_chunk: int, first: int, tally: _Tally,
          stop: threading.Event) -> None:
    try:
        with np.errstate(all="ignore"):  # errstate is per thread
            for start, count in _chunks(total, max_chunk, first, tally, stop):
                row = step(start, count)
                if row is not None:
                    tally.failed_row = row
                    return
                tally.done = start + count
    except BaseException as exc:  # handed to the waiting thread, which re-raises it
        tally.error = exc
    finally:
        tally.finished.set()


class _Worker:
    """One long-lived daemon thread running launches handed to it, one at a time (starting a
    thread per launch costs ~0.1 ms, a hand-over ~0.01 ms). Replaced when it is left stuck."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.idle = True
        threading.Thread(target=self._loop, name="clsim-launch", daemon=True).start()

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job()
            finally:
                self.idle = True


_WORKER: _Worker | None = None
_WORKER_LOCK = threading.Lock()


def _forget_worker() -> None:
    """A forked child has no worker thread, only the parent's record of one."""
    global _WORKER, _WORKER_LOCK
    _WORKER, _WORKER_LOCK = None, threading.Lock()
    _STUCK.clear()


os.register_at_fork(after_in_child=_forget_worker)


def _submit(job: Callable[[], None]) -> None:
    global _WORKER
    with _WORKER_LOCK:  # two threads calling run() at once get a worker each
        if _WORKER is None or not _WORKER.idle:
            _WORKER = _Worker()
        worker = _WORKER
        worker.idle = False
    worker.jobs.put(job)


def _threaded(step, total, max_chunk, first, kernel, deadline, timeout_s, progress):
    tally, stop = _Tally(), threading.Event()
    _submit(lambda: _work(step, total, max_chunk, first, tally, stop))
    started = time.monotonic()
    try:
        while not tally.finished.wait(_POLL_S):
            interrupts.raise_if_interrupted()  # a Ctrl-C swallowed earlier (e.g. in a __del__)
            if progress is not None:
                progress("run", tally.done, total)
            if deadline is not None and time.monotonic() > deadline:
                raise _stopped(KernelTimeoutError, kernel, tally, total, started, timeout_s,
                               stop)
    except KeyboardInterrupt:
        raise _stopped(KernelInterrupted, kernel, tally, total, started, timeout_s,
                       stop) from None
    if tally.error is not None:
        raise tally.error
    return tally.failed_row


def _abandon(tally: _Tally, stop: threading.Event | None) -> bool:
    """Ask the worker to stop; True when it is still running a group after the grace time."""
    if stop is None:
        return False
    stop.set()
    if tally.finished.wait(_GRACE_S):
        return False
    _STUCK.append(tally.finished)
    return True


class _Deadline(BaseException):
    """Raised into a plain-Python launch by its timer (BaseException: kernels' code has no
    try/except, and nothing in between should swallow it)."""


def _inline(step, total, max_chunk, first, kernel, deadline, timeout_s, progress):
    tally, stop = _Tally(), threading.Event()
    started = time.monotonic()
    timer = _DeadlineTimer(deadline)
    try:
        with np.errstate(all="ignore"):
            for start, count in _chunks(total, max_chunk, first, tally, stop):
                row = step(start, count)
                if row is not None:
                    tally.failed_row = row
                    break
                tally.done = start + count
                if progress is not None:
                    progress("run", tally.done, total)
                if deadline is not None and time.monotonic() > deadline:
                    raise _Deadline
        timer.disarm()  # inside the try: an exception already on its way is still caught
    except _Deadline:
        raise _stopped(KernelTimeoutError, kernel, tally, total, started, timeout_s,
                       None) from None
    except KeyboardInterrupt:
        raise _stopped(KernelInterrupted, kernel, tally, total, started, timeout_s,
                       None) from None
    finally:
        timer.disarm()
    return tally.failed_row


class _DeadlineTimer:
    """Raises ``_Deadline`` in the launching thread at the deadline, unless disarmed first."""

    def __init__(self, deadline: float | None):
        self._thread_id = threading.get_ident()
        self._lock = threading.Lock()
        self._armed = deadline is not None
        self._timer = None
        if deadline is not None:
            self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._armed:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread_id),
                                                           ctypes.py_object(_Deadline))

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
        if self._timer is not None:
            self._timer.cancel()


def _stopped(cls, kernel: str, tally: _Tally, total: int, started: float,
             timeout_s: float | None, stop: threading.Event | None):
    """The error to raise; stops the worker first (``stop``: its flag, None when inline)."""
    elapsed = time.monotonic() - started
    still_running = _abandon(tally, stop)
    done = f"{tally.done:,} of {total:,} work-groups completed in {elapsed:.1f} s"
    if cls is KernelTimeoutError:
        what = (f"{kernel}: ran past timeout_s={timeout_s:g}; {done}. A kernel that never "
                "finishes usually loops on a condition no work-item changes; "
                "run(..., jit=False) under pdb shows where")
    else:
        what = f"{kernel}: stopped by Ctrl-C; {done}. The buffers hold partial results"
    if still_running:
        what += (". The work-group in progress cannot be stopped inside compiled code and keeps "
                 "one CPU thread busy (and may still write the buffers) until the process exits")
    return cls(what, kernel=kernel, groups_done=tally.done, total_groups=total,
               elapsed_s=elapsed, still_running=still_running)
