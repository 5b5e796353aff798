"""Recorders the traffic instrument's generated code calls, compiled once per machine.

A kernel's traffic variant used to paste each recording into the kernel as a few statements
per access site (``instrument._record_inline``, ``_stage``): Numba types and lowers every
copy again, which made the variant's first compile ~2 s slower than the plain one. A call
to one of these functions is one statement; they are compiled once into Numba's on-disk cache
(``cache=True``) and linked into the kernel, where LLVM inlines them, so a warm run costs
the same as the pasted stores (measured on softmax). They take only arrays and integers:
a function argument (the step counter's C entry point) would stop the inlining, so a lane
that must first have its previous descriptor moved calls the step counter itself.

The layout of what they write is ``clsim.traffic.layout``; ``clsim.traffic.helpers`` holds
the recorders that wrap an index expression (those are still pasted per kernel).
"""

from __future__ import annotations

import numba
import numpy as np

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def record(T, L, c0, p0, cap, nl, s, lid, addr):
    """Lane ``lid`` (of ``nl``) ran slot ``s`` at byte ``addr``: its next entry of ``L``
    (helpers.py ``_RECORD``, the same stores), its run counter and the slot's pending flag
    (the highest lane that ran it, plus 1)."""
    c = np.uint64(c0 + s * nl + lid)
    n = T[c]
    T[c] = n + 1
    k = min(n, cap)
    L[np.uint64((((s * ((cap >> 3) + 1) + (k >> 3)) * nl + lid) << 3) + (k & 7))] = addr
    p = np.uint64(p0 + s)
    T[p] = max(T[p], lid + 1)


@_jit
def stage(T, x, flag, last, prev, count):
    """Stage a lane's loop descriptor at ``T[x:x + 3]`` (layout.py ``STAGE``: its last two
    byte addresses and the runs) and set the slot's staged flag ``T[flag]``."""
    T[x] = last
    T[x + 1] = prev
    T[x + 2] = count
    T[flag] = 1


@_jit
def stage_range(T, x, flag, last, prev, start, stop, step):
    """``stage`` of a loop over ``range(start, stop, step)``, its runs counted here."""
    if step > 0:
        count = max((stop - start + step - 1) // step, 0)
    else:
        count = max((start - stop - step - 1) // -step, 0)
    T[x] = last
    T[x + 1] = prev
    T[x + 2] = count
    T[flag] = 1
