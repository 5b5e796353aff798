"""Running one chunk of a parallel launch's work-groups on several Python threads.

A kernel whose launcher is serial (``_LAUNCHER == "threads"``, ``clsim.compiler.module``)
runs its groups in parallel here: the chunk is cut into pieces, a few per thread, which the
calling thread and up to ``threads - 1`` helper threads take in turn, each calling the
compiled launcher (it releases the GIL: ``nogil``) on its piece and its rows of the error
record. Numba's ``prange`` would do the same at run time but costs its parfor compile per
kernel. Every piece runs, up to its first failing group, so the lowest failing group of the
chunk is the one ``prange`` would report.

The helper threads are daemons kept for the next chunk: a group that never returns leaves
its thread behind without blocking the exit (``clsim.runtime.watch`` then abandons the
launch and later launches run their groups serially, never here). This module does not know
what a group computes.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable

_PIECES_PER_THREAD = 4  # unequal groups (a smaller last one, early exits) still balance
_HELPERS: list[queue.SimpleQueue] = []  # one job queue per helper thread
_LOCK = threading.Lock()  # two launches at once (threads calling run()) share the helpers


def _helper_loop(jobs: queue.SimpleQueue) -> None:
    while True:
        jobs.get()()


def _helpers(count: int) -> list[queue.SimpleQueue]:
    with _LOCK:
        while len(_HELPERS) < count:
            jobs: queue.SimpleQueue = queue.SimpleQueue()
            threading.Thread(target=_helper_loop, args=(jobs,), name="clsim-groups",
                             daemon=True).start()
            _HELPERS.append(jobs)
        return _HELPERS[:count]


def _forget_helpers() -> None:
    """A forked child has none of the parent's threads."""
    global _LOCK
    _HELPERS.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_helpers)


def run_pieces(run: Callable[[int, int, int], None], count: int, threads: int) -> None:
    """Call ``run(first, n, worker)`` over pieces covering ``0 .. count - 1``, on up to
    ``threads`` threads at once (this one is worker 0, the helpers 1, 2, ...); re-raise the
    first exception a piece raised."""
    threads = max(1, min(threads, count))
    if threads == 1:
        run(0, count, 0)
        return
    size = -(-count // (threads * _PIECES_PER_THREAD))
    pieces = iter(range(0, count, size))
    take = threading.Lock()
    errors: list[BaseException] = []
    finished = threading.Semaphore(0)

    def work(worker: int) -> None:
        try:
            while True:
                with take:
                    first = next(pieces, None)
                if first is None:
                    return
                run(first, min(size, count - first), worker)
        except BaseException as exc:  # handed to the calling thread
            errors.append(exc)

    def helper_job(worker: int) -> Callable[[], None]:
        def job() -> None:
            try:
                work(worker)
            finally:
                finished.release()

        return job

    others = _helpers(threads - 1)
    for worker, jobs in enumerate(others, start=1):
        jobs.put(helper_job(worker))
    work(0)
    for _ in others:
        finished.acquire()
    if errors:
        raise errors[0]
