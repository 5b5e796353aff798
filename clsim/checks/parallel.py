"""Running the checked work-groups in parallel threads, with the serial run's findings.

The shadow records order work-groups by their stamps, so groups must run in increasing order
against one shadow. Here each thread runs a contiguous range of groups, in order, against its
own copy of the state (meta, object table, shadow, findings, log): within a thread everything
is as in the serial run, conflicts between groups of one thread included. What no thread can
see, conflicts between groups of different threads on global memory, is found after the
launch from the records the threads leave: an element some thread wrote plainly and another
thread accessed, or one thread accessed atomically and another read plainly.

A clean launch (the common case: no finding, no error, no cross-thread conflict) is then done.
Anything else is replayed serially from a snapshot of the buffers the kernel writes, against
the launch's own state, so findings, their order and counts, messages and raised errors are
exactly those of the serial run. The threaded run is only used where it can be undone and
redone: the runtime allows it (JIT, no global atomics, other instruments' state shareable)
and the per-thread shadows fit in ``MEMORY_BUDGET``.
"""

from __future__ import annotations

import threading

import numpy as np

from clsim.checks import findings as fd
from clsim.checks import layout as ly
from clsim.checks import native
from clsim.checks.state import READ_ONLY, lazy_zeros, usage_of
from clsim.instruments.base import LaunchInfo
from clsim.runtime.record import ReplayLaunch

MEMORY_BUDGET = 1 << 30  # bytes of per-thread shadow copies, all threads together
SPARE_BYTES = 1 << 28  # per-thread shadows kept for later launches, all shapes together
SPARE_SHAPES = 4  # launches of this many state shapes keep their own spare
# state shape -> (states, shadows), most recently used last: a launch takes the spare of its
# own shape, so launches with different checks (or kernels) taking turns, as in a benchmark
# or a test suite, do not each fault in fresh shadows (a third of a short launch's time)
_SPARE: dict[tuple, tuple] = {}
_SPARE_LOCK = threading.Lock()
_DIRTY = (ly.M_NFIND, ly.M_NPEND, ly.M_OVERFLOW, ly.M_LOST, ly.M_HELD)  # meta slots: not clean


def run(info: LaunchInfo, state: list, run_groups, threads: int, copies=None) -> bool:
    """Run the launch's groups in up to ``threads`` threads; False when it should not.
    ``copies``: the launch's ``snapshot``, when already taken."""
    groups = info.ndrange.total_groups
    shadow = state[2]
    threads = min(threads, groups, max(1, MEMORY_BUDGET // max(shadow.nbytes, 1)))
    if threads < 2:
        return False
    if isinstance(state[-1], native.LazyEntry):  # (the warm-up's call has resolved it, but
        state[-1].resolve()  # the meta copies below must hold M_DEFER_FN in any case)
    copies = snapshot(info, state[1]) if copies is None else copies
    bounds = np.linspace(0, groups, threads + 1).astype(np.int64)  # thread t: its groups
    states, shadows, stale = _thread_states(state, threads)
    first = _first_group_size(info)
    for own in states[1:]:  # (``_skip_invariant``: these skip what group 0 records)
        own[0][ly.M_INVARIANT] = first
    failed = []

    def work(t: int) -> None:
        try:
            if stale is not None:  # clear this thread's part, in this thread
                for start, stop in stale[t][0]:
                    shadows[t, start:stop] = 0
                if stale[t][1]:
                    states[t][3].fill(0)
            run_groups(int(bounds[t]), int(bounds[t + 1] - bounds[t]), states[t])
        except Exception as error:
            failed.append(error)

    pool = [threading.Thread(target=work, args=(t,)) for t in range(1, threads)]
    for thread in pool:
        thread.start()
    work(0)
    for thread in pool:
        thread.join()
    replay = next((error for error in failed if isinstance(error, ReplayLaunch)), None)
    if replay is not None:  # the launch runs again with another module (clsim.run)
        _keep_spare(states, shadows)
        raise replay
    dirty = bool(failed) or any(s[0][list(_DIRTY)].any() for s in states) or _cross(states,
                                                                                  shadows)
    _keep_spare(states, shadows)
    if dirty:
        for value, saved in copies:
            np.copyto(value, saved)
        run_groups(0, groups)
    return True


def _first_group_size(info: LaunchInfo) -> int:
    """Group 0's size as ``_skip_invariant`` keys it. The other threads start as if they had
    recorded it: a group-invariant local array then costs one recorded group per launch, not
    one per thread (its CPU time: a third of the checks' cost on the tiled matmul). Sound as
    thread 0 records group 0 first: any finding there makes the launch run again serially,
    as does anything another thread finds."""
    nd = info.config.ndrange
    local, total = nd.local_size, nd.global_size
    sizes = [min(local[d], total[d]) for d in range(3)]
    return (sizes[0] | (sizes[1] << 16) | (sizes[2] << 32)) + 1


def _shape(meta: np.ndarray, table: np.ndarray, threads: int, size: int) -> tuple:
    return (threads, size, meta.shape, table.shape)


def _keep_spare(states: list, shadows: np.ndarray) -> None:
    """Keep this launch's thread states for the next launch of the same shape, dropping the
    least recently used shapes beyond ``SPARE_SHAPES`` or ``SPARE_BYTES``."""
    if shadows.nbytes > SPARE_BYTES:
        return
    key = _shape(states[0][0], states[0][1], *shadows.shape)
    with _SPARE_LOCK:
        _SPARE.pop(key, None)
        _SPARE[key] = (states, shadows)
        while len(_SPARE) > SPARE_SHAPES or \
                sum(spare[1].nbytes for spare in _SPARE.values()) > SPARE_BYTES:
            del _SPARE[next(iter(_SPARE))]


def _cross(states: list, shadows: np.ndarray) -> bool:
    """Conflicts between groups of different threads (``replay._cs_cross``)."""
    table = states[0][1]
    ranges = np.stack([own[0][ly.M_RANGES:ly.M_RANGES + 2 * table.shape[0]] for own in states])
    return bool(native.load(True)._cs_cross(shadows, table, ranges))


def snapshot(info: LaunchInfo, table: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Copies of the buffers the kernel may write, to undo a threaded run; none when the
    kernel loads none of them (nor accesses one atomically) and none shares memory with
    another: the kernel then never reads what it stores, so the serial replay runs exactly as
    a serial launch and stores every element that one would (a store-only output is
    softmax's ``y``: 4 MB copied per launch for nothing)."""
    values = dict(zip(info.params, info.values, strict=True))
    objs = fd.objects(info.sites)
    usage = usage_of(info.sites, objs, info.kernel)
    written = [(k, values.get(obj.name)) for k, obj in enumerate(objs)
               if obj.count != READ_ONLY and isinstance(values.get(obj.name), np.ndarray)]
    if all(usage[k] & 5 == 0 and table[k, ly.O_LEN] != 0 for k, _value in written):
        return []  # (O_LEN 0: a buffer sharing another's shadow, i.e. its memory)
    return [(value, value.copy()) for _k, value in written]


def _thread_states(state: list, threads: int) -> tuple[list, np.ndarray, list | None]:
    """Each thread's state arrays (their shadows are the rows of one array, for the merge),
    and, when they are the previous launch's, what each thread must clear before use: the
    shadow spans that launch wrote (``_written_spans``) and whether its findings table was
    used. Reusing them saves the page faults of fresh shadows, a large part of a short
    launch's cost; clearing only what was written saves most of the rest."""
    meta, table, shadow, found, log, entry = state
    with _SPARE_LOCK:  # taken out while in use: a concurrent launch makes its own
        spare = _SPARE.pop(_shape(meta, table, threads, shadow.size), None)
    if spare is not None:
        states, shadows = spare
        stale = [(_written_spans(own[0], own[1]), bool(own[0][list(_DIRTY)].any()))
                 for own in states]
        for own in states:
            own[0][:] = meta
            own[1][:] = table
        return states, shadows, stale
    shadows = lazy_zeros(threads * shadow.size).reshape(threads, shadow.size)
    return [[meta.copy(), table.copy(), shadows[t], np.zeros(found.shape, np.int64),
             np.empty_like(log), entry] for t in range(threads)], shadows, None


def _written_spans(meta: np.ndarray, table: np.ndarray) -> list[tuple[int, int]]:
    """The shadow index ranges a launch may have written, from its object table and its meta:
    every record of a local or private object; for a global one, the records of the elements
    between the lowest and highest it touched (``layout.M_RANGES``, kept by every recorder)."""
    spans = []
    for k in range(table.shape[0]):
        columns = [int(b) for b in table[k, list(ly.SHADOW_COLS)] if b != 0]
        if not columns or table[k, ly.O_MODE] == 0:
            continue
        if table[k, ly.O_MODE] & ly.MB_CROSS:
            high = int(meta[ly.M_RANGES + 2 * k + 1])
            if high == 0:
                continue
            low = ly.RANGE_TOP - int(meta[ly.M_RANGES + 2 * k])
            bw = int(table[k, ly.O_W])  # the ranges index W records: elements are - bw
            spans += [(b + low - bw, b + high - bw) for b in columns]
        else:
            spans += [(b, b + int(table[k, ly.O_LEN])) for b in columns]
    return spans
