"""Ctrl-C is never lost (clsim.interrupts): a SIGINT whose KeyboardInterrupt Python drops (it
was raised inside a garbage-collector callback, as Hypothesis's, and printed as "Exception
ignored") still ends the command with exit 130, and only within the CLI."""

from __future__ import annotations

import ctypes
import gc
import signal
import sys

import pytest

from clsim import cli, interrupts
from verify import cli as verify_cli


def _interrupt_inside_a_gc_callback() -> None:
    """SIGINT arrives while a gc callback runs: its KeyboardInterrupt is dropped by gc."""
    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            gc.callbacks.remove(callback)
            signal.raise_signal(signal.SIGINT)  # the handler runs here, in the callback
            sum(range(100))

    gc.callbacks.append(callback)
    gc.collect()


def test_ctrl_c_dropped_in_a_gc_callback_still_exits_130(monkeypatch, capsys):
    def verify_one(*_args, **_kwargs):
        _interrupt_inside_a_gc_callback()
        return "  fake        agree   1 examples, seed 0", False

    dropped: list[type] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: dropped.append(info.exc_type))
    monkeypatch.setattr(verify_cli, "_devices", lambda names: [object()])
    monkeypatch.setattr(verify_cli, "_verify_one", verify_one)
    assert cli.main(["verify", "vector_add", "-n", "1"]) == 130
    assert dropped == [KeyboardInterrupt]  # the interrupt really was dropped on the way
    assert capsys.readouterr().err.strip().endswith("clsim: interrupted")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not interrupts.interrupted()


def test_recorded_leaves_other_handlers_and_library_use_alone():
    def mine(signum, frame):
        raise KeyboardInterrupt

    interrupts.raise_if_interrupted()  # nothing recorded outside the CLI: no raise
    old = signal.signal(signal.SIGINT, mine)
    try:
        with interrupts.recorded():
            assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, old)
    with pytest.raises(KeyboardInterrupt), interrupts.recorded():
        signal.raise_signal(signal.SIGINT)
    assert not interrupts.interrupted()


def test_ctrl_c_is_heard_after_c_code_ignored_it_below_python():
    """C code run in-process (a device runtime) may set SIGINT to SIG_IGN with sigaction;
    Python's getsignal still shows its own handler. The CLI's block installs its handler with
    the OS again, so Ctrl-C still stops a command."""
    libc = ctypes.CDLL(None)
    libc.signal.restype = ctypes.c_void_p
    libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
    try:
        libc.signal(signal.SIGINT, 1)  # SIG_IGN, behind Python's back
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt), interrupts.recorded():
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def test_the_suite_hears_ctrl_c_when_started_with_it_ignored():
    """A shell script's background job (``pytest ... &``) starts with SIGINT ignored, and
    pytest-xdist's workers inherit it: tests/conftest.py installs Python's handler again, or
    the Ctrl-C tests fail and a recorded Ctrl-C left set ends a worker mid-suite."""
    import os
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    test = f"{os.path.abspath(__file__)}::test_ctrl_c_dropped_in_a_gc_callback_still_exits_130"
    pytest_argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                   "no:xdist", "-W", "ignore", test]
    # SIG_IGN survives exec, as it does from a shell's background job (not preexec_fn: this
    # process may have threads)
    ignore_then_exec = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                        "os.execv(sys.argv[1], sys.argv[1:])")
    done = subprocess.run([sys.executable, "-c", ignore_then_exec, *pytest_argv], cwd=root,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
