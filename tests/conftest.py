"""Shared test setup: import path, OpenCL ICD setup, Hypothesis profiles.

``CLSIM_HYPOTHESIS_PROFILE`` picks the profile: ``ci`` (small, derandomised; the default when
``CI`` is set), ``dev`` (the default otherwise) or ``thorough`` (many examples).

Tests marked ``slow`` (long sweeps and fuzz campaigns: the same check over every size, shape
or device where a few already cover the feature) are deselected by default, so the README's
command stays short (9-10 minutes on 2 idle Zen 5 cores, about 13 on Zen 3,
docs/performance.md);
``--slow``, ``-m slow`` or the ``thorough`` profile runs them (the ``thorough`` profile also
tests every device, ``verify.testing``).

The ``ci`` and ``dev`` profiles also keep the verifier's drawn launches small (about
``verify.testing.QUICK_BUFFER_ELEMENTS`` buffer elements: plain Python, no Numba compile per
drawn local size); ``thorough`` draws the full space and runs every default shape in full on
every device (tests/device/test_kernels_on_devices.py).
"""

import os
import signal
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The ICD loader reads OCL_ICD_VENDORS when pyopencl first lists platforms, so the project's
# own vendor folder (Intel CPU runtime, PoCL, Oclgrind) must be in place before any import.
from verify.devices import import_pyopencl  # noqa: E402

import_pyopencl()

# The shipped kernel library registers its specs on import (clsim.spec imports no library).
import kernels_py  # noqa: E402, F401

# Tests taking a `device` argument run once per OpenCL device present (skips state reasons).
pytest_plugins = ["verify.pytest_plugin"]

_common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                     HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=15, derandomize=True, print_blob=True, **_common)
# dev, the README's command: as many examples as ci (not derandomised: each run draws anew);
# long campaigns are the thorough profile's (30 made the suite take 14.5 min on 2 cores).
settings.register_profile("dev", max_examples=15, **_common)
settings.register_profile("thorough", max_examples=400, **_common)
settings.load_profile(
    os.environ.get("CLSIM_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


SLOW = "slow"


def _thorough() -> bool:
    return os.environ.get("CLSIM_HYPOTHESIS_PROFILE") == "thorough"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help="also run the tests marked slow (deselected by default)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{SLOW}: a long sweep or fuzz campaign (every size, shape or device where "
        "a default test already covers the feature); deselected by default to keep the "
        "README's command under 10 minutes on 2 cores (docs/performance.md); run with --slow, "
        "-m slow or CLSIM_HYPOTHESIS_PROFILE=thorough")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow") or _thorough() or SLOW in (config.option.markexpr or ""):
        return
    slow = [item for item in items if item.get_closest_marker(SLOW)]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker(SLOW)]


def _sigint_ignored_below_python() -> bool:
    """Whether the OS ignores SIGINT in this process (Linux's /proc; False where unknown).
    C code run in-process that sets SIG_IGN with sigaction leaves Python's
    ``signal.getsignal`` showing its own handler while Ctrl-C does nothing (seen once in a
    pytest-xdist worker, the library not identified; the other Ctrl-C failures of those runs
    had the cause ``_hear_ctrl_c`` mends)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    except OSError:
        pass
    return False


def _hear_ctrl_c() -> None:
    """Install Python's Ctrl-C handler where this process started with SIGINT ignored.

    A non-interactive shell starts a background command (``pytest ... &`` in a script, a CI
    step sent to the background) with SIGINT ignored, and pytest-xdist's
    workers inherit that. Python then leaves SIGINT ignored, so the tests of Ctrl-C handling
    (which send this process or their own children SIGINT) failed, and ``clsim.interrupts``
    stayed off (it takes over only from the default handler): a test that recorded a dropped
    Ctrl-C by hand left the flag set, the next command in that worker said "interrupted", and
    the one after ended the worker ("node down: keyboard-interrupt"), the rest of the suite
    then running on one worker. Children inherit the handler as the default action."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_hear_ctrl_c()


@pytest.fixture(autouse=True)
def _interrupt_flag_left_clear(request):
    """A Ctrl-C recorded by ``clsim.interrupts`` and left set would interrupt whatever this
    worker runs next, and end the worker: clear it and name the test that left it."""
    from clsim import interrupts

    yield
    if interrupts.interrupted():
        interrupts._interrupted = False
        warnings.warn(f"{request.node.nodeid} left a Ctrl-C recorded (clsim.interrupts)",
                      stacklevel=1)


@pytest.fixture(autouse=True)
def _sigint_left_as_found(request):
    """A test that leaves SIGINT's handler changed would decide how the next test in this
    worker meets Ctrl-C (clsim.interrupts installs its own only over the default one): put it
    back and say which test left it. A handler the OS no longer calls (see
    ``_sigint_ignored_below_python``) is installed again before each test: the tests that
    send themselves SIGINT hung in a pytest-xdist worker where an earlier test had loaded
    such code."""
    before = signal.getsignal(signal.SIGINT)
    if callable(before) and _sigint_ignored_below_python():
        signal.signal(signal.SIGINT, before)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        warnings.warn(f"{request.node.nodeid} left SIGINT's handler as {after!r}",
                      stacklevel=1)
    elif callable(after) and _sigint_ignored_below_python():
        signal.signal(signal.SIGINT, after)
        warnings.warn(f"{request.node.nodeid} left SIGINT ignored by the OS (below Python's "
                      "handler)", stacklevel=1)
