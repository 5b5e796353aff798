"""Child processes that die with the process that started them, whatever kills it.

A device worker stuck in a kernel that never returns would otherwise keep a core busy long
after a SIGKILLed verifier is gone. Two ties, both needed:

- Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``, set by the child through
  ctypes): the kernel kills the child even while it is stuck in a driver holding the GIL. It
  fires when the *thread* that forked the child ends, so ``spawn`` forks only from the main
  thread or from one thread of its own that lives until the interpreter shuts down.
- A watcher thread in the child that compares ``os.getppid()`` with the parent's pid (passed
  in ``PARENT_ENV``): it covers systems without prctl and a parent that died before the prctl
  call.

``spawn`` (parent side) is ``subprocess.Popen`` with the pid added to the environment;
``die_with_parent`` (child side, first thing in its main) sets both ties up.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

PARENT_ENV = "CLSIM_PARENT_PID"
_PR_SET_PDEATHSIG = 1
_WATCH_S = 0.2
_spawner: ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def spawn(argv: list[str], *, env: dict[str, str] | None = None, **popen: Any
          ) -> subprocess.Popen:
    """``subprocess.Popen(argv, ...)`` for a child that calls ``die_with_parent``."""
    env = {**(os.environ if env is None else env), PARENT_ENV: str(os.getpid())}
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(argv, env=env, **popen)
    # A thread that may end before the process would take the child with it.
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = ThreadPoolExecutor(1, thread_name_prefix="clsim-spawner")
    return _spawner.submit(subprocess.Popen, argv, env=env, **popen).result()


def parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent thread ends; False where
    that is not available."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int | None = None, death_signal: bool = True) -> None:
    """Tie this process's life to its parent's (``PARENT_ENV`` when ``parent_pid`` is None;
    nothing to do when neither is set). ``death_signal=False`` when the forking thread may end
    before its process (a pool started from a thread): the watcher alone then."""
    if parent_pid is None:
        text = os.environ.get(PARENT_ENV, "")
        if not text.isdigit():
            return
        parent_pid = int(text)
    if death_signal:
        parent_death_signal()
    if os.getppid() != parent_pid:  # gone before the signal was asked for
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=_watch, args=(parent_pid,), name="clsim-lifeline",
                     daemon=True).start()


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(_WATCH_S)
    os.kill(os.getpid(), signal.SIGKILL)
