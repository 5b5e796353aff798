"""Parallel JIT launches run their groups on Python threads over a serial launcher.

Contract: a parallel JIT launch compiles a serial ``_launch`` (``_LAUNCHER == "threads"``, no
``prange``: its parfor compile cost about 0.5-0.9 s per kernel) unless an instrument needs
Numba's parallel loop (traffic counting calls ``numba.get_thread_id()``), and a serial launch
keeps its serial launcher; ``run_pieces`` covers every group exactly once, on several threads,
and hands a piece's exception to the caller; the error a launch raises is its lowest failing
group's, as with ``prange``, whichever thread ran it; results equal a serial launch's.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import clsim
from clsim import get_global_id, get_group_id, kernel
from clsim.errors import OutOfBoundsError
from clsim.runtime import threads


@kernel
def late_overrun(x, y, n):
    i = get_global_id(0)
    if get_group_id(0) >= 5:
        y[i + n] = x[i]  # out of bounds from group 5 on
    else:
        y[i] = x[i] * 2.0


@kernel
def scale(x, y):
    i = get_global_id(0)
    y[i] = x[i] * 3.0 + 1.0


def _launcher(result) -> tuple[str, str]:
    source = Path(result.module_path).read_text()
    kind = source.split("_LAUNCHER = ", 1)[1].split("\n", 1)[0].strip("'")
    return kind, source


def test_parallel_launches_use_a_serial_launcher_unless_an_instrument_needs_prange():
    x = np.arange(4096, dtype=np.float32)
    y = np.zeros_like(x)
    parallel = clsim.run(scale, (4096,), (64,), (x, y), jit=True)
    kind, source = _launcher(parallel)
    assert parallel.parallel and kind == "threads" and "prange(" not in source
    np.testing.assert_array_equal(y, x * 3.0 + 1.0)
    serial = clsim.run(scale, (4096,), (64,), (x, np.zeros_like(x)), jit=True, parallel=False)
    assert _launcher(serial)[0] == "serial"
    counted = clsim.run(scale, (4096,), (64,), (x, np.zeros_like(x)), jit=True, traffic=True)
    kind, source = _launcher(counted)
    assert counted.parallel and kind == "threads" and "prange(" not in source


def test_an_instrument_that_cannot_run_on_python_threads_gets_prange():
    """An instrument whose code relies on Numba's thread ids (``python_threads`` false, the
    protocol's default) makes a parallel launch use Numba's parallel loop."""
    from clsim.compiler import launcher
    from clsim.instruments.base import Instrument

    assert launcher.kind(True, True, [Instrument()]) == "prange"
    assert launcher.kind(True, True, []) == "threads"
    assert launcher.kind(True, False, [Instrument()]) == "serial"
    assert "prange(_count)" in launcher.source("v_x, _s", "prange", True, ", _s")


def test_traffic_on_python_threads_counts_as_serial_groups():
    """Each Python thread counts in its own rows (``thread_state``): the report of a
    parallel launch is the serial one, on several threads as on one."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import traffic_kernels as tk

    reports = []
    for parallel in (True, False):
        kern, global_size, local_size, args, _ = tk.gemv_case(1024, 512)
        result = clsim.run(kern, global_size, local_size, list(args), traffic=True,
                           parallel=parallel)
        assert _launcher(result)[0] == ("threads" if parallel else "serial")
        reports.append(result.traffic)
    assert reports[0] == reports[1]


def test_run_pieces_covers_each_group_once_on_several_threads():
    seen: list[tuple[int, int]] = []
    workers: dict[int, set[int]] = {}  # worker index -> the threads that ran as it
    lock = threading.Lock()

    def run(first: int, count: int, worker: int) -> None:
        time.sleep(0.01)  # long enough for the helper threads to take pieces
        with lock:
            seen.append((first, count))
            workers.setdefault(worker, set()).add(threading.get_ident())

    threads.run_pieces(run, 103, 3)
    covered = sorted(g for first, count in seen for g in range(first, first + count))
    assert covered == list(range(103))
    assert len(workers) > 1 and len(seen) >= 3
    # Each worker index is one thread (its per-thread state is its own), 0 the caller's.
    assert set(workers) <= {0, 1, 2} and all(len(t) == 1 for t in workers.values())
    assert workers[0] == {threading.get_ident()}


def test_run_pieces_raises_what_a_piece_raised():
    def run(first: int, count: int, worker: int) -> None:
        if first > 0:
            raise ValueError(f"piece at {first}")

    with pytest.raises(ValueError, match="piece at"):
        threads.run_pieces(run, 64, 2)


@pytest.mark.parametrize("parallel", [True, False])
def test_the_lowest_failing_group_is_reported(parallel):
    """Groups 5..63 all overrun: the error names work-item 5 * 16 (group 5), as a serial
    launch does, however the groups were spread over threads."""
    n = 64 * 16
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    with pytest.raises(OutOfBoundsError) as info:
        clsim.run(late_overrun, (n,), (16,), (x, y, np.int64(n)), jit=True, parallel=parallel)
    assert info.value.fields["gid"][0] == 5 * 16, info.value.message
