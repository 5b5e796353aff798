"""What run() refuses before it compiles (read-only outputs, sizes that are not ints, arrays that
cannot fit) and how a launch is stopped from outside (timeout_s, Ctrl-C), in JIT and plain
Python."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import clsim
from clsim import (
    CLK_LOCAL_MEM_FENCE,
    atomic_add,
    barrier,
    func,
    get_global_id,
    get_local_id,
    kernel,
    local_array,
    private_array,
)
from clsim.runtime import watch


@kernel
def scale(x, y):
    i = get_global_id(0)
    y[i] = x[i] * np.float32(2.0)


@func
def store_one(p, i):
    p[i] = np.float32(1.0)


@kernel
def store_in_helper(x, y):
    i = get_global_id(0)
    store_one(y, i)


@kernel
def count_into(x, total):
    i = get_global_id(0)
    atomic_add(total, 0, x[i])


def _read_only(n, dtype=np.float32):
    a = np.zeros(n, dtype)
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("jit", [True, False])
def test_read_only_output_is_refused_before_compiling(jit):
    """A read-only array the kernel stores to is an InvalidArgumentError naming it; a read-only
    input is fine."""
    x = _read_only(8)
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(scale, (8,), (4,), (x, _read_only(8)), jit=jit)
    assert info.value.buffer == "y" and "read-only" in str(info.value)
    assert "\n" not in str(info.value)
    y = np.zeros(8, np.float32)
    clsim.run(scale, (8,), (4,), (x, y), jit=jit)  # read-only input: allowed
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(count_into, (8,), (4,), (np.ones(8, np.int32), _read_only(1, np.int32)),
                  jit=jit)
    assert info.value.buffer == "total"


@pytest.mark.parametrize("jit", [True, False])
def test_read_only_output_written_in_a_helper_names_the_buffer(jit):
    """Stores inside a @func are not seen before compiling; Numba's (or numpy's) refusal is
    turned into the same error naming the read-only buffer."""
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(store_in_helper, (8,), (4,), (np.zeros(8, np.float32), _read_only(8)),
                  jit=jit)
    assert info.value.buffer == "y" and "read-only" in str(info.value)


@pytest.mark.parametrize("size, shown", [
    ("128", "string '128'"), (7.9, "7.9 (float)"), ((8, 7.9), "7.9 (float)"),
    (True, "True (bool)"), ((np.float64(8),), "(float64)"), (b"8", "string b'8'"),
])
def test_global_size_must_be_ints(size, shown):
    """A string, float or bool global size is refused, naming global_size and the entry."""
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(clsim.InvalidNDRangeError) as info:
        clsim.run(scale, size, None, (x, y), jit=False)
    assert "global_size" in str(info.value) and shown in str(info.value)


def test_local_size_must_be_ints_and_numpy_ints_are_fine():
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(clsim.InvalidNDRangeError, match="local_size"):
        clsim.run(scale, (8,), "4", (x, y), jit=False)
    with pytest.raises(clsim.InvalidNDRangeError, match=r"local_size has the entry 4\.0"):
        clsim.run(scale, (8,), (4.0,), (x, y), jit=False)
    result = clsim.run(scale, (np.int64(8),), np.array([4]), (x, y), jit=False)
    assert result.local_size == (4,)


@kernel
def huge_local(x):
    i = get_local_id(0)
    t = local_array(1_000_000_000, np.float32)  # 4 GB
    t[i] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    x[i] = t[i]


@kernel
def huge_private(x):
    i = get_global_id(0)
    p = private_array(100_000_000_000, np.float32)  # 400 GB per work-item
    p[0] = x[i]
    x[i] = p[0]


def test_local_array_over_the_device_limit_names_array_and_limit():
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(huge_local, (4,), (4,), (np.zeros(4, np.float32),), jit=False)
    err = info.value
    assert (err.buffer, err.size, err.limit) == ("t", 4_000_000_000, 49152)
    assert "local array 't'" in str(err) and "49,152 bytes" in str(err)


def test_local_array_on_a_device_without_a_stated_limit_is_checked_against_memory():
    """A profile that gives no local memory size still refuses an array no machine could hold
    (numpy's MemoryError, or SystemError, before)."""
    import dataclasses

    from clsim.runtime.config import resolve_device

    unlimited = dataclasses.replace(resolve_device(None), local_mem_bytes=None)
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(huge_local_100g, (4,), (4,), (np.zeros(4, np.float32),), jit=False,
                  device=unlimited)
    assert info.value.buffer == "t" and "this machine's" in str(info.value)


@kernel
def huge_local_100g(x):
    i = get_local_id(0)
    t = local_array(100_000_000_000, np.float32)  # 400 GB
    t[i] = x[i]
    barrier(CLK_LOCAL_MEM_FENCE)
    x[i] = t[i]


def test_private_array_over_host_memory_is_an_error_not_memoryerror():
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(huge_private, (4,), (4,), (np.zeros(4, np.float32),), jit=False)
    assert info.value.buffer == "p" and "private array 'p'" in str(info.value)


@kernel
def spin_until(flag, out):
    """Never finishes until the host writes flag[0] (an endless loop, as far as run() knows)."""
    i = get_global_id(0)
    while flag[0] == 0:
        out[i] += 1


@kernel
def busy(out, n):
    i = get_global_id(0)
    acc = 0
    for k in range(n):
        acc = (acc * 7 + k) % 1000003
    out[i] = acc


def _release(flag):
    """End the worker left running in spin_until and wait until it has gone."""
    flag[0] = 1
    t0 = time.monotonic()
    while watch.stuck_workers() and time.monotonic() - t0 < 30:
        time.sleep(0.05)
    assert watch.stuck_workers() == 0


@pytest.mark.parametrize("jit", [True, False])
def test_timeout_stops_an_endless_kernel(jit):
    """timeout_s raises KernelTimeoutError (a TimeoutError) naming the kernel and the groups
    done; in JIT mode it says the group in progress could not be stopped."""
    flag, out = np.zeros(1, np.int32), np.zeros(64, np.int32)
    clsim.run(busy, (64,), (32,), (out, np.int32(1)), jit=jit)  # compile outside the clock
    clsim.run(spin_until, (64,), (32,), (np.ones(1, np.int32), out), jit=jit)
    t0 = time.monotonic()
    try:
        with pytest.raises(clsim.KernelTimeoutError) as info:
            clsim.run(spin_until, (64,), (32,), (flag, out), jit=jit, timeout_s=0.5)
    finally:
        _release(flag)
    err = info.value
    assert isinstance(err, TimeoutError) and isinstance(err, clsim.SimulationError)
    assert err.kernel == "spin_until" and (err.groups_done, err.total_groups) == (0, 2)
    assert "timeout_s=0.5" in str(err) and "0 of 2 work-groups" in str(err)
    assert err.still_running is jit
    assert time.monotonic() - t0 < 20


def _sigint_once_running(delay=None):
    """A progress callback that sends this process SIGINT ``delay`` s into the run stage (from a
    timer thread), or, with no delay, as soon as some work-groups are done."""
    fired = []

    def progress(stage, done, total):
        if stage != "run" or fired:
            return
        if delay is not None:
            fired.append(threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)))
            fired[0].start()
        elif done > 0:
            fired.append(True)
            signal.raise_signal(signal.SIGINT)
    progress.fired = fired  # a timer not yet fired is cancelled by the test (see below)
    return progress


@pytest.mark.parametrize("jit", [True, False])
def test_ctrl_c_stops_a_long_run_between_chunks(jit):
    """SIGINT during a long run raises KernelInterrupted (a KeyboardInterrupt) after some but
    not all groups; the worker stops after its chunk, so nothing keeps running."""
    out = np.zeros(64 * 4096, np.int32)
    n = np.int32(20_000 if jit else 2_000)
    clsim.run(busy, (64,), (64,), (out[:64], np.int32(1)), jit=jit)
    with pytest.raises(clsim.KernelInterrupted) as info:
        # timeout_s: a SIGINT the process never hears (ignored below Python) fails in a
        # minute instead of running the 4096 groups for hours (plain Python)
        clsim.run(busy, out.shape, (64,), (out, n), jit=jit, progress=_sigint_once_running(),
                  timeout_s=60)
    err = info.value
    assert isinstance(err, KeyboardInterrupt)
    assert 0 < err.groups_done < err.total_groups == 4096
    assert not err.still_running and watch.stuck_workers() == 0
    assert "stopped by Ctrl-C" in str(err) and f"of {4096:,} work-groups" in str(err)


def test_ctrl_c_during_an_endless_jit_group_returns_control():
    """Even a work-group that never returns gives control back on Ctrl-C (JIT)."""
    flag, out = np.zeros(1, np.int32), np.zeros(64, np.int32)
    clsim.run(spin_until, (64,), (32,), (np.ones(1, np.int32), out), jit=True)
    try:
        interrupt = _sigint_once_running(0.2)
        with pytest.raises(clsim.KernelInterrupted) as info:
            clsim.run(spin_until, (64,), (32,), (flag, out), jit=True, timeout_s=30,
                      progress=interrupt)
        assert info.value.still_running and "keeps one CPU thread busy" in str(info.value)
        assert clsim.run(scale, (8,), (4,), (np.ones(8, np.float32), np.zeros(8, np.float32)),
                         jit=True).parallel is False, "no parallel region beside a stuck one"
    finally:
        # a SIGINT timer left running would interrupt whatever test this worker runs next
        for timer in interrupt.fired if "interrupt" in locals() else ():
            if isinstance(timer, threading.Timer):
                timer.cancel()
        _release(flag)


def test_timeout_must_be_positive():
    with pytest.raises(clsim.InvalidArgumentError, match="timeout_s"):
        clsim.run(scale, (8,), (4,), (np.zeros(8, np.float32), np.zeros(8, np.float32)),
                  timeout_s=0)


def test_a_forked_child_launches_with_its_own_worker():
    """After fork the parent's worker thread does not exist in the child: the child starts its
    own instead of queueing work nobody takes (which would hang)."""
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    clsim.run(scale, (8,), (4,), (x, y), jit=True)  # the parent has a worker now
    pid = os.fork()
    if pid == 0:  # the child: exit status says whether the launch worked
        code = 1
        try:
            clsim.run(scale, (8,), (4,), (x, y), jit=True)
            code = 0 if y[3] == 2 else 1
        finally:
            os._exit(code)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child hung in clsim.run")
    assert os.waitstatus_to_exitcode(status) == 0


def test_an_instrument_state_too_large_for_memory_is_a_clear_error(monkeypatch):
    """The checks' or traffic counter's state arrays grow with the launch: running out of
    memory there names the instrument and the launch size, not numpy's MemoryError."""
    from clsim.instruments import registry

    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    instruments = registry.build  # wrap each built instrument's allocate to fail

    def build(config):
        built = instruments(config)
        for inst in built:
            def allocate(info, _inst=inst):
                raise MemoryError("Unable to allocate 512. GiB")
            monkeypatch.setattr(inst, "allocate", allocate)
        return built
    monkeypatch.setattr(registry, "build", build)
    with pytest.raises(clsim.InvalidArgumentError) as info:
        clsim.run(scale, (8,), (4,), (x, y), jit=False, checks="all")
    assert "instrument's state does not fit in memory" in str(info.value)
    assert "8 work-items" in str(info.value)


@kernel
def reads_past_the_end(x, y):
    i = get_global_id(0)
    y[i] = x[i + 1]


def test_unchecked_plain_python_out_of_bounds_is_a_simulation_error():
    """checks="none" without JIT: numpy's IndexError becomes an OutOfBoundsError that says how
    to find the site (it was a bare IndexError, an "internal error" in the CLI)."""
    x, y = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(clsim.OutOfBoundsError, match="checks='default'"):
        clsim.run(reads_past_the_end, (8,), (8,), (x, y), jit=False, checks="none")
