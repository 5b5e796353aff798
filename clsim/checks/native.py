"""The kernel-independent helpers of the checks, compiled once and imported by every kernel.

The full recorders (``_cs_ld``, ``_cs_st``, ``_cs_at`` and their ``...p`` variants) and the
group-level ``_cs_end``/``_cs_flush`` are the same for every kernel, so instead of compiling
them into each generated module (seconds per kernel) they live in one module of their own,
written to the kernel cache and imported from there, so Numba's on-disk cache keeps their
machine code. ``imports`` gives the lines a generated module needs; its last line names the
helpers' content hash, so a changed helper also changes (and recompiles) every kernel that
inlined it. The no-JIT mode imports a plain-Python twin. The per-kernel fast paths stay in the
generated module, where Numba inlines them.
"""

from __future__ import annotations

import hashlib

from clsim.checks import replay, shadow
from clsim.checks.shadow import SHARED
from clsim.runtime.cache import load_source

_HEADERS = {
    True: ["import numpy as np", "from numba import njit",
           "_jit = njit(cache=True, error_model='numpy', fastmath=False, nogil=True)"],
    False: ["import numpy as np", "def _jit(f):\n    return f"],
}


def module_source(jit: bool) -> str:
    """Source of the shared-helpers module (JIT or plain Python)."""
    sources = {**shadow.sources(), **replay.sources()}
    parts = ["@_jit\n" + sources[name].strip("\n") for name in SHARED]
    return "\n".join(_HEADERS[jit]) + "\n\n\n" + "\n\n\n".join(parts) + "\n"


_LOADED: dict[bool, object] = {}


def load(jit: bool):
    """The shared-helpers module, written to the kernel cache and imported (once)."""
    if jit not in _LOADED:
        _LOADED[jit], _path = load_source("checks_jit" if jit else "checks_py",
                                          module_source(jit))
    return _LOADED[jit]


def inline_always(fn):
    """Numba-level inlining for a fast path (LLVM inlines them only sometimes, and a call
    left in place costs ~5 ns per access); the plain function in no-JIT mode."""
    py = getattr(fn, "py_func", None)
    if py is None:
        return fn
    from numba import njit

    return njit(inline="always", cache=True, error_model="numpy", fastmath=False)(py)


def imports(jit: bool) -> list[str]:
    """Lines a generated module needs to call the shared helpers and inline the fast paths."""
    digest = hashlib.sha256(module_source(jit).encode()).hexdigest()[:16]
    names = ", ".join(SHARED)
    values = ", ".join(f"_cs_lib.{name}" for name in SHARED)
    return ["from clsim.checks.native import inline_always as _cs_inline",
            f"from clsim.checks.native import load as _cs_load  # checks helpers {digest}",
            f"_cs_lib = _cs_load({jit})",
            f"{names} = {values}"]
