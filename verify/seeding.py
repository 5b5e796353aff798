"""One seed, one sequence of drawn cases, in every process and mode.

Hypothesis draws about one value in twenty from a pool of constants, half of them "local":
every number and string literal in the source of the non-library modules loaded at that moment
(``sys.modules``; hypothesis.internal.conjecture.providers). Which of clsim's modules are loaded
depends on what ran before the draw: the checks' modules under ``checks="all"``, the JIT's,
a generated kernel module, the CLI's own. So one ``--seed`` drew different cases in a verify
with and without checks, in the CLI and in a script, in a first and a second run (a benchmark
with seed 23 drew local size 1 in 12 to 47 of 100 cases). Within ``fixed_constants`` that pool
is empty: the draws follow the seed alone. Hypothesis' own global constants (type limits,
powers of two, float edge values) are still drawn, and clsim's source constants say nothing
about a kernel's inputs anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

# the patched function is process-wide: one search at a time patches it (re-entrant, so a
# search inside a search's example does not wait for itself)
_lock = threading.RLock()


@contextmanager
def fixed_constants() -> Iterator[None]:
    """Hypothesis draws no local-module constants inside this block (see the module's doc).
    A Hypothesis without local constants (before 6.131) has nothing to fix."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        yield
        return
    if not hasattr(providers, "_get_local_constants"):
        yield
        return
    empty = Constants()
    with _lock:
        saved = providers._get_local_constants
        # the cache holds each constraint's permitted constants, local ones included
        providers.CONSTANTS_CACHE.cache.clear()
        providers._get_local_constants = lambda: empty
        try:
            yield
        finally:
            providers._get_local_constants = saved
            providers.CONSTANTS_CACHE.cache.clear()
