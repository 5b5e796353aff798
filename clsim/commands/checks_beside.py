"""The checks' shared helpers compiled in a second process while ``clsim run`` compiles the kernel.

A first checked run on a machine compiles two things that do not depend on each other, each
seconds in one thread: the kernel's checked variant, and the checks' C entry points with all
they call and the merge after a threaded launch (``clsim.checks.native_entry``, ``_cs_cross``).
A kernel needs only the entry point's type to compile (``native.LazyEntry``), so a child
process compiles the entry points into Numba's disk cache while this process compiles the
kernel; the kernel's first call, right after its compile, waits for the child and loads them
from the cache. That wait is inside the launch's compile seconds, so the printed figure is the
wall time of the compile's critical path. The two processes compile disjoint functions (this
one ``_cs_call``, the fast paths and the runtime helpers; the child the entry points,
recorders, replay and merge), so no cache file is written twice. A child that fails or dies
leaves this process to compile them itself, as without it.

Used only where ``first_run`` would compile them (JIT, their cache empty), with more than one
core and ``CLSIM_SIDE_BY_SIDE`` not 0 (``traffic_launch.SIDE_BY_SIDE``, read at each start).
"""

from __future__ import annotations

import os
import signal
import sys
import time

from clsim.checks import native
from clsim.commands import first_run, traffic_launch
from clsim.lifeline import die_with_parent

WHAT = "the checks' shared helpers"


def _child(conn, parent_pid: int, death_signal: bool) -> None:
    # A child still compiling must not outlive a killed `clsim run` (a core busy for seconds).
    die_with_parent(parent_pid, death_signal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    t0 = time.perf_counter()
    try:
        native.load_entry()
        answer = ("ok", time.perf_counter() - t0)
    except Exception as err:  # the parent compiles them itself, where the error shows
        answer = ("error", f"{type(err).__name__}: {err}")
    conn.send(answer)
    conn.close()


class ChecksBeside:
    """The second process, if one was started (``started``); ``seconds``: its own compile
    seconds once waited for (None before, or when it failed)."""

    def __init__(self, jit: bool, stream=None):
        self.process = None
        self.conn = None
        self.seconds: float | None = None
        self.start_s = 0.0
        self._pid = os.getpid()
        self._stream = stream if stream is not None else sys.stderr
        if not (jit and traffic_launch.SIDE_BY_SIDE) or native.pending_elsewhere() \
                or "clsim.checks.native_entry" in sys.modules or first_run.cached(
                first_run.PARTS["checks"][0]):
            return
        t0 = time.perf_counter()
        print(first_run.note(f"{WHAT} in a second process, beside the kernel"),
              file=self._stream, flush=True)
        self.process, self.conn = traffic_launch.start_beside(_child, (), "clsim checks helpers")
        native.compiled_elsewhere(self.wait)
        self.start_s = time.perf_counter() - t0

    @property
    def started(self) -> bool:
        return self.process is not None or self.seconds is not None

    def wait(self) -> None:
        """Block until the child has ended (``native.load_entry`` calls this); if it did not
        compile them, say so: this process then does."""
        if os.getpid() != self._pid or self.process is None:
            return  # a forked process (the traffic child) compiles for itself
        answer = self._answer()
        self.cancel()
        if answer is not None and answer[0] == "ok":
            self.seconds = answer[1]
            return
        why = answer[1] if answer is not None else "it ended without an answer"
        print(f"clsim: the second process did not compile {WHAT} ({why}); compiling them "
              "here...", file=self._stream, flush=True)

    def _answer(self):
        assert self.conn is not None and self.process is not None
        return traffic_launch.answer_of(self.process, self.conn)

    def cancel(self) -> None:
        """Stop the child if it still runs (the run failed first, or Ctrl-C)."""
        traffic_launch.stop(self.process, self.conn)
        self.process = self.conn = None

    def __enter__(self) -> ChecksBeside:
        return self

    def __exit__(self, *exc) -> None:
        if self.process is not None:  # never waited for: the run ended before it needed them
            native.compiled_elsewhere(None)
            self.cancel()
