"""What a first run on a machine compiles once, said while it happens and counted.

Three parts of clsim are Numba code compiled once per machine and cached on disk (beside their
files, or under NUMBA_CACHE_DIR): the shared runtime helpers (``clsim/runtime/helper_lib.py``,
compiled as a kernel first calls them), the checks' shared helpers
(``clsim/checks/native_entry.py`` and what it calls in ``native_lib.py``, race and
uninitialised-read checks) and the traffic step counter (``clsim/traffic/steps.py``). A cold
first ``clsim run`` spent most of its time there without a word, and the printed compile
seconds left it out. ``prepare`` compiles (imports) the last two before the launch, with a
note on stderr, and returns the seconds to add to the printed compile time (``clsim run``
compiles the checks' helpers in a second process instead where it can:
``clsim.commands.checks_beside``); ``helpers_pending`` tells the compile note that the shared
helpers come with the kernel's own compile (already inside its seconds).

A part counts as cached when Numba's index files for its file exist; a stale index (the file
edited since) compiles again unannounced, as any kernel would.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

_CLSIM = Path(__file__).resolve().parents[1]
HELPERS = ("runtime/helper_lib.py", "clsim's shared helpers")
PARTS = {  # name -> (file under clsim/, what the note calls it, module to import or
    # "module:function" to call: the checks' loader also compiles their after-launch merge)
    "checks": ("checks/native_entry.py", "the checks' shared helpers",
               "clsim.checks.native:load_jit"),
    "traffic": ("traffic/steps.py", "the traffic step counter", "clsim.traffic.steps"),
}
NEEDS_CHECKS = ("races", "uninit", "all")  # --check modes that link the checks' helpers


def cached(relative: str) -> bool:
    """Whether Numba's disk cache holds functions of clsim's file ``relative``."""
    from numba.core.caching import FunctionCache

    path = _CLSIM / relative
    scope: dict = {}
    # a stand-in function "defined in" that file: Numba picks the file's cache folder from it
    exec(compile("def _clsim_probe():\n    pass\n", str(path), "exec"), scope)
    try:
        folder = Path(FunctionCache(scope["_clsim_probe"])._cache_path)
    except Exception:  # no writable cache location (Numba compiles every time), or a Numba
        return False   # whose cache internals moved: then the note may show when not needed
    return any(folder.glob(f"{path.stem}.*.nbi"))


def helpers_pending(jit: bool) -> bool:
    """Whether this run compiles the shared runtime helpers (nothing cached yet)."""
    return jit and not cached(HELPERS[0])


def note(what: str) -> str:
    return f"clsim: compiling {what} (once per machine; cached afterwards)..."


def prepare(part: str, jit: bool, stream=None) -> float:
    """Compile the once-per-machine ``part`` ("checks" or "traffic") now if its cache is empty,
    saying so on ``stream`` (stderr); the seconds it took (0.0 when cached or not JIT)."""
    relative, what, target = PARTS[part]
    module, _, function = target.partition(":")
    compiled = "clsim." + relative.removesuffix(".py").replace("/", ".")  # the file's module
    if not jit or compiled in sys.modules or cached(relative):
        return 0.0
    print(note(what), file=stream if stream is not None else sys.stderr, flush=True)
    t0 = time.perf_counter()
    loaded = importlib.import_module(module)  # its cfuncs compile as the module is imported
    if function:
        getattr(loaded, function)()
    return time.perf_counter() - t0
