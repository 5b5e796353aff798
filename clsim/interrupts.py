"""Ctrl-C that a command cannot lose.

Python runs a signal handler at the next bytecode of the main thread, which may be inside a
garbage-collector callback (Hypothesis registers one) or a ``__del__``; the
KeyboardInterrupt raised there is printed as "Exception ignored" and dropped, and the command
went on to exit 0 (1 run in 5 of ``clsim verify softmax -n 200``). Within ``recorded()`` (the
CLI wraps every command in it) SIGINT is remembered before the KeyboardInterrupt is raised,
and ``raise_if_interrupted()`` raises it again: the device worker's wait loop calls it every
half second, a JIT launch's wait loop every tenth (``clsim.runtime.watch``), and the CLI when a
command returns. Outside ``recorded()`` nothing changes.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

_interrupted = False


def _on_sigint(signum: int, frame: Any) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether Ctrl-C came within ``recorded()`` (whether or not its exception got through)."""
    return _interrupted


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt again when a Ctrl-C was recorded (one may have been dropped)."""
    if _interrupted:
        raise KeyboardInterrupt


@contextlib.contextmanager
def recorded() -> Iterator[None]:
    """Record SIGINT while the block runs (main thread, default handler only: a handler the
    caller installed is left alone)."""
    global _interrupted
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    _interrupted = False
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _interrupted = False
