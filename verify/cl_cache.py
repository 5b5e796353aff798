"""pyopencl's compiler cache, in a folder of clsim's own that one live process holds at a time.

pyopencl guards its shared cache with a bare ``lock`` file (``os.open(O_EXCL)``, no owner
recorded). A worker killed while building leaves that file behind, and every later build in
any process waits 60 s for it and fails (with pyopencl 2026.1, as ``KeyError:
'PYOPENCL_CACHE_FAILURE_FATAL'``). clsim's builds therefore use ``cache_dir()``: one of the
``slot-N`` folders under ``$XDG_CACHE_HOME/clsim/pyopencl-<version>/``, held with an
``flock`` on ``slot-N.lock`` for the life of the process. The kernel drops an ``flock`` when
its holder dies, so a process that gets a slot is its only user and a ``lock`` file found in
it was left by a dead one: it is removed. Concurrent processes take different slots; the
binaries cached in a slot serve every later process that takes it.

When no slot can be had (an unwritable cache, all slots busy), builds are not cached
(``cache_dir()`` returns False, pyopencl's own switch for that). ``PYOPENCL_CACHE_FAILURE_FATAL``
is given its empty default, so any other cache failure is pyopencl's warning and an uncached
build rather than a ``KeyError``.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Literal

SLOTS = 64
_held: tuple[int, int, str] | None = None  # (pid, fd, folder): a forked child takes its own


def cache_root() -> Path:
    import pyopencl

    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "clsim" / f"pyopencl-{pyopencl.VERSION_TEXT}"


def cache_dir() -> str | Literal[False]:
    """This process's compiler-cache folder for ``pyopencl.Program.build(cache_dir=...)``,
    or False (build uncached) when none can be had."""
    global _held
    os.environ.setdefault("PYOPENCL_CACHE_FAILURE_FATAL", "")
    if _held is not None and _held[0] == os.getpid():
        return _held[2]
    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        for n in range(SLOTS):
            fd = os.open(root / f"slot-{n}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            slot = root / f"slot-{n}"
            slot.mkdir(exist_ok=True)
            (slot / "lock").unlink(missing_ok=True)  # its writer died while building
            _held = (os.getpid(), fd, str(slot))
            return _held[2]
    except OSError:
        pass
    return False
