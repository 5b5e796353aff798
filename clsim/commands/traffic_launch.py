"""The traffic-counting launch of ``clsim run``, compiled and run beside the main launch.

A cold ``clsim run`` compiles two variants of the kernel: the one its ``--check`` asks for and
the traffic-counting one. Numba compiles a module in one thread, so with the JIT on the
traffic launch runs in a child process while this process compiles and runs the main launch;
with a warm cache the child costs its start-up, beside the main launch. The child is forked
when this process has no other thread yet (it then has everything imported; no Numba thread
pool or compile has started), else spawned. The child rebuilds the launch from the same words
(``clsim.commands.specs``: same spec, shape, seed, work-group size) and sends back the
``TrafficReport`` and its compile seconds. ``--no-jit`` counts in this process (there is
nothing to compile), and so does a process limited to one core or run with
``CLSIM_SIDE_BY_SIDE=0`` (``SIDE_BY_SIDE``). A child that dies without an answer is replaced
by counting here.

This module prints nothing but the child's compile note; ``clsim.commands.run`` prints.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any

import clsim
from clsim.cli import load_library
from clsim.commands import first_run, specs
from clsim.commands.progress import RunProgress
from clsim.errors import InvalidArgumentError, SimulationError
from clsim.lifeline import die_with_parent

PURPOSE = "with traffic counting"
_POLL_S = 0.2


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# One core has no second compile to overlap: the child would only cost memory and start-up.
# CLSIM_SIDE_BY_SIDE=0 turns it off (and the checks' second process, ``checks_beside``), e.g.
# on a machine whose cores other work keeps busy
# (docs/performance.md: under load it gained nothing there).
SIDE_BY_SIDE = _cores() > 1 and os.environ.get("CLSIM_SIDE_BY_SIDE", "1") != "0"


@dataclass(frozen=True)
class TrafficRequest:
    """What a process needs to rebuild the main launch and count its traffic (picklable)."""

    name: str
    shape: dict[str, int]
    seed: int
    local_size: tuple[int, ...] | None
    options: dict[str, Any] = field(default_factory=dict)  # the main launch's clsim.run options
    timeout_s: float | None = None

    def run_options(self) -> dict[str, Any]:
        """The main launch's options with traffic on, default checks, findings not collected:
        the counts do not depend on the checks."""
        keep = {k: v for k, v in self.options.items() if k not in ("report_all", "checks")}
        return {**keep, "traffic": True, "checks": "default"}


@dataclass(frozen=True)
class TrafficOutcome:
    """``traffic`` is None when this launch cannot count traffic (``run`` refused it);
    ``beside`` whether it ran in the child process, beside the main launch."""

    traffic: Any
    compile_s: float
    beside: bool = False


def count_traffic(request: TrafficRequest, bar: bool = True) -> TrafficOutcome:
    """Rebuild the launch and run it with traffic counting, in this process."""
    spec = specs.load_spec(request.name)
    inputs = specs.make_inputs(spec, dict(request.shape), request.seed)
    launch = spec.launch(inputs, dict(request.shape), request.local_size)
    args = specs.run_args(spec, inputs, specs.fresh(inputs))
    jit = request.options.get("jit", True)
    once_s = first_run.prepare("traffic", jit)  # said on stderr, counted below
    also = first_run.HELPERS[1] if first_run.helpers_pending(jit) else ""
    try:
        with RunProgress(spec.name, purpose=PURPOSE, bar=bar, also=also) as progress:
            result = clsim.run(spec.kernel, launch.global_size, launch.local_size, args,
                               timeout_s=request.timeout_s, progress=progress,
                               **request.run_options())
    except InvalidArgumentError:  # e.g. an argument kind the counter does not take
        return TrafficOutcome(None, once_s)
    return TrafficOutcome(result.traffic, result.compile_s + once_s)


def _child(request: TrafficRequest, conn, parent_pid: int, death_signal: bool) -> None:
    # A child still compiling must not outlive a killed `clsim run` (a core busy for minutes).
    die_with_parent(parent_pid, death_signal)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and kills us
    try:
        load_library()
        answer: tuple[str, Any] = ("ok", count_traffic(request, bar=False))
    except Exception as err:  # sent back and raised in the parent, as if counted there
        answer = ("error", err)
    try:
        conn.send(answer)
    except Exception:  # an exception whose fields do not pickle
        conn.send(("error", SimulationError(f"{type(answer[1]).__name__}: {answer[1]}")))
    conn.close()


def start_method() -> str:
    """"fork" where it is safe, a process with no other thread yet, Numba's pool included (the
    CLI before its first launch): the child then starts with clsim, the library and the spec
    already imported, seconds sooner than a "spawn" child, which imports them again."""
    if ("fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
            and not numba_threads_started()):
        return "fork"
    return "spawn"


def warm_numba() -> None:
    """Set up Numba's CPU target (its typing and lowering registries: about 0.6 s CPU, scipy
    imported) before forking, so that the child inherits it instead of doing it again. It
    starts no thread; on an idle machine it only moves that time before the fork, on a busy one
    it saves it once."""
    from numba.core.registry import cpu_target

    cpu_target.target_context.refresh()
    cpu_target.typing_context.refresh()


def numba_threads_started() -> bool:
    """Whether Numba's thread pool runs (native threads, unseen by ``threading``; a forked
    child of an OpenMP pool can hang). Unknown counts as started."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return parallel is not None and bool(getattr(parallel, "_is_initialized", True))


def start_beside(target, args: tuple, name: str):
    """Start ``target(*args, conn, parent_pid, death_signal)`` in a child process that sends
    its one answer through ``conn``; returns (process, the parent's end of the pipe)."""
    sys.stdout.flush()  # a forked child must not print the parent's pending output
    sys.stderr.flush()
    method = start_method()
    if method == "fork":
        warm_numba()  # both processes need Numba's target: set it up once, before the fork
    context = multiprocessing.get_context(method)
    conn, child_end = context.Pipe(duplex=False)
    # The parent-death signal follows the forking thread: only the main thread is sure to
    # live as long as this process.
    tie = threading.current_thread() is threading.main_thread()
    process = context.Process(target=target, args=(*args, child_end, os.getpid(), tie),
                              name=name, daemon=True)
    process.start()
    child_end.close()
    return process, conn


def answer_of(process, conn):
    """The child's answer, or None when it ended (or died) without one."""
    while True:
        try:
            if conn.poll(_POLL_S):
                return conn.recv()
        except (EOFError, OSError):
            return None
        if not process.is_alive() and not conn.poll(0):
            return None


def stop(process, conn) -> None:
    """Kill the child if it still runs, reap it and close the pipe (either may be None)."""
    if process is not None:
        if process.is_alive():
            process.kill()
        process.join()
    if conn is not None:
        conn.close()


class PendingTraffic:
    """The traffic launch, started at once in a child process (JIT) or when ``result()`` is
    asked (no JIT)."""

    def __init__(self, request: TrafficRequest):
        self.request = request
        self.process = None
        self.conn = None
        if request.options.get("jit", True) and SIDE_BY_SIDE:
            self.process, self.conn = start_beside(_child, (request,), "clsim traffic launch")

    def result(self) -> TrafficOutcome:
        """The child's answer (raising what it raised), or the count done here."""
        if self.process is None:
            return count_traffic(self.request)
        try:
            answer = self._wait()
        finally:
            self.cancel()
        if answer is None:  # the child died without a word: count here, where errors show
            return count_traffic(self.request)
        status, value = answer
        if status == "error":
            raise value
        return replace(value, beside=True)

    def _wait(self):
        assert self.conn is not None and self.process is not None
        return answer_of(self.process, self.conn)

    def cancel(self) -> None:
        """Stop the child if it still runs (the main launch failed, or Ctrl-C)."""
        stop(self.process, self.conn)
        self.process = self.conn = None

    def __enter__(self) -> PendingTraffic:
        return self

    def __exit__(self, *exc) -> None:
        self.cancel()
